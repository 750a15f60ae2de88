// ScheduleChannelLaneConvs (conv_channel_lanes.h): the rule (weights packed
// in blocks of 16, one group, planes of at most 64 points) and the knob
// conv.channel_lanes; the taps that read padding are not emitted; and the
// numbers of the lowered kernel against the direct kernel's and the
// unscheduled function's, over planes of 1 x 1 to 8 x 8 and one row, odd
// channel counts (output channels not a multiple of 16), bias + ReLU,
// stride 2, a batch of two, and weights as given, packed by 8 or by 16.
#include "compiler/tir/conv_channel_lanes.h"

#include <gtest/gtest.h>

#include <string>
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

bool Lanes(const PrimFunc& f) { return Print(f).find("acc_cl") != std::string::npos; }

ScheduleKnobs Knobs(int64_t mode) {
  ScheduleKnobs k;
  k.values["conv.channel_lanes"] = mode;
  return k;
}

PrimFunc Unscheduled(const Case& k) { return InlineElementwise(LowerBlocks(ParseFunc(Func(k), "conv"))); }

Case Packed16(Case k) {
  k.packed = true;
  k.block = 16;
  return k;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ConvChannelLanesTest, RuleOnTheGeometry) {
  EXPECT_TRUE(ChannelLanesRuleTakes(128, 128, 3, 3, 4, 4, 1));
  EXPECT_TRUE(ChannelLanesRuleTakes(32, 64, 3, 3, 8, 8, 1));
  EXPECT_TRUE(ChannelLanesRuleTakes(64, 64, 3, 3, 1, 32, 1));
  EXPECT_TRUE(ChannelLanesRuleTakes(64, 64, 3, 3, 1, 1, 1));    // the centre tap only
  EXPECT_TRUE(ChannelLanesRuleTakes(64, 64, 1, 1, 5, 5, 1));
  EXPECT_FALSE(ChannelLanesRuleTakes(64, 64, 1, 1, 6, 6, 1));   // pointwise: at most 25 points
  EXPECT_FALSE(ChannelLanesRuleTakes(64, 64, 1, 1, 1, 1, 1));   // a matrix-vector product
  EXPECT_FALSE(ChannelLanesRuleTakes(128, 128, 3, 3, 9, 9, 1));   // 81 points
  EXPECT_FALSE(ChannelLanesRuleTakes(40, 128, 3, 3, 4, 4, 1));    // not whole blocks of 16
  EXPECT_FALSE(ChannelLanesRuleTakes(16, 128, 3, 3, 4, 4, 1));    // one block
  EXPECT_FALSE(ChannelLanesRuleTakes(128, 64, 3, 3, 4, 4, 2));    // grouped
  EXPECT_FALSE(ChannelLanesRuleTakes(32, 1, 1, 256, 1, 13, 1));   // 256 taps
}

TEST(ConvChannelLanesTest, TheRuleTakesWeightsPackedBy16AndTheKnobAnyLayout) {
  Case k = Packed16({1, 128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 1, 1});
  PrimFunc f = ParseFunc(Func(k), "conv");
  EXPECT_TRUE(Lanes(Lower(f)));
  EXPECT_FALSE(Lanes(Lower(f, Knobs(2))));
  // Weights as given or packed by 8: the direct kernel, unless the knob asks.
  for (Case other : {Case{1, 128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 1, 1},
                     Case{1, 128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 1, true}}) {
    PrimFunc g = ParseFunc(Func(other), "conv");
    EXPECT_FALSE(Lanes(Lower(g))) << other.Name();
    EXPECT_TRUE(Lanes(Lower(g, Knobs(1)))) << other.Name();
  }
  // Planes beyond 64 points and grouped convs: never.
  Case big = Packed16({1, 32, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1});
  EXPECT_FALSE(Lanes(Lower(ParseFunc(Func(big), "conv"), Knobs(1))));
  Case grouped{1, 32, 4, 4, 32, 3, 3, 1, 1, 1, 1, 1, 1, false, 2};
  EXPECT_FALSE(Lanes(Lower(ParseFunc(Func(grouped), "conv"), Knobs(1))));
  // Another conv knob's kernel asked for: the rule gives way.
  ScheduleKnobs im2col;
  im2col.values["conv.im2col"] = 16;
  EXPECT_FALSE(Lanes(Lower(f, im2col)));
}

TEST(ConvChannelLanesTest, TapsReadingPaddingAreNotEmitted) {
  // A 3 x 3 pad-1 kernel over 4 x 4: 100 of the 144 point-tap pairs read
  // the input; one FMA each, per input channel (the loop), all in one tile.
  Case k = Packed16({1, 8, 4, 4, 32, 3, 3, 1, 1, 1, 1, 1, 1});
  std::string text = Print(ScheduleChannelLaneConvs(Unscheduled(k), 1));
  EXPECT_EQ(Count(text, "\"fma\""), 100u) << text;
  EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
  // 2 x 2: 16 of 36, for each of the two blocks of the tile (4 points,
  // so both blocks of 16 channels in one tile: 8 accumulators).
  Case s = Packed16({1, 8, 2, 2, 32, 3, 3, 1, 1, 1, 1, 1, 1});
  text = Print(ScheduleChannelLaneConvs(Unscheduled(s), 1));
  EXPECT_EQ(Count(text, "\"fma\""), 32u) << text;
  EXPECT_NE(text.find("acc_cl = T.decl_buffer((4, 32)"), std::string::npos) << text;
  // conv.lane_blocks 1: one block a tile.
  ScheduleKnobs one;
  one.values["conv.lane_blocks"] = 1;
  EXPECT_EQ(Count(Print(ScheduleChannelLaneConvs(Unscheduled(s), 1, one)), "\"fma\""), 16u);
}

TEST(ConvChannelLanesTest, Numbers) {
  std::vector<Case> cases = {
      Packed16({1, 16, 1, 1, 32, 3, 3, 1, 1, 1, 1, 1, 1}),        // 1 x 1 plane: the centre tap only
      Packed16({1, 8, 2, 2, 32, 3, 3, 1, 1, 1, 1, 1, 1}),
      Packed16({1, 5, 2, 2, 80, 3, 3, 1, 1, 1, 1, 1, 1, true}),   // tasks of 4 blocks and one left
      Packed16({1, 5, 3, 3, 48, 3, 3, 1, 1, 1, 1, 1, 1}),
      Packed16({1, 7, 4, 4, 32, 3, 3, 1, 1, 1, 1, 1, 1, true}),   // bias + ReLU
      Packed16({1, 3, 5, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1}),
      Packed16({1, 4, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1}),         // 49 points: tiles of 13, 12, 12, 12
      Packed16({1, 4, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, true}),
      Packed16({1, 6, 1, 40, 32, 1, 5, 1, 1, 0, 2, 0, 2}),        // one row of 40
      Packed16({2, 5, 4, 4, 32, 1, 1, 1, 1, 0, 0, 0, 0}),         // a batch of two, pointwise
      Packed16({1, 6, 8, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1}),         // stride 2: 4 x 4
      Packed16({1, 3, 6, 6, 32, 5, 5, 1, 1, 2, 2, 2, 2}),         // 5 x 5, pad 2
      {1, 37, 4, 4, 40, 3, 3, 1, 1, 1, 1, 1, 1, true},            // OIHW, 40 = 16 + 16 + 8 channels
      {1, 9, 3, 5, 19, 3, 3, 1, 1, 0, 1, 2, 0},                   // OIHW, 19 channels, asymmetric padding
      {1, 6, 4, 4, 24, 3, 3, 1, 1, 1, 1, 1, 1, false, 1, true},   // packed by 8: 16 + 8
  };
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "conv");
    PrimFunc lowered = Lower(f, Knobs(1));
    ASSERT_TRUE(Lanes(lowered)) << k.Name() << "\n" << Print(lowered);
    Status s = SameNumbers(Lower(f, Knobs(2)), lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << Print(lowered);
    s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << " (unscheduled): " << s.ToString();
  }
}

// Built for two threads the (image, block) tasks are a parallel loop when
// the work is large enough; the numbers stay the same.
TEST(ConvChannelLanesTest, ParallelTasks) {
  Case k = Packed16({1, 64, 4, 4, 64, 3, 3, 1, 1, 1, 1, 1, 1});
  PrimFunc f = ParseFunc(Func(k), "conv");
  PrimFunc two = InlineElementwise(ApplyDefaultSchedule(InlineElementwise(LowerBlocks(f)), 2, {}), true);
  ASSERT_TRUE(Lanes(two));
  EXPECT_NE(Print(two).find("T.parallel(T.int64(4))"), std::string::npos) << Print(two);
  Status s = SameNumbers(f, two);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace tir
}  // namespace kiln
