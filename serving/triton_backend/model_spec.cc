#include "serving/triton_backend/model_spec.h"

#include <cstdlib>
#include <utility>

namespace kiln::triton {

namespace {

struct DtypePair {
  TRITONSERVER_DataType triton;
  kiln_dtype_t kiln;
  const char* config_name;
  const char* kiln_name;
  size_t size;
};

// Triton's BYTES (variable-length strings) has no Kiln counterpart.
constexpr DtypePair kDtypes[] = {
    {TRITONSERVER_TYPE_BOOL, KILN_DTYPE_BOOL, "TYPE_BOOL", "bool", 1},
    {TRITONSERVER_TYPE_UINT8, KILN_DTYPE_UINT8, "TYPE_UINT8", "uint8", 1},
    {TRITONSERVER_TYPE_UINT16, KILN_DTYPE_UINT16, "TYPE_UINT16", "uint16", 2},
    {TRITONSERVER_TYPE_UINT32, KILN_DTYPE_UINT32, "TYPE_UINT32", "uint32", 4},
    {TRITONSERVER_TYPE_UINT64, KILN_DTYPE_UINT64, "TYPE_UINT64", "uint64", 8},
    {TRITONSERVER_TYPE_INT8, KILN_DTYPE_INT8, "TYPE_INT8", "int8", 1},
    {TRITONSERVER_TYPE_INT16, KILN_DTYPE_INT16, "TYPE_INT16", "int16", 2},
    {TRITONSERVER_TYPE_INT32, KILN_DTYPE_INT32, "TYPE_INT32", "int32", 4},
    {TRITONSERVER_TYPE_INT64, KILN_DTYPE_INT64, "TYPE_INT64", "int64", 8},
    {TRITONSERVER_TYPE_FP16, KILN_DTYPE_FLOAT16, "TYPE_FP16", "float16", 2},
    {TRITONSERVER_TYPE_FP32, KILN_DTYPE_FLOAT32, "TYPE_FP32", "float32", 4},
    {TRITONSERVER_TYPE_FP64, KILN_DTYPE_FLOAT64, "TYPE_FP64", "float64", 8},
    {TRITONSERVER_TYPE_BF16, KILN_DTYPE_BFLOAT16, "TYPE_BF16", "bfloat16", 2},
};

const DtypePair* ByTriton(TRITONSERVER_DataType t) {
  for (const auto& d : kDtypes) {
    if (d.triton == t) return &d;
  }
  return nullptr;
}

bool ReadTensors(const JsonValue& config, const char* section, std::vector<TensorSpec>* out, std::string* error) {
  const JsonValue* list = config.Find(section);
  if (list == nullptr || list->kind != JsonValue::Kind::kArray || list->items.empty()) {
    *error = std::string("the configuration has no ") + section + " list";
    return false;
  }
  for (const JsonValue& item : list->items) {
    TensorSpec t;
    const JsonValue* name = item.Find("name");
    const JsonValue* dtype = item.Find("data_type");
    const JsonValue* dims = item.Find("dims");
    if (name == nullptr || name->kind != JsonValue::Kind::kString || dtype == nullptr ||
        dtype->kind != JsonValue::Kind::kString || dims == nullptr || dims->kind != JsonValue::Kind::kArray) {
      *error = std::string("an entry of the ") + section + " list lacks name, data_type or dims";
      return false;
    }
    t.name = name->text;
    t.triton_dtype = TritonDtypeFromConfig(dtype->text);
    const DtypePair* pair = ByTriton(t.triton_dtype);
    if (pair == nullptr) {
      *error = std::string(section) + " '" + t.name + "' has data_type " + dtype->text +
               ", which Kiln has no type for";
      return false;
    }
    t.kiln_dtype = pair->kiln;
    t.element_size = pair->size;
    for (const JsonValue& d : dims->items) {
      int64_t v = 0;
      if (!d.AsInt(&v)) {
        *error = std::string(section) + " '" + t.name + "' has a dimension that is not an integer";
        return false;
      }
      t.dims.push_back(v);
    }
    out->push_back(std::move(t));
  }
  return true;
}

std::string DimsText(const int64_t* dims, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Checks a declared tensor (parameter or result) against its config entry.
bool MatchTensor(const std::string& where, const kiln_value_info_t& info, const TensorSpec& t, bool batched,
                 std::string* error) {
  if (info.kind != KILN_VALUE_TENSOR) {
    *error = where + " is a " + kiln_value_kind_name(info.kind) + ", not a tensor";
    return false;
  }
  if (info.dtype != 0 && info.dtype != t.kiln_dtype) {
    *error = where + " is " + KilnDtypeName(info.dtype) + " but the configuration says " +
             ConfigDtypeName(t.triton_dtype);
    return false;
  }
  if (info.ndim < 0) return true;  // undeclared rank: Kiln checks each call
  size_t expected_rank = t.dims.size() + (batched ? 1 : 0);
  if (static_cast<size_t>(info.ndim) != expected_rank) {
    *error = where + " has rank " + std::to_string(info.ndim) + " but the configuration's dims " +
             DimsText(t.dims.data(), t.dims.size()) + (batched ? " (plus the batch dimension)" : "") +
             " have rank " + std::to_string(expected_rank);
    return false;
  }
  if (batched && info.dims[0] != -1) {
    *error = where + " starts with the static dimension " + std::to_string(info.dims[0]) +
             ", not a symbolic batch dimension; set max_batch_size: 0";
    return false;
  }
  for (size_t i = 0; i < t.dims.size(); ++i) {
    int64_t declared = info.dims[i + (batched ? 1 : 0)];
    if (declared >= 0 && t.dims[i] >= 0 && declared != t.dims[i]) {
      *error = where + " has dimension " + std::to_string(declared) + " where the configuration says " +
               std::to_string(t.dims[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

const char* ConfigDtypeName(TRITONSERVER_DataType t) {
  const DtypePair* p = ByTriton(t);
  return p == nullptr ? "an unsupported type" : p->config_name;
}

TRITONSERVER_DataType TritonDtype(kiln_dtype_t dtype) {
  for (const auto& d : kDtypes) {
    if (d.kiln == dtype) return d.triton;
  }
  return TRITONSERVER_TYPE_INVALID;
}

kiln_dtype_t KilnDtype(TRITONSERVER_DataType dtype) {
  const DtypePair* p = ByTriton(dtype);
  return p == nullptr ? 0 : p->kiln;
}

TRITONSERVER_DataType TritonDtypeFromConfig(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.config_name) return d.triton;
  }
  return TRITONSERVER_TYPE_INVALID;
}

std::string KilnDtypeName(kiln_dtype_t dtype) {
  for (const auto& d : kDtypes) {
    if (d.kiln == dtype) return d.kiln_name;
  }
  return "dtype(code " + std::to_string(KILN_DTYPE_GET_CODE(dtype)) + ", bits " +
         std::to_string(KILN_DTYPE_GET_BITS(dtype)) + ")";
}

bool ReadModelConfig(const JsonValue& config, ModelSpec* out, std::string* error) {
  *out = ModelSpec();
  if (const JsonValue* m = config.Find("max_batch_size")) {
    if (!m->AsInt(&out->max_batch_size) || out->max_batch_size < 0) {
      *error = "max_batch_size must be an integer >= 0";
      return false;
    }
  }
  if (const JsonValue* f = config.Find("default_model_filename")) {
    if (f->kind == JsonValue::Kind::kString && !f->text.empty()) out->vmfb_file = f->text;
  }
  if (const JsonValue* params = config.Find("parameters")) {
    for (const auto& [key, value] : params->members) {
      const JsonValue* s = value.Find("string_value");
      if (s == nullptr || s->kind != JsonValue::Kind::kString) continue;
      if (key == "kiln_function") {
        out->function = s->text;
      } else if (key == "kiln_threads") {
        char* end = nullptr;
        long v = std::strtol(s->text.c_str(), &end, 10);
        if (s->text.empty() || *end != '\0' || v < 0 || v > 4096) {
          *error = "parameter kiln_threads must be an integer from 0 to 4096, got '" + s->text + "'";
          return false;
        }
        out->threads = static_cast<int32_t>(v);
      }
    }
  }
  return ReadTensors(config, "input", &out->inputs, error) && ReadTensors(config, "output", &out->outputs, error);
}

bool MatchFunction(const std::string& model_name, const kiln_function_t* function, ModelSpec* spec,
                   std::string* error) {
  const std::string prefix = "model '" + model_name + "', function '" + spec->function + "': ";
  const bool batched = spec->max_batch_size > 0;
  size_t num_params = 0;
  size_t num_results = 0;
  kiln_status_t* status = kiln_function_param_count(function, &num_params);
  if (status == nullptr) status = kiln_function_result_count(function, &num_results);
  if (status != nullptr) {
    *error = prefix + kiln_status_message(status);
    kiln_status_free(status);
    return false;
  }
  if (num_params != spec->inputs.size()) {
    *error = prefix + "it takes " + std::to_string(num_params) + " parameters but the configuration lists " +
             std::to_string(spec->inputs.size()) + " inputs";
    return false;
  }
  std::vector<TensorSpec> ordered;
  for (size_t i = 0; i < num_params; ++i) {
    kiln_value_info_t info;
    status = kiln_function_param_info(function, i, &info);
    if (status != nullptr) {
      *error = prefix + kiln_status_message(status);
      kiln_status_free(status);
      return false;
    }
    const std::string name = info.name != nullptr ? info.name : "";
    const TensorSpec* match = nullptr;
    for (const TensorSpec& t : spec->inputs) {
      if (t.name == name) match = &t;
    }
    if (match == nullptr) {
      *error = prefix + "the configuration has no input named '" + name + "' (parameter " + std::to_string(i) +
               ")";
      return false;
    }
    if (!MatchTensor(prefix + "parameter '" + name + "'", info, *match, batched, error)) return false;
    ordered.push_back(*match);
  }
  spec->inputs = std::move(ordered);
  // One tensor result checks against the one output; a tuple's fields are not described in
  // the .vmfb, so their count and types are checked on each call instead.
  if (num_results == 1) {
    kiln_value_info_t info;
    status = kiln_function_result_info(function, 0, &info);
    if (status != nullptr) {
      *error = prefix + kiln_status_message(status);
      kiln_status_free(status);
      return false;
    }
    if (info.kind == KILN_VALUE_TENSOR) {
      if (spec->outputs.size() != 1) {
        *error = prefix + "it returns one tensor but the configuration lists " +
                 std::to_string(spec->outputs.size()) + " outputs";
        return false;
      }
      if (!MatchTensor(prefix + "result", info, spec->outputs[0], batched, error)) return false;
    }
  }
  return true;
}

}  // namespace kiln::triton
