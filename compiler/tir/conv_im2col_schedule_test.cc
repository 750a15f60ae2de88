// ScheduleIm2colConvs (the conv.im2col knob): which nests it takes (static
// convolutions of one group, only with the knob set), the chunk it makes of
// small planes and long rows, and the numbers of the lowered kernels against
// the unscheduled function at odd channel counts and sizes, 1 x N and N x 1
// windows, a stride with asymmetric padding, a batch of two, a bias + ReLU
// epilogue and a 1-D convolution, over the chunk sizes and two tile heights.
#include "compiler/tir/conv_im2col_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/conv_block_test_util.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;
using testing::SameNumbers;

using conv_block_test::Case;
using conv_block_test::Func;
using conv_block_test::Lower;

bool HasPanel(const PrimFunc& f) { return Print(f).find("_panel = T.decl_buffer") != std::string::npos; }

ScheduleKnobs Knobs(int64_t points, int64_t mr = 0) {
  ScheduleKnobs k;
  k.values["conv.im2col"] = points;
  if (mr) k.values["conv.mr"] = mr;
  return k;
}

TEST(ConvIm2colScheduleTest, OnlyWithTheKnobAndOneGroup) {
  Case k{1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "conv")));
  EXPECT_EQ(ScheduleIm2colConvs(f, 1, {}), f);
  EXPECT_EQ(ScheduleIm2colConvs(f, 1, Knobs(0)), f);
  EXPECT_TRUE(HasPanel(ScheduleIm2colConvs(f, 1, Knobs(16))));
  EXPECT_FALSE(HasPanel(Lower(ParseFunc(Func(k), "conv"))));
  // Grouped and depthwise convolutions are not its.
  for (int64_t groups : {2, 8}) {
    Case g = k;
    g.groups = groups;
    PrimFunc gf = InlineElementwise(LowerBlocks(ParseFunc(Func(g), "conv")));
    EXPECT_EQ(ScheduleIm2colConvs(gf, 1, Knobs(16)), gf) << groups;
  }
}

TEST(ConvIm2colScheduleTest, ChunksAreWholeVectorsOfPoints) {
  // A 4 x 4 plane is one chunk of 16 points (four whole rows); a row of 37
  // columns with 32 points a chunk takes two chunks a row, the second guarded.
  Case small{1, 8, 4, 4, 12, 3, 3, 1, 1, 1, 1, 1, 1};
  std::string text = Print(ScheduleIm2colConvs(InlineElementwise(LowerBlocks(ParseFunc(Func(small), "conv"))), 1,
                                               Knobs(16)));
  EXPECT_NE(text.find("data_panel = T.decl_buffer((1152,)"), std::string::npos) << text;  // 72 taps x 16
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text;  // the last 4 channels
  Case row{1, 3, 5, 37, 4, 1, 1, 1, 1, 0, 0, 0, 0};
  text = Print(ScheduleIm2colConvs(InlineElementwise(LowerBlocks(ParseFunc(Func(row), "conv"))), 1, Knobs(32, 3)));
  EXPECT_NE(text.find("in range(T.int64(10))"), std::string::npos) << text;  // 5 rows x 2 chunks
  EXPECT_NE(text.find("acc = T.decl_buffer((3, 32)"), std::string::npos) << text;
}

TEST(ConvIm2colScheduleTest, Numbers) {
  std::vector<Case> cases = {
      {1, 17, 9, 11, 23, 3, 3, 1, 1, 1, 1, 1, 1},        // odd channels and sizes
      {1, 8, 4, 4, 12, 3, 3, 1, 1, 1, 1, 1, 1},          // a 4 x 4 plane
      {2, 5, 7, 37, 6, 1, 7, 1, 1, 0, 3, 0, 3},          // a batch of two, 1 x 7, rows of 37
      {1, 6, 13, 5, 7, 7, 1, 1, 1, 3, 0, 3, 0},          // 7 x 1 on narrow rows
      {1, 3, 15, 17, 5, 3, 3, 2, 2, 0, 1, 1, 0},         // stride 2, asymmetric padding
      {1, 5, 6, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, true},    // bias + ReLU
      {1, 4, 3, 70, 3, 1, 1, 1, 1, 0, 0, 0, 0},          // pointwise, 70 columns
  };
  // Two points of the knobs per case (each compiled and run), rotating so
  // that every chunk size meets both tile heights.
  const int64_t sizes[] = {16, 32, 48, 64};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    PrimFunc f = ParseFunc(Func(k), "conv");
    for (auto [points, mr] : {std::pair<int64_t, int64_t>{sizes[i % 4], 0}, {sizes[(i + 2) % 4], 3}}) {
      PrimFunc lowered = Lower(f, Knobs(points, mr));
      ASSERT_TRUE(HasPanel(lowered)) << k.Name() << "\n" << Print(lowered);
      Status s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " points " << points << " mr " << mr << ": " << s.ToString() << "\n"
                          << Print(lowered);
    }
  }
}

// A 1-D convolution reaches it lifted to height 1 (the default schedule's path).
TEST(ConvIm2colScheduleTest, Conv1dNumbers) {
  const char* text = R"(@T.prim_func
def conv1d(data: T.Buffer((1, 7, 53), "float32"), weight: T.Buffer((9, 7, 5), "float32"), conv1d: T.Buffer((1, 9, 53), "float32")):
    for i0, i1, i2, k0, k1 in T.grid(T.int64(1), T.int64(9), T.int64(53), T.int64(7), T.int64(5)):
        with T.block("conv1d"):
            v_i0, v_i1, v_i2, v_k0, v_k1 = T.axis.remap("SSSRR", [i0, i1, i2, k0, k1])
            with T.init():
                conv1d[v_i0, v_i1, v_i2] = T.float32(0)
            conv1d[v_i0, v_i1, v_i2] = conv1d[v_i0, v_i1, v_i2] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 2 >= 0 and v_i2 * 1 + v_k1 * 1 - 2 < 53, data[v_i0, v_k0, v_i2 * 1 + v_k1 * 1 - 2] * weight[v_i1, v_k0, v_k1], T.float32(0))
)";
  PrimFunc f = ParseFunc(text, "conv1d");
  for (int64_t points : {16, 48}) {
    PrimFunc lowered = Lower(f, Knobs(points));
    ASSERT_TRUE(HasPanel(lowered)) << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << points << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
