// Allocators for tensor storage. All CPU allocations are at least 64-byte aligned
// so that generated kernels may use aligned vector loads.
//
// Thread-safety: implementations must be thread-safe. One allocator may be
// shared by every call context of a module, and a tensor a call returned is
// freed by whichever thread drops its last reference.
//
// Lifetime: an allocator must outlive every tensor allocated from it (a tensor
// frees its data through the allocator that made it).
#ifndef KILN_RUNTIME_ALLOCATOR_H_
#define KILN_RUNTIME_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

constexpr size_t kTensorAlignment = 64;

class DeviceMemory;  // runtime/device_memory.h

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns nullptr when the memory cannot be had; never throws. `alignment`
  // is a power of two; the result is aligned to it.
  virtual void* Allocate(size_t nbytes, size_t alignment) = 0;
  // Accepts nullptr. `ptr` came from Allocate of this allocator.
  virtual void Free(void* ptr) = 0;
  // One line for error messages when Allocate returned nullptr ("pool
  // allocator: cap 4096 bytes, 3072 held"). Called only after a failure.
  virtual std::string Describe() const { return "the allocator"; }
  // Non-null when the blocks are device memory the host cannot address (a
  // GPU's): nothing may read or write them on the host, so wrappers keep
  // sizes beside the address, not in a header, and tensors made from it are
  // tagged with memory->device(). nullptr (the default): host memory.
  virtual DeviceMemory* device_memory() const { return nullptr; }
};

// The process-wide default: aligned_alloc/free.
Allocator* DefaultCpuAllocator();

// How many successful Allocate calls DefaultCpuAllocator() has served in this
// process (all threads): lets tests check that a call allocates nothing.
uint64_t DefaultCpuAllocationCount();

// Forwards to another allocator and counts: successful allocations, frees and
// the bytes currently held (as requested, not rounded). For tests, benchmarks
// and servers that want the numbers. Each block it hands out sits behind a
// header of max(64, alignment) bytes taken from `base` with it (the size is
// read back at Free). Over device memory (base->device_memory() non-null)
// the size is kept in a table beside the address instead, under a mutex (a
// call on static shapes allocates only in its first call). Thread-safe
// (relaxed atomics).
class CountingAllocator final : public Allocator {
 public:
  // `base` (not owned) must outlive this allocator; nullptr: the default.
  explicit CountingAllocator(Allocator* base = nullptr);
  void* Allocate(size_t nbytes, size_t alignment) override;
  void Free(void* ptr) override;
  std::string Describe() const override;
  DeviceMemory* device_memory() const override { return base_->device_memory(); }

  uint64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }
  uint64_t frees() const { return frees_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  int64_t bytes_held() const { return bytes_held_.load(std::memory_order_relaxed); }
  // The most bytes_held() has been since construction or ResetPeak().
  int64_t peak_bytes() const { return peak_bytes_.load(std::memory_order_relaxed); }
  // Starts a new peak measurement at the bytes held now.
  void ResetPeak() { peak_bytes_.store(bytes_held(), std::memory_order_relaxed); }

 private:
  Allocator* base_;
  std::atomic<uint64_t> allocations_{0}, frees_{0}, failures_{0};
  std::atomic<int64_t> bytes_held_{0}, peak_bytes_{0};
  std::mutex device_mu_;
  std::unordered_map<void*, size_t> device_sizes_;  // guarded by device_mu_: device blocks -> requested bytes
};

// Keeps freed blocks for reuse and caps the bytes it holds, for programs with
// symbolic shapes whose sizes vary from call to call. Blocks are grouped in
// size classes (multiples of 64 bytes up to 4 KiB, then four classes per power
// of two, so at most 25% is wasted); a request is served from a cached block
// of its class when there is one, from `base` otherwise. The cap counts
// every byte taken from `base` (blocks in use and cached); when a new block
// would pass it, cached blocks are returned to `base` first, and if that is
// not enough Allocate returns nullptr and Describe() says why.
//
// Host memory only: over an allocator of device memory (whose blocks the
// host cannot write a header into) Allocate returns nullptr and Describe says
// so; such allocators cache by themselves (runtime/cuda).
//
// Thread-safe: one uncontended mutex per Allocate / Free. A call on static
// shapes never reaches an allocator after its first call (vm/module.h), so
// the mutex is off the hot path.
class PoolAllocator final : public Allocator {
 public:
  // `base` (not owned; nullptr: the default) must outlive the pool. cap_bytes
  // 0: no cap.
  explicit PoolAllocator(size_t cap_bytes, Allocator* base = nullptr);
  ~PoolAllocator() override;  // returns cached blocks; blocks in use must be gone
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  void* Allocate(size_t nbytes, size_t alignment) override;
  void Free(void* ptr) override;
  std::string Describe() const override;

  size_t cap_bytes() const { return cap_; }
  // Bytes taken from `base` (in use + cached), and of those, cached.
  size_t bytes_held() const;
  size_t bytes_cached() const;
  // Returns every cached block to `base`.
  void Trim();

 private:
  void TrimLocked(size_t need);  // frees cached blocks until `need` more fit

  const size_t cap_;
  Allocator* base_;
  mutable std::mutex mu_;
  size_t held_ = 0, cached_ = 0;          // guarded by mu_
  size_t last_request_ = 0;               // guarded by mu_: for Describe
  struct SizeClass {
    std::vector<void*> cached;  // base pointers; capacity >= cached + in_use, so Free never allocates
    size_t in_use = 0;
  };
  std::map<size_t, SizeClass> classes_;  // guarded by mu_; by class bytes
};

}  // namespace kiln

#endif  // KILN_RUNTIME_ALLOCATOR_H_
