// CudaGpuLinker: runs a .vmfb compiled with --target=cuda on one CUDA device
// (the GpuLinker of runtime/program.h, given to vm::LoadOptions::gpu).
//
// At load it JIT-loads each GPU module's PTX (cuModuleLoadDataEx; the JIT's
// log in the error), looks up every kernel, and copies each tensor constant
// to the device once (for this module on this device). Each kernel function
// becomes a packed function that plans its launch from the arguments
// (gpu_launch.h), takes its workspaces from the device's caching allocator
// (stream-ordered, so they are reused safely on the one stream) and calls
// cuLaunchKernel for each kernel on the device's stream. Launches are
// asynchronous: Synchronize() before reading results on the host.
//
// Memory the VM allocates (planned storage, intermediates, results, the
// constants) comes from allocator(): CUDA managed memory (cuMemAllocManaged)
// behind a PoolAllocator, because the VM's allocator layer writes a size
// header into each block on the host and some builtins read small tensors
// on the host; managed memory is valid in both places. Tensors keep
// device_type kDLCPU (the VM's checks expect it). ToDevice copies a host
// input into that memory (the function boundary's host -> device copy);
// results can be read on the host after Synchronize().
//
// Without a driver or a device, Create fails with runtime/cuda's errors
// ("no CUDA driver: ...", "no CUDA device: ...").
//
// Thread-safety: launches may come from several contexts at once (the driver
// serializes on the stream); the device's allocators lock.
#ifndef KILN_RUNTIME_CUDA_GPU_LINKER_H_
#define KILN_RUNTIME_CUDA_GPU_LINKER_H_

#include <memory>
#include <string>

#include "runtime/allocator.h"
#include "runtime/program.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace cuda {

class CudaDevice;

class CudaGpuLinker final : public GpuLinker {
 public:
  // Opens device `ordinal`.
  static Result<std::shared_ptr<CudaGpuLinker>> Create(int ordinal);
  ~CudaGpuLinker() override;

  Status LoadModule(const ProgramGpuModule& module) override;
  Result<PackedFunc> Resolve(const ProgramGpuModule& module, const ProgramGpuFunction& function) override;
  Result<Any> UploadConstant(const Any& host) override;
  // A device function (device_functions.h: GPU library kernels) on this
  // linker's device and stream.
  Result<PackedFunc> ResolvePacked(const std::string& name) override;

  // For vm::ContextOptions::shared_allocator: memory the kernels and the
  // host can both reach. Kept alive by the contexts and tensors using it.
  std::shared_ptr<Allocator> allocator() const;
  // A copy of `host` in allocator() memory.
  Result<Tensor> ToDevice(const Tensor& host) const;
  // Waits for every launch so far; reports a kernel's failure.
  Status Synchronize() const;
  CudaDevice* device() const;
  std::string Describe() const;  // "NVIDIA H200 (sm_90), device 0"

  struct State;

 private:
  CudaGpuLinker() = default;
  std::shared_ptr<State> state_;
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_GPU_LINKER_H_
