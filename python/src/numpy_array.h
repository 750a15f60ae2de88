// numpy arrays read without the buffer protocol (numpy_array.cc).
#pragma once

#include <kiln/kiln.h>
#include <pybind11/pybind11.h>

namespace kiln_python {

// A Kiln tensor over `obj` when it is exactly a numpy.ndarray that is
// C-contiguous, in native byte order, of a dtype Kiln computes in: wrapped
// (the array kept alive until Kiln releases it) when its data is
// KILN_TENSOR_ALIGNMENT-aligned, copied into aligned storage otherwise. Returns
// nullptr for anything else (another type, a subclass, a strided array, a
// dtype numpy_array.cc does not map), which the caller then takes through the
// buffer protocol, whose errors name the problem. Raises only on a Kiln error.
kiln_tensor_t* tensor_from_numpy(PyObject* obj);

}  // namespace kiln_python
