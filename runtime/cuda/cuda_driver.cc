#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "runtime/cuda/driver_api.h"

namespace kiln {
namespace cuda {
namespace {

// cuGetProcAddress as drivers since 12.0 export it (cuGetProcAddress_v2), and
// the older four-argument form.
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

struct Loaded {
  DriverApi api;
  Status status;
};

Status Resolve(void* lib, DriverApi* api) {
  auto v2 = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto v1 = reinterpret_cast<GetProcV1>(dlsym(lib, "cuGetProcAddress"));
  if (v2 == nullptr && v1 == nullptr) {
    return FailedPrecondition("no CUDA driver: " + DriverLibraryName() +
                              ": no cuGetProcAddress in it (not a CUDA driver, or one older than CUDA 11.3)");
  }
  // Entry points are asked for by their base name with the toolkit version
  // this runtime was built against, or the driver's when that is older (a
  // version above the driver's is refused outright); the driver hands back
  // the matching versioned implementation (cuMemAlloc -> cuMemAlloc_v2).
  int version = CUDA_VERSION;
  using GetVersion = CUresult (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion"));
  int driver_version = 0;
  if (get_version != nullptr && get_version(&driver_version) == CUDA_SUCCESS && driver_version > 0 &&
      driver_version < version) {
    version = driver_version;
  }
  auto get = [&](const char* name, void** out) -> bool {
    *out = nullptr;
    CUresult rc;
    if (v2 != nullptr) {
      CUdriverProcAddressQueryResult found;
      rc = v2(name, out, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    } else {
      rc = v1(name, out, version, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    return rc == CUDA_SUCCESS && *out != nullptr;
  };
#define KILN_CUDA_RESOLVE(name)                                                                   \
  if (!get(#name, reinterpret_cast<void**>(&api->name)))                                          \
    return FailedPrecondition("CUDA driver " + DriverLibraryName() + " (CUDA " +                  \
                              std::to_string(driver_version / 1000) + "." +                          \
                              std::to_string(driver_version % 1000 / 10) + ") lacks " #name);
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_RESOLVE)
#undef KILN_CUDA_RESOLVE
  return Status::Ok();
}

Loaded* LoadOnce() {
  auto* loaded = new Loaded();  // lives for the process: the table is handed out as a pointer
  std::string name = DriverLibraryName();
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace; it is
  // never closed, since modules and contexts may outlive any owner we have.
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    loaded->status = FailedPrecondition("no CUDA driver: " + name + ": " + (why ? why : "dlopen failed"));
    return loaded;
  }
  loaded->status = Resolve(lib, &loaded->api);
  if (!loaded->status.ok()) return loaded;
  CUresult rc = loaded->api.cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) {
    loaded->status = FailedPrecondition("no CUDA device: the driver (" + name + ") sees no GPU");
    return loaded;
  }
  loaded->status = Check(loaded->api, rc, "cuInit");
  if (!loaded->status.ok()) {
    loaded->status.Annotate("CUDA driver");
    return loaded;
  }
  loaded->status = Check(loaded->api, loaded->api.cuDriverGetVersion(&loaded->api.version), "cuDriverGetVersion");
  return loaded;
}

}  // namespace

std::string ErrorText(const DriverApi& api, CUresult rc, const char* what) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(rc, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(rc, &text);
  std::string s = std::string(what) + ": " + (name ? name : "CUDA error " + std::to_string(static_cast<int>(rc)));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

Status Check(const DriverApi& api, CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return Status::Ok();
  StatusCode code = rc == CUDA_ERROR_OUT_OF_MEMORY ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  return Status(code, ErrorText(api, rc, what));
}

std::string DriverLibraryName() {
  const char* env = std::getenv("KILN_CUDA_DRIVER");
  return env && *env ? env : "libcuda.so.1";
}

Result<const DriverApi*> Driver() {
  static Loaded* loaded = LoadOnce();  // thread-safe static initialization
  if (!loaded->status.ok()) return loaded->status;
  return static_cast<const DriverApi*>(&loaded->api);
}

Result<std::string> DriverVersion() {
  KILN_ASSIGN_OR_RETURN(const DriverApi* api, Driver());
  return std::to_string(api->version / 1000) + "." + std::to_string(api->version % 1000 / 10);
}

}  // namespace cuda
}  // namespace kiln
