// ptxas at compile time: a cubin for the module's arch beside its PTX.
//
// A cubin loads without the driver's JIT (no first-launch compile, no JIT
// cache to warm) on devices of the same major compute capability and an
// equal or newer minor one; every other device still JIT-compiles the PTX.
// So the cubin is an addition, never a replacement, and a machine without
// the toolkit still builds GPU modules (PTX only).
#ifndef KILN_COMPILER_DRIVER_PTXAS_H_
#define KILN_COMPILER_DRIVER_PTXAS_H_

#include <string>

#include "runtime/status.h"

namespace kiln {
namespace driver {

// What --ptxas says: "" finds ptxas ($KILN_PTXAS, then $CUDA_HOME/bin,
// then /usr/local/cuda/bin, then $PATH) and builds no cubin when there is
// none; "none" builds no cubin; anything else is the program to run (an
// error when it does not exist).
constexpr const char* kNoPtxas = "none";

// The ptxas program `option` selects; "" when none is to be used (option
// "none", or "" with no ptxas found). kNotFound for a named program that
// does not exist.
Result<std::string> FindPtxas(const std::string& option);

// Runs `ptxas -arch=ARCH -O3 -o CUBIN PTXFILE` on `ptx` and returns the
// cubin's bytes. A ptxas that fails gives its exit status and diagnostics
// (the PTX is the compiler's, so that is a Kiln bug or a toolkit older than
// the PTX version: --ptxas=none builds without the cubin).
Result<std::string> AssembleCubin(const std::string& ptxas, const std::string& ptx, const std::string& arch);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_PTXAS_H_
