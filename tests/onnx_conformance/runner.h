// Runs one ONNX backend node test through Kiln: import model.onnx
// (kiln::onnx::ImportFile), compile in process (driver::CompileModule), serialize
// and load the .vmfb (vm::Module::LoadOwnedBuffer), call `main` with every
// test_data_set_N/input_K.pb and compare each result with output_K.pb
// (compare.h). Inputs that are attribute-like operands (node_tests.h) are
// bound as constants at import (ImportOptions::input_values), the model then
// compiled once per data set; the other inputs are the call's arguments.
// Every data set runs on the VM and, when `main` has a static graph, again on
// the graph executor (failures there start with "graph executor: ").
//
// Isolation: by default each test runs in a forked child process, so that a
// crash or a hang in the importer, compiler or runtime is reported as that
// test's failure ("crashed with signal 11", "timed out after 120 s") instead of
// ending the whole suite. The child does all the work, so the parent never
// compiles or runs anything itself. Do not mix the two modes in one process:
// after an in-process run, threads of the compiler or the runtime may hold
// locks that a forked child inherits held, and the child hangs until its
// timeout.
//
// Thread-compatible: RunNodeTest may be called from one thread at a time.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_RUNNER_H_
#define KILN_TESTS_ONNX_CONFORMANCE_RUNNER_H_

#include <string>

#include "runtime/status.h"
#include "tests/onnx_conformance/compare.h"
#include "tests/onnx_conformance/node_tests.h"

namespace kiln {
namespace conformance {

enum class Outcome { kPass, kFail, kOutOfScope };
const char* OutcomeName(Outcome outcome);

struct RunOptions {
  Tolerance tolerance;
  bool isolate = true;          // fork a child per test (see above)
  int timeout_seconds = 120;    // per test, when isolated
  int num_threads = 1;          // kernel threads of the loaded module
  // Feed every graph input as a call argument, attribute-like operands too
  // (shapes, pads, axes, K read when the program runs), compiling once:
  // the node tests' inputs as they define them (issue 20 §1).
  bool inputs_as_defined = false;
};

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  // Why it failed (starts with the stage: "import: ...", "compile: ...",
  // "load: ...", "run: ...", "output 0: ...") or why it is out of scope.
  std::string detail;
  double seconds = 0;  // wall time of the whole test
};

CaseResult RunNodeTest(const NodeTestCase& test, const RunOptions& options);

// The work of one test in the calling process: OK when every output matches.
Status RunNodeTestInProcess(const NodeTestCase& test, const RunOptions& options);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_RUNNER_H_
