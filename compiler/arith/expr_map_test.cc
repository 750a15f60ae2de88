#include "compiler/arith/expr_map.h"

#include <gtest/gtest.h>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/expr_compare.h"

namespace kiln {
namespace arith {
namespace {

using namespace ir;

TEST(Substitute, ReplacesVariablesByNode) {
  Var n = MakeVar("n"), m = MakeVar("m"), other_n = MakeVar("n");
  PrimExpr e = PrimExpr(n) * 2 + PrimExpr(other_n);
  PrimExpr r = Substitute(e, {{n.get(), PrimExpr(m) + 1}});
  EXPECT_EQ(ToDebugString(r), "(m + 1) * 2 + n");
  // The untouched right operand is still the same node.
  EXPECT_TRUE(r.as<AddNode>()->b.same_as(e.as<AddNode>()->b));
}

TEST(Substitute, SameNodeWhenNothingMatches) {
  Var n = MakeVar("n"), m = MakeVar("m");
  PrimExpr e = MakeBinary(TirKind::kMin, PrimExpr(n) * 2, PrimExpr(7));
  EXPECT_TRUE(Substitute(e, {{m.get(), PrimExpr(3)}}).same_as(e));
  EXPECT_TRUE(Substitute(e, {}).same_as(e));
}

TEST(Substitute, IntoLoadsCallsSelectsAndCasts) {
  Var i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(8)}, DType::Float32());
  PrimExpr load = Load(a, {PrimExpr(i) + 1});
  PrimExpr call = PrimExpr(std::make_shared<CallNode>(DType::Float32(), "exp", std::vector<PrimExpr>{load}));
  PrimExpr sel = PrimExpr(std::make_shared<SelectNode>(MakeBinary(TirKind::kLT, PrimExpr(i), PrimExpr(4)), call,
                                                       Cast(DType::Float32(), PrimExpr(i))));
  PrimExpr r = Substitute(sel, {{i.get(), PrimExpr(2)}});
  EXPECT_EQ(ToDebugString(r), "select(2 < 4, exp(A[2 + 1]), float32(2))");
}

TEST(CompareExpr, OrdersVariablesByNameThenNode) {
  Var a = MakeVar("a"), b = MakeVar("b");
  EXPECT_LT(CompareExpr(PrimExpr(a), PrimExpr(b)), 0);
  EXPECT_GT(CompareExpr(PrimExpr(b), PrimExpr(a)), 0);
  EXPECT_LT(CompareExpr(PrimExpr(b), PrimExpr(3)), 0);  // variables first
  EXPECT_TRUE(StructuralEqual(PrimExpr(a) * 2 + 1, PrimExpr(a) * 2 + 1));
  EXPECT_FALSE(StructuralEqual(PrimExpr(a) * 2 + 1, PrimExpr(a) * 2 + 2));
  Var a2 = MakeVar("a");
  EXPECT_NE(CompareExpr(PrimExpr(a), PrimExpr(a2)), 0);
  EXPECT_EQ(CompareExpr(PrimExpr(a), PrimExpr(a2)), -CompareExpr(PrimExpr(a2), PrimExpr(a)));
}

}  // namespace
}  // namespace arith
}  // namespace kiln
