#include "runtime/allocator.h"

#include <cstdlib>
#include <cstring>

#include "runtime/status.h"

namespace kiln {
namespace {

std::atomic<uint64_t> g_cpu_allocations{0};

class CpuAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes, size_t alignment) override {
    if (alignment < kTensorAlignment) alignment = kTensorAlignment;
    // aligned_alloc requires a size that is a multiple of the alignment;
    // zero-byte tensors still get a unique, valid pointer.
    size_t rounded = (nbytes + alignment - 1) / alignment * alignment;
    if (rounded < nbytes) return nullptr;  // wrapped
    if (rounded == 0) rounded = alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p != nullptr) g_cpu_allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }
  std::string Describe() const override { return "the default CPU allocator (aligned_alloc)"; }
};

// Wrappers that must learn a block's size at Free put a header in front of
// the block they return: `header` bytes (a multiple of the alignment, so the
// caller's block stays aligned), whose last 16 bytes hold the header size and
// a wrapper-defined word.
struct Prefix {
  uint64_t word;          // CountingAllocator: requested bytes; PoolAllocator: class bytes (0: uncached)
  uint64_t header_bytes;  // distance from the base block to the caller's pointer
};

size_t HeaderBytes(size_t alignment) {
  return alignment < kTensorAlignment ? kTensorAlignment : alignment;
}

void* PlacePrefix(void* base, size_t header, uint64_t word) {
  char* user = static_cast<char*>(base) + header;
  Prefix p{word, header};
  std::memcpy(user - sizeof(Prefix), &p, sizeof(Prefix));
  return user;
}

Prefix ReadPrefix(void* user) {
  Prefix p;
  std::memcpy(&p, static_cast<char*>(user) - sizeof(Prefix), sizeof(Prefix));
  return p;
}

// Marks PoolAllocator blocks that bypass the classes (alignment above 64);
// the rest of the word is the block's total size.
constexpr uint64_t kUnpooled = uint64_t(1) << 63;

void* BaseOf(void* user, const Prefix& p) { return static_cast<char*>(user) - p.header_bytes; }

// The size class of a request: multiples of 64 up to 4 KiB, then quarters of
// each power of two. 0 when rounding would wrap.
size_t ClassBytes(size_t n) {
  if (n <= 4096) return n == 0 ? 64 : (n + 63) / 64 * 64;
  size_t p = size_t(1) << (63 - __builtin_clzll(static_cast<unsigned long long>(n)));
  size_t step = p / 4;
  size_t r = (n + step - 1) / step * step;
  return r < n ? 0 : r;
}

}  // namespace

uint64_t DefaultCpuAllocationCount() { return g_cpu_allocations.load(std::memory_order_relaxed); }

Allocator* DefaultCpuAllocator() {
  static CpuAllocator allocator;
  return &allocator;
}

// ---- CountingAllocator -------------------------------------------------------

CountingAllocator::CountingAllocator(Allocator* base) : base_(base != nullptr ? base : DefaultCpuAllocator()) {}

void* CountingAllocator::Allocate(size_t nbytes, size_t alignment) {
  if (base_->device_memory() != nullptr) {
    // Device memory: no header in the block (the host cannot write it).
    void* p = base_->Allocate(nbytes, alignment);
    if (p == nullptr) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    {
      std::lock_guard<std::mutex> lock(device_mu_);
      device_sizes_[p] = nbytes;
    }
    allocations_.fetch_add(1, std::memory_order_relaxed);
    int64_t held = bytes_held_.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
                   static_cast<int64_t>(nbytes);
    int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (held > peak && !peak_bytes_.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
    }
    return p;
  }
  size_t header = HeaderBytes(alignment);
  if (nbytes > SIZE_MAX - header) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  void* base = base_->Allocate(nbytes + header, header);
  if (base == nullptr) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  int64_t held = bytes_held_.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
                 static_cast<int64_t>(nbytes);
  // Raise the peak; concurrent allocators race, and the largest wins.
  int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (held > peak && !peak_bytes_.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
  return PlacePrefix(base, header, nbytes);
}

void CountingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  if (base_->device_memory() != nullptr) {
    size_t nbytes = 0;
    {
      std::lock_guard<std::mutex> lock(device_mu_);
      auto it = device_sizes_.find(ptr);
      KILN_CHECK(it != device_sizes_.end(), "CountingAllocator: freeing %p, which it did not hand out", ptr);
      nbytes = it->second;
      device_sizes_.erase(it);
    }
    frees_.fetch_add(1, std::memory_order_relaxed);
    bytes_held_.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    base_->Free(ptr);
    return;
  }
  Prefix p = ReadPrefix(ptr);
  frees_.fetch_add(1, std::memory_order_relaxed);
  bytes_held_.fetch_sub(static_cast<int64_t>(p.word), std::memory_order_relaxed);
  base_->Free(BaseOf(ptr, p));
}

std::string CountingAllocator::Describe() const { return base_->Describe(); }

// ---- PoolAllocator ----------------------------------------------------------

PoolAllocator::PoolAllocator(size_t cap_bytes, Allocator* base)
    : cap_(cap_bytes), base_(base != nullptr ? base : DefaultCpuAllocator()) {}

PoolAllocator::~PoolAllocator() { Trim(); }

void PoolAllocator::TrimLocked(size_t need) {
  // Largest classes first: fewest blocks to give back.
  for (auto it = classes_.rbegin(); it != classes_.rend() && (need == SIZE_MAX || held_ + need > cap_); ++it) {
    std::vector<void*>& blocks = it->second.cached;
    while (!blocks.empty() && (need == SIZE_MAX || held_ + need > cap_)) {
      base_->Free(blocks.back());
      blocks.pop_back();
      held_ -= it->first + kTensorAlignment;
      cached_ -= it->first + kTensorAlignment;
    }
  }
}

void* PoolAllocator::Allocate(size_t nbytes, size_t alignment) {
  if (base_->device_memory() != nullptr) return nullptr;  // its headers would be written into device memory
  if (alignment > kTensorAlignment) {
    // Not pooled: a header as large as the alignment, class 0 marks it.
    size_t header = HeaderBytes(alignment);
    if (nbytes > SIZE_MAX - header) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    last_request_ = nbytes;
    size_t total = nbytes + header;
    if (cap_ != 0 && held_ + total > cap_) TrimLocked(total);
    if (cap_ != 0 && held_ + total > cap_) return nullptr;
    void* base = base_->Allocate(total, header);
    if (base == nullptr) return nullptr;
    held_ += total;
    return PlacePrefix(base, header, total | kUnpooled);
  }
  size_t cls = ClassBytes(nbytes);
  if (cls == 0 || cls > SIZE_MAX - kTensorAlignment) return nullptr;
  size_t total = cls + kTensorAlignment;  // the block with its header
  std::lock_guard<std::mutex> lock(mu_);
  last_request_ = nbytes;
  auto it = classes_.find(cls);
  if (it != classes_.end() && !it->second.cached.empty()) {
    void* base = it->second.cached.back();
    it->second.cached.pop_back();
    ++it->second.in_use;
    cached_ -= total;
    return static_cast<char*>(base) + kTensorAlignment;
  }
  if (cap_ != 0 && held_ + total > cap_) TrimLocked(total);
  if (cap_ != 0 && held_ + total > cap_) return nullptr;
  void* base = base_->Allocate(total, kTensorAlignment);
  if (base == nullptr) return nullptr;
  held_ += total;
  // Make room in the class's list now, so that Free never allocates.
  SizeClass& c = classes_[cls];
  ++c.in_use;
  c.cached.reserve(c.cached.size() + c.in_use);
  return PlacePrefix(base, kTensorAlignment, cls);
}

void PoolAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  Prefix p = ReadPrefix(ptr);
  void* base = BaseOf(ptr, p);
  std::lock_guard<std::mutex> lock(mu_);
  if (p.word & kUnpooled) {
    held_ -= p.word & ~kUnpooled;
    base_->Free(base);
    return;
  }
  SizeClass& c = classes_[p.word];
  --c.in_use;
  c.cached.push_back(base);  // capacity reserved at Allocate
  cached_ += p.word + kTensorAlignment;
}

void PoolAllocator::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  TrimLocked(SIZE_MAX);
}

size_t PoolAllocator::bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

size_t PoolAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

std::string PoolAllocator::Describe() const {
  if (base_->device_memory() != nullptr) {
    return "pool allocator: its base hands out device memory (" + base_->Describe() +
           "), which the pool cannot keep headers in; use that allocator directly";
  }
  std::lock_guard<std::mutex> lock(mu_);
  return StrFormat("pool allocator: a block for %zu bytes does not fit its cap of %zu bytes (%zu held, %zu of them "
                   "cached)",
                   last_request_, cap_, held_, cached_);
}

}  // namespace kiln
