#include "numpy_array.h"

#include <cstdint>
#include <cstring>

#include "inputs.h"
#include "status.h"

namespace kiln_python {

namespace {

// The leading fields of numpy's array and dtype objects, as its public headers
// declare them (PyArrayObject_fields; PyArray_Descr up to byteorder). Compiled
// extensions read these through numpy's inline accessors, so numpy keeps them
// where they are: numpy 2.0 changed later fields of PyArray_Descr (flags,
// elsize), not these. Read directly, without numpy's headers, because the
// buffer protocol's export, which numpy answers by building the format string
// anew on every call, was most of what a numpy argument cost over a
// kiln.Tensor one (benchmarks/python/overhead.py).
struct NumpyArrayHead {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};

struct NumpyDescrHead {
  PyObject_HEAD
  PyTypeObject* typeobj;
  char kind;
  char type;  // the character code, as in the buffer protocol's format
  char byteorder;
};

constexpr int kNumpyCContiguous = 0x0001;  // NPY_ARRAY_C_CONTIGUOUS

// numpy.ndarray, found from the first array seen (tp_name is "numpy.ndarray"
// in numpy 1.x and 2.x); types are never freed while the process runs.
PyTypeObject* ndarray_type(PyObject* obj) {
  static PyTypeObject* type = nullptr;
  if (type == nullptr && std::strcmp(Py_TYPE(obj)->tp_name, "numpy.ndarray") == 0) type = Py_TYPE(obj);
  return type;
}

// The dtype of a character code in native order, with its element size; 0 if
// Kiln does not compute in it or it is not mapped here (the buffer protocol
// path decides those).
kiln_dtype_t dtype_from_code(char code, size_t* out_size) {
  switch (code) {
    case 'e': *out_size = 2; return KILN_DTYPE_FLOAT16;
    case 'f': *out_size = 4; return KILN_DTYPE_FLOAT32;
    case 'd': *out_size = 8; return KILN_DTYPE_FLOAT64;
    case '?': *out_size = 1; return KILN_DTYPE_BOOL;
    case 'b': *out_size = 1; return KILN_DTYPE(KILN_DTYPE_CODE_INT, 8, 1);
    case 'h': *out_size = 2; return KILN_DTYPE(KILN_DTYPE_CODE_INT, 16, 1);
    case 'i': *out_size = 4; return KILN_DTYPE(KILN_DTYPE_CODE_INT, 32, 1);
    case 'l': *out_size = sizeof(long); return KILN_DTYPE(KILN_DTYPE_CODE_INT, sizeof(long) * 8, 1);
    case 'q': *out_size = 8; return KILN_DTYPE(KILN_DTYPE_CODE_INT, 64, 1);
    case 'B': *out_size = 1; return KILN_DTYPE(KILN_DTYPE_CODE_UINT, 8, 1);
    case 'H': *out_size = 2; return KILN_DTYPE(KILN_DTYPE_CODE_UINT, 16, 1);
    case 'I': *out_size = 4; return KILN_DTYPE(KILN_DTYPE_CODE_UINT, 32, 1);
    case 'L': *out_size = sizeof(long); return KILN_DTYPE(KILN_DTYPE_CODE_UINT, sizeof(long) * 8, 1);
    case 'Q': *out_size = 8; return KILN_DTYPE(KILN_DTYPE_CODE_UINT, 64, 1);
    default: return 0;
  }
}

// kiln_tensor_wrap_with_release's callback: the array's reference, taken
// when it was wrapped, goes once Kiln's last reference to the data does (from
// any thread).
void release_array(void* user, void*) {
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(user));
  PyGILState_Release(gil);
}

}  // namespace

kiln_tensor_t* tensor_from_numpy(PyObject* obj) {
  PyTypeObject* type = ndarray_type(obj);
  if (type == nullptr || Py_TYPE(obj) != type) return nullptr;
  const auto* array = reinterpret_cast<const NumpyArrayHead*>(obj);
  const auto* descr = reinterpret_cast<const NumpyDescrHead*>(array->descr);
  if ((array->flags & kNumpyCContiguous) == 0) return nullptr;
  if (descr->byteorder != '=' && descr->byteorder != '|' && descr->byteorder != '<') return nullptr;
  size_t element_size = 0;
  kiln_dtype_t dtype = dtype_from_code(descr->type, &element_size);
  if (dtype == 0) return nullptr;
  InlineVector<int64_t> shape;
  size_t bytes = element_size;
  for (int i = 0; i < array->nd; ++i) {
    shape.push_back(array->dimensions[i]);
    bytes *= static_cast<size_t>(array->dimensions[i]);  // numpy bounds the product already
  }
  kiln_tensor_t* tensor = nullptr;
  if (reinterpret_cast<uintptr_t>(array->data) % KILN_TENSOR_ALIGNMENT != 0) {
    void* data = nullptr;
    kiln_status_t* status = kiln_tensor_create(shape.data(), static_cast<int32_t>(shape.size()), dtype, &tensor);
    if (status == nullptr) status = kiln_tensor_data(tensor, &data);
    if (status != nullptr) {
      kiln_tensor_release(tensor);
      raise_status(status);
    }
    if (bytes > 0) std::memcpy(data, array->data, bytes);
    return tensor;
  }
  Py_INCREF(obj);
  kiln_status_t* status = kiln_tensor_wrap_with_release(array->data, shape.data(), static_cast<int32_t>(shape.size()),
                                                        dtype, release_array, obj, &tensor);
  if (status != nullptr) {
    Py_DECREF(obj);
    raise_status(status);
  }
  return tensor;
}

}  // namespace kiln_python
