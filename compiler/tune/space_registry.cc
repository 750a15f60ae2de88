#include "compiler/tune/space_registry.h"

#include <map>
#include <mutex>

namespace kiln {
namespace tune {

namespace {

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, SpaceFunction>& Spaces() {
  static std::map<std::string, SpaceFunction> spaces;
  return spaces;
}

}  // namespace

bool RegisterSpace(const std::string& name, SpaceFunction fn) {
  if (name.empty() || name == "all" || name == "default" || name == "generic" || !fn) return false;
  std::lock_guard<std::mutex> lock(Mu());
  return Spaces().emplace(name, std::move(fn)).second;
}

SpaceFunction FindSpace(const std::string& name) {
  std::lock_guard<std::mutex> lock(Mu());
  auto it = Spaces().find(name);
  return it == Spaces().end() ? SpaceFunction() : it->second;
}

std::vector<std::string> RegisteredSpaceNames() {
  std::lock_guard<std::mutex> lock(Mu());
  std::vector<std::string> names;
  for (const auto& kv : Spaces()) names.push_back(kv.first);
  return names;
}

Result<tir::Schedule> ApplyRegisteredSpace(const ir::PrimFunc& func, const std::string& name, uint64_t seed) {
  SpaceFunction fn = FindSpace(name);
  if (!fn) return NotFound("no design space named '" + name + "' is registered");
  KILN_ASSIGN_OR_RETURN(tir::Schedule sch, tir::Schedule::Create(func, seed));
  KILN_RETURN_IF_ERROR_CTX(fn(&sch), "space %s on %s", name.c_str(), func->name.c_str());
  return sch;
}

}  // namespace tune
}  // namespace kiln
