// The model check's judgement from timings (model_check.h): the paired
// ratios' median, "faster beyond the noise" (median below 1 - margin and
// faster in most rounds), and which records cost time in the model (their
// kernels' in-model time not below the default's).
#include "compiler/tune/model_check.h"

#include <gtest/gtest.h>

namespace kiln {
namespace tune {
namespace {

BuildTiming T(double ms, std::map<std::string, double> kernels = {}) {
  BuildTiming t;
  t.ms = ms;
  t.kernel_us = std::move(kernels);
  return t;
}

TEST(ModelCheckTest, MedianOfPairedRatios) {
  PairedTimings t;
  // Rounds where the machine got slower for both: the pairs still say 0.9.
  t.base = {T(2.0), T(4.0), T(3.0)};
  t.other = {T(1.8), T(3.6), T(2.7)};
  int faster = 0;
  EXPECT_NEAR(MedianRatio(t, &faster), 0.9, 1e-12);
  EXPECT_EQ(faster, 3);
  EXPECT_TRUE(FasterBeyondNoise(t, 0.01));
  EXPECT_FALSE(FasterBeyondNoise(t, 0.2));
}

TEST(ModelCheckTest, NotFasterWhenMostRoundsAreNot) {
  PairedTimings t;
  // Ratios 0.5, 0.95, 1.01, 1.02, 0.8: median 0.95, faster in 3 of 5.
  t.base = {T(1), T(1), T(1), T(1), T(1)};
  t.other = {T(0.5), T(0.95), T(1.01), T(1.02), T(0.8)};
  int faster = 0;
  EXPECT_NEAR(MedianRatio(t, &faster), 0.95, 1e-12);
  EXPECT_EQ(faster, 3);
  EXPECT_TRUE(FasterBeyondNoise(t, 0.01));
  // One round fewer faster: median 1.01, faster in 2 of 5.
  t.other = {T(0.5), T(0.95), T(1.01), T(1.02), T(1.03)};
  EXPECT_NEAR(MedianRatio(t, &faster), 1.01, 1e-12);
  EXPECT_EQ(faster, 2);
  EXPECT_FALSE(FasterBeyondNoise(t, 0.01));
  // Slower by 3 % in every round (MobileNetV3's tuned build): not faster.
  t.other = {T(1.03), T(1.03), T(1.03), T(1.03), T(1.03)};
  EXPECT_FALSE(FasterBeyondNoise(t, 0.01));
  // Faster, but by less than the margin.
  t.other = {T(0.995), T(0.995), T(0.995), T(0.995), T(0.995)};
  EXPECT_FALSE(FasterBeyondNoise(t, 0.01));
  EXPECT_TRUE(FasterBeyondNoise(t, 0.001));
}

TEST(ModelCheckTest, RecordsThatCostTimeInTheModel) {
  PairedTimings t;
  // A task of two kernels (k1, k2) and one of one (k3); k4 is untouched.
  t.base = {T(1, {{"k1", 10}, {"k2", 10}, {"k3", 30}, {"k4", 5}}),
            T(1, {{"k1", 12}, {"k2", 12}, {"k3", 36}, {"k4", 5}})};
  t.other = {T(1, {{"k1", 9}, {"k2", 12}, {"k3", 27}, {"k4", 5}}),
             T(1, {{"k1", 11}, {"k2", 14}, {"k3", 33}, {"k4", 5}})};
  // k1 + k2: 20 -> 21 and 24 -> 25: slower in the model.
  EXPECT_NEAR(InModelRatio(t, {"k1", "k2"}), (21.0 / 20 + 25.0 / 24) / 2, 1e-12);
  EXPECT_TRUE(CostsTimeInModel(t, {"k1", "k2"}));
  // k3 alone: 0.9 and 0.917: faster.
  EXPECT_FALSE(CostsTimeInModel(t, {"k3"}));
  // Equal: not faster, so it does not stay.
  EXPECT_TRUE(CostsTimeInModel(t, {"k4"}));
  // Kernels the traces never saw: nothing says the record helps.
  EXPECT_TRUE(CostsTimeInModel(t, {"nowhere"}));
  EXPECT_EQ(InModelRatio(t, {"nowhere"}), 1.0);
  double base = 0, other = 0;
  InModelUs(t, {"k1", "k2"}, &base, &other);
  EXPECT_DOUBLE_EQ(base, 22);
  EXPECT_DOUBLE_EQ(other, 23);
}

}  // namespace
}  // namespace tune
}  // namespace kiln
