// kiln-compile's logic, callable from tests: parses flags, runs the driver,
// returns the process exit code and writes messages to `out` / `err`.
//
//   kiln-compile IN.relax -o OUT.vmfb [--dump-ir-after=PASS]... [--matmul=tir|dnnl]
//                [--emit=vmfb|relax|tir|llvm|asm] [--target=TRIPLE] [--cpu=NAME]
//                [--features=+avx2,...] [-O0..-O3]
#ifndef KILN_COMPILER_DRIVER_COMPILE_TOOL_H_
#define KILN_COMPILER_DRIVER_COMPILE_TOOL_H_

#include <ostream>

namespace kiln {
namespace driver {

int CompileToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_COMPILE_TOOL_H_
