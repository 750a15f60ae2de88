#include "kernels/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include "kernels/cuda/dl_library.h"

namespace kiln {
namespace kernels {
namespace cuda {

std::vector<std::string> CublasLtLibraryNames() {
  return LibraryNames("KILN_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"});
}

Result<std::unique_ptr<CublasLtApi>> OpenCublasLt(const std::vector<std::string>& names) {
  KILN_ASSIGN_OR_RETURN(OpenedLibrary lib, OpenFirstLibrary(names, "cuBLAS"));
  const std::string& name = lib.name;
  auto api = std::make_unique<CublasLtApi>();
  api->library = name;
#define KILN_CUBLASLT_RESOLVE(fn)                                                                     \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(lib.handle, #fn));                              \
  if (api->fn == nullptr) {                                                                           \
    return FailedPrecondition("cuBLAS not found: " + name + " is not cuBLASLt (no " #fn " in it)"); \
  }
  KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_RESOLVE)
#undef KILN_CUBLASLT_RESOLVE
  api->cublasLtGetStatusName =
      reinterpret_cast<decltype(api->cublasLtGetStatusName)>(dlsym(lib.handle, "cublasLtGetStatusName"));
  api->cublasLtGetStatusString =
      reinterpret_cast<decltype(api->cublasLtGetStatusString)>(dlsym(lib.handle, "cublasLtGetStatusString"));
  api->version = api->cublasLtGetVersion();
  // The descriptors' attribute enums used here exist since cuBLASLt 11; an
  // older library would misread them.
  if (api->version < 110000) {
    return FailedPrecondition(StrFormat("cuBLAS not found: %s is cuBLASLt %zu, older than 11.0", name.c_str(),
                                        api->version));
  }
  return api;
}

Result<const CublasLtApi*> CublasLt() {
  static const Result<std::unique_ptr<CublasLtApi>>* loaded =
      new Result<std::unique_ptr<CublasLtApi>>(OpenCublasLt(CublasLtLibraryNames()));  // never destroyed
  if (!loaded->ok()) return loaded->status();
  return static_cast<const CublasLtApi*>(loaded->value().get());
}

std::string CublasErrorText(const CublasLtApi& api, cublasStatus_t status, const char* what) {
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(status) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(status) : nullptr;
  std::string s = std::string(what) + ": " + (name ? name : "cuBLAS status " + std::to_string(static_cast<int>(status)));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

Status CublasCheck(const CublasLtApi& api, cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  StatusCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  return Status(code, CublasErrorText(api, status, what));
}

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
