// PromoteHalf / HalfStoreValue: half-valued epilogue expressions computed in
// float32 with one rounding at the store (half_promote.h).
#include "compiler/tir/half_promote.h"

#include <gtest/gtest.h>

#include <memory>

#include "compiler/text/text.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

const DType kF16 = DType::Float16();
const DType kBF16 = DType{kDLBfloat, 16, 1};

PrimExpr MaxE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, std::move(a), std::move(b)); }

TEST(HalfPromote, EpilogueAfterTheRoundingBecomesFloat32) {
  for (DType h : {kF16, kBF16}) {
    Buffer acc = MakeBuffer("acc", {nest::I64(8)}, DType::Float32());
    Buffer bias = MakeBuffer("b", {nest::I64(8)}, h);
    Buffer dst = MakeBuffer("d", {nest::I64(8)}, h);
    Var i = MakeVar("i");
    // max(h(acc[i]) + b[i], 0): the conv's rounded accumulator, a half bias, relu.
    PrimExpr v = MaxE(Cast(h, Load(acc, {PrimExpr(i)})) + Load(bias, {PrimExpr(i)}), FloatImm(h, 0));
    ASSERT_EQ(v.dtype(), h);
    PrimExpr p;
    ASSERT_TRUE(PromoteHalf(v, &p));
    EXPECT_EQ(p.dtype(), DType::Float32());
    std::string hs = DTypeToString(h);
    EXPECT_EQ(text::PrintPrimExpr(p), "T.max(acc[i] + T.Cast(\"float32\", b[i]), T.float32(0))");
    // Stored into a half buffer: one rounding, at the store.
    EXPECT_EQ(text::PrintPrimExpr(HalfStoreValue(dst, v)),
              "T.Cast(\"" + hs + "\", T.max(acc[i] + T.Cast(\"float32\", b[i]), T.float32(0)))");
    // Leaving in float32 (the block's result): no rounding at all.
    Buffer out = MakeBuffer("o", {nest::I64(8)}, DType::Float32());
    EXPECT_EQ(text::PrintPrimExpr(HalfStoreValue(out, Cast(DType::Float32(), v))),
              "T.max(acc[i] + T.Cast(\"float32\", b[i]), T.float32(0))");
  }
}

TEST(HalfPromote, SelectsComparisonsAndIntrinsics) {
  Buffer x = MakeBuffer("x", {nest::I64(8)}, kF16);
  Var i = MakeVar("i");
  PrimExpr xi = Load(x, {PrimExpr(i)});
  // hard swish's shape: x * clip(x + 3, 0, 6) / 6, and a select on x < 0.
  PrimExpr clip = MakeBinary(TirKind::kMin, MaxE(xi + FloatImm(kF16, 3), FloatImm(kF16, 0)), FloatImm(kF16, 6));
  PrimExpr hs = MakeBinary(TirKind::kDiv, xi * clip, FloatImm(kF16, 6));
  PrimExpr sel(std::make_shared<SelectNode>(MakeBinary(TirKind::kLT, xi, FloatImm(kF16, 0)),
                                            PrimExpr(std::make_shared<CallNode>(kF16, "exp", std::vector<PrimExpr>{xi})), hs));
  PrimExpr p;
  ASSERT_TRUE(PromoteHalf(sel, &p));
  EXPECT_EQ(p.dtype(), DType::Float32());
  std::string text = text::PrintPrimExpr(p);
  EXPECT_EQ(text.find("float16"), std::string::npos) << text;  // only the loads' widening casts
  EXPECT_NE(text.find("T.Cast(\"float32\", x[i])"), std::string::npos) << text;
}

TEST(HalfPromote, FloatExpressionsAreUnchanged) {
  Buffer a = MakeBuffer("a", {nest::I64(8)}, DType::Float32());
  Var i = MakeVar("i");
  PrimExpr v = Load(a, {PrimExpr(i)}) + FloatImm(DType::Float32(), 1);
  PrimExpr p;
  ASSERT_TRUE(PromoteHalf(v, &p));
  EXPECT_EQ(p.get(), v.get());
  EXPECT_EQ(HalfStoreValue(a, v).get(), v.get());
}

TEST(HalfPromote, RefusesWhatItCannotPromote) {
  // A half variable (a let binding) and an opaque call stay as they are.
  Var h = MakeVar("h", kF16);
  PrimExpr p;
  EXPECT_FALSE(PromoteHalf(PrimExpr(h) + FloatImm(kF16, 1), &p));
  Buffer x = MakeBuffer("x", {nest::I64(8)}, kF16);
  Var i = MakeVar("i");
  PrimExpr opaque(std::make_shared<CallNode>(DType::Int32(), "my_extern", std::vector<PrimExpr>{Load(x, {PrimExpr(i)})}));
  EXPECT_FALSE(PromoteHalf(opaque, &p));
  Buffer d = MakeBuffer("d", {nest::I64(8)}, kF16);
  PrimExpr v = PrimExpr(h) * Load(x, {PrimExpr(i)});
  EXPECT_EQ(HalfStoreValue(d, v).get(), v.get());
}

}  // namespace
}  // namespace tir
}  // namespace kiln
