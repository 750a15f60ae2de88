// Internal to runtime/cuda: the table of driver entry points. Includes the
// toolkit's cuda.h (for types and prototypes only: nothing links libcuda).
#ifndef KILN_RUNTIME_CUDA_DRIVER_API_H_
#define KILN_RUNTIME_CUDA_DRIVER_API_H_

#include <cuda.h>

#include <string>

#include "runtime/status.h"

namespace kiln {
namespace cuda {

// One member per entry point used, typed from the header's prototype (the
// macros in cuda.h pick the current version: cuMemAlloc -> cuMemAlloc_v2).
#define KILN_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                           \
  X(cuDriverGetVersion)               \
  X(cuGetErrorName)                   \
  X(cuGetErrorString)                 \
  X(cuDeviceGetCount)                 \
  X(cuDeviceGet)                      \
  X(cuDeviceGetName)                  \
  X(cuDeviceGetAttribute)             \
  X(cuDeviceTotalMem)                 \
  X(cuDevicePrimaryCtxRetain)         \
  X(cuDevicePrimaryCtxRelease)        \
  X(cuCtxSetCurrent)                  \
  X(cuCtxSynchronize)                 \
  X(cuMemAlloc)                       \
  X(cuMemFree)                        \
  X(cuMemAllocManaged)                \
  X(cuMemcpyHtoDAsync)                \
  X(cuMemcpyDtoHAsync)                \
  X(cuMemcpyDtoDAsync)                \
  X(cuMemsetD8Async)                  \
  X(cuStreamCreate)                   \
  X(cuStreamDestroy)                  \
  X(cuStreamSynchronize)              \
  X(cuEventCreate)                    \
  X(cuEventDestroy)                   \
  X(cuEventRecord)                    \
  X(cuEventSynchronize)               \
  X(cuEventElapsedTime)               \
  X(cuModuleLoadDataEx)               \
  X(cuModuleUnload)                   \
  X(cuModuleGetFunction)              \
  X(cuLaunchKernel)                   \
  X(cuStreamBeginCapture)             \
  X(cuStreamEndCapture)               \
  X(cuStreamIsCapturing)              \
  X(cuGraphInstantiateWithFlags)      \
  X(cuGraphLaunch)                    \
  X(cuGraphGetNodes)                  \
  X(cuGraphExecDestroy)               \
  X(cuGraphDestroy)

struct DriverApi {
#define KILN_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_MEMBER)
#undef KILN_CUDA_MEMBER
  int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)": `what` and the
// driver's name and description of `rc`.
std::string ErrorText(const DriverApi& api, CUresult rc, const char* what);

// OK for CUDA_SUCCESS; otherwise a Status with ErrorText (kResourceExhausted
// for out-of-memory, kInternal otherwise).
Status Check(const DriverApi& api, CUresult rc, const char* what);

}  // namespace cuda
}  // namespace kiln

#define KILN_CUDA_RETURN_IF_ERROR(api, call, what) KILN_RETURN_IF_ERROR(::kiln::cuda::Check((api), (call), (what)))

#endif  // KILN_RUNTIME_CUDA_DRIVER_API_H_
