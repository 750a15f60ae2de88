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
// Memory the VM allocates (planned storage, intermediates, results) comes
// from allocator(): plain device memory (cuda_memory.h: cuMemAlloc through
// the device's caching allocator, the size kept beside the address), tensors
// tagged {kDLCUDA, ordinal}. Constants are copied to cuMemAlloc'ed memory
// once per load. The VM copies host inputs to the device at the function
// boundary (vm/call_context.cc) and the few builtins that read values on the
// host copy them out through memory(), which waits for the kernels first.
// Results stay on the device: ToHost copies one out (and waits).
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
#include "runtime/device_memory.h"
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

  // For vm::ContextOptions::shared_allocator: the device's memory (its
  // device_memory() is memory()). Kept alive by the contexts and tensors
  // using it.
  std::shared_ptr<Allocator> allocator() const;
  // Copies between the host and this device (runtime/device_memory.h).
  DeviceMemory* memory() const;
  // A copy of `host` in allocator() memory ({kDLCUDA, ordinal}); a tensor
  // already on this device is returned as it is, one on another refused.
  Result<Tensor> ToDevice(const Tensor& host) const;
  // A host copy of a device tensor (after the kernels before it); a host
  // tensor as it is.
  Result<Tensor> ToHost(const Tensor& t) const;
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
