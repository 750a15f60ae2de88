#include "runtime/cuda/caching_allocator.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln {
namespace cuda {
namespace {

// Hands out fake addresses and counts; fails past `limit` bytes outstanding,
// as a full device would.
class CountingBackend : public DeviceMemoryBackend {
 public:
  explicit CountingBackend(size_t limit = SIZE_MAX) : limit_(limit) {}
  Result<uint64_t> Allocate(size_t n) override {
    if (outstanding_ + n > limit_) return ResourceExhausted("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
    uint64_t p = next_;
    next_ += (n + 255) / 256 * 256;
    sizes_[p] = n;
    outstanding_ += n;
    allocs++;
    return p;
  }
  void Free(uint64_t p) override {
    auto it = sizes_.find(p);
    ASSERT_NE(it, sizes_.end()) << "freed an address the backend never gave";
    outstanding_ -= it->second;
    sizes_.erase(it);
    frees++;
  }
  size_t outstanding() const { return outstanding_; }
  int allocs = 0, frees = 0;

 private:
  size_t limit_;
  size_t outstanding_ = 0;
  uint64_t next_ = 0x10000;
  std::map<uint64_t, size_t> sizes_;
};

TEST(CachingDeviceAllocator, SizeClasses) {
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes(1), 512u);
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes(512), 512u);
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes(513), 1024u);
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes(1 << 20), size_t(1) << 20);
  // Above 1 MiB: quarters of the power of two below.
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes((1 << 20) + 1), (size_t(1) << 20) + (1 << 18));
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes(3 << 20), size_t(3) << 20);
  EXPECT_EQ(CachingDeviceAllocator::ClassBytes((3 << 20) + 1), (size_t(7) << 19));
}

TEST(CachingDeviceAllocator, ReusesAFreedBlockOfTheSameClass) {
  CountingBackend backend;
  CachingDeviceAllocator a(&backend, 0, "test");
  auto p = a.Allocate(1000);
  ASSERT_TRUE(p.ok());
  a.Free(p.value());
  auto q = a.Allocate(900);  // same 1024-byte class
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value(), p.value());
  auto r = a.Allocate(5000);  // another class: a new block
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r.value(), p.value());
  DeviceMemoryStats s = a.stats();
  EXPECT_EQ(s.requests, 3u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.backend_allocs, 2u);
  EXPECT_EQ(s.in_use, 1024u + 5120u);
  EXPECT_EQ(s.cached, 0u);
  a.Free(q.value());
  a.Free(r.value());
  EXPECT_EQ(a.stats().cached, 1024u + 5120u);
  a.Trim();
  EXPECT_EQ(backend.outstanding(), 0u);
  EXPECT_EQ(backend.frees, 2);
}

TEST(CachingDeviceAllocator, PeaksFollowInUseAndHeld) {
  CountingBackend backend;
  CachingDeviceAllocator a(&backend, 0, "test");
  uint64_t x = a.Allocate(4096).value();
  uint64_t y = a.Allocate(4096).value();
  a.Free(x);
  a.Free(y);
  DeviceMemoryStats s = a.stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.peak_in_use, 8192u);
  EXPECT_EQ(s.held, 8192u);
  EXPECT_EQ(s.peak_held, 8192u);
  a.ResetPeak();
  EXPECT_EQ(a.stats().peak_in_use, 0u);
  uint64_t z = a.Allocate(100).value();
  EXPECT_EQ(a.stats().peak_in_use, 512u);
  a.Free(z);
}

TEST(CachingDeviceAllocator, CapTrimsTheCacheThenFailsWithTheNumbers) {
  CountingBackend backend;
  CachingDeviceAllocator a(&backend, 4096, "CUDA device 0 stream 0x1");
  uint64_t x = a.Allocate(2048).value();
  uint64_t y = a.Allocate(2048).value();
  Result<uint64_t> over = a.Allocate(512);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "CUDA device 0 stream 0x1: cap 4096 bytes reached: 4096 held, 4096 in use, request 512 bytes");
  a.Free(x);  // cached: a new class may take its place
  Result<uint64_t> fits = a.Allocate(512);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(backend.frees, 1);
  EXPECT_EQ(a.stats().held, 2048u + 512u);
  a.Free(y);
  a.Free(fits.value());
}

TEST(CachingDeviceAllocator, AFullDeviceGetsTheCacheBackAndOneRetry) {
  CountingBackend backend(8192);
  CachingDeviceAllocator a(&backend, 0, "dev");
  uint64_t x = a.Allocate(8192).value();
  a.Free(x);
  Result<uint64_t> y = a.Allocate(4096);  // backend full of the cached 8 KiB block
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(backend.frees, 1);
  Result<uint64_t> z = a.Allocate(8192);  // nothing cached to give back
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(z.status().message(), "dev: allocating 8192 bytes (4096 held, 4096 in use): cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
  a.Free(y.value());
}

TEST(CachingDeviceAllocator, ZeroBytesIsAddressZero) {
  CountingBackend backend;
  CachingDeviceAllocator a(&backend, 0, "dev");
  Result<uint64_t> p = a.Allocate(0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value(), 0u);
  a.Free(0);
  EXPECT_EQ(backend.allocs, 0);
}

TEST(CachingDeviceAllocator, DestructionReturnsTheCache) {
  CountingBackend backend;
  {
    CachingDeviceAllocator a(&backend, 0, "dev");
    a.Free(a.Allocate(100).value());
    a.Free(a.Allocate(100000).value());
  }
  EXPECT_EQ(backend.outstanding(), 0u);
}

}  // namespace
}  // namespace cuda
}  // namespace kiln
