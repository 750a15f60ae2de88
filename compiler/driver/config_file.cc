#include "compiler/driver/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace kiln {
namespace driver {
namespace {

std::string Join(const std::vector<std::string>& xs) {
  std::string r;
  for (const auto& x : xs) r += (r.empty() ? "" : ", ") + x;
  return r;
}

std::string At(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? "" : ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Result<OptionValues> Convert(const YAML::Node& root, const std::string& path, const std::vector<std::string>& valid_keys) {
  OptionValues out;
  if (root.IsNull()) return out;  // an empty file sets nothing
  if (!root.IsMap()) return InvalidArgument(path + At(root) + ": the config must be a mapping of option: value");
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    if (std::find(valid_keys.begin(), valid_keys.end(), key) == valid_keys.end()) {
      return InvalidArgument(path + At(kv.first) + ": unknown option '" + key + "' (options: " + Join(valid_keys) + ")");
    }
    std::vector<std::string>& values = out[key];
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      values.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar()) return InvalidArgument(path + At(item) + ": '" + key + "' takes a value or a list of values");
        values.push_back(item.Scalar());
      }
    } else {
      return InvalidArgument(path + At(v) + ": '" + key + "' takes a value or a list of values");
    }
  }
  return out;
}

}  // namespace

Result<OptionValues> ParseConfig(const std::string& yaml, const std::string& path, const std::vector<std::string>& valid_keys) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
    return Convert(root, path, valid_keys);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                           ": invalid YAML: " + e.msg);
  }
}

Result<OptionValues> ReadConfigFile(const std::string& path, const std::vector<std::string>& valid_keys) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open the config file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseConfig(ss.str(), path, valid_keys);
}

}  // namespace driver
}  // namespace kiln
