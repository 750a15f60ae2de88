// kiln.h's values: scalars, shapes, tensors and nested tuples as inputs
// (kiln_context_invoke_values), outputs (kiln_outputs_get_value) and the
// arguments and results of registered C functions.
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "capi/c_api_internal.h"
#include "capi/kiln.h"
#include "runtime/any.h"

using kiln::Any;
using kiln::capi::Invalid;
using kiln::capi::MakeStatus;
using kiln::capi::NoMemory;

void kiln::capi::SetValue(kiln_value* v, Any any) {
  v->any = std::move(any);
  v->tensor.tensor = v->any.is_tensor() ? v->any.tensor() : kiln::Tensor();
  v->fields.clear();
  // Field handles are made now, all levels down, so that a value never
  // changes after it is made (and so may be read from many threads).
  if (v->any.is_tuple()) {
    const std::vector<Any>& fields = v->any.tuple_fields();
    v->fields.resize(fields.size());
    for (size_t i = 0; i < fields.size(); ++i) SetValue(&v->fields[i], fields[i]);
  }
}

namespace {

// A new owned value handle holding `any`.
kiln_status_t* NewValue(const char* api, Any any, kiln_value_t** out_value) {
  kiln_value_t* v = new (std::nothrow) kiln_value_t;
  if (v == nullptr) return NoMemory(api);
  kiln::capi::SetValue(v, std::move(any));
  *out_value = v;
  return nullptr;
}

kiln_status_t* WrongKind(const char* api, const char* wanted, const Any& got) {
  return Invalid(api, std::string("expected ") + wanted + ", got " + got.Describe());
}

// Builds (once) and lends the handle of values[index], shared by outputs and
// arguments.
const kiln_value_t* LendValue(const std::vector<Any>& values, std::vector<kiln_value>* handles, size_t index) {
  if (handles->size() != values.size()) {
    handles->resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) kiln::capi::SetValue(&(*handles)[i], values[i]);
  }
  return &(*handles)[index];
}

}  // namespace

extern "C" {

const char* kiln_value_kind_name(kiln_value_kind_t kind) {
  switch (kiln::capi::RawEnum(&kind)) {
    case KILN_VALUE_NONE: return "none";
    case KILN_VALUE_INT: return "int";
    case KILN_VALUE_FLOAT: return "float";
    case KILN_VALUE_STRING: return "string";
    case KILN_VALUE_TENSOR: return "tensor";
    case KILN_VALUE_SHAPE: return "shape";
    case KILN_VALUE_TUPLE: return "tuple";
    case KILN_VALUE_FUNCTION: return "function";
    case KILN_VALUE_OBJECT: return "object";
  }
  return "unknown";
}

kiln_status_t* kiln_value_create_int64(int64_t value, kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  return NewValue(__func__, Any(value), out_value);
}

kiln_status_t* kiln_value_create_float64(double value, kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  return NewValue(__func__, Any(value), out_value);
}

kiln_status_t* kiln_value_create_shape(const int64_t* dims, int32_t ndim, kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  if (ndim < 0) return Invalid(__func__, kiln::StrFormat("ndim %d is negative", static_cast<int>(ndim)));
  if (ndim > 0 && dims == nullptr) return Invalid(__func__, "dims is NULL");
  for (int32_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      return Invalid(__func__, kiln::StrFormat("dimension %d is negative (%lld)", static_cast<int>(i),
                                               static_cast<long long>(dims[i])));
    }
  }
  std::vector<int64_t> shape(dims, dims + ndim);
  return NewValue(__func__, Any::Shape(std::move(shape)), out_value);
}

kiln_status_t* kiln_value_create_tensor(const kiln_tensor_t* tensor, kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  KILN_CAPI_REQUIRE(tensor);
  return NewValue(__func__, Any(tensor->tensor), out_value);
}

kiln_status_t* kiln_value_create_tuple(const kiln_value_t* const* fields, size_t num_fields,
                                       kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  if (num_fields > 0 && fields == nullptr) return Invalid(__func__, "fields is NULL");
  std::vector<Any> values(num_fields);
  for (size_t i = 0; i < num_fields; ++i) {
    if (fields[i] == nullptr) return Invalid(__func__, kiln::StrFormat("field %zu is NULL", i));
    values[i] = fields[i]->any;
  }
  return NewValue(__func__, Any::Tuple(std::move(values)), out_value);
}

kiln_status_t* kiln_value_share(const kiln_value_t* value, kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  KILN_CAPI_REQUIRE(value);
  return NewValue(__func__, value->any, out_value);
}

void kiln_value_release(kiln_value_t* value) { delete value; }

kiln_status_t* kiln_value_kind(const kiln_value_t* value, kiln_value_kind_t* out_kind) {
  KILN_CAPI_REQUIRE(out_kind);
  *out_kind = KILN_VALUE_NONE;
  KILN_CAPI_REQUIRE(value);
  *out_kind = static_cast<kiln_value_kind_t>(value->any.kind());
  return nullptr;
}

kiln_status_t* kiln_value_get_int64(const kiln_value_t* value, int64_t* out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = 0;
  KILN_CAPI_REQUIRE(value);
  if (!value->any.is_int()) return WrongKind(__func__, "an int", value->any);
  *out_value = value->any.int_value();
  return nullptr;
}

kiln_status_t* kiln_value_get_float64(const kiln_value_t* value, double* out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = 0;
  KILN_CAPI_REQUIRE(value);
  if (value->any.is_int()) {
    *out_value = static_cast<double>(value->any.int_value());
  } else if (value->any.is_float()) {
    *out_value = value->any.float_value();
  } else {
    return WrongKind(__func__, "a float or an int", value->any);
  }
  return nullptr;
}

kiln_status_t* kiln_value_get_tensor(const kiln_value_t* value, const kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(value);
  if (!value->any.is_tensor()) return WrongKind(__func__, "a tensor", value->any);
  *out_tensor = &value->tensor;
  return nullptr;
}

kiln_status_t* kiln_value_get_shape(const kiln_value_t* value, int32_t* out_ndim, const int64_t** out_dims) {
  KILN_CAPI_REQUIRE(out_ndim);
  *out_ndim = 0;
  KILN_CAPI_REQUIRE(out_dims);
  *out_dims = nullptr;
  KILN_CAPI_REQUIRE(value);
  if (!value->any.is_shape()) return WrongKind(__func__, "a shape", value->any);
  static const int64_t kNoDims[1] = {0};
  const std::vector<int64_t>& dims = value->any.shape_dims();
  *out_ndim = static_cast<int32_t>(dims.size());
  *out_dims = dims.empty() ? kNoDims : dims.data();
  return nullptr;
}

kiln_status_t* kiln_value_tuple_size(const kiln_value_t* value, size_t* out_size) {
  KILN_CAPI_REQUIRE(out_size);
  *out_size = 0;
  KILN_CAPI_REQUIRE(value);
  if (!value->any.is_tuple()) return WrongKind(__func__, "a tuple", value->any);
  *out_size = value->any.tuple_fields().size();
  return nullptr;
}

kiln_status_t* kiln_value_tuple_get(const kiln_value_t* value, size_t index, const kiln_value_t** out_field) {
  KILN_CAPI_REQUIRE(out_field);
  *out_field = nullptr;
  KILN_CAPI_REQUIRE(value);
  if (!value->any.is_tuple()) return WrongKind(__func__, "a tuple", value->any);
  size_t size = value->any.tuple_fields().size();
  if (index >= size) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE,
                      kiln::StrFormat("kiln_value_tuple_get: index %zu, but the tuple has %zu fields", index, size));
  }
  *out_field = &value->fields[index];
  return nullptr;
}

kiln_status_t* kiln_outputs_get_value(const kiln_outputs_t* outputs, size_t index,
                                      const kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  KILN_CAPI_REQUIRE(outputs);
  if (index >= outputs->values.size()) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE, kiln::StrFormat("kiln_outputs_get_value: index %zu, but there are "
                                                                "%zu outputs",
                                                                index, outputs->values.size()));
  }
  *out_value = LendValue(outputs->values, &outputs->value_handles, index);
  return nullptr;
}

kiln_status_t* kiln_args_get_value(const kiln_args_t* args, size_t index, const kiln_value_t** out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = nullptr;
  KILN_CAPI_REQUIRE(args);
  if (index >= args->values.size()) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE, kiln::StrFormat("kiln_args_get_value: index %zu, but there are "
                                                                "%zu arguments",
                                                                index, args->values.size()));
  }
  if (args->value_handles.size() != args->values.size()) {
    args->value_handles.resize(args->values.size());
    for (size_t i = 0; i < args->values.size(); ++i) kiln::capi::SetValue(&args->value_handles[i], args->values[i]);
  }
  *out_value = &args->value_handles[index];
  return nullptr;
}

kiln_status_t* kiln_result_set_value(kiln_result_t* result, const kiln_value_t* value) {
  KILN_CAPI_REQUIRE(result);
  KILN_CAPI_REQUIRE(value);
  *result->ret = value->any;
  return nullptr;
}

kiln_status_t* kiln_context_invoke_values(kiln_context_t* context, const kiln_function_t* function,
                                          const kiln_value_t* const* inputs, size_t num_inputs,
                                          kiln_outputs_t** out_outputs) {
  KILN_CAPI_REQUIRE(out_outputs);
  *out_outputs = nullptr;
  KILN_CAPI_REQUIRE(context);
  KILN_CAPI_REQUIRE(function);
  if (num_inputs > 0 && inputs == nullptr) return Invalid(__func__, "inputs is NULL");
  if (function->handle.module != context->module.get()) {
    return Invalid(__func__, "function '" + function->name + "' is not of this context's module");
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    if (inputs[i] == nullptr) return Invalid(__func__, kiln::StrFormat("input %zu is NULL", i));
  }
  context->args.resize(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) context->args[i] = inputs[i]->any;
  return kiln::capi::InvokeAnys(__func__, context, *function, num_inputs, out_outputs);
}

}  // extern "C"
