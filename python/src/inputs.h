// Python arguments to Kiln tensors and values for one call.
#pragma once

#include <kiln/kiln.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// Names an argument in error messages: "main: argument x" (a declared
// parameter), "main: argument #5" (one past them), or a fixed text. The text
// is built only when an error is raised, not on every call.
class ArgumentName {
 public:
  explicit ArgumentName(const char* text) : text_(text) {}
  ArgumentName(const std::string& function, const std::string* param, size_t index)
      : function_(&function), param_(param), index_(index) {}
  std::string text() const;

 private:
  const char* text_ = nullptr;
  const std::string* function_ = nullptr;
  const std::string* param_ = nullptr;
  size_t index_ = 0;
};

// A Kiln tensor over an array-like argument: a kiln.Tensor is used as is; an
// object with the buffer protocol (numpy, bytes, array.array) or __dlpack__
// (torch, jax, cupy-on-host, ...) is wrapped without copying when its data is
// KILN_TENSOR_ALIGNMENT-aligned, and copied into aligned storage otherwise
// (compiled kernels refuse unaligned data). Raises kiln.InvalidArgumentError
// naming `where` ("main: argument x") for anything else. The result is owned
// unless it is `obj`'s own kiln.Tensor handle, in which case *out_owned is false.
kiln_tensor_t* tensor_from_python(py::handle obj, const ArgumentName& where, bool* out_owned);

// A vector of pointers whose first 8 live inline: the usual call's inputs
// need no allocation.
template <typename T>
class InlineVector {
 public:
  void push_back(T value) {
    if (size_ < kInline) {
      inline_[size_] = value;
    } else {
      if (heap_.empty()) heap_.assign(inline_, inline_ + kInline);
      heap_.push_back(value);
    }
    ++size_;
  }
  T const* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
  size_t size() const { return size_; }
  T const* begin() const { return data(); }
  T const* end() const { return data() + size_; }

 private:
  static constexpr size_t kInline = 8;
  T inline_[kInline];
  std::vector<T> heap_;
  size_t size_ = 0;
};

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
  void add(py::handle obj, kiln_value_kind_t kind, const ArgumentName& where, bool as_values);

  kiln_tensor_t* const* tensors() const { return tensors_.data(); }
  const kiln_value_t* const* values() const { return values_.data(); }
  size_t size() const { return as_values_ ? values_.size() : tensors_.size(); }

 private:
  bool as_values_ = false;
  InlineVector<kiln_tensor_t*> tensors_;
  InlineVector<kiln_tensor_t*> owned_tensors_;
  InlineVector<const kiln_value_t*> values_;
  InlineVector<kiln_value_t*> owned_values_;
};

}  // namespace kiln_python
