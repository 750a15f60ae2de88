#include "kernels/cuda/cudnn_api.h"

#include <dlfcn.h>

#include "kernels/cuda/dl_library.h"

namespace kiln {
namespace kernels {
namespace cuda {

std::vector<std::string> CudnnLibraryNames() { return LibraryNames("KILN_CUDNN", {"libcudnn.so.9", "libcudnn.so"}); }

Result<std::unique_ptr<CudnnApi>> OpenCudnn(const std::vector<std::string>& names) {
  KILN_ASSIGN_OR_RETURN(OpenedLibrary lib, OpenFirstLibrary(names, "cuDNN"));
  const std::string& name = lib.name;
  auto api = std::make_unique<CudnnApi>();
  api->library = name;
#define KILN_CUDNN_RESOLVE(fn)                                                                    \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(lib.handle, #fn));                          \
  if (api->fn == nullptr) {                                                                       \
    return FailedPrecondition("cuDNN not found: " + name + " is not cuDNN (no " #fn " in it)"); \
  }
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_RESOLVE)
#undef KILN_CUDNN_RESOLVE
  api->version = api->cudnnGetVersion();
  // The enums of cudnn.h 9 (the build's) are read as cuDNN 9 defines them.
  if (api->version / 10000 != 9) {
    return FailedPrecondition(StrFormat("cuDNN not found: %s is cuDNN %zu.%zu.%zu; Kiln needs 9", name.c_str(),
                                        api->version / 10000, api->version / 100 % 100, api->version % 100));
  }
  return api;
}

Result<const CudnnApi*> Cudnn() {
  static const Result<std::unique_ptr<CudnnApi>>* loaded =
      new Result<std::unique_ptr<CudnnApi>>(OpenCudnn(CudnnLibraryNames()));  // never destroyed
  if (!loaded->ok()) return loaded->status();
  return static_cast<const CudnnApi*>(loaded->value().get());
}

Status CudnnCheck(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::Ok();
  StatusCode code = status == CUDNN_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  const char* text = api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : nullptr;
  return Status(code, std::string(what) + ": " + (text ? text : "cuDNN status " + std::to_string(static_cast<int>(status))));
}

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
