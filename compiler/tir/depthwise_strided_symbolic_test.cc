// The copy-free column-stride-2 depthwise kernel (depthwise_strided_symbolic.h)
// that ScheduleSymbolicConvs runs for wide enough rows: which nests take it,
// its run-time test beside the banded kernel, and numbers through the driver
// and the VM against a double-precision reference at run-time sizes on both
// sides of that test (odd and even heights and widths, rows whose inside
// columns end in each kind of last tile), 3x3/2 with padding 1 (the first
// vector shifted in), 1x1/2 without padding, 2x2/2 with padding 1 (a left edge
// column one by one), 3x3/(1, 2); no epilogue, scale + shift + ReLU and
// hard-swish; batches of one and two; one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/depthwise_symbolic_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using namespace test_util;  // NOLINT

using dw_test::CheckNumbers;
using dw_test::DwCase;
using dw_test::DwModule;
using dw_test::Has;
using dw_test::Options;

TEST(DepthwiseStridedSymbolicTest, TakesColumnStrideTwo) {
  for (const DwCase& k : {DwCase{8, 3, 2, 2, 1, "hardswish"}, DwCase{8, 3, 1, 2, 1, "bn_relu"}, DwCase{4, 1, 2, 2, 0},
                          DwCase{4, 2, 2, 2, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    EXPECT_TRUE(dw_test::HasTile(text, "dwd", 4, 32)) << text;
    // The tile that ends a row: two vectors or one, moved back.
    EXPECT_TRUE(dw_test::HasTile(text, "dwd", 4, 16)) << text;
    // Rows whose taps leave the input: single-row tiles.
    EXPECT_TRUE(dw_test::HasTile(text, "dwd", 1, 32)) << text;
    // The 3x3 windows with padding 1 shift the left edge column in; the
    // 2x2 one computes it one by one.
    EXPECT_EQ(Has(text, "dwd_shifted"), k.k == 3) << text;
    // No copy of the input in this kernel: the banded one, taken below the
    // run-time test, is the only one with a band.
    TileCensus tiles = CountTiles(f);
    EXPECT_EQ(tiles.global_updates, 0);
    EXPECT_GE(tiles.parallel, 1);
    EXPECT_TRUE(Has(text, "_band = T.decl_buffer")) << text;
    EXPECT_TRUE(Has(text, "dwd_xb")) << text;
  }
  // Column stride 1, and 5-wide windows: not its.
  for (const DwCase& k : {DwCase{8, 3, 2, 1, 1}, DwCase{8, 5, 2, 2, 2}, DwCase{8, 3, 1, 1, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(Has(testing::Print(f), "dwd_acc")) << testing::Print(f);
  }
}

// Widths: under the run-time test (the banded kernel's: 30, 32, 33 for 3x3),
// one tile of two overlapping vectors (34, 40, 63), the first tile only (64,
// 65), a last tile of one vector (80, 81, 97) and of two (100, 127), whole
// tiles (128, 129), several tiles (161, 320); heights under a tile of inside
// rows (1, 3, 7), odd and even, a last row tile moved back (13, 22).
const std::vector<std::pair<int64_t, int64_t>> kSizes = {
    {8, 30},   {9, 32},    {8, 33},    {10, 34},  {7, 40},   {9, 63},   {8, 64},  {9, 65},  {7, 80},
    {10, 81},  {11, 97},   {13, 100},  {12, 127}, {16, 128}, {17, 129}, {22, 161}, {40, 320}, {3, 200}, {1, 64}};

TEST(DepthwiseStridedSymbolicTest, Numbers) {
  CheckNumbers(DwCase{5, 3, 2, 2, 1}, 1, kSizes, 1);
  CheckNumbers(DwCase{4, 3, 2, 2, 1, "hardswish"}, 2, kSizes, 2);
  CheckNumbers(DwCase{3, 3, 2, 2, 1, "bn_relu"}, 1, kSizes, 1);
  CheckNumbers(DwCase{3, 3, 1, 2, 1, "bn_relu"}, 2, kSizes, 1);
  CheckNumbers(DwCase{3, 1, 2, 2, 0, "hardswish"}, 1, kSizes, 2);
  CheckNumbers(DwCase{3, 2, 2, 2, 1}, 2, kSizes, 1);
}

// Narrow rows (under 17 output columns: not this kernel's) at column stride
// 2 with 16 or more channels: the channel-block kernel
// (depthwise_channel_block_symbolic.h) up to a 4 MiB window, not the
// per-channel tiles; column stride 1 keeps the 32 KiB (L1) window.
TEST(DepthwiseStridedSymbolicTest, NarrowRowsTakeChannelBlock) {
  for (const DwCase& k : {DwCase{32, 3, 2, 2, 1, "hardswish"}, DwCase{32, 3, 1, 1, 1, "hardswish"}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    EXPECT_TRUE(Has(text, "transpose16")) << text;
    EXPECT_EQ(Has(text, "4194304"), k.sw == 2) << text;
    EXPECT_EQ(Has(text, "32768"), k.sw == 1) << text;
  }
}

// Sizes on both sides of the window limits: 40 x 24 -> 20 x 12 (a 64 KiB
// window at 3x3/2), 8 x 24 (within 32 KiB), 2600 x 24 (3x3/2: just under 4
// MiB; 5x5/2: over), 2700 x 24 (over), 30 x 28 (14 columns), 30 x 32 (this
// kernel's), channels not a multiple of 16 (the last block moved back).
TEST(DepthwiseStridedSymbolicTest, NarrowRowsNumbers) {
  std::vector<std::pair<int64_t, int64_t>> sizes = {{40, 24}, {8, 24}, {2600, 24}, {2700, 24}, {30, 28}, {30, 32}};
  CheckNumbers(DwCase{20, 3, 2, 2, 1, "hardswish"}, 2, sizes, 1);
  CheckNumbers(DwCase{16, 5, 2, 2, 2, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(DwCase{24, 3, 1, 2, 1}, 1, {{40, 24}, {12, 24}}, 2);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
