// runtime/allocator.h: CountingAllocator and PoolAllocator on their own.
#include "runtime/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace {

bool Aligned(void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(CountingAllocatorTest, CountsBytesAndPeak) {
  CountingAllocator c;
  void* a = c.Allocate(100, 64);
  void* b = c.Allocate(28, 128);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(Aligned(a, 64));
  EXPECT_TRUE(Aligned(b, 128));
  EXPECT_EQ(c.bytes_held(), 128);
  EXPECT_EQ(c.peak_bytes(), 128);
  c.Free(a);
  EXPECT_EQ(c.bytes_held(), 28);
  c.ResetPeak();
  EXPECT_EQ(c.peak_bytes(), 28);
  c.Free(b);
  c.Free(nullptr);
  EXPECT_EQ(c.allocations(), 2u);
  EXPECT_EQ(c.frees(), 2u);
  EXPECT_EQ(c.bytes_held(), 0);
}

TEST(PoolAllocatorTest, ReusesFreedBlocksOfTheSameClass) {
  CountingAllocator base;
  PoolAllocator pool(0, &base);
  void* a = pool.Allocate(1000, 64);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(Aligned(a, 64));
  pool.Free(a);
  void* b = pool.Allocate(990, 64);  // the same 1024-byte class
  EXPECT_EQ(a, b);
  EXPECT_EQ(base.allocations(), 1u);
  void* c = pool.Allocate(5000, 64);  // a new class
  EXPECT_EQ(base.allocations(), 2u);
  pool.Free(b);
  pool.Free(c);
  EXPECT_EQ(pool.bytes_cached(), pool.bytes_held());
  pool.Trim();
  EXPECT_EQ(pool.bytes_held(), 0u);
  EXPECT_EQ(base.frees(), 2u);
}

TEST(PoolAllocatorTest, ManyBlocksOfOneClassComeBackWithoutAllocating) {
  CountingAllocator base;
  PoolAllocator pool(0, &base);
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(pool.Allocate(64, 64));
  for (void* p : blocks) pool.Free(p);
  EXPECT_EQ(base.frees(), 0u);  // all cached
  for (int round = 0; round < 3; ++round) {
    for (void*& p : blocks) p = pool.Allocate(64, 64);
    for (void* p : blocks) pool.Free(p);
  }
  EXPECT_EQ(base.allocations(), 10u);
}

TEST(PoolAllocatorTest, CapGivesBackCachedBlocksThenRefuses) {
  CountingAllocator base;
  PoolAllocator pool(4096, &base);
  void* a = pool.Allocate(2000, 64);  // 2048 + 64 header
  ASSERT_NE(a, nullptr);
  pool.Free(a);                       // cached
  void* b = pool.Allocate(3000, 64);  // needs the cached block's room
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(base.frees(), 1u);
  EXPECT_EQ(pool.Allocate(2000, 64), nullptr);  // 3008 + 2112 > 4096
  EXPECT_EQ(pool.Describe(),
            "pool allocator: a block for 2000 bytes does not fit its cap of 4096 bytes (3072 held, 0 of them cached)");
  pool.Free(b);
}

TEST(PoolAllocatorTest, LargeAlignmentsBypassTheClasses) {
  CountingAllocator base;
  PoolAllocator pool(0, &base);
  void* a = pool.Allocate(100, 4096);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(Aligned(a, 4096));
  pool.Free(a);
  EXPECT_EQ(pool.bytes_held(), 0u);
  EXPECT_EQ(base.frees(), 1u);
}

}  // namespace
}  // namespace kiln
