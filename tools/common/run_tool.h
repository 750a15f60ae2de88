// The logic of kiln-run: load a .vmfb, run one function on inputs from the
// command line, print or save the outputs, optionally time repeated calls.
//
//   kiln-run FILE.vmfb [--function=main] [--input=SPEC]... [--output=@y.npy]...
//            [--repeat=N] [--threads=N] [--executor=auto|vm|graph]
//
// SPEC is "@x.npy" or inline syntax (tools/common/inline_tensor.h). The i-th
// --output saves the i-th result (a tuple's fields are the results); results
// without an --output are printed. --repeat=N times N further calls after the
// first and prints the median and mean time per call. --executor picks the
// engine: the static graph where the function has one (auto, the default),
// always the VM, or always the graph (an error for functions without one).
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
  std::vector<std::string> inputs;        // SPECs as written
  std::vector<std::string> output_paths;  // without the leading '@'
  int repeat = 0;                         // 0: one untimed call
  int threads = 0;                        // 0: the global pool
  std::string executor = "auto";          // "auto", "vm" or "graph"
  bool help = false;
};

// Parses argv[1..argc-1]. Errors name the flag ("--repeat: 'x' is not a positive integer").
Result<RunToolOptions> ParseRunToolArgs(int argc, const char* const* argv);
// Runs with parsed options, printing results and timings to `out`.
Status RunTool(const RunToolOptions& options, std::ostream& out);
// Parse + run; on error writes one line "kiln-run: error: ..." to `err` and
// returns 1 (2 for usage errors). Returns 0 on success.
int RunToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

extern const char kRunToolUsage[];

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_RUN_TOOL_H_
