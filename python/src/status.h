// Kiln statuses as Python exceptions (kiln.errors). Everything here needs the GIL.
#pragma once

#include <kiln/kiln.h>

#include <string>

namespace kiln_python {

// Raises the kiln.errors class for `code` with `message` (as pybind11's
// error_already_set, so pybind11 hands it to Python unchanged).
[[noreturn]] void raise_error(kiln_status_code_t code, const std::string& message);

// Frees `status` and raises it; call only with a non-NULL status.
[[noreturn]] void raise_status(kiln_status_t* status);

inline void check(kiln_status_t* status) {
  if (status != nullptr) raise_status(status);
}

}  // namespace kiln_python
