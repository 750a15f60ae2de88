// The global registry of packed functions, by name ("kiln.dnnl.matmul",
// "env.linear"). Programs name what they import; the loader resolves each name
// here once, at load.
//
// Thread-safe. Registration usually happens before any module loads; a module
// keeps its own copies of the functions it resolved, so later changes to the
// registry do not affect loaded modules.
#ifndef KILN_RUNTIME_REGISTRY_H_
#define KILN_RUNTIME_REGISTRY_H_

#include <string>
#include <vector>

#include "runtime/any.h"

namespace kiln {

// Fails with kFailedPrecondition if `name` exists and `allow_override` is false.
Status RegisterGlobalFunction(const std::string& name, PackedFunc fn, bool allow_override = false);
// Returns false if `name` was not registered.
bool RemoveGlobalFunction(const std::string& name);
// Copies the function out; kNotFound when absent.
Result<PackedFunc> LookupGlobalFunction(const std::string& name);
std::vector<std::string> ListGlobalFunctions();

// Static registration: KILN_REGISTER_GLOBAL("env.relu", MyRelu);
struct GlobalFunctionRegistrar {
  GlobalFunctionRegistrar(const char* name, PackedFunc fn);
};

}  // namespace kiln

#define KILN_REGISTER_GLOBAL(name, fn) \
  static ::kiln::GlobalFunctionRegistrar KILN_CONCAT_(kiln_registrar_, __LINE__)(name, fn)

#endif  // KILN_RUNTIME_REGISTRY_H_
