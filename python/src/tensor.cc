#include "tensor.h"

#include <dlpack/dlpack.h>

#include "status.h"

namespace kiln_python {

namespace {

struct DtypeEntry {
  const char* name;
  kiln_dtype_t dtype;
  const char* buffer_format;  // nullptr: no buffer-protocol spelling (bfloat16)
};

constexpr DtypeEntry kDtypes[] = {
    {"float32", KILN_DTYPE_FLOAT32, "f"},   {"float64", KILN_DTYPE_FLOAT64, "d"},
    {"float16", KILN_DTYPE_FLOAT16, "e"},   {"bfloat16", KILN_DTYPE_BFLOAT16, nullptr},
    {"int8", KILN_DTYPE_INT8, "b"},         {"int16", KILN_DTYPE_INT16, "h"},
    {"int32", KILN_DTYPE_INT32, "i"},       {"int64", KILN_DTYPE_INT64, "q"},
    {"uint8", KILN_DTYPE_UINT8, "B"},       {"uint16", KILN_DTYPE_UINT16, "H"},
    {"uint32", KILN_DTYPE_UINT32, "I"},     {"uint64", KILN_DTYPE_UINT64, "Q"},
    {"bool", KILN_DTYPE_BOOL, "?"},
};

const DtypeEntry* find_dtype(kiln_dtype_t dtype) {
  for (const DtypeEntry& entry : kDtypes) {
    if (entry.dtype == dtype) return &entry;
  }
  return nullptr;
}

void destroy_dlpack_capsule(PyObject* capsule) {
  // A consumer that took the tensor over renamed the capsule "used_dltensor";
  // only an unconsumed one still owns its DLManagedTensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
}

}  // namespace

std::string dtype_name(kiln_dtype_t dtype) {
  uint32_t lanes = KILN_DTYPE_GET_LANES(dtype);
  const DtypeEntry* entry = find_dtype(KILN_DTYPE(KILN_DTYPE_GET_CODE(dtype), KILN_DTYPE_GET_BITS(dtype), 1));
  std::string name = entry != nullptr ? entry->name
                                      : "dtype(code=" + std::to_string(KILN_DTYPE_GET_CODE(dtype)) +
                                            ", bits=" + std::to_string(KILN_DTYPE_GET_BITS(dtype)) + ")";
  if (lanes != 1) name += "x" + std::to_string(lanes);
  return name;
}

bool dtype_from_name(const std::string& name, kiln_dtype_t* out_dtype) {
  for (const DtypeEntry& entry : kDtypes) {
    if (name == entry.name) {
      *out_dtype = entry.dtype;
      return true;
    }
  }
  return false;
}

Tensor::Tensor(kiln_tensor_t* handle, std::shared_ptr<const void> keepalive)
    : handle_(handle), keepalive_(std::move(keepalive)) {
  // Read once: shape and dtype never change, and the accessors cannot fail on
  // a live handle.
  int32_t ndim = 0;
  const int64_t* shape = nullptr;
  check(kiln_tensor_dtype(handle_, &dtype_));
  check(kiln_tensor_ndim(handle_, &ndim));
  check(kiln_tensor_shape(handle_, &shape));
  check(kiln_tensor_data(handle_, &data_));
  shape_.assign(shape, shape + ndim);
}

Tensor::~Tensor() { kiln_tensor_release(handle_); }

int64_t Tensor::size() const {
  int64_t count = 1;
  for (int64_t dim : shape_) count *= dim;
  return count;
}

size_t Tensor::nbytes() const {
  size_t bytes = 0;
  check(kiln_tensor_byte_size(handle_, &bytes));
  return bytes;
}

py::buffer_info Tensor::buffer() const {
  const DtypeEntry* entry = find_dtype(dtype_);
  if (entry == nullptr || entry->buffer_format == nullptr) {
    raise_error(KILN_STATUS_UNIMPLEMENTED,
                "kiln.Tensor of dtype " + dtype_name(dtype_) +
                    " has no buffer-protocol format; use numpy.from_dlpack or ml_dtypes");
  }
  py::ssize_t itemsize = KILN_DTYPE_GET_BITS(dtype_) == 1 ? 1 : KILN_DTYPE_GET_BITS(dtype_) / 8;
  std::vector<py::ssize_t> shape(shape_.begin(), shape_.end());
  std::vector<py::ssize_t> strides(shape_.size());
  py::ssize_t stride = itemsize;
  for (size_t i = shape_.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape_[i];
  }
  return py::buffer_info(data_, itemsize, entry->buffer_format, static_cast<py::ssize_t>(shape_.size()), shape,
                         strides, /*readonly=*/false);
}

py::object Tensor::dlpack() const {
  DLManagedTensor* managed = nullptr;
  check(kiln_tensor_to_dlpack(handle_, &managed));
  PyObject* capsule = PyCapsule_New(managed, "dltensor", destroy_dlpack_capsule);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", py::buffer_protocol(),
                     "A dense, row-major CPU tensor owned by Kiln (a call's output, or kiln.empty).\n\n"
                     "numpy.asarray(t), numpy.from_dlpack(t) and torch.from_dlpack(t) view its storage\n"
                     "without copying; the storage lives as long as any of those views.")
      .def_buffer([](const Tensor& t) { return t.buffer(); })
      .def_property_readonly(
          "shape",
          [](const Tensor& t) {
            py::tuple shape(t.shape().size());
            for (size_t i = 0; i < t.shape().size(); ++i) shape[i] = py::int_(t.shape()[i]);
            return shape;
          },
          "The dimensions, as a tuple of ints.")
      .def_property_readonly(
          "dtype", [](const Tensor& t) { return dtype_name(t.dtype()); }, "The element type's name, as numpy spells it.")
      .def_property_readonly(
          "ndim", [](const Tensor& t) { return t.shape().size(); }, "The number of dimensions.")
      .def_property_readonly("size", &Tensor::size, "The number of elements.")
      .def_property_readonly("nbytes", &Tensor::nbytes, "The size of the data in bytes.")
      .def_property_readonly(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); },
          "The address of the first element (to check that a view shares the storage).")
      .def("numpy", [](py::object self) { return py::module_::import("numpy").attr("asarray")(self); },
           "A numpy array viewing this tensor's storage (no copy).")
      .def(
          "__dlpack__",
          [](const Tensor& t, py::object stream, py::object max_version, py::object dl_device, py::object copy) {
            // A CPU tensor: no stream to synchronize. The legacy capsule is
            // what every consumer accepts (max_version only allows newer).
            if (!dl_device.is_none()) {
              auto device = dl_device.cast<std::pair<int, int>>();
              if (device.first != kDLCPU) {
                PyErr_SetString(PyExc_BufferError, "kiln.Tensor lives on the CPU");
                throw py::error_already_set();
              }
            }
            if (!copy.is_none() && copy.cast<bool>()) {
              PyErr_SetString(PyExc_BufferError, "kiln.Tensor.__dlpack__ shares its storage; copy=True is not offered");
              throw py::error_already_set();
            }
            return t.dlpack();
          },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule sharing the storage (the DLPack protocol).")
      .def(
          "__dlpack_device__", [](const Tensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); },
          "(kDLCPU, 0).")
      .def("__repr__", [](const Tensor& t) {
        std::string text = "kiln.Tensor(shape=(";
        for (size_t i = 0; i < t.shape().size(); ++i) {
          text += (i > 0 ? ", " : "") + std::to_string(t.shape()[i]);
        }
        if (t.shape().size() == 1) text += ",";
        return text + "), dtype=" + dtype_name(t.dtype()) + ")";
      });

  m.def(
      "empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype) {
        kiln_dtype_t code = 0;
        if (!dtype_from_name(dtype, &code)) {
          raise_error(KILN_STATUS_INVALID_ARGUMENT, "kiln.empty: unknown dtype '" + dtype + "'");
        }
        kiln_tensor_t* handle = nullptr;
        check(kiln_tensor_create(shape.data(), static_cast<int32_t>(shape.size()), code, &handle));
        return std::make_unique<Tensor>(handle, nullptr);
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A new zero-filled tensor with 64-byte aligned storage. Fill it through numpy.asarray(t)\n"
      "and pass it to calls: aligned inputs are never copied.");
}

}  // namespace kiln_python
