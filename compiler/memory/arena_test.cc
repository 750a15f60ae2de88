// First-fit arena layout: disjoint lifetimes share bytes, overlapping ones
// never do, offsets and the total are 64-byte aligned.
#include "compiler/memory/arena.h"

#include <gtest/gtest.h>

namespace kiln {
namespace memory {
namespace {

bool Overlap(const ArenaBuffer& a, uint64_t oa, const ArenaBuffer& b, uint64_t ob) {
  bool in_time = a.begin <= b.end && b.begin <= a.end;
  bool in_space = oa < ob + AlignUp(b.bytes) && ob < oa + AlignUp(a.bytes);
  return in_time && in_space && a.bytes > 0 && b.bytes > 0;
}

TEST(Arena, ChainReusesTheFirstBuffer) {
  // a -> b -> c: c may take a's bytes, b may not.
  std::vector<ArenaBuffer> bufs = {{100, 1, 2}, {200, 2, 3}, {100, 3, 4}};
  ArenaLayout l = LayOutArena(bufs);
  EXPECT_EQ(l.offsets, (std::vector<uint64_t>{0, 128, 0}));
  EXPECT_EQ(l.total_bytes, 128u + 256u);
}

TEST(Arena, LargerLaterBufferGoesAfterLiveOnes) {
  std::vector<ArenaBuffer> bufs = {{64, 1, 5}, {64, 2, 2}, {256, 3, 4}};
  ArenaLayout l = LayOutArena(bufs);
  // b died at 2: c fits at 64 (b's place) only if big enough there; nothing
  // after 64 is live, so c starts at 64.
  EXPECT_EQ(l.offsets, (std::vector<uint64_t>{0, 64, 64}));
  EXPECT_EQ(l.total_bytes, 64u + 256u);
}

TEST(Arena, RandomLayoutsNeverOverlap) {
  uint64_t seed = 12345;
  auto next = [&seed]() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaBuffer> bufs;
    size_t n = 1 + next() % 12;
    for (size_t i = 0; i < n; ++i) {
      size_t begin = next() % 20;
      bufs.push_back({next() % 1000, begin, begin + next() % 6});
    }
    ArenaLayout l = LayOutArena(bufs);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(l.offsets[i] % kStorageAlignment, 0u);
      EXPECT_LE(l.offsets[i] + AlignUp(bufs[i].bytes), l.total_bytes);
      for (size_t j = 0; j < i; ++j) EXPECT_FALSE(Overlap(bufs[i], l.offsets[i], bufs[j], l.offsets[j])) << trial;
    }
    EXPECT_EQ(l.total_bytes % kStorageAlignment, 0u);
  }
}

TEST(Arena, AlignUp) {
  EXPECT_EQ(AlignUp(0), 0u);
  EXPECT_EQ(AlignUp(1), 64u);
  EXPECT_EQ(AlignUp(64), 64u);
  EXPECT_EQ(AlignUp(65), 128u);
}

}  // namespace
}  // namespace memory
}  // namespace kiln
