// kiln.Tensor: an owned kiln_tensor_t handle that numpy, torch and any DLPack
// consumer read without copying (buffer protocol and __dlpack__).
#pragma once

#include <kiln/kiln.h>
#include <pybind11/pybind11.h>
// Every translation unit sees the same type casters (pybind11 requires it).
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// "float32", "int64", "bool", "bfloat16"; "float32x4" for vector dtypes.
std::string dtype_name(kiln_dtype_t dtype);
// The inverse of dtype_name for the scalar dtypes; false for an unknown name.
bool dtype_from_name(const std::string& name, kiln_dtype_t* out_dtype);

// Thread-compatible, like kiln_tensor_t; immutable shape and dtype. The storage
// lives while the handle or anything exported from it (a numpy view, a DLPack
// capsule) lives.
class Tensor {
 public:
  // Takes over `handle`. `keepalive` is what the storage may point into besides
  // Kiln's own allocations: the bytes a module was loaded from.
  Tensor(kiln_tensor_t* handle, std::shared_ptr<const void> keepalive);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  kiln_tensor_t* handle() const { return handle_; }
  kiln_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  void* data() const { return data_; }
  int64_t size() const;
  size_t nbytes() const;

  // The buffer protocol's view: C-contiguous, writable (see python.md on
  // outputs that are module constants).
  py::buffer_info buffer() const;
  // A "dltensor" capsule sharing the storage; the consumer renames it when it
  // takes the DLManagedTensor over, otherwise the capsule's destructor frees it.
  py::object dlpack() const;

 private:
  kiln_tensor_t* handle_;
  std::shared_ptr<const void> keepalive_;
  kiln_dtype_t dtype_ = 0;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
};

// Defines kiln.Tensor, kiln.empty on `m`.
void bind_tensor(py::module_& m);

}  // namespace kiln_python
