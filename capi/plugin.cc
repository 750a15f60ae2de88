// kiln_plugin_load: dlopen a user's library of packed functions and run its
// entry point (kiln.h, "Plugins").
//
// What a plugin registered is known exactly, not guessed from the registry's
// contents: kiln_register_function appends to the list of the plugin whose
// entry point runs on the calling thread (thread-local), so registrations by
// other threads at the same time are not counted, and a failing entry point's
// registrations can be taken back.
//
// Loading a library that is already loaded is a no-op (dlopen hands back the
// same handle): kiln-run's logic runs many times in one test process, and a
// second entry-point call would fail on names already taken.
#include <dlfcn.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "capi/c_api_internal.h"
#include "runtime/registry.h"

namespace kiln {
namespace capi {
namespace {

thread_local std::vector<std::string>* g_plugin_registrations = nullptr;

// Loaded plugins (dlopen handle -> functions registered). Recursive: an entry
// point may load another plugin.
std::recursive_mutex g_plugins_mutex;
std::map<void*, size_t>& LoadedPlugins() {
  static auto* loaded = new std::map<void*, size_t>();  // never destroyed: plugins outlive static destructors
  return *loaded;
}

}  // namespace

void NoteRegistration(const char* name) {
  if (g_plugin_registrations != nullptr) g_plugin_registrations->push_back(name);
}

}  // namespace capi
}  // namespace kiln

using kiln::capi::MakeStatus;

extern "C" {

kiln_status_t* kiln_plugin_load(const char* path, size_t* out_num_functions) {
  if (out_num_functions != nullptr) *out_num_functions = 0;
  KILN_CAPI_REQUIRE(path);
  KILN_CAPI_REQUIRE(out_num_functions);
  const std::string where = std::string("plugin '") + path + "'";
  // `--plugin=libmyfuncs.so` means the file here when there is one; dlopen
  // alone would only search the system's library directories for it.
  std::string file = path;
  if (file.find('/') == std::string::npos && access(path, F_OK) == 0) file = "./" + file;
  // RTLD_LOCAL: two plugins may define the same helper symbols. RTLD_NOW: an
  // unresolved symbol fails here, with its name, not in the middle of a call.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return MakeStatus(KILN_STATUS_NOT_FOUND, "cannot load " + where + ": " + (err ? err : "unknown dlopen error"));
  }
  std::lock_guard<std::recursive_mutex> lock(kiln::capi::g_plugins_mutex);
  auto& loaded = kiln::capi::LoadedPlugins();
  auto it = loaded.find(handle);
  if (it != loaded.end()) {
    dlclose(handle);  // the reference this dlopen added
    *out_num_functions = it->second;
    return nullptr;
  }
  dlerror();
  void* symbol = dlsym(handle, KILN_PLUGIN_ENTRY_POINT);
  if (symbol == nullptr) {
    dlclose(handle);
    return MakeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      where + " has no entry point: it must export the C function " KILN_PLUGIN_ENTRY_POINT
                              " (see kiln.h, \"Plugins\")");
  }
  auto entry = reinterpret_cast<kiln_plugin_register_fn_t>(symbol);
  std::vector<std::string> registered;
  std::vector<std::string>* outer = kiln::capi::g_plugin_registrations;  // a plugin may load another
  kiln::capi::g_plugin_registrations = &registered;
  kiln_status_t* s = entry(kiln_api_version());
  kiln::capi::g_plugin_registrations = outer;
  if (s != nullptr) {
    // Take back what the entry point registered before it failed, so that
    // nothing calls into a library that is about to be unloaded.
    for (const std::string& name : registered) kiln::RemoveGlobalFunction(name);
    std::string message = where + ": " KILN_PLUGIN_ENTRY_POINT " failed: " + kiln_status_message(s);
    kiln_status_code_t code = kiln_status_code(s);
    kiln_status_free(s);
    dlclose(handle);
    return MakeStatus(code, message);
  }
  if (registered.empty()) {
    dlclose(handle);
    return MakeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      where + " registered no functions: its " KILN_PLUGIN_ENTRY_POINT
                              " must call kiln_register_function");
  }
  if (outer != nullptr) outer->insert(outer->end(), registered.begin(), registered.end());
  // The library stays loaded for the life of the process: modules keep
  // copies of the functions it registered.
  loaded[handle] = registered.size();
  *out_num_functions = registered.size();
  return nullptr;
}

}  // extern "C"
