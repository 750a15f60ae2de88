// The CUDA driver API, loaded at run time.
//
// libcuda.so.1 is opened with dlopen the first time a CUDA device is asked
// for, and every entry point is resolved through cuGetProcAddress, so one
// build of the runtime runs on machines with and without a GPU: without a
// driver, asking for the device is a Status, never a load failure of the
// process. The toolkit's cuda.h is used at build time only, by the .cc files
// of this folder; this header exposes no CUDA type.
//
// KILN_CUDA_DRIVER names another library to open instead of libcuda.so.1
// (tests force the no-driver path with it on a machine that has a GPU).
//
// Thread-safe: the table is loaded once (std::call_once) and immutable after.
#ifndef KILN_RUNTIME_CUDA_CUDA_DRIVER_H_
#define KILN_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <string>

#include "runtime/status.h"

namespace kiln {
namespace cuda {

struct DriverApi;  // the resolved entry points; defined in driver_api.h

// The process's driver table, or the reason there is none:
//   "no CUDA driver: libcuda.so.1: <dlerror>"      (kFailedPrecondition)
//   "CUDA driver: cuInit failed: CUDA_ERROR_NO_DEVICE ..." and the like.
// The outcome of the first call is kept: later calls return the same.
Result<const DriverApi*> Driver();

// The library Driver() opens: $KILN_CUDA_DRIVER, or "libcuda.so.1".
std::string DriverLibraryName();

// The driver's version as "13.0" (cuDriverGetVersion), or the load error.
Result<std::string> DriverVersion();

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CUDA_DRIVER_H_
