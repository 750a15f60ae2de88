// Python arguments to Kiln tensors and values for one call.
#pragma once

#include <kiln/kiln.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// A Kiln tensor over an array-like argument: a kiln.Tensor is used as is; an
// object with the buffer protocol (numpy, bytes, array.array) or __dlpack__
// (torch, jax, cupy-on-host, ...) is wrapped without copying when its data is
// KILN_TENSOR_ALIGNMENT-aligned, and copied into aligned storage otherwise
// (compiled kernels refuse unaligned data). Raises kiln.InvalidArgumentError
// naming `where` ("main: argument x") for anything else. The result is owned
// unless it is `obj`'s own kiln.Tensor handle, in which case *out_owned is false.
kiln_tensor_t* tensor_from_python(py::handle obj, const std::string& where, bool* out_owned);

// The inputs of one call, owned until it returns. Needs the GIL to build and
// to destroy (a wrapped buffer is given back to its exporter).
class CallInputs {
 public:
  CallInputs() = default;
  ~CallInputs();
  CallInputs(const CallInputs&) = delete;
  CallInputs& operator=(const CallInputs&) = delete;

  // Adds an argument for a parameter of `kind` (KILN_VALUE_NONE when the
  // parameter is not declared, e.g. one past the count: Kiln reports that).
  // With `as_values`, also makes the kiln_value_t the call passes.
  void add(py::handle obj, kiln_value_kind_t kind, const std::string& where, bool as_values);

  kiln_tensor_t* const* tensors() const { return tensors_.data(); }
  const kiln_value_t* const* values() const { return values_.data(); }
  size_t size() const { return as_values_ ? values_.size() : tensors_.size(); }

 private:
  bool as_values_ = false;
  std::vector<kiln_tensor_t*> tensors_;
  std::vector<kiln_tensor_t*> owned_tensors_;
  std::vector<const kiln_value_t*> values_;
  std::vector<kiln_value_t*> owned_values_;
};

}  // namespace kiln_python
