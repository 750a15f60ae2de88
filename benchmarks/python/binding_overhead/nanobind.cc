// The comparison extension through nanobind: the same work as pybind11.cc.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call.h"

namespace nb = nanobind;
using namespace binding_overhead;

NB_MODULE(overhead_nanobind, m) {
  nb::class_<Handle>(m, "Handle");
  m.def("make_tensor", &make_tensor);
  nb::class_<Call>(m, "Call")
      .def(nb::init<const std::string&>())
      .def("__call__", [](Call& call, nb::args args) {
        std::vector<kiln_tensor_t*> inputs;
        inputs.reserve(args.size());
        for (nb::handle arg : args) inputs.push_back(nb::cast<Handle&>(arg).tensor);
        kiln_tensor_t* out;
        {
          nb::gil_scoped_release no_gil;
          out = call.run(inputs.data(), inputs.size());
        }
        return Handle(out);
      });
}
