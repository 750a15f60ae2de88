// The expectation file of the conformance suite (expected_failures.txt): the
// node tests known to fail, each with the reason, one per line:
//
//   # comment
//   test_resize_upsample_sizes_cubic   cubic_coeff_a other than -0.75
//
// A test listed here must fail and a test not listed must pass, so the list
// stays exactly the set of failures (a fixed test fails the suite until its
// line is removed).
//
// Failures of ParseExpectedFailures: kInvalidArgument naming the file and
// line for a line without a reason, a name that is not a node test name
// ("test_..."), or a name listed twice. Thread-safe: no state.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_EXPECTED_FAILURES_H_
#define KILN_TESTS_ONNX_CONFORMANCE_EXPECTED_FAILURES_H_

#include <map>
#include <string>

#include "runtime/status.h"

namespace kiln {
namespace conformance {

// test name -> reason
using ExpectedFailures = std::map<std::string, std::string>;

Result<ExpectedFailures> ParseExpectedFailures(const std::string& text, const std::string& file_name);
// kNotFound when the file cannot be read.
Result<ExpectedFailures> ReadExpectedFailures(const std::string& path);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_EXPECTED_FAILURES_H_
