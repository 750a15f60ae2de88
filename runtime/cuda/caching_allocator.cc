#include "runtime/cuda/caching_allocator.h"

#include <algorithm>

namespace kiln {
namespace cuda {

CachingDeviceAllocator::CachingDeviceAllocator(DeviceMemoryBackend* backend, size_t cap_bytes, std::string name)
    : backend_(backend), cap_(cap_bytes), name_(std::move(name)) {}

CachingDeviceAllocator::~CachingDeviceAllocator() { Trim(); }

size_t CachingDeviceAllocator::ClassBytes(size_t n) {
  constexpr size_t kSmallStep = 512, kSmallMax = size_t(1) << 20;
  if (n <= kSmallMax) return (n + kSmallStep - 1) / kSmallStep * kSmallStep;
  size_t pow = kSmallMax;
  while (pow * 2 < n) pow *= 2;
  size_t quarter = pow / 4;  // pow < n <= 2 pow: classes pow + k * pow / 4
  return (n + quarter - 1) / quarter * quarter;
}

void CachingDeviceAllocator::TrimLocked(size_t need) {
  // Largest classes first: fewest frees to make room.
  for (auto it = cache_.rbegin(); it != cache_.rend(); ++it) {
    while (!it->second.empty() && (need == SIZE_MAX || stats_.held + need > cap_)) {
      backend_->Free(it->second.back());
      it->second.pop_back();
      stats_.held -= it->first;
      stats_.cached -= it->first;
      stats_.backend_frees++;
    }
  }
}

Result<uint64_t> CachingDeviceAllocator::Allocate(size_t nbytes) {
  if (nbytes == 0) return uint64_t{0};
  size_t cls = ClassBytes(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ptr = 0;
  auto it = cache_.find(cls);
  if (it != cache_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.cached -= cls;
    stats_.cache_hits++;
  } else {
    if (cap_ != 0 && stats_.held + cls > cap_) {
      TrimLocked(cls);
      if (stats_.held + cls > cap_) {
        return ResourceExhausted(StrFormat("%s: cap %zu bytes reached: %zu held, %zu in use, request %zu bytes",
                                           name_.c_str(), cap_, stats_.held, stats_.in_use, nbytes));
      }
    }
    Result<uint64_t> got = backend_->Allocate(cls);
    if (!got.ok() && stats_.cached > 0) {
      TrimLocked(SIZE_MAX);  // the device is full: give the cache back and try once more
      got = backend_->Allocate(cls);
    }
    if (!got.ok()) {
      Status s = got.TakeStatus();
      s.Annotate(StrFormat("%s: allocating %zu bytes (%zu held, %zu in use)", name_.c_str(), nbytes, stats_.held,
                           stats_.in_use));
      return s;
    }
    ptr = got.value();
    stats_.held += cls;
    stats_.backend_allocs++;
    stats_.peak_held = std::max(stats_.peak_held, stats_.held);
  }
  live_[ptr] = cls;
  stats_.in_use += cls;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  stats_.requests++;
  return ptr;
}

void CachingDeviceAllocator::Free(uint64_t ptr) {
  if (ptr == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  KILN_CHECK(it != live_.end(), "%s: freeing 0x%llx, which this allocator did not hand out", name_.c_str(),
             static_cast<unsigned long long>(ptr));
  size_t cls = it->second;
  live_.erase(it);
  stats_.in_use -= cls;
  stats_.cached += cls;
  cache_[cls].push_back(ptr);
}

void CachingDeviceAllocator::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  TrimLocked(SIZE_MAX);
}

DeviceMemoryStats CachingDeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingDeviceAllocator::ResetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_held = stats_.held;
}

}  // namespace cuda
}  // namespace kiln
