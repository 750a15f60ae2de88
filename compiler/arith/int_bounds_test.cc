#include "compiler/arith/int_bounds.h"

#include <gtest/gtest.h>

namespace kiln {
namespace arith {
namespace {

using namespace ir;

TEST(IntBounds, FloorDivAndModOnInt64) {
  EXPECT_EQ(FloorDiv(7, 2), 3);
  EXPECT_EQ(FloorDiv(-7, 2), -4);
  EXPECT_EQ(FloorDiv(7, -2), -4);
  EXPECT_EQ(FloorDiv(-7, -2), 3);
  EXPECT_EQ(FloorMod(7, 2), 1);
  EXPECT_EQ(FloorMod(-7, 2), 1);
  EXPECT_EQ(FloorMod(7, -2), -1);
  EXPECT_EQ(FloorMod(-8, 4), 0);
}

TEST(IntBounds, ArithmeticSaturatesAtInfinity) {
  IntBounds nonneg = IntBounds::AtLeast(0);
  EXPECT_EQ(BoundsAdd(nonneg, IntBounds::Const(1)), IntBounds::AtLeast(1));
  EXPECT_EQ(BoundsNeg(nonneg), (IntBounds{kNegInf, 0}));
  EXPECT_EQ(BoundsMul(nonneg, IntBounds::Const(-2)), (IntBounds{kNegInf, 0}));
  EXPECT_EQ(BoundsMul(nonneg, IntBounds::Const(0)), IntBounds::Const(0));
  EXPECT_EQ(BoundsMul(IntBounds::Everything(), IntBounds::Everything()), IntBounds::Everything());
  EXPECT_EQ(BoundsMul(IntBounds::Range(-2, 3), IntBounds::Range(4, 5)), IntBounds::Range(-10, 15));
  EXPECT_EQ(BoundsAdd(IntBounds::Const(kPosInf - 1), IntBounds::Const(5)).max, kPosInf);
  EXPECT_EQ(BoundsFloorDivConst(IntBounds::Range(-7, 9), 2), IntBounds::Range(-4, 4));
  EXPECT_EQ(BoundsFloorDivConst(IntBounds::Range(-7, 9), -2), IntBounds::Range(-5, 3));
  EXPECT_EQ(BoundsFloorDivConst(nonneg, -1), (IntBounds{kNegInf, 0}));
  EXPECT_EQ(BoundsFloorModConst(IntBounds::Everything(), 4), IntBounds::Range(0, 3));
  EXPECT_EQ(BoundsFloorModConst(IntBounds::Range(5, 6), 4), IntBounds::Range(1, 2));
  EXPECT_EQ(BoundsFloorModConst(IntBounds::Everything(), -4), IntBounds::Range(-3, 0));
  EXPECT_EQ(IntBounds::AtLeast(0).ToString(), "[0, +inf]");
}

TEST(IntBounds, OfExpressions) {
  Var n = MakeVar("n");
  PrimExpr N{n};
  VarBounds vars{{n.get(), IntBounds::Range(1, 10)}};
  EXPECT_EQ(ConstIntBound(N * 4 + 1, vars), IntBounds::Range(5, 41));
  EXPECT_EQ(ConstIntBound(N - N, vars), IntBounds::Range(-9, 9));  // intervals do not see correlation
  EXPECT_EQ(ConstIntBound(MakeBinary(TirKind::kFloorDiv, N, PrimExpr(4)), vars), IntBounds::Range(0, 2));
  EXPECT_EQ(ConstIntBound(MakeBinary(TirKind::kMin, N, PrimExpr(4)), vars), IntBounds::Range(1, 4));
  EXPECT_EQ(ConstIntBound(N), IntBounds::Everything());
  Var k = MakeVar("k", DType::Int32());
  EXPECT_EQ(ConstIntBound(PrimExpr(k)), IntBounds::Range(-2147483648LL, 2147483647LL));
  EXPECT_EQ(ConstIntBound(Cast(DType::Int64(), PrimExpr(k))), IntBounds::Range(-2147483648LL, 2147483647LL));
  EXPECT_EQ(ConstIntBound(MakeBinary(TirKind::kLT, N, PrimExpr(3))), IntBounds::Range(0, 1));
}

}  // namespace
}  // namespace arith
}  // namespace kiln
