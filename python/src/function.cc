// Calls release the GIL around the C call only: converting arguments and
// outputs touches Python objects. A module is shared by every thread (the C
// module is immutable); a call through the module borrows a context from the
// module's idle list, so concurrent Python threads each run on their own
// context, and the list itself is only touched with the GIL held.
#include "function.h"

#include <algorithm>
#include <mutex>

#include "inputs.h"
#include "status.h"
#include "tensor.h"

namespace kiln_python {

namespace {

using OutputsPtr = std::unique_ptr<kiln_outputs_t, decltype(&kiln_outputs_release)>;

py::object value_to_python(const kiln_value_t* value, const std::shared_ptr<ModuleState>& module) {
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  check(kiln_value_kind(value, &kind));
  switch (kind) {
    case KILN_VALUE_NONE: return py::none();
    case KILN_VALUE_INT: {
      int64_t v = 0;
      check(kiln_value_get_int64(value, &v));
      return py::int_(v);
    }
    case KILN_VALUE_FLOAT: {
      double v = 0;
      check(kiln_value_get_float64(value, &v));
      return py::float_(v);
    }
    case KILN_VALUE_SHAPE: {
      int32_t ndim = 0;
      const int64_t* dims = nullptr;
      check(kiln_value_get_shape(value, &ndim, &dims));
      py::tuple shape(ndim);
      for (int32_t i = 0; i < ndim; ++i) shape[i] = py::int_(dims[i]);
      return std::move(shape);
    }
    case KILN_VALUE_TENSOR: {
      const kiln_tensor_t* borrowed = nullptr;
      kiln_tensor_t* owned = nullptr;
      check(kiln_value_get_tensor(value, &borrowed));
      check(kiln_tensor_share(borrowed, &owned));
      return py::cast(std::make_unique<Tensor>(owned, module->bytes));
    }
    case KILN_VALUE_TUPLE: {
      size_t size = 0;
      check(kiln_value_tuple_size(value, &size));
      py::tuple fields(size);
      for (size_t i = 0; i < size; ++i) {
        const kiln_value_t* field = nullptr;
        check(kiln_value_tuple_get(value, i, &field));
        fields[i] = value_to_python(field, module);
      }
      return std::move(fields);
    }
    default:
      raise_error(KILN_STATUS_UNIMPLEMENTED,
                  std::string("an output of kind ") + kiln_value_kind_name(kind) + " has no Python form");
  }
}

const char* kind_name(kiln_value_kind_t kind) { return kiln_value_kind_name(kind); }

std::string shape_text(const ValueInfo& info) {
  if (!info.shape) return "None";
  std::string text = "(";
  for (size_t i = 0; i < info.shape->size(); ++i) {
    py::object dim = (*info.shape)[i];
    text += (i > 0 ? ", " : "");
    text += py::isinstance<py::str>(dim) ? "'" + dim.cast<std::string>() + "'" : py::str(dim).cast<std::string>();
  }
  if (info.shape->size() == 1) text += ",";
  return text + ")";
}

}  // namespace

ValueInfo ValueInfo::from(const kiln_value_info_t& info) {
  ValueInfo result;
  result.name = info.name;
  result.kind = info.kind;
  result.dtype = info.dtype;
  if (info.ndim >= 0) {
    std::vector<py::object> shape;
    for (int32_t i = 0; i < info.ndim; ++i) {
      if (info.dims[i] >= 0) {
        shape.push_back(py::int_(info.dims[i]));
      } else if (info.dim_names[i][0] != '\0') {
        shape.push_back(py::str(info.dim_names[i]));
      } else {
        shape.push_back(py::none());
      }
    }
    result.shape = std::move(shape);
  }
  return result;
}

Function::Function(std::shared_ptr<ModuleState> module, const kiln_function_t* function,
                   std::shared_ptr<ContextState> context)
    : module_(std::move(module)), function_(function), context_(std::move(context)) {
  const char* name = nullptr;
  size_t params = 0;
  size_t results = 0;
  check(kiln_function_name(function_, &name));
  check(kiln_function_param_count(function_, &params));
  check(kiln_function_result_count(function_, &results));
  name_ = name;
  for (size_t i = 0; i < params; ++i) {
    kiln_value_info_t info;
    check(kiln_function_param_info(function_, i, &info));
    params_.push_back(ValueInfo::from(info));
    if (info.kind != KILN_VALUE_TENSOR) all_tensor_params_ = false;
  }
  for (size_t i = 0; i < results; ++i) {
    kiln_value_info_t info;
    check(kiln_function_result_info(function_, i, &info));
    results_.push_back(ValueInfo::from(info));
  }
}

py::object Function::call(py::args args, py::kwargs kwargs) const {
  CallInputs inputs;
  collect(args, kwargs, &inputs);
  kiln_outputs_t* raw_outputs = nullptr;
  kiln_status_t* status = nullptr;
  if (context_) {
    py::gil_scoped_release no_gil;
    std::lock_guard<std::mutex> lock(context_->mutex);
    status = invoke(context_->context, inputs, &raw_outputs);
  } else {
    kiln_context_t* context = acquire_context();
    {
      py::gil_scoped_release no_gil;
      status = invoke(context, inputs, &raw_outputs);
    }
    module_->idle_contexts.push_back(context);
  }
  check(status);
  OutputsPtr outputs(raw_outputs, &kiln_outputs_release);
  return convert(outputs.get());
}

// Arguments in parameter order: the positional ones, then keywords by name.
void Function::collect(const py::args& args, const py::kwargs& kwargs, CallInputs* inputs) const {
  size_t count = args.size();
  if (kwargs.size() > 0) count = std::max(count, params_.size());
  size_t used_keywords = 0;
  for (size_t i = 0; i < count; ++i) {
    ArgumentName where(name_, i < params_.size() ? &params_[i].name : nullptr, i);
    kiln_value_kind_t kind = i < params_.size() ? params_[i].kind : KILN_VALUE_NONE;
    if (i < args.size()) {
      if (kwargs.size() > 0 && i < params_.size() && kwargs.contains(params_[i].name.c_str())) {
        raise_error(KILN_STATUS_INVALID_ARGUMENT, where.text() + " given by position and by keyword");
      }
      inputs->add(args[i], kind, where, !all_tensor_params_);
    } else if (kwargs.contains(params_[i].name.c_str())) {
      inputs->add(kwargs[params_[i].name.c_str()], kind, where, !all_tensor_params_);
      ++used_keywords;
    } else {
      raise_error(KILN_STATUS_INVALID_ARGUMENT, where.text() + " is missing");
    }
  }
  if (used_keywords != kwargs.size()) {
    for (auto item : kwargs) {
      std::string key = py::str(item.first);
      bool known = false;
      for (const ValueInfo& param : params_) known = known || param.name == key;
      if (!known) raise_error(KILN_STATUS_INVALID_ARGUMENT, name_ + ": no parameter named '" + key + "'");
    }
  }
}

kiln_status_t* Function::invoke(kiln_context_t* context, const CallInputs& inputs,
                              kiln_outputs_t** out) const {
  if (all_tensor_params_) {
    return kiln_context_invoke_function(context, function_, inputs.tensors(), inputs.size(), out);
  }
  return kiln_context_invoke_values(context, function_, inputs.values(), inputs.size(), out);
}

kiln_context_t* Function::acquire_context() const {
  if (!module_->idle_contexts.empty()) {
    kiln_context_t* context = module_->idle_contexts.back();
    module_->idle_contexts.pop_back();
    return context;
  }
  kiln_context_t* context = nullptr;
  check(kiln_context_create(module_->module, &context));
  return context;
}

py::object Function::convert(kiln_outputs_t* outputs) const {
  size_t count = 0;
  check(kiln_outputs_count(outputs, &count));
  bool tuple = results_.size() != 1 || results_[0].kind == KILN_VALUE_TUPLE;
  if (!tuple && count == 1 && results_[0].kind == KILN_VALUE_TENSOR) {
    // The common case, without making value handles.
    const kiln_tensor_t* borrowed = nullptr;
    kiln_tensor_t* owned = nullptr;
    check(kiln_outputs_get(outputs, 0, &borrowed));
    check(kiln_tensor_share(borrowed, &owned));
    return py::cast(std::make_unique<Tensor>(owned, module_->bytes));
  }
  py::tuple values(count);
  for (size_t i = 0; i < count; ++i) {
    const kiln_value_t* value = nullptr;
    check(kiln_outputs_get_value(outputs, i, &value));
    values[i] = value_to_python(value, module_);
  }
  if (!tuple && count == 1) return values[0];
  return std::move(values);
}

void bind_function(py::module_& m) {
  py::class_<ValueInfo>(m, "ValueInfo", "A declared parameter or result of a compiled function.")
      .def_readonly("name", &ValueInfo::name, "The parameter's name; results are named 'result'.")
      .def_property_readonly(
          "kind", [](const ValueInfo& v) { return kind_name(v.kind); },
          "'tensor', 'int', 'float', 'shape', 'tuple', ...")
      .def_property_readonly(
          "dtype", [](const ValueInfo& v) -> py::object {
            if (v.dtype == 0) return py::none();
            return py::str(dtype_name(v.dtype));
          },
          "The element type of a tensor ('float32'), or None when not declared.")
      .def_property_readonly(
          "shape", [](const ValueInfo& v) -> py::object {
            if (!v.shape) return py::none();
            py::tuple shape(v.shape->size());
            for (size_t i = 0; i < v.shape->size(); ++i) shape[i] = (*v.shape)[i];
            return std::move(shape);
          },
          "Each dimension: an int, the symbolic expression as text ('n', 'n * 4'), or None\n"
          "when undeclared; None when the rank itself is undeclared.")
      .def("__repr__", [](const ValueInfo& v) {
        std::string text = "kiln.ValueInfo(name='" + v.name + "', kind='" + kind_name(v.kind) + "'";
        if (v.dtype != 0) text += ", dtype='" + dtype_name(v.dtype) + "'";
        return text + ", shape=" + shape_text(v) + ")";
      });

  py::class_<Function>(m, "Function",
                       "A function of a loaded module. Calling it runs the compiled code with the GIL released.")
      .def_property_readonly("name", &Function::name)
      .def_property_readonly("params", &Function::params, "The declared parameters, in order.")
      .def_property_readonly("results", &Function::results,
                             "The declared results (one; a tuple-returning function declares a 'tuple').")
      .def("__call__", &Function::call,
           "Runs the function. Arguments are numpy arrays, kiln.Tensor or any object with __dlpack__ or\n"
           "the buffer protocol (by position or by parameter name); ints, floats and int sequences for\n"
           "scalar and shape parameters. Returns a kiln.Tensor, or a tuple for a tuple result.\n"
           "Raises kiln.InvalidArgumentError naming the argument and dimension on a wrong input.")
      .def("__repr__", [](const Function& f) {
        std::string text = "kiln.Function(" + f.name() + "(";
        for (size_t i = 0; i < f.params().size(); ++i) {
          text += (i > 0 ? ", " : "") + f.params()[i].name;
        }
        return text + "))";
      });
}

}  // namespace kiln_python
