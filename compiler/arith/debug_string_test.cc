#include "compiler/arith/debug_string.h"

#include <gtest/gtest.h>

namespace kiln {
namespace arith {
namespace {

using namespace ir;

TEST(DebugString, PrecedenceAndParentheses) {
  Var n = MakeVar("n"), m = MakeVar("m");
  PrimExpr N{n}, M{m};
  EXPECT_EQ(ToDebugString(N * 4 + 1), "n * 4 + 1");
  EXPECT_EQ(ToDebugString((N + 1) * 4), "(n + 1) * 4");
  EXPECT_EQ(ToDebugString(N - (M - 1)), "n - (m - 1)");
  EXPECT_EQ(ToDebugString((N - M) - 1), "n - m - 1");
  EXPECT_EQ(ToDebugString(MakeBinary(TirKind::kFloorDiv, N + 3, PrimExpr(4))), "(n + 3) // 4");
  EXPECT_EQ(ToDebugString(MakeBinary(TirKind::kFloorMod, N, PrimExpr(4)) * 2), "n % 4 * 2");
  EXPECT_EQ(ToDebugString(MakeBinary(TirKind::kMax, N, PrimExpr(-1))), "max(n, -1)");
  PrimExpr cmp = MakeBinary(TirKind::kLT, N + 1, M);
  PrimExpr both = MakeBinary(TirKind::kAnd, cmp, MakeBinary(TirKind::kOr, cmp, cmp));
  EXPECT_EQ(ToDebugString(both), "n + 1 < m && (n + 1 < m || n + 1 < m)");
  EXPECT_EQ(ToDebugString(MakeBinary(TirKind::kEQ, cmp, IntImm(DType::Bool(), 1))), "(n + 1 < m) == true");
  EXPECT_EQ(ToDebugString(PrimExpr(std::make_shared<NotNode>(cmp))), "!(n + 1 < m)");
  EXPECT_EQ(ToDebugString(Cast(DType::Int32(), N)), "int32(n)");
  EXPECT_EQ(ToDebugString(PrimExpr()), "<undefined>");
}

}  // namespace
}  // namespace arith
}  // namespace kiln
