#include "kernels/cuda/dl_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln {
namespace kernels {
namespace cuda {

std::vector<std::string> LibraryNames(const char* env_var, std::vector<std::string> defaults) {
  const char* env = std::getenv(env_var);
  if (env != nullptr && *env != '\0') return {env};
  return defaults;
}

Result<OpenedLibrary> OpenFirstLibrary(const std::vector<std::string>& names, const char* what) {
  std::string tried;
  for (const std::string& name : names) {
    // RTLD_LOCAL: its symbols stay private to the lookups here.
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) return OpenedLibrary{lib, name};
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "dlopen failed");
  }
  return FailedPrecondition(std::string(what) + " not found: " + (tried.empty() ? std::string("no library to try") : tried));
}

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
