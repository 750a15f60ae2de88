#include "runtime/registry.h"

#include <map>
#include <mutex>

namespace kiln {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, PackedFunc> functions;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // never destroyed: safe during static teardown
  return *registry;
}

}  // namespace

Status RegisterGlobalFunction(const std::string& name, PackedFunc fn, bool allow_override) {
  if (name.empty()) return InvalidArgument("cannot register a function with an empty name");
  if (!fn) return InvalidArgument("cannot register an empty function as '" + name + "'");
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.functions.find(name);
  if (it != r.functions.end() && !allow_override) {
    return FailedPrecondition("global function '" + name + "' is already registered");
  }
  r.functions[name] = std::move(fn);
  return Status::Ok();
}

bool RemoveGlobalFunction(const std::string& name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.functions.erase(name) > 0;
}

Result<PackedFunc> LookupGlobalFunction(const std::string& name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.functions.find(name);
  if (it == r.functions.end()) return NotFound("no global function named '" + name + "'");
  return it->second;
}

std::vector<std::string> ListGlobalFunctions() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& kv : r.functions) names.push_back(kv.first);
  return names;
}

GlobalFunctionRegistrar::GlobalFunctionRegistrar(const char* name, PackedFunc fn) {
  Status s = RegisterGlobalFunction(name, std::move(fn));
  KILN_CHECK(s.ok(), "%s", s.ToString().c_str());
}

}  // namespace kiln
