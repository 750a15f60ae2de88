#include "kernels/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln {
namespace kernels {
namespace cuda {

std::vector<std::string> CublasLtLibraryNames() {
  const char* env = std::getenv("KILN_CUBLASLT");
  if (env != nullptr && *env != '\0') return {env};
  return {"libcublasLt.so.13", "libcublasLt.so"};
}

Result<std::unique_ptr<CublasLtApi>> OpenCublasLt(const std::vector<std::string>& names) {
  std::string tried;
  for (const std::string& name : names) {
    // RTLD_LOCAL: its symbols stay private. Never closed: handles and
    // descriptors created from it may live until the process exits.
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "dlopen failed");
      continue;
    }
    auto api = std::make_unique<CublasLtApi>();
    api->library = name;
#define KILN_CUBLASLT_RESOLVE(fn)                                                                       \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(lib, #fn));                                       \
  if (api->fn == nullptr) {                                                                             \
    return FailedPrecondition("cuBLAS not found: " + name + " is not cuBLASLt (no " #fn " in it)"); \
  }
    KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_RESOLVE)
#undef KILN_CUBLASLT_RESOLVE
    api->cublasLtGetStatusName = reinterpret_cast<decltype(api->cublasLtGetStatusName)>(dlsym(lib, "cublasLtGetStatusName"));
    api->cublasLtGetStatusString =
        reinterpret_cast<decltype(api->cublasLtGetStatusString)>(dlsym(lib, "cublasLtGetStatusString"));
    api->version = api->cublasLtGetVersion();
    // The descriptors' attribute enums used here exist since cuBLASLt 11;
    // an older library would misread them.
    if (api->version < 110000) {
      return FailedPrecondition(StrFormat("cuBLAS not found: %s is cuBLASLt %zu, older than 11.0", name.c_str(),
                                          api->version));
    }
    return api;
  }
  return FailedPrecondition("cuBLAS not found: " + (tried.empty() ? std::string("no library to try") : tried));
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
