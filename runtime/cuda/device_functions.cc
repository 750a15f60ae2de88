#include "runtime/cuda/device_functions.h"

#include <map>
#include <mutex>

namespace kiln {
namespace cuda {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, DeviceFunctionFactory> factories;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // never destroyed: safe during static teardown
  return *registry;
}

}  // namespace

Status RegisterDeviceFunction(const std::string& name, DeviceFunctionFactory factory) {
  if (name.empty() || !factory) return InvalidArgument("a device function needs a name and a factory");
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.factories.emplace(name, std::move(factory)).second) {
    return FailedPrecondition("device function '" + name + "' is already registered");
  }
  return Status::Ok();
}

Result<PackedFunc> MakeDeviceFunction(const std::string& name, CudaDevice* device) {
  DeviceFunctionFactory factory;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it == r.factories.end()) return NotFound("no device function '" + name + "'");
    factory = it->second;
  }
  return factory(device);  // outside the lock: a factory may take its time
}

std::vector<std::string> ListDeviceFunctions() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& kv : r.factories) names.push_back(kv.first);
  return names;
}

DeviceFunctionRegistrar::DeviceFunctionRegistrar(const char* name, DeviceFunctionFactory factory) {
  Status s = RegisterDeviceFunction(name, std::move(factory));
  KILN_CHECK(s.ok(), "%s", s.ToString().c_str());
}

}  // namespace cuda
}  // namespace kiln
