// The copy-free column-stride-1 depthwise kernel of short planes
// (depthwise_inplace_symbolic.h) that ScheduleSymbolicConvs runs at run time:
// which nests take it, its run-time test beside the banded kernel, and
// numbers through the driver and the VM against a double-precision reference
// at run-time sizes on both sides of that test (widths around its vector
// boundaries, heights of 1 to 9 output rows: odd and even counts),
// 3x3 and 5x5, paddings 1 and 2 (left and right edges shifted in by one or
// two lanes, and a right padding other than the left), strides (1, 1) and
// (2, 1); no epilogue, scale + shift + ReLU and hard-swish; batches 1 to 3;
// one and two threads.
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

TEST(DepthwiseInPlaceSymbolicTest, TakesColumnStrideOne) {
  for (const DwCase& k : {DwCase{8, 3, 2, 1, 1, "hardswish"}, DwCase{8, 3, 1, 1, 1, "bn_relu"}, DwCase{8, 5, 2, 1, 2},
                          DwCase{8, 5, 1, 1, 1}, DwCase{8, 3, 1, 1, 2}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    // Tiles of 2 rows x 2 vectors, and of the last row; none taller (the
    // code each conv adds to the compile).
    EXPECT_TRUE(dw_test::HasTile(text, "dwi", 2, 32)) << text;
    EXPECT_TRUE(dw_test::HasTile(text, "dwi", 1, 32)) << text;
    EXPECT_FALSE(dw_test::HasTile(text, "dwi", 3, 32)) << text;
    EXPECT_FALSE(dw_test::HasTile(text, "dwi", 4, 32)) << text;
    // Edge taps shifted in: one lane for padding 1, two for padding 2.
    EXPECT_TRUE(Has(text, "dwi_shift1")) << text;
    EXPECT_EQ(Has(text, "dwi_shift2"), k.pad == 2 || k.k - 1 - k.pad == 2) << text;
    // Each tile's vector loops inside an unrolled loop (explicit vectors,
    // not a loop each for LLVM's loop passes: the compile time).
    EXPECT_TRUE(Has(text, "for dwi_once in T.unroll(")) << text;
    // The banded kernel stays below the run-time test.
    EXPECT_TRUE(Has(text, "_band = T.decl_buffer")) << text;
  }
  // Column stride 2: not its.
  for (const DwCase& k : {DwCase{8, 3, 2, 2, 1}, DwCase{8, 3, 1, 2, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(Has(testing::Print(f), "dwi_acc")) << testing::Print(f);
  }
}

// (h, w) with output widths under the run-time test (31, 32, 33 with
// padding 2), at its ends (34, 64) and between (40, 47, 48, 49, 50, 63),
// past it (65, 100), and output heights 1 to 9 at either row stride.
const std::vector<std::pair<int64_t, int64_t>> kSizes = {
    {1, 33}, {2, 34}, {3, 40}, {4, 50}, {5, 47}, {6, 48}, {7, 49}, {8, 63},  {9, 64},  {16, 50},
    {17, 64}, {18, 63}, {12, 49}, {2, 31}, {3, 32}, {4, 65}, {4, 100}, {10, 34}, {20, 50}};

TEST(DepthwiseInPlaceSymbolicTest, Numbers) {
  CheckNumbers(DwCase{5, 3, 1, 1, 1}, 1, kSizes, 1);
  CheckNumbers(DwCase{4, 3, 2, 1, 1, "hardswish"}, 2, kSizes, 2);
  CheckNumbers(DwCase{3, 5, 2, 1, 2, "hardswish"}, 1, kSizes, 3);
  CheckNumbers(DwCase{3, 5, 1, 1, 2, "bn_relu"}, 2, kSizes, 1);
  // Padding 1 at 5x5 (right padding 1, output 4 columns narrower): heights of 3 and more.
  std::vector<std::pair<int64_t, int64_t>> tall;
  for (const auto& hw : kSizes)
    if (hw.first >= 3) tall.push_back(hw);
  CheckNumbers(DwCase{3, 5, 1, 1, 1}, 1, tall, 2);
  CheckNumbers(DwCase{3, 3, 2, 1, 2, "bn_relu"}, 1, kSizes, 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
