// kiln.Module, kiln.Context, kiln.load and kiln.from_dlpack.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln_python {

namespace py = pybind11;

// Defines the classes and kiln.load on `m`.
void bind_module(py::module_& m);

}  // namespace kiln_python
