// kiln-compile's logic, callable from tests: parses flags, runs the driver,
// returns the process exit code and writes messages to `out` / `err`.
//
//   kiln-compile IN.relax -o OUT.vmfb [--dump-ir-after=PASS]... [--matmul=tir|dnnl]
//                [--emit=vmfb|relax|tir|llvm|asm] [--target=TRIPLE] [--cpu=NAME]
//                [--features=+avx2,...] [-O0..-O3] [--bound n=128] [--dim batch=1]
//                [--params FILE] [--config FILE.yaml] [--progress]
//
// Every flag that takes a value is written --flag=value or --flag value.
// Exit status: 0 success, 1 a compile error, 2 a usage error. On success
// with an output file, `out` gets one line "kiln-compile: wrote PATH: N bytes
// (...)". A progress line goes to `err` when `err` is std::cerr on a
// terminal, or with --progress, unless IR dumps or --report-memory use `err`.
#ifndef KILN_COMPILER_DRIVER_COMPILE_TOOL_H_
#define KILN_COMPILER_DRIVER_COMPILE_TOOL_H_

#include <ostream>

#include "compiler/driver/compile.h"
#include "compiler/driver/config_file.h"
#include "runtime/status.h"

namespace kiln {
namespace driver {

int CompileToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// kiln-compile's options by name, as a --config file gives them ("fuse",
// "bound", "O", "tuning-db", ...), applied onto *options: what the Python
// package's kiln.compile(options=...) takes. "output" and "emit" belong to
// the tool and are refused; an unknown name or a bad value is
// kInvalidArgument with the message kiln-compile prints.
Status ApplyCompileOptions(const OptionValues& values, CompileOptions* options);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_COMPILE_TOOL_H_
