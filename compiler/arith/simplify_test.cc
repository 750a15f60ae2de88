#include "compiler/arith/simplify.h"

#include <gtest/gtest.h>

namespace kiln {
namespace arith {
namespace {

using namespace ir;

PrimExpr FloorDivE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, a, b); }
PrimExpr FloorModE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, a, b); }
PrimExpr MinE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, a, b); }
PrimExpr MaxE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, a, b); }
PrimExpr Cmp(TirKind k, PrimExpr a, PrimExpr b) { return MakeBinary(k, a, b); }

std::string S(const PrimExpr& e) { return ToDebugString(Simplify(e)); }

class SimplifyTest : public ::testing::Test {
 protected:
  Var n = MakeVar("n");
  Var m = MakeVar("m");
  PrimExpr N{n};
  PrimExpr M{m};
};

TEST_F(SimplifyTest, MultiplicationChains) {
  EXPECT_EQ(S((N * 2) * 2), "n * 4");
  EXPECT_TRUE(CanProveEqual((N * 2) * 2, N * 4));
  EXPECT_TRUE(CanProveEqual(N * 2 * 2, N * 4));  // reshape-style dims
  EXPECT_TRUE(CanProveEqual(PrimExpr(2) * N * 2, N * 4));
  EXPECT_FALSE(CanProveEqual(N * 2 * 2, N * 3));
}

TEST_F(SimplifyTest, AdditionCancels) {
  EXPECT_EQ(S(N + N - N), "n");
  EXPECT_TRUE(Simplify(N + N - N).same_as(N));
  EXPECT_EQ(S(N - N), "0");
  EXPECT_EQ(S(N * 3 + 1 - N * 2 + 4), "n + 5");
}

TEST_F(SimplifyTest, CanonicalOrderOfTerms) {
  EXPECT_EQ(S(M + N), "m + n");
  EXPECT_EQ(S(N + M), "m + n");
  EXPECT_EQ(S((N + 1) * (M + 2)), "m + m * n + n * 2 + 2");
  EXPECT_EQ(S(N * M - M * N), "0");
  EXPECT_EQ(S(PrimExpr(1) - N), "n * -1 + 1");
  EXPECT_EQ(S(M - N * 3 - 7), "m - n * 3 - 7");
  EXPECT_TRUE(CanProveEqual((N + M) * (N + M), N * N + M * M + N * M * 2));
}

TEST_F(SimplifyTest, SameNamedVariablesStayDistinct) {
  Var n2 = MakeVar("n");
  EXPECT_FALSE(CanProveEqual(N, PrimExpr(n2)));
  EXPECT_EQ(S(N + PrimExpr(n2) - N), "n");
  EXPECT_TRUE(Simplify(N + PrimExpr(n2) - N).same_as(PrimExpr(n2)));
}

TEST_F(SimplifyTest, ConstantsFold) {
  EXPECT_EQ(AsConstInt(PrimExpr(784) * 2 + 1), 1569);
  EXPECT_EQ(AsConstInt(N * 0 + 3), 3);
  EXPECT_EQ(AsConstInt(N + 1), std::nullopt);
  EXPECT_TRUE(CanProve(Cmp(TirKind::kNE, PrimExpr(784), PrimExpr(785))));
  EXPECT_FALSE(CanProveEqual(PrimExpr(784), PrimExpr(785)));
  EXPECT_FALSE(CanProve(Cmp(TirKind::kEQ, PrimExpr(784), PrimExpr(785))));
  EXPECT_EQ(S(Cmp(TirKind::kEQ, PrimExpr(784), PrimExpr(785))), "false");
}

TEST_F(SimplifyTest, FloorDivByConstants) {
  EXPECT_EQ(S(FloorDivE(N * 4, 2)), "n * 2");
  EXPECT_EQ(S(FloorDivE(N * 4 + 3, 2)), "n * 2 + 1");
  EXPECT_EQ(S(FloorDivE(N * 4 - 1, 4)), "n - 1");
  EXPECT_EQ(S(FloorDivE(N + 7, 4)), "(n + 3) // 4 + 1");
  EXPECT_EQ(S(FloorDivE(N * 4 + 2, 8)), "(n * 2 + 1) // 4");
  EXPECT_EQ(S(FloorDivE(N, 1)), "n");
  EXPECT_EQ(S(FloorDivE(PrimExpr(-7), 2)), "-4");
  EXPECT_EQ(S(FloorDivE(PrimExpr(7), -2)), "-4");
  EXPECT_TRUE(CanProveEqual(FloorDivE(N + 7, 4) - FloorDivE(N + 3, 4), 1));
  // A divisor of 0 or a variable divisor stays as it is.
  EXPECT_EQ(S(FloorDivE(N, 0)), "n // 0");
  EXPECT_EQ(S(FloorDivE(N * 2, M)), "n * 2 // m");
}

TEST_F(SimplifyTest, FloorModByConstants) {
  EXPECT_EQ(S(FloorModE(N * 4, 2)), "0");
  EXPECT_EQ(S(FloorModE(N * 4 + 3, 2)), "1");
  EXPECT_EQ(S(FloorModE(N * 6 + 5, 4)), "(n * 2 + 1) % 4");
  EXPECT_EQ(S(FloorModE(N * 4 + 2, 8)), "(n * 2 + 1) % 4 * 2");
  EXPECT_EQ(S(FloorModE(N, 1)), "0");
  EXPECT_EQ(S(FloorModE(PrimExpr(-7), 2)), "1");
  EXPECT_EQ(S(FloorModE(PrimExpr(7), -2)), "-1");
  // The same atom built twice is one atom.
  EXPECT_EQ(S(FloorModE(N + 1, 3) - FloorModE(N + 4, 3)), "0");
}

TEST_F(SimplifyTest, DivModUseBounds) {
  VarBounds b;
  b[n.get()] = IntBounds::Range(0, 3);
  EXPECT_EQ(ToDebugString(Simplify(FloorDivE(N, 4), b)), "0");
  EXPECT_EQ(ToDebugString(Simplify(FloorModE(N, 4), b)), "n");
  EXPECT_EQ(ToDebugString(Simplify(FloorDivE(N + M * 4, 4), b)), "m");
  EXPECT_EQ(S(FloorDivE(N, 4)), "n // 4");  // without bounds nothing is known
}

TEST_F(SimplifyTest, TruncatingDivision) {
  PrimExpr div = MakeBinary(TirKind::kDiv, PrimExpr(-7), PrimExpr(2));
  EXPECT_EQ(S(div), "-3");
  EXPECT_EQ(S(MakeBinary(TirKind::kDiv, N * 4, PrimExpr(2))), "n * 4 / 2");
  EXPECT_EQ(ToDebugString(Simplify(MakeBinary(TirKind::kDiv, N * 4, PrimExpr(2)), LowerBounds({n}))), "n * 2");
}

TEST_F(SimplifyTest, MinMax) {
  EXPECT_EQ(S(MinE(3, 5)), "3");
  EXPECT_EQ(S(MaxE(3, 5)), "5");
  EXPECT_EQ(S(MinE(N + 1, N)), "n");
  EXPECT_EQ(S(MaxE(N + 1, N)), "n + 1");
  EXPECT_EQ(S(MinE(N, N)), "n");
  EXPECT_EQ(S(MinE(N, M)), "min(m, n)");
  EXPECT_TRUE(CanProveEqual(MinE(N, M), MinE(M, N)));
  EXPECT_EQ(S(MinE(N, 8)), "min(n, 8)");
  VarBounds b = LowerBounds({n}, 16);
  EXPECT_EQ(ToDebugString(Simplify(MinE(N, 8), b)), "8");
  EXPECT_EQ(ToDebugString(Simplify(MaxE(N * 2, N), LowerBounds({n}))), "n * 2");
  // min of two sums with the same unknown part still folds.
  EXPECT_EQ(S(MinE(N * M + 3, M * N + 1)), "m * n + 1");
}

TEST_F(SimplifyTest, Comparisons) {
  EXPECT_TRUE(CanProve(Cmp(TirKind::kEQ, N * 2 * 2, N * 4)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kLT, N, N + 1)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kLE, N, N)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kGT, N + 2, N + 1)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kGE, N * 3, N * 3)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kNE, N * 2, N * 2 + 1)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kNE, N * 2, M * 4 + 1)));  // parity
  EXPECT_EQ(S(Cmp(TirKind::kGT, N, N)), "false");
  // Not provable without bounds ("only what the math proves").
  EXPECT_FALSE(CanProve(Cmp(TirKind::kGE, N, 0)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kGE, N, 0), LowerBounds({n})));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kGT, N * M + 1, 0), LowerBounds({n, m})));
  EXPECT_FALSE(CanProve(Cmp(TirKind::kLT, N, M)));
  EXPECT_EQ(S(Cmp(TirKind::kLT, N + 1, M + 1)), "n < m");
  EXPECT_EQ(S(Cmp(TirKind::kGE, N * 2 + 5, M + N + 1)), "n + 4 >= m");
  EXPECT_EQ(S(Cmp(TirKind::kEQ, N + 3, PrimExpr(8))), "n == 5");
  EXPECT_EQ(S(Cmp(TirKind::kNE, PrimExpr(8), N - M)), "m + 8 != n");
  // floormod is never negative for a positive divisor.
  EXPECT_TRUE(CanProve(Cmp(TirKind::kGE, FloorModE(N, 4), 0)));
  EXPECT_TRUE(CanProve(Cmp(TirKind::kLT, FloorModE(N, 4), 4)));
}

TEST_F(SimplifyTest, Logic) {
  PrimExpr lt = Cmp(TirKind::kLT, N, M);
  PrimExpr t = Cmp(TirKind::kEQ, N, N);
  PrimExpr f = Cmp(TirKind::kNE, N, N);
  EXPECT_EQ(S(MakeBinary(TirKind::kAnd, lt, t)), "n < m");
  EXPECT_EQ(S(MakeBinary(TirKind::kAnd, f, lt)), "false");
  EXPECT_EQ(S(MakeBinary(TirKind::kOr, lt, t)), "true");
  EXPECT_EQ(S(MakeBinary(TirKind::kOr, f, lt)), "n < m");
  EXPECT_EQ(S(PrimExpr(std::make_shared<NotNode>(f))), "true");
  EXPECT_EQ(S(PrimExpr(std::make_shared<NotNode>(PrimExpr(std::make_shared<NotNode>(lt))))), "n < m");
  EXPECT_TRUE(CanProve(MakeBinary(TirKind::kAnd, Cmp(TirKind::kEQ, N * 4, N * 2 * 2), Cmp(TirKind::kNE, 784, 785))));
}

TEST_F(SimplifyTest, SelectAndCast) {
  PrimExpr sel = PrimExpr(std::make_shared<SelectNode>(Cmp(TirKind::kLT, N, N + 1), N * 2, M));
  EXPECT_EQ(S(sel), "n * 2");
  PrimExpr same = PrimExpr(std::make_shared<SelectNode>(Cmp(TirKind::kLT, N, M), N + N, N * 2));
  EXPECT_EQ(S(same), "n * 2");
  EXPECT_EQ(S(Cast(DType::Int32(), PrimExpr(int64_t{1} << 32) + 5)), "5");
  EXPECT_EQ(S(Cast(DType::Int32(), PrimExpr(int64_t{0x80000000LL}))), "-2147483648");
  EXPECT_EQ(S(Cast(DType::Int64(), N + N)), "n * 2");
  EXPECT_EQ(S(Cast(DType::Float32(), PrimExpr(3))), "3");
  EXPECT_TRUE(Simplify(Cast(DType::Float32(), PrimExpr(3))).as<FloatImmNode>() != nullptr);
}

TEST_F(SimplifyTest, SameNodeWhenNothingChanges) {
  PrimExpr e = N * 4 + 1;
  EXPECT_TRUE(Simplify(e).same_as(e));
  PrimExpr f = MinE(M, N);
  EXPECT_TRUE(Simplify(f).same_as(f));
  PrimExpr g = FloorDivE(N + 3, 4);
  EXPECT_TRUE(Simplify(g).same_as(g));
  EXPECT_TRUE(Simplify(N).same_as(N));
  // Changed at the top, the unchanged subtree is still shared.
  Buffer buf = MakeBuffer("A", {N}, DType::Float32());
  PrimExpr idx = FloorDivE(N + 3, 4);
  PrimExpr load = Load(buf, {idx});
  PrimExpr sum = MakeBinary(TirKind::kAdd, load, FloatImm(DType::Float32(), 1.0));
  EXPECT_TRUE(Simplify(sum).same_as(sum));
  PrimExpr load2 = Load(buf, {N * 2 * 2});
  PrimExpr s2 = Simplify(load2);
  EXPECT_FALSE(s2.same_as(load2));
  EXPECT_EQ(ToDebugString(s2), "A[n * 4]");
}

TEST_F(SimplifyTest, SubstituteThenSimplifyToAConstant) {
  PrimExpr e = FloorDivE(N * M + 3, 2) + MinE(N, M);
  PrimExpr sub = Substitute(e, {{n.get(), PrimExpr(4)}, {m.get(), PrimExpr(7)}});
  EXPECT_EQ(ToDebugString(sub), "(4 * 7 + 3) // 2 + min(4, 7)");
  EXPECT_EQ(AsConstInt(sub), 19);
  EXPECT_EQ(S(sub), "19");
  // Substituting an expression keeps the symbolic part canonical.
  PrimExpr half = Substitute(N * 2 * 2, {{n.get(), M + 1}});
  EXPECT_EQ(S(half), "m * 4 + 4");
}

TEST_F(SimplifyTest, OverflowIsNotFolded) {
  PrimExpr big = PrimExpr(int64_t{1} << 62);
  PrimExpr e = N * big * 4;  // n * 2^64 overflows a coefficient
  PrimExpr s = Simplify(e);
  EXPECT_FALSE(CanProveEqual(s, N * 0));
  EXPECT_EQ(ToDebugString(s), "n * 4611686018427387904 * 4");
}

TEST_F(SimplifyTest, Int32ExpressionsKeepTheirDType) {
  Var k = MakeVar("k", DType::Int32());
  PrimExpr e = PrimExpr(k) * IntImm(DType::Int32(), 2) * IntImm(DType::Int32(), 2);
  PrimExpr s = Simplify(e);
  EXPECT_EQ(ToDebugString(s), "k * 4");
  EXPECT_EQ(s.dtype(), DType::Int32());
  EXPECT_EQ(s.as<MulNode>()->b.dtype(), DType::Int32());
}

}  // namespace
}  // namespace arith
}  // namespace kiln
