#include "inputs.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>

#include "numpy_array.h"
#include "status.h"
#include "tensor.h"

namespace kiln_python {

namespace {

// The buffer-protocol format of one element, as kiln_dtype_t; 0 if none.
// Native byte order only ('@', '=', '<' on the little-endian hosts Kiln runs on).
kiln_dtype_t dtype_from_format(const char* format, py::ssize_t itemsize) {
  if (format == nullptr) return KILN_DTYPE_UINT8;  // plain bytes
  if (*format == '@' || *format == '=' || *format == '<') ++format;
  if (format[0] == '\0' || format[1] != '\0') return 0;
  switch (format[0]) {
    case 'e': return KILN_DTYPE_FLOAT16;
    case 'f': return KILN_DTYPE_FLOAT32;
    case 'd': return KILN_DTYPE_FLOAT64;
    case '?': return KILN_DTYPE_BOOL;
    case 'b': case 'h': case 'i': case 'l': case 'q':
      return KILN_DTYPE(KILN_DTYPE_CODE_INT, itemsize * 8, 1);
    case 'B': case 'H': case 'I': case 'L': case 'Q':
      return KILN_DTYPE(KILN_DTYPE_CODE_UINT, itemsize * 8, 1);
    default: return 0;
  }
}

// kiln_tensor_wrap_with_release's callback for a wrapped buffer. Kiln may call
// it from any thread once the storage's last reference goes.
void release_buffer(void* user, void*) {
  PyGILState_STATE gil = PyGILState_Ensure();
  auto* view = static_cast<Py_buffer*>(user);
  PyBuffer_Release(view);
  delete view;
  PyGILState_Release(gil);
}

constexpr int kBufferFlags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;

// The buffer's shape, inline for up to 8 dimensions.
InlineVector<int64_t> shape_of(const Py_buffer& view) {
  InlineVector<int64_t> shape;
  for (int i = 0; i < view.ndim; ++i) shape.push_back(view.shape[i]);
  if (view.ndim == 0 && view.shape == nullptr && view.len != view.itemsize) {
    shape.push_back(view.len / view.itemsize);  // a bytes-like object: one dimension
  }
  return shape;
}

kiln_tensor_t* wrap_buffer(py::handle obj, const ArgumentName& where) {
  // On the stack: the usual numpy array (not 64-byte aligned) is copied and
  // its buffer given back at once; only a wrapped one needs a Py_buffer that
  // lives as long as the tensor (taken again below).
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, kBufferFlags) != 0) {
    PyErr_Clear();
    raise_error(KILN_STATUS_INVALID_ARGUMENT,
                where.text() + ": the array is not C-contiguous (numpy.ascontiguousarray makes a copy that is)");
  }
  kiln_dtype_t dtype = dtype_from_format(view.format, view.itemsize);
  if (dtype == 0) {
    std::string format = view.format != nullptr ? view.format : "";
    PyBuffer_Release(&view);
    raise_error(KILN_STATUS_INVALID_ARGUMENT,
                where.text() + ": element format '" + format + "' is not a dtype Kiln computes in");
  }
  kiln_tensor_t* tensor = nullptr;
  kiln_status_t* status = nullptr;
  if (reinterpret_cast<uintptr_t>(view.buf) % KILN_TENSOR_ALIGNMENT != 0) {
    // Copy into aligned storage right away, rather than wrap the buffer only
    // to copy it (see aligned()).
    InlineVector<int64_t> shape = shape_of(view);
    void* data = nullptr;
    status = kiln_tensor_create(shape.data(), static_cast<int32_t>(shape.size()), dtype, &tensor);
    if (status == nullptr) status = kiln_tensor_data(tensor, &data);
    if (status == nullptr && view.len > 0) std::memcpy(data, view.buf, view.len);
    PyBuffer_Release(&view);
    if (status != nullptr) {
      kiln_tensor_release(tensor);
      raise_status(status);
    }
    return tensor;
  }
  PyBuffer_Release(&view);
  auto* kept = new Py_buffer();
  if (PyObject_GetBuffer(obj.ptr(), kept, kBufferFlags) != 0) {
    delete kept;
    throw py::error_already_set();
  }
  InlineVector<int64_t> shape = shape_of(*kept);
  status = kiln_tensor_wrap_with_release(kept->buf, shape.data(), static_cast<int32_t>(shape.size()), dtype,
                                         release_buffer, kept, &tensor);
  if (status != nullptr) {
    PyBuffer_Release(kept);
    delete kept;
    raise_status(status);
  }
  return tensor;
}

kiln_tensor_t* wrap_dlpack(py::handle obj, const ArgumentName& where) {
  // No arguments: the legacy "dltensor" capsule, which kiln_tensor_from_dlpack takes.
  py::object capsule = obj.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    raise_error(KILN_STATUS_INVALID_ARGUMENT, where.text() + ": __dlpack__ did not return a 'dltensor' capsule");
  }
  // The package runs modules on the CPU, and aligned() below may copy the
  // data on the host: a GPU tensor (which kiln.h imports since 0.6) stops
  // here, while the capsule still owns it.
  DLDeviceType device = managed->dl_tensor.device.device_type;
  if (device != kDLCPU && device != kDLCUDAHost) {
    raise_error(KILN_STATUS_INVALID_ARGUMENT,
                where.text() + ": the tensor is on DLPack device type " + std::to_string(static_cast<int>(device)) +
                    "; the Python package runs on the CPU (kDLCPU) only");
  }
  kiln_tensor_t* tensor = nullptr;
  kiln_status_t* status = kiln_tensor_from_dlpack(managed, &tensor);
  if (status != nullptr) {
    std::string message = kiln_status_message(status);
    kiln_status_code_t code = kiln_status_code(status);
    kiln_status_free(status);
    raise_error(code, where.text() + ": " + message);
  }
  // Kiln owns the DLManagedTensor now: the capsule must not free it again.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  return tensor;
}

// `tensor` itself when its data is aligned; otherwise an aligned copy, and
// `tensor` is released.
kiln_tensor_t* aligned(kiln_tensor_t* tensor) {
  void* data = nullptr;
  kiln_status_t* status = kiln_tensor_data(tensor, &data);
  if (status == nullptr && reinterpret_cast<uintptr_t>(data) % KILN_TENSOR_ALIGNMENT == 0) return tensor;
  kiln_dtype_t dtype = 0;
  int32_t ndim = 0;
  const int64_t* shape = nullptr;
  size_t bytes = 0;
  kiln_tensor_t* copy = nullptr;
  if (status == nullptr) status = kiln_tensor_dtype(tensor, &dtype);
  if (status == nullptr) status = kiln_tensor_ndim(tensor, &ndim);
  if (status == nullptr) status = kiln_tensor_shape(tensor, &shape);
  if (status == nullptr) status = kiln_tensor_byte_size(tensor, &bytes);
  if (status == nullptr) status = kiln_tensor_create(shape, ndim, dtype, &copy);
  void* copy_data = nullptr;
  if (status == nullptr) status = kiln_tensor_data(copy, &copy_data);
  if (status == nullptr && bytes > 0) std::memcpy(copy_data, data, bytes);
  kiln_tensor_release(tensor);
  if (status != nullptr) {
    kiln_tensor_release(copy);
    raise_status(status);
  }
  return copy;
}

}  // namespace

std::string ArgumentName::text() const {
  if (text_ != nullptr) return text_;
  return *function_ + ": argument " + (param_ != nullptr ? *param_ : "#" + std::to_string(index_));
}

kiln_tensor_t* tensor_from_python(py::handle obj, const ArgumentName& where, bool* out_owned) {
  *out_owned = false;
  // The class looked up once (py::isinstance<Tensor> hashes the C++ type's
  // name on every call); extension types live as long as the process.
  static PyTypeObject* const tensor_type = reinterpret_cast<PyTypeObject*>(py::type::of<Tensor>().ptr());
  if (PyObject_TypeCheck(obj.ptr(), tensor_type)) return obj.cast<const Tensor&>().handle();
  // A plain numpy array without the buffer protocol's export (aligned already).
  if (kiln_tensor_t* array = tensor_from_numpy(obj.ptr())) {
    *out_owned = true;
    return array;
  }
  kiln_tensor_t* tensor = nullptr;
  // The buffer protocol first: for numpy it is cheaper than a DLPack capsule.
  if (PyObject_CheckBuffer(obj.ptr())) {
    tensor = wrap_buffer(obj, where);
  } else if (py::hasattr(obj, "__dlpack__")) {
    tensor = wrap_dlpack(obj, where);
  } else {
    raise_error(KILN_STATUS_INVALID_ARGUMENT,
                where.text() + ": expected an array (numpy, an object with __dlpack__ or the buffer protocol, "
                        "kiln.Tensor), got " + std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  *out_owned = true;
  return aligned(tensor);
}

CallInputs::~CallInputs() {
  for (kiln_value_t* value : owned_values_) kiln_value_release(value);
  for (kiln_tensor_t* tensor : owned_tensors_) kiln_tensor_release(tensor);
}

void CallInputs::add(py::handle obj, kiln_value_kind_t kind, const ArgumentName& where, bool as_values) {
  as_values_ = as_values;
  kiln_value_t* value = nullptr;
  if (kind == KILN_VALUE_INT || kind == KILN_VALUE_FLOAT) {
    // Scalars (R.Prim): Python numbers, or anything that converts to one.
    if (kind == KILN_VALUE_INT) {
      if (!PyIndex_Check(obj.ptr())) raise_error(KILN_STATUS_INVALID_ARGUMENT, where.text() + ": expected an int");
      check(kiln_value_create_int64(py::cast<int64_t>(obj), &value));
    } else {
      check(kiln_value_create_float64(py::cast<double>(obj), &value));
    }
  } else if (kind == KILN_VALUE_SHAPE) {
    std::vector<int64_t> dims;
    try {
      dims = py::cast<std::vector<int64_t>>(obj);
    } catch (const py::cast_error&) {
      raise_error(KILN_STATUS_INVALID_ARGUMENT, where.text() + ": expected a shape (a sequence of ints)");
    }
    check(kiln_value_create_shape(dims.data(), static_cast<int32_t>(dims.size()), &value));
  } else {
    bool owned = false;
    kiln_tensor_t* tensor = tensor_from_python(obj, where, &owned);
    if (owned) owned_tensors_.push_back(tensor);
    tensors_.push_back(tensor);
    if (as_values) check(kiln_value_create_tensor(tensor, &value));
  }
  if (value != nullptr) {
    owned_values_.push_back(value);
    values_.push_back(value);
  }
}

}  // namespace kiln_python
