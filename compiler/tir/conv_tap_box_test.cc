// The taps of a convolution that read inside its input for a run of output
// positions (conv_tap_box.h).
#include "compiler/tir/conv_tap_box.h"

#include <gtest/gtest.h>

namespace kiln {
namespace tir {
namespace conv {
namespace {

ConvNest Geometry(int64_t h, int64_t w, int64_t k, int64_t pad, int64_t stride = 1, int64_t dilation = 1) {
  ConvNest cv;
  cv.h = h;
  cv.w = w;
  cv.kh = cv.kw = k;
  cv.pt = cv.pl = pad;
  cv.sh = cv.sw = stride;
  cv.dh = cv.dw = dilation;
  cv.ho = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  cv.wo = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  return cv;
}

TEST(ConvTapBoxTest, CornersReadOnlyTheTapsTowardsTheImage) {
  ConvNest cv = Geometry(7, 7, 3, 1);
  // (6, 6), the 49th column: rows and columns 0..1 of the kernel.
  TapBox last = TapsReadingInput(cv, 48, 49);
  EXPECT_EQ(last.ky_lo, 0);
  EXPECT_EQ(last.ky_hi, 1);
  EXPECT_EQ(last.kx_lo, 0);
  EXPECT_EQ(last.kx_hi, 1);
  EXPECT_EQ(last.taps(), 4);
  // (0, 0): rows and columns 1..2.
  TapBox first = TapsReadingInput(cv, 0, 1);
  EXPECT_EQ(first.ky_lo, 1);
  EXPECT_EQ(first.kx_lo, 1);
  EXPECT_EQ(first.taps(), 4);
  // The whole last row: every column of the kernel, rows 0..1.
  TapBox row = TapsReadingInput(cv, 42, 49);
  EXPECT_EQ(row.taps(), 6);
  // An interior position: all nine.
  EXPECT_EQ(TapsReadingInput(cv, 24, 25).taps(), 9);
}

TEST(ConvTapBoxTest, DilationStrideAndEmptyRuns) {
  // Dilation 2, 9x9 -> 7x7: (6, 6) reads rows 5, 7, 9 at ky 0, 1, 2; 9 is out.
  TapBox d = TapsReadingInput(Geometry(9, 9, 3, 1, 1, 2), 48, 49);
  EXPECT_EQ(d.ky_hi, 1);
  EXPECT_EQ(d.kx_hi, 1);
  // Stride 2, 8x8 -> 4x4 with padding 1: (3, 3) reads rows 5..7, all inside.
  EXPECT_EQ(TapsReadingInput(Geometry(8, 8, 3, 1, 2), 15, 16).taps(), 9);
  // No positions: an empty box.
  TapBox none = TapsReadingInput(Geometry(7, 7, 3, 1), 5, 5);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.taps(), 0);
  // A kernel wider than the padded input reaches it only where it overlaps:
  // 1x1 input, 3x3 kernel, padding 1: only the centre tap.
  TapBox centre = TapsReadingInput(Geometry(1, 1, 3, 1), 0, 1);
  EXPECT_EQ(centre.ky_lo, 1);
  EXPECT_EQ(centre.ky_hi, 1);
  EXPECT_EQ(centre.taps(), 1);
}

}  // namespace
}  // namespace conv
}  // namespace tir
}  // namespace kiln
