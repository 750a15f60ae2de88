// Packed functions that run on one CUDA device: GPU library kernels
// (kernels/cuda: kiln.cublas.matmul, ...) that need the device's context and
// stream, which a function in the global registry (runtime/registry.h) has
// no way to know.
//
// A library registers a factory under the callable's name; CudaGpuLinker
// (gpu_linker.h) asks MakeDeviceFunction for each packed callable of a GPU
// program at load (GpuLinker::ResolvePacked), so the program's
// R.call_dps_packed("kiln.cublas.matmul", ...) runs on the linker's stream.
//
// Thread-safe: registration and lookup lock; registrations normally happen in
// static initializers (KILN_REGISTER_DEVICE_FUNCTION).
#ifndef KILN_RUNTIME_CUDA_DEVICE_FUNCTIONS_H_
#define KILN_RUNTIME_CUDA_DEVICE_FUNCTIONS_H_

#include <functional>
#include <string>
#include <vector>

#include "runtime/any.h"
#include "runtime/status.h"

namespace kiln {
namespace cuda {

class CudaDevice;

// Makes the packed function `name` for `device` (which outlives it: the
// linker keeps the device alive while any loaded module does).
using DeviceFunctionFactory = std::function<Result<PackedFunc>(CudaDevice* device)>;

// kFailedPrecondition when `name` is registered already.
Status RegisterDeviceFunction(const std::string& name, DeviceFunctionFactory factory);

// The function `name` bound to `device`; kNotFound when nothing registered
// `name` (the caller then tries the global registry).
Result<PackedFunc> MakeDeviceFunction(const std::string& name, CudaDevice* device);

std::vector<std::string> ListDeviceFunctions();

struct DeviceFunctionRegistrar {
  DeviceFunctionRegistrar(const char* name, DeviceFunctionFactory factory);
};

}  // namespace cuda
}  // namespace kiln

#define KILN_REGISTER_DEVICE_FUNCTION(name, factory) \
  static ::kiln::cuda::DeviceFunctionRegistrar KILN_CONCAT_(kiln_device_registrar_, __LINE__)(name, factory)

#endif  // KILN_RUNTIME_CUDA_DEVICE_FUNCTIONS_H_
