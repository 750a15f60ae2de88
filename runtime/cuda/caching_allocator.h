// CachingDeviceAllocator: the caching policy of device memory, apart from the
// device itself, so it is tested without a GPU (caching_allocator_test.cc
// injects a backend that counts).
//
// cuMemAlloc/cuMemFree synchronize the device and cost tens of microseconds;
// a model call allocates the same sizes every time, so freed blocks are kept
// by size class and handed out again. Classes: multiples of 512 bytes up to
// 1 MiB, then four per power of two (at most 25% waste). One allocator serves
// one device and one stream: a block freed on a stream is reused only on that
// stream, where the work that used it is already ordered before the next
// use, so no event is needed.
//
// The cap counts every byte taken from the backend (in use + cached). A block
// that would pass it first returns cached blocks to the backend; if that is
// not enough, Allocate fails with kResourceExhausted naming the cap, the
// bytes held and in use, and the request. A backend failure (the device is
// out of memory) also trims the cache and tries once more.
//
// Thread-safe: one mutex around each call.
#ifndef KILN_RUNTIME_CUDA_CACHING_ALLOCATOR_H_
#define KILN_RUNTIME_CUDA_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace cuda {

// Where blocks come from: device memory (cuda_device.cc) or a test's double.
class DeviceMemoryBackend {
 public:
  virtual ~DeviceMemoryBackend() = default;
  // A device address of `nbytes` (> 0), at least 256-byte aligned.
  virtual Result<uint64_t> Allocate(size_t nbytes) = 0;
  virtual void Free(uint64_t ptr) = 0;
};

struct DeviceMemoryStats {
  size_t in_use = 0;       // bytes of blocks handed out (class sizes)
  size_t peak_in_use = 0;  // the most in_use has been
  size_t held = 0;         // bytes taken from the backend (in use + cached)
  size_t peak_held = 0;
  size_t cached = 0;       // held - in_use
  uint64_t requests = 0;   // successful Allocate calls
  uint64_t cache_hits = 0; // of those, served from the cache
  uint64_t backend_allocs = 0;
  uint64_t backend_frees = 0;
};

class CachingDeviceAllocator {
 public:
  // `backend` (not owned) outlives the allocator. cap_bytes 0: no cap.
  // `name` starts error messages ("CUDA device 0 stream 0x...").
  CachingDeviceAllocator(DeviceMemoryBackend* backend, size_t cap_bytes, std::string name);
  ~CachingDeviceAllocator();  // returns cached blocks; blocks in use leak to the backend's owner
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  // nbytes 0 gives address 0 (nothing to free).
  Result<uint64_t> Allocate(size_t nbytes);
  // Accepts 0. `ptr` came from Allocate of this allocator; anything else is
  // an internal error (checked).
  void Free(uint64_t ptr);
  // Returns every cached block to the backend.
  void Trim();

  DeviceMemoryStats stats() const;
  void ResetPeak();  // peaks restart at the current values
  size_t cap_bytes() const { return cap_; }

  // The class a request of nbytes is served from.
  static size_t ClassBytes(size_t nbytes);

 private:
  void TrimLocked(size_t need);  // frees cached blocks until `need` more fit under the cap

  DeviceMemoryBackend* backend_;
  const size_t cap_;
  const std::string name_;
  mutable std::mutex mu_;
  DeviceMemoryStats stats_;                          // guarded by mu_
  std::map<size_t, std::vector<uint64_t>> cache_;    // guarded by mu_: class bytes -> free blocks
  std::unordered_map<uint64_t, size_t> live_;        // guarded by mu_: block -> class bytes
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CACHING_ALLOCATOR_H_
