// kiln::Status (the compiler's) as kiln.errors exceptions, for the extensions
// that link the compiler statically (kiln._compiler, kiln._tune). Their
// status codes are the C API's numbers (runtime/status.h and capi/kiln.h
// agree), so the classes are those kiln._kiln raises. Needs the GIL.
#pragma once

#include "runtime/status.h"

namespace kiln_python {

// Raises the kiln.errors class for `status`'s code with its message (as
// pybind11's error_already_set, so pybind11 hands it to Python unchanged).
[[noreturn]] void raise_compiler_status(const kiln::Status &status);

}  // namespace kiln_python
