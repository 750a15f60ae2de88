// The extension module kiln._kiln; the package (kiln/__init__.py) re-exports it.
#include <kiln/kiln.h>
#include <pybind11/pybind11.h>

#include "function.h"
#include "module.h"
#include "tensor.h"

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln's runtime over its C API (libkiln).";
  m.attr("__version__") = kiln_version_string();
  m.attr("api_version") = pybind11::make_tuple(kiln_api_version() >> 16, kiln_api_version() & 0xffff);
  kiln_python::bind_tensor(m);
  kiln_python::bind_function(m);
  kiln_python::bind_module(m);
}
