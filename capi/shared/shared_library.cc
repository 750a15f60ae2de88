// libkiln.so is the static C API (kiln_c_api, linked whole) plus what it
// needs: the VM, the graph executor, the runtime and the library kernels
// (reference and oneDNN packed functions, linked whole so their registrations
// survive). It has no code of its own; CMake wants one source per library.
//
// The check below keeps the SONAME honest: capi/shared/CMakeLists.txt reads
// the major version from kiln.h when it configures.
#include "capi/kiln.h"

#ifndef KILN_SHARED_SOVERSION
#error "KILN_SHARED_SOVERSION is defined by capi/shared/CMakeLists.txt"
#endif
static_assert(KILN_SHARED_SOVERSION == KILN_API_VERSION_MAJOR,
              "kiln.h changed its major version: re-run cmake so libkiln.so's SONAME follows it");
