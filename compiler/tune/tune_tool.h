// kiln-tune's logic (tools/kiln-tune/main.cc is a thin main):
//   kiln-tune MODULE.relax --function NAME --db DIR [--trials N] [--seed S]
//             [--threads T] [--timeout SECONDS] [--repeats R] [--cold-cache[=SIZE]]
//             [--space all|default|generic|REGISTERED] [--space-file FILE]
//             [--target TRIPLE [--cpu NAME]] [--runner "CMD"] [--measure-program PATH]
// tunes the PrimFunc NAME of the module (its text as written) and appends
// the workload and every measured candidate to the database DIR. Prints a
// progress line per trial and a summary; returns the exit status (0 ok, 1
// failure, 2 usage).
#ifndef KILN_COMPILER_TUNE_TUNE_TOOL_H_
#define KILN_COMPILER_TUNE_TUNE_TOOL_H_

#include <ostream>

namespace kiln {
namespace tune {

int TuneToolMain(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_TOOL_H_
