#include "runtime/cuda/cuda_memory.h"

#include <cstdint>

#include "runtime/cuda/cuda_device.h"

namespace kiln {
namespace cuda {

CudaMemory::CudaMemory(CudaDevice* device) : device_(device) {}

void* CudaMemory::Allocate(size_t nbytes, size_t alignment) {
  if (alignment > 256) return nullptr;
  // A zero-byte tensor still gets a distinct address (the VM tells an
  // allocation failure by nullptr).
  Result<uint64_t> p = device_->Allocate(nbytes == 0 ? 1 : nbytes);
  if (!p.ok()) return nullptr;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(*p));
}

void CudaMemory::Free(void* ptr) {
  if (ptr != nullptr) device_->Free(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr)));
}

std::string CudaMemory::Describe() const {
  DeviceMemoryStats s = device_->memory_stats();
  return StrFormat("CUDA memory of device %d (%s): %zu bytes held, %zu in use, cap %zu (0: none)",
                   device_->info().ordinal, device_->info().name.c_str(), s.held, s.in_use,
                   device_->allocator()->cap_bytes());
}

DLDevice CudaMemory::device() const { return DLDevice{kDLCUDA, device_->info().ordinal}; }

Status CudaMemory::CopyToHost(void* dst, const void* src, size_t nbytes) {
  KILN_RETURN_IF_ERROR(device_->CopyToHost(dst, reinterpret_cast<uintptr_t>(src), nbytes));
  return device_->Synchronize();
}

Status CudaMemory::CopyFromHost(void* dst, const void* src, size_t nbytes) {
  KILN_RETURN_IF_ERROR(device_->CopyToDevice(reinterpret_cast<uintptr_t>(dst), src, nbytes));
  return device_->Synchronize();
}

Status CudaMemory::CopyWithin(void* dst, const void* src, size_t nbytes) {
  return device_->CopyOnDevice(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), nbytes);
}

Status CudaMemory::Synchronize() { return device_->Synchronize(); }

}  // namespace cuda
}  // namespace kiln
