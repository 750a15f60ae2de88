// CudaModule: PTX loaded into a device's context through the driver's JIT
// (cuModuleLoadDataEx), and launches of its kernels.
//
// A PTX the JIT refuses fails with the JIT's error log in the message
// ("loading PTX module 'mlp': cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX
// (...): ptxas application ptx input, line 12; error : ...").
//
// Thread-safety: immutable after Load; launches may come from any thread
// (each makes the device's context current).
#ifndef KILN_RUNTIME_CUDA_CUDA_MODULE_H_
#define KILN_RUNTIME_CUDA_CUDA_MODULE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_device.h"
#include "runtime/status.h"

namespace kiln {
namespace cuda {

struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory
};

class CudaModule {
 public:
  // `ptx` is NUL-free PTX text; `name` is for messages. The device must
  // outlive the module.
  static Result<std::unique_ptr<CudaModule>> LoadPtx(CudaDevice* device, const std::string& ptx,
                                                     const std::string& name);
  // `cubin` (size bytes, an ELF file from ptxas for this device's arch),
  // loaded without the JIT. The bytes need not outlive the call.
  static Result<std::unique_ptr<CudaModule>> LoadCubin(CudaDevice* device, const uint8_t* cubin, uint64_t size,
                                                       const std::string& name);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // A kernel's handle (a CUfunction): kNotFound names the module.
  Result<void*> Function(const std::string& kernel) const;

  // Launches `function` on `stream` (nullptr: the device's stream) with
  // `args`: one pointer per kernel parameter, pointing at its value (a
  // device address as uint64_t, an int64_t, a float ...), as cuLaunchKernel
  // takes them. Asynchronous; errors of the kernel itself show at the next
  // synchronization.
  Status Launch(void* function, const LaunchDims& dims, void** args, void* stream = nullptr) const;

  const std::string& name() const { return name_; }

 private:
  CudaModule() = default;
  CudaDevice* device_ = nullptr;
  void* module_ = nullptr;  // CUmodule
  std::string name_;
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CUDA_MODULE_H_
