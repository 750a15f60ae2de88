#include "runtime/allocator.h"

#include <atomic>
#include <cstdlib>

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
    if (rounded == 0) rounded = alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p != nullptr) g_cpu_allocations.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }
};

}  // namespace

uint64_t DefaultCpuAllocationCount() { return g_cpu_allocations.load(std::memory_order_relaxed); }

Allocator* DefaultCpuAllocator() {
  static CpuAllocator allocator;
  return &allocator;
}

}  // namespace kiln
