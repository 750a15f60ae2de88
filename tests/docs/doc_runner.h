// Runs the examples of the user guide (docs/guide/*.md), so the guide cannot
// drift from the code. Used by kiln_docs_test (tests/docs/CMakeLists.txt).
//
// Fenced blocks whose info string is one of these run; others are prose:
//   c run          a complete C11 program: compiled against <kiln/kiln.h>,
//                  linked with libkiln, run with argv[1] = mlp.vmfb (compiled
//                  from examples/mlp.relax); must exit 0
//   cpp run        the same as C++17
//   sh run         a bash script (set -euo pipefail) with the built tools on
//                  PATH, $CC the C compiler and $KILN_INCLUDE_DIR the
//                  directory holding kiln/kiln.h (to build a plugin); must
//                  exit 0
//   relax compile  a .relax module that kiln-compile must compile;
//                  "relax compile NAME.relax" keeps it as NAME.relax and
//                  NAME.vmfb for the page's later blocks
// Each page gets its own directory, holding a copy of every examples/*.relax;
// its blocks run there in order (a later block may use what an earlier one
// wrote, as a reader following the page would). An info string ending in
// "run" or "compile" that is none of the above fails, so a typo cannot turn
// an example off silently.
//
// A failure is reported as "FILE:LINE: error: ..." (LINE of the opening
// fence) followed by the step's output.
#ifndef KILN_TESTS_DOCS_DOC_RUNNER_H_
#define KILN_TESTS_DOCS_DOC_RUNNER_H_

#include <ostream>
#include <string>
#include <vector>

namespace kiln {
namespace docs {

struct RunnerOptions {
  std::string kiln_compile;            // the compiler (also used for mlp.vmfb)
  std::vector<std::string> path_dirs;  // put before PATH for "sh run"
  std::string cc = "cc";
  std::string cxx = "c++";
  std::string include_dir;             // holds kiln/kiln.h
  std::string library_dir;             // holds libkiln.so
  std::string extra_flags;             // for compiling and linking examples (sanitizers)
  std::string examples_dir;            // examples/: *.relax, mlp.relax among them
  std::string work_dir;                // emptied first
  int timeout_s = 300;                 // per step
};

// Runs every runnable block of `inputs` (Markdown files, or directories whose
// *.md files are taken in name order). Logs one line per block and a summary
// to `log`. Returns the number of failed blocks, or -1 if nothing could run
// (a missing input, no mlp.vmfb).
int RunDocs(const RunnerOptions& options, const std::vector<std::string>& inputs, std::ostream& log);

}  // namespace docs
}  // namespace kiln

#endif  // KILN_TESTS_DOCS_DOC_RUNNER_H_
