// ScheduleBorderSplitConvs (conv.border_split): which nests it takes (static
// stride-1 convolutions of one group; by the rule, or the knob's 1 and 2),
// the tiles it makes (interior tiles read the input in place, border tiles a
// copy of their rows; no padding test anywhere), and the numbers of the lowered
// kernels against the default schedule's and the unscheduled function: odd
// channel counts and sizes, 1 x N, N x 1 (one flat line) and 1-D
// convolutions, asymmetric padding, padding wider than the kernel reaches, a
// batch of two, a bias + ReLU epilogue, packed weights, and the tile knobs.
#include "compiler/tir/conv_border_split_schedule.h"

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

bool Split(const PrimFunc& f) { return Print(f).find("line_task") != std::string::npos; }
bool CopiesBorders(const PrimFunc& f) { return Print(f).find("_border = T.decl_buffer") != std::string::npos; }

ScheduleKnobs Knobs(int64_t on, int64_t mr = 0, int64_t nr = 0) {
  ScheduleKnobs k;
  k.values["conv.border_split"] = on;
  if (mr) k.values["conv.mr"] = mr;
  if (nr) k.values["conv.nr"] = nr;
  return k;
}

PrimFunc Unscheduled(const Case& k) { return InlineElementwise(LowerBlocks(ParseFunc(Func(k), "conv"))); }

TEST(ConvBorderSplitScheduleTest, OnlyWithTheKnobStrideOneAndOneGroup) {
  Case k{1, 8, 6, 20, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  PrimFunc f = Unscheduled(k);
  EXPECT_EQ(ScheduleBorderSplitConvs(f, 1, {}), f);
  EXPECT_EQ(ScheduleBorderSplitConvs(f, 1, Knobs(0)), f);
  EXPECT_TRUE(Split(ScheduleBorderSplitConvs(f, 1, Knobs(1))));
  EXPECT_FALSE(Split(Lower(ParseFunc(Func(k), "conv"))));
  EXPECT_TRUE(Split(Lower(ParseFunc(Func(k), "conv"), Knobs(1))));
  Case grouped = k;
  grouped.groups = 2;
  PrimFunc gf = Unscheduled(grouped);
  EXPECT_EQ(ScheduleBorderSplitConvs(gf, 1, Knobs(1)), gf);
  Case strided{1, 8, 12, 40, 8, 3, 3, 2, 2, 1, 1, 1, 1};
  PrimFunc sf = Unscheduled(strided);
  EXPECT_EQ(ScheduleBorderSplitConvs(sf, 1, Knobs(1)), sf);
  // Lines under one vector (a 4 x 4 plane) stay with the direct kernel.
  Case small{1, 8, 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  PrimFunc pf = Unscheduled(small);
  EXPECT_EQ(ScheduleBorderSplitConvs(pf, 1, Knobs(1)), pf);
}

TEST(ConvBorderSplitScheduleTest, InteriorTilesReadTheInputInPlace) {
  // Rows of 100 columns, 1 x 5 kernel with padding 2: tiles of 48 columns
  // at 0 and 48 and one of 4 at 96. The first and last read padding (they
  // read a copy of their rows, 4 channels x (48 + 4) floats), the middle one
  // reads the input in place.
  Case k{1, 4, 3, 100, 8, 1, 5, 1, 1, 0, 2, 0, 2};
  std::string text = Print(ScheduleBorderSplitConvs(Unscheduled(k), 1, Knobs(1)));
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 48)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("data_border = T.decl_buffer((208,)"), std::string::npos) << text;
  EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
  EXPECT_NE(text.find("data[T.int64(0), c, "), std::string::npos) << text;  // in place
  // Rows of 40 columns with padding 1 (3 x 3): the first and last lines run
  // two of the three kernel rows, from a run-time start.
  Case t{1, 4, 6, 40, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  text = Print(ScheduleBorderSplitConvs(Unscheduled(t), 1, Knobs(1)));
  EXPECT_NE(text.find("T.max(0, (1 - line_task) // 1)"), std::string::npos) << text;
}

TEST(ConvBorderSplitScheduleTest, Numbers) {
  std::vector<Case> cases = {
      {1, 17, 9, 21, 23, 3, 3, 1, 1, 1, 1, 1, 1},        // odd channels and sizes
      {2, 5, 7, 37, 6, 1, 7, 1, 1, 0, 3, 0, 3},          // a batch of two, 1 x 7, rows of 37
      {1, 6, 13, 17, 7, 7, 1, 1, 1, 3, 0, 3, 0},         // 7 x 1: one flat line
      {1, 3, 15, 30, 5, 3, 3, 1, 1, 0, 1, 2, 0},         // asymmetric padding
      {1, 4, 5, 18, 9, 3, 3, 1, 1, 4, 5, 4, 5},          // padding wider than the kernel reaches
      {1, 5, 6, 19, 10, 3, 3, 1, 1, 1, 1, 1, 1, true},   // bias + ReLU
      {1, 5, 13, 17, 10, 7, 1, 1, 1, 3, 0, 3, 0, true},  // bias + ReLU after one flat line
      {1, 4, 3, 70, 3, 1, 1, 1, 1, 0, 0, 0, 0},          // pointwise, 70 columns
      {1, 6, 9, 33, 16, 3, 3, 1, 1, 1, 1, 1, 1, false, 1, true},  // packed weights
      {1, 3, 20, 16, 16, 5, 1, 1, 1, 2, 0, 2, 0, false, 1, true},  // packed, one flat line
  };
  // The rule's tile and two points of the knobs per case, each compiled and
  // run against the default schedule's kernel and the unscheduled function.
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "conv");
    PrimFunc reference = Lower(f, Knobs(2));  // the direct kernel
    for (auto [mr, nr] : {std::pair<int64_t, int64_t>{0, 0}, {3, 32}, {8, 16}}) {
      PrimFunc lowered = Lower(f, Knobs(1, mr, nr));
      ASSERT_TRUE(Split(lowered)) << k.Name() << "\n" << Print(lowered);
      Status s = SameNumbers(reference, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " mr " << mr << " nr " << nr << ": " << s.ToString() << "\n"
                          << Print(lowered);
      s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " mr " << mr << " nr " << nr << " (unscheduled): " << s.ToString();
    }
  }
}

// Built for two threads the lines are a parallel loop (tasks of image x
// line; a flat plane: its channel blocks in parts, here 2 blocks of 8 and
// the 4 channels left, which the last part computes); the same numbers.
TEST(ConvBorderSplitScheduleTest, TwoThreadsNumbers) {
  for (const Case& k : {Case{2, 5, 7, 37, 6, 1, 7, 1, 1, 0, 3, 0, 3}, Case{1, 6, 13, 17, 20, 7, 1, 1, 1, 3, 0, 3, 0},
                        Case{1, 6, 9, 33, 16, 3, 3, 1, 1, 1, 1, 1, 1, false, 1, true}}) {
    PrimFunc f = ParseFunc(Func(k), "conv");
    PrimFunc lowered = InlineElementwise(ApplyDefaultSchedule(InlineElementwise(LowerBlocks(f)), 2, Knobs(1)),
                                         /*after_schedule=*/true);
    std::string text = Print(lowered);
    ASSERT_TRUE(Split(lowered)) << k.Name() << "\n" << text;
    EXPECT_NE(text.find("T.parallel"), std::string::npos) << k.Name() << "\n" << text;
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << text;
  }
}

// A 1-D convolution reaches it lifted to height 1 (the default schedule's path).
TEST(ConvBorderSplitScheduleTest, Conv1dNumbers) {
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
  for (int64_t nr : {0, 16}) {
    PrimFunc lowered = Lower(f, Knobs(1, 0, nr));
    ASSERT_TRUE(Split(lowered)) << Print(lowered);
    EXPECT_TRUE(CopiesBorders(lowered)) << Print(lowered);
    Status s = SameNumbers(Lower(f, Knobs(2)), lowered);
    EXPECT_TRUE(s.ok()) << nr << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

// The rule (the knob unset): kernels whose taps all lie along the line over
// lines of 64 points or more with 256 KiB of weights or less;
// conv.border_split 2 leaves them to the direct kernel, 1 takes the others.
TEST(ConvBorderSplitScheduleTest, TheRuleTakesLongLinesOfKernelsAlongThem) {
  std::vector<Case> taken = {
      {1, 8, 6, 96, 8, 1, 7, 1, 1, 0, 3, 0, 3},    // 1 x 7 over rows of 96
      {1, 8, 1, 500, 8, 1, 5, 1, 1, 0, 2, 0, 2},   // one row of 500 (a 1-D conv lifted)
      {1, 8, 16, 24, 8, 7, 1, 1, 1, 3, 0, 3, 0},   // 7 x 1 over 24 columns: a flat line of 384
      {1, 5, 4, 16, 10, 5, 1, 1, 1, 2, 0, 2, 0, true},  // 5 x 1, a flat line of 64, + bias + ReLU
  };
  for (const Case& k : taken) {
    PrimFunc f = ParseFunc(Func(k), "conv");
    PrimFunc lowered = Lower(f);
    EXPECT_TRUE(Split(lowered)) << k.Name() << "\n" << Print(lowered);
    EXPECT_FALSE(Split(Lower(f, Knobs(2)))) << k.Name();
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString();
  }
  std::vector<Case> left = {
      {1, 8, 6, 96, 8, 3, 3, 1, 1, 1, 1, 1, 1},   // 3 x 3: taps across lines too
      {1, 17, 28, 28, 23, 3, 3, 1, 1, 1, 1, 1, 1},  // 3 x 3 over rows of 28 (0.92x by the knob)
      {1, 8, 17, 17, 8, 1, 7, 1, 1, 0, 3, 0, 3},  // 1 x 7 over rows of 17
      {1, 8, 6, 63, 8, 1, 5, 1, 1, 0, 2, 0, 2},   // rows of 63
      {1, 8, 3, 20, 8, 7, 1, 1, 1, 3, 0, 3, 0},   // 7 x 1 over a plane of 60
      {1, 8, 6, 96, 8, 1, 1, 1, 1, 0, 0, 0, 0},   // 1 x 1: nothing packed to leave out
      {1, 128, 100, 1, 128, 5, 1, 1, 1, 0, 0, 0, 0},  // 5 x 1 flat, 320 KiB of weights, read per tile
  };
  // conv.im2col asks for another kernel: the rule gives way to it.
  {
    ScheduleKnobs im2col;
    im2col.values["conv.im2col"] = 16;
    PrimFunc f = ParseFunc(Func(taken[0]), "conv");
    EXPECT_FALSE(Split(Lower(f, im2col)));
    im2col.values["conv.border_split"] = 1;
    EXPECT_TRUE(Split(Lower(f, im2col)));
  }
  for (const Case& k : left) {
    PrimFunc f = ParseFunc(Func(k), "conv");
    EXPECT_FALSE(Split(Lower(f))) << k.Name();
    EXPECT_TRUE(Split(Lower(f, Knobs(1)))) << k.Name();
  }
}

// A 1-D convolution of 100 points: the rule takes it through the lifting.
TEST(ConvBorderSplitScheduleTest, TheRuleTakesLongConv1d) {
  const char* text = R"(@T.prim_func
def conv1d(data: T.Buffer((1, 7, 100), "float32"), weight: T.Buffer((9, 7, 5), "float32"), conv1d: T.Buffer((1, 9, 100), "float32")):
    for i0, i1, i2, k0, k1 in T.grid(T.int64(1), T.int64(9), T.int64(100), T.int64(7), T.int64(5)):
        with T.block("conv1d"):
            v_i0, v_i1, v_i2, v_k0, v_k1 = T.axis.remap("SSSRR", [i0, i1, i2, k0, k1])
            with T.init():
                conv1d[v_i0, v_i1, v_i2] = T.float32(0)
            conv1d[v_i0, v_i1, v_i2] = conv1d[v_i0, v_i1, v_i2] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 2 >= 0 and v_i2 * 1 + v_k1 * 1 - 2 < 100, data[v_i0, v_k0, v_i2 * 1 + v_k1 * 1 - 2] * weight[v_i1, v_k0, v_k1], T.float32(0))
)";
  PrimFunc f = ParseFunc(text, "conv1d");
  PrimFunc lowered = Lower(f);
  ASSERT_TRUE(Split(lowered)) << Print(lowered);
  EXPECT_FALSE(Split(Lower(f, Knobs(2))));
  Status s = SameNumbers(f, lowered);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace tir
}  // namespace kiln
