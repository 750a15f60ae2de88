// BuildBandedWinograd's own refusals (the winograd-conv2d pass checks the
// same conditions before it calls it: these fire only on a caller's bug).
// The kernel's numbers are checked through the driver in
// compiler/tir/winograd_symbolic_test.cc (BandedWhenTheTilesAreLarge); the
// rewrite that calls it in winograd_conv2d_test.cc (BandedBeforeAfter).
#include "compiler/transform/winograd_banded.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

ir::PrimExpr I(int64_t v) { return ir::IntImm(DType::Int64(), v); }

transform::BandedWinogradSpec Spec() {
  transform::BandedWinogradSpec s;
  s.m = 2, s.alpha = 4;
  s.bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  s.at = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  s.c = 16, s.o = 16, s.ou = 16;
  s.n = I(1), s.h = I(8), s.w = I(8), s.ho = I(8), s.wo = I(8);
  s.pad_top = s.pad_left = 1;
  return s;
}

TEST(WinogradBanded, BuildsAnOutEWiseFusableKernel) {
  Result<transform::BandedWinogradKernel> k = transform::BuildBandedWinograd("banded", Spec());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->f->params.size(), 3u);  // X, U, Y: every size static
  EXPECT_TRUE(k->tir_vars.empty());
}

TEST(WinogradBanded, RefusesASymbolicWidthOrOddChannels) {
  transform::BandedWinogradSpec s = Spec();
  s.w = ir::PrimExpr(ir::MakeVar("w", DType::Int64()));
  Result<transform::BandedWinogradKernel> k = transform::BuildBandedWinograd("banded", s);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("needs a static width and output channels a multiple of 16"), std::string::npos)
      << k.status().message();
  s = Spec();
  s.o = 24;
  EXPECT_FALSE(transform::BuildBandedWinograd("banded", s).ok());
}

TEST(WinogradBanded, RefusesPaddingWiderThanTheTiles) {
  transform::BandedWinogradSpec s = Spec();
  s.pad_left = 40;  // inconsistent with wo = 8
  Result<transform::BandedWinogradKernel> k = transform::BuildBandedWinograd("banded", s);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("padding wider than the tiles read"), std::string::npos) << k.status().message();
}

}  // namespace
}  // namespace kiln
