// The logic of kiln-run: load a .vmfb, run one function on inputs from the
// command line, print, save or check its outputs, optionally time calls.
//
//   kiln-run FILE.vmfb [--function=main] [--input=SPEC]... [--output=@y.npy|-]...
//            [--expected_output=SPEC]... [--atol=X] [--rtol=X] [--repeat=N]
//            [--threads=N] [--executor=auto|vm|graph] [--print-statistics] [--verify]
//            [--plugin=PATH]...
//            [--device=cpu|cuda[:N]]
//
// Every flag is written --flag=value or --flag value (tools/common/flags.h).
// SPEC is "@x.npy", "DIMSxDTYPE=@raw.bin" or inline syntax
// (tools/common/inline_tensor.h). The i-th --output belongs to the i-th
// result (a tuple's fields are the results): "@y.npy" saves it, "-" prints
// all its values; results without an --output are printed abbreviated. The
// i-th --expected_output is compared with the i-th result (compare.h): a
// mismatch makes the run fail (exit 1) with the index and values of the worst
// element. --repeat=N times N further calls and prints the median and mean;
// the outputs printed, saved and compared are then the last call's.
// --executor picks the engine: the static graph where the function has one
// (auto, the default), always the VM, or always the graph (an error for
// functions without one). --print-statistics prints load time, call times,
// the last call's peak tensor memory and the process's peak RSS. --verify
// compares the weights with their checksum at load (the kernels' checksum is
// always compared); a file too old to have checksums loads with a note.
// Each --plugin library is loaded before the module (plugins.h).
// --device=cuda[:N] runs a module compiled with --target=cuda on GPU N
// (tools/common/prepared_call.h, runtime/cuda/gpu_linker.h): a machine
// without a driver or a GPU gets that error ("no CUDA driver: libcuda.so.1:
// ..."), a CPU module on the GPU or a GPU module on the CPU a clear refusal.
//
// Thread-compatible: RunTool uses only its arguments (and the global registry).
#ifndef KILN_TOOLS_COMMON_RUN_TOOL_H_
#define KILN_TOOLS_COMMON_RUN_TOOL_H_

#include <ostream>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tools {

struct RunToolOptions {
  std::string module_path;
  std::string function = "main";
  std::vector<std::string> inputs;            // SPECs as written
  std::vector<std::string> outputs;           // "@path" or "-", as written
  std::vector<std::string> expected_outputs;  // SPECs as written
  double atol = 1e-5;
  double rtol = 1e-5;
  int repeat = 0;                 // 0: one call only
  int threads = 0;                // 0: one per core
  std::string executor = "auto";  // "auto", "vm" or "graph"
  bool print_statistics = false;
  bool verify = false;            // check the weights' checksum at load
  std::vector<std::string> plugins;  // --plugin paths, loaded in order
  int device = -1;                // -1: the CPU; N: CUDA device N
  bool help = false;
};

// Parses argv[1..argc-1]. Errors name the flag ("--repeat: 'x' is not a positive integer").
// --device's value: "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
Result<int> ParseDeviceFlag(const std::string& value);

Result<RunToolOptions> ParseRunToolArgs(int argc, const char* const* argv);
// Runs with parsed options, printing results and timings to `out`. A
// mismatch with an expected output is kFailedPrecondition (after every output
// has been checked and printed).
Status RunTool(const RunToolOptions& options, std::ostream& out);
// Parse + run; on error writes one line "kiln-run: error: ..." to `err` and
// returns 1 (2 for usage errors). Returns 0 on success.
int RunToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

extern const char kRunToolUsage[];

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_RUN_TOOL_H_
