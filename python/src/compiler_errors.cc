#include "compiler_errors.h"

#include <pybind11/pybind11.h>

#include <cctype>
#include <string>

namespace py = pybind11;

namespace kiln_python {

namespace {

// "InvalidArgument" -> "INVALID_ARGUMENT", the C API's names that
// kiln.Error.code holds.
std::string CodeName(kiln::StatusCode code) {
  std::string name;
  for (const char *c = kiln::StatusCodeName(code); *c != '\0'; ++c) {
    if (std::isupper(static_cast<unsigned char>(*c)) && !name.empty()) name += '_';
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  }
  return name;
}

}  // namespace

void raise_compiler_status(const kiln::Status &status) {
  py::object cls = py::module_::import("kiln.errors").attr("_class_for_code")(static_cast<int>(status.code()));
  py::object error = cls(status.message(), CodeName(status.code()));
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace kiln_python
