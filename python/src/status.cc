#include "status.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace kiln_python {

void raise_error(kiln_status_code_t code, const std::string& message) {
  // Looked up once and kept for the life of the process: a static py::object
  // would be destroyed after the interpreter is gone.
  static PyObject* class_for_code =
      py::object(py::module_::import("kiln.errors").attr("_class_for_code")).release().ptr();
  py::object cls = py::reinterpret_borrow<py::object>(class_for_code)(static_cast<int>(code));
  py::object error = cls(message, kiln_status_code_name(code));
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

void raise_status(kiln_status_t* status) {
  kiln_status_code_t code = kiln_status_code(status);
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  raise_error(code, message);
}

}  // namespace kiln_python
