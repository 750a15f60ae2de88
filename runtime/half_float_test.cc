#include "runtime/half_float.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace kiln {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(HalfFloat, FloatToHalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00u);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000u);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bffu);                // the largest half
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bffu);                // below the midpoint
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00u);                // the midpoint rounds to inf
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00u);      // a tie goes to the even mantissa
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02u);      // a tie goes to the even mantissa
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001u);   // the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000u);   // half of it: a tie, to zero
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002u);   // 1.5 units: a tie, to two
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000u);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7e00u);
}

TEST(HalfFloat, HalfToFloatIsExact) {
  EXPECT_EQ(HalfToFloat(0x3c00u), 1.0f);
  EXPECT_EQ(HalfToFloat(0x7bffu), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x83ffu), -std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(HalfToFloat(0xfc00u)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00u)));
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) continue;  // NaNs keep no payload
    EXPECT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(HalfFloat, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80u);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808000u)), 0x3f80u);  // a tie, to the even one
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f818000u)), 0x3f82u);  // a tie, to the even one
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808001u)), 0x3f81u);  // above the tie
  EXPECT_EQ(FloatToBFloat16(FromBits(0x7f7fffffu)), 0x7f80u);  // the largest float rounds to inf
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()) & 0x7fc0u, 0x7fc0u);
  EXPECT_EQ(BFloat16ToFloat(0x3f80u), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xc040u), -3.0f);
}

}  // namespace
}  // namespace kiln
