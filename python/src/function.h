// kiln.Function and kiln.ValueInfo: a module's function, its declared
// parameters and results, and the call itself (arguments in, outputs out).
#pragma once

#include <kiln/kiln.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "state.h"

namespace kiln_python {

namespace py = pybind11;

class CallInputs;

struct ValueInfo {
  std::string name;
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  kiln_dtype_t dtype = 0;
  std::optional<std::vector<py::object>> shape;  // int or symbolic text per dimension

  static ValueInfo from(const kiln_value_info_t& info);
};

// Thread-safe to call (each call borrows a context, or locks its bound one);
// holds the GIL except inside the C call.
class Function {
 public:
  // `context` null: calls borrow one of the module's idle contexts.
  Function(std::shared_ptr<ModuleState> module, const kiln_function_t* function,
           std::shared_ptr<ContextState> context);

  const std::string& name() const { return name_; }
  const std::vector<ValueInfo>& params() const { return params_; }
  const std::vector<ValueInfo>& results() const { return results_; }

  py::object call(py::args args, py::kwargs kwargs) const;

 private:
  void collect(const py::args& args, const py::kwargs& kwargs, CallInputs* inputs) const;
  kiln_status_t* invoke(kiln_context_t* context, const CallInputs& inputs, kiln_outputs_t** out) const;
  kiln_context_t* acquire_context() const;
  py::object convert(kiln_outputs_t* outputs) const;

  std::shared_ptr<ModuleState> module_;
  const kiln_function_t* function_;
  std::shared_ptr<ContextState> context_;
  std::string name_;
  std::vector<ValueInfo> params_;
  std::vector<ValueInfo> results_;
  bool all_tensor_params_ = true;
};

// Defines kiln.ValueInfo and kiln.Function on `m`.
void bind_function(py::module_& m);

}  // namespace kiln_python
