// The conformance results as Markdown (docs/onnx_conformance.md is generated
// from this) and as an expected_failures.txt body.
//
// Thread-safe: no state.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_REPORT_H_
#define KILN_TESTS_ONNX_CONFORMANCE_REPORT_H_

#include <string>
#include <vector>

#include "tests/onnx_conformance/node_tests.h"
#include "tests/onnx_conformance/runner.h"

namespace kiln {
namespace conformance {

struct TestRow {
  NodeTestCase test;
  CaseResult result;
};

// One table of pass / fail / out-of-scope counts per issue-7 operator (in the
// issue's order; graphs of several nodes last), then every failing and every
// out-of-scope test with its reason. `preamble` is printed first as is.
std::string MarkdownReport(const std::vector<TestRow>& rows, const std::string& preamble);

// A comment header, then "name  reason" lines for every failing test: the
// content of expected_failures.txt that matches these results.
std::string ExpectedFailuresText(const std::vector<TestRow>& rows, bool inputs_as_defined = false);

// A failure message on one line (line breaks and runs of blanks become one
// space), at most `max_chars` long.
std::string OneLine(const std::string& detail, size_t max_chars);
// The same with '|' escaped, for a Markdown table cell.
std::string ShortReason(const std::string& detail, size_t max_chars);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_REPORT_H_
