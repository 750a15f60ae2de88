#include "compiler/onnx/input_dims.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

namespace kiln {
namespace onnx {

std::string IdentifierText(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "v" + id;
  return id;
}

Result<InputShape> ReadInputShape(const ::onnx::ValueInfoProto& vi, int64_t max_dim) {
  InputShape shape;
  shape.input = vi.name();
  const auto& dims = vi.type().tensor_type().shape();
  for (int i = 0; i < dims.dim_size(); ++i) {
    const auto& d = dims.dim(i);
    InputDim dim;
    if (d.has_dim_value()) {
      if (d.dim_value() > max_dim) {
        return InvalidArgument("graph input \"" + vi.name() + "\" has dimension " + std::to_string(d.dim_value()));
      }
      // Exporters write -1 or 0 for a dimension they do not know.
      if (d.dim_value() >= 1) dim.value = d.dim_value();
    } else if (d.has_dim_param() && d.dim_param() != "?") {
      dim.name = d.dim_param();  // an empty dim_param is an unknown dimension too
    }
    shape.dims.push_back(dim);
  }
  return shape;
}

void NameUnknownDims(std::vector<InputShape>* inputs) {
  std::set<std::string> taken;
  for (const auto& in : *inputs)
    for (const auto& d : in.dims)
      if (!d.name.empty()) taken.insert(d.name);
  for (auto& in : *inputs) {
    for (size_t i = 0; i < in.dims.size(); ++i) {
      InputDim& d = in.dims[i];
      if (d.value || !d.name.empty()) continue;
      std::string base = IdentifierText(in.input) + "_dim" + std::to_string(i);
      std::string name = base;
      for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
      taken.insert(name);
      d.name = name;
    }
  }
}

namespace {

// "x:2" -> input "x", position 2; false unless the text after the last ':'
// is a non-empty run of digits.
bool SplitPosition(const std::string& key, std::string* input, int64_t* position) {
  size_t colon = key.rfind(':');
  if (colon == std::string::npos || colon + 1 == key.size()) return false;
  int64_t p = 0;
  for (size_t i = colon + 1; i < key.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(key[i]))) return false;
    if (p > (INT64_MAX - 9) / 10) return false;
    p = p * 10 + (key[i] - '0');
  }
  *input = key.substr(0, colon);
  *position = p;
  return true;
}

}  // namespace

std::map<std::string, int64_t> ResolveFixedDims(const std::vector<InputShape>& inputs,
                                                const std::map<std::string, int64_t>& fixed,
                                                std::vector<std::string>* problems) {
  std::vector<std::string> names;  // in order of first appearance
  for (const auto& in : inputs)
    for (const auto& d : in.dims)
      if (!d.value && std::find(names.begin(), names.end(), d.name) == names.end()) names.push_back(d.name);

  std::map<std::string, int64_t> pinned;
  std::map<std::string, std::string> pinned_by;  // name -> the key that pinned it
  for (const auto& kv : fixed) {
    const std::string& key = kv.first;
    const std::string label = "fixed dimension \"" + key + "\"";
    std::string name;
    std::string input;
    int64_t position = 0;
    if (std::find(names.begin(), names.end(), key) != names.end()) {
      name = key;
    } else if (SplitPosition(key, &input, &position)) {
      const InputShape* shape = nullptr;
      for (const auto& in : inputs)
        if (in.input == input) shape = &in;
      if (!shape) {
        std::string known;
        for (const auto& in : inputs) known += (known.empty() ? "" : ", ") + in.input;
        problems->push_back(label + ": no graph input is named \"" + input + "\"" +
                            (known.empty() ? "" : " (the inputs are: " + known + ")"));
        continue;
      }
      if (position >= static_cast<int64_t>(shape->dims.size())) {
        problems->push_back(label + ": input \"" + input + "\" has " + std::to_string(shape->dims.size()) +
                            " dimensions (positions 0 to " + std::to_string(static_cast<int64_t>(shape->dims.size()) - 1) +
                            ")");
        continue;
      }
      const InputDim& d = shape->dims[static_cast<size_t>(position)];
      if (d.value) {
        if (*d.value != kv.second) {
          problems->push_back(label + " = " + std::to_string(kv.second) + ": dimension " + std::to_string(position) +
                              " of input \"" + input + "\" is " + std::to_string(*d.value));
        }
        continue;
      }
      name = d.name;
    } else {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      problems->push_back(label + " names no symbolic dimension of the graph inputs" +
                          (known.empty() ? " (they have none)" : " (they have: " + known + ")") +
                          "; a dimension is also named by INPUT:POSITION");
      continue;
    }
    auto it = pinned.find(name);
    if (it != pinned.end() && it->second != kv.second) {
      problems->push_back(label + " = " + std::to_string(kv.second) + " contradicts fixed dimension \"" +
                          pinned_by[name] + "\" = " + std::to_string(it->second) + " (both are \"" + name + "\")");
      continue;
    }
    pinned[name] = kv.second;
    pinned_by.emplace(name, key);
  }
  return pinned;
}

}  // namespace onnx
}  // namespace kiln
