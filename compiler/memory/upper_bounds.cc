// Upper bounds of symbolic variables: the --bound flag and the function
// attribute tir_var_upper_bound (declared in plan_memory.h).
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "compiler/memory/plan_memory.h"

namespace kiln {
namespace memory {

Result<std::pair<std::string, int64_t>> ParseBoundFlag(const std::string& text) {
  size_t eq = text.find('=');
  std::string name = text.substr(0, eq);
  bool name_ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (eq == std::string::npos || !name_ok) {
    return InvalidArgument("--bound '" + text + "': expected NAME=VALUE with a variable name, e.g. --bound n=128");
  }
  std::string value = text.substr(eq + 1);
  errno = 0;
  char* end = nullptr;
  long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || v <= 0) {
    return InvalidArgument("--bound '" + text + "': the upper bound of '" + name + "' must be a positive integer");
  }
  return std::make_pair(name, static_cast<int64_t>(v));
}

Result<std::map<std::string, int64_t>> UpperBoundsFromAttrs(const std::string& function, const ir::AttrMap& attrs) {
  std::map<std::string, int64_t> out;
  auto it = attrs.find("tir_var_upper_bound");
  if (it == attrs.end()) return out;
  const ir::AttrValue& v = it->second;
  if (v.kind != ir::AttrValue::Kind::kIntDict) {
    return InvalidArgument(function + ": attribute tir_var_upper_bound must be a dict of variable names to integers, "
                           "e.g. {\"n\": 128}");
  }
  for (const auto& kv : v.int_dict) {
    if (kv.second <= 0) {
      return InvalidArgument(StrFormat("%s: tir_var_upper_bound: the upper bound of '%s' must be a positive integer, "
                                       "got %lld",
                                       function.c_str(), kv.first.c_str(), static_cast<long long>(kv.second)));
    }
    out[kv.first] = kv.second;
  }
  return out;
}

}  // namespace memory
}  // namespace kiln
