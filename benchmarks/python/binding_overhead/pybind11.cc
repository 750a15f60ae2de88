// The comparison extension through pybind11 (as python/src/ binds calls).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "call.h"

namespace py = pybind11;
using namespace binding_overhead;

PYBIND11_MODULE(overhead_pybind11, m) {
  py::class_<Handle>(m, "Handle");
  m.def("make_tensor", &make_tensor);
  py::class_<Call>(m, "Call")
      .def(py::init<const std::string&>())
      .def("__call__", [](Call& call, py::args args) {
        std::vector<kiln_tensor_t*> inputs;
        inputs.reserve(args.size());
        for (py::handle arg : args) inputs.push_back(arg.cast<const Handle&>().tensor);
        kiln_tensor_t* out;
        {
          py::gil_scoped_release no_gil;
          out = call.run(inputs.data(), inputs.size());
        }
        return Handle(out);
      });
}
