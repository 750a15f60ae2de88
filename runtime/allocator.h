// Allocators for tensor storage. All CPU allocations are at least 64-byte aligned
// so that generated kernels may use aligned vector loads.
//
// Thread-safety: implementations must be thread-safe; one allocator is shared by
// every call context of a module.
#ifndef KILN_RUNTIME_ALLOCATOR_H_
#define KILN_RUNTIME_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

namespace kiln {

constexpr size_t kTensorAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns nullptr when the memory cannot be had; never throws.
  virtual void* Allocate(size_t nbytes, size_t alignment) = 0;
  virtual void Free(void* ptr) = 0;
};

// The process-wide default: aligned_alloc/free.
Allocator* DefaultCpuAllocator();

// How many successful Allocate calls DefaultCpuAllocator() has served in this
// process (all threads): lets tests check that a call allocates nothing.
uint64_t DefaultCpuAllocationCount();

}  // namespace kiln

#endif  // KILN_RUNTIME_ALLOCATOR_H_
