// Internal to kernels/cuda: opening a GPU library (cuBLASLt, cuDNN) with
// dlopen at run time, so that nothing links it and the runtime loads on
// machines without it.
#ifndef KILN_KERNELS_CUDA_DL_LIBRARY_H_
#define KILN_KERNELS_CUDA_DL_LIBRARY_H_

#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace kernels {
namespace cuda {

// `names` to try: $`env_var` alone when it is set, else `defaults`.
std::vector<std::string> LibraryNames(const char* env_var, std::vector<std::string> defaults);

struct OpenedLibrary {
  void* handle = nullptr;  // never closed: objects made from it may live until exit
  std::string name;        // the name it was opened by
};

// The first of `names` that dlopen opens (RTLD_NOW | RTLD_LOCAL), or
// kFailedPrecondition "<what> not found: n1: <dlerror>; n2: <dlerror>".
Result<OpenedLibrary> OpenFirstLibrary(const std::vector<std::string>& names, const char* what);

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_CUDA_DL_LIBRARY_H_
