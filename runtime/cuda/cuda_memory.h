// CudaMemory: plain device memory of one CUDA device as a kiln::Allocator
// and a kiln::DeviceMemory (runtime/device_memory.h), for the VM's planned
// storage, intermediates, results and inputs on the GPU.
//
// Blocks come from the device's caching allocator on its stream
// (caching_allocator.h: cuMemAlloc once per size class, then reused; the
// size is kept there, beside the address, never in the block), so a call on
// static shapes reaches the driver only in its first call. Tensors made from
// it are tagged {kDLCUDA, ordinal}.
//
// Copies are on the device's stream, so they are ordered after the kernels
// queued before them: CopyToHost queues the copy and waits for the stream
// (the host then holds the values the kernels wrote); CopyFromHost also
// waits, so the host buffer may be reused at once whatever memory it is
// (pinned memory would otherwise still be read by the device); CopyWithin
// does not wait.
//
// Thread-safe: the caching allocator locks; the driver orders the stream.
#ifndef KILN_RUNTIME_CUDA_CUDA_MEMORY_H_
#define KILN_RUNTIME_CUDA_CUDA_MEMORY_H_

#include <string>

#include "runtime/allocator.h"
#include "runtime/device_memory.h"

namespace kiln {
namespace cuda {

class CudaDevice;

class CudaMemory final : public Allocator, public DeviceMemory {
 public:
  // `device` (not owned) outlives this and every block it handed out.
  explicit CudaMemory(CudaDevice* device);

  // nullptr when the device is out of memory (or past the allocator's cap)
  // or `alignment` is above 256 (cuMemAlloc's); Describe() says which.
  void* Allocate(size_t nbytes, size_t alignment) override;
  void Free(void* ptr) override;
  std::string Describe() const override;
  DeviceMemory* device_memory() const override { return const_cast<CudaMemory*>(this); }

  DLDevice device() const override;
  Status CopyToHost(void* dst, const void* src, size_t nbytes) override;
  Status CopyFromHost(void* dst, const void* src, size_t nbytes) override;
  Status CopyWithin(void* dst, const void* src, size_t nbytes) override;
  Status Synchronize() override;

  CudaDevice* cuda_device() const { return device_; }

 private:
  CudaDevice* device_;
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CUDA_MEMORY_H_
