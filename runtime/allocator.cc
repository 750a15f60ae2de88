#include "runtime/allocator.h"

#include <cstdlib>

namespace kiln {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes, size_t alignment) override {
    if (alignment < kTensorAlignment) alignment = kTensorAlignment;
    // aligned_alloc requires a size that is a multiple of the alignment;
    // zero-byte tensors still get a unique, valid pointer.
    size_t rounded = (nbytes + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    return std::aligned_alloc(alignment, rounded);
  }
  void Free(void* ptr) override { std::free(ptr); }
};

}  // namespace

Allocator* DefaultCpuAllocator() {
  static CpuAllocator allocator;
  return &allocator;
}

}  // namespace kiln
