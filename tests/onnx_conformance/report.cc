#include "tests/onnx_conformance/report.h"

#include <map>
#include <sstream>

#include "tests/onnx_conformance/operator_list.h"

namespace kiln {
namespace conformance {

std::string OneLine(const std::string& detail, size_t max_chars) {
  std::string line;
  for (char c : detail) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (line.empty() || line.back() == ' ')) continue;  // collapse runs of blanks
    line += c;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.size() > max_chars) line = line.substr(0, max_chars - 3) + "...";
  return line;
}

std::string ShortReason(const std::string& detail, size_t max_chars) {
  std::string out;
  for (char c : OneLine(detail, max_chars)) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

std::string MarkdownReport(const std::vector<TestRow>& rows, const std::string& preamble) {
  struct Counts {
    int pass = 0, fail = 0, out = 0;
  };
  std::map<std::string, Counts> by_op;
  for (const TestRow& r : rows) {
    Counts& c = by_op[r.test.op];
    if (r.result.outcome == Outcome::kPass) ++c.pass;
    if (r.result.outcome == Outcome::kFail) ++c.fail;
    if (r.result.outcome == Outcome::kOutOfScope) ++c.out;
  }
  std::vector<std::string> ops = Issue7Operators();
  ops.push_back(kSeveralOperators);
  std::ostringstream os;
  os << preamble;
  Counts total;
  for (const auto& [op, c] : by_op) total.pass += c.pass, total.fail += c.fail, total.out += c.out;
  int binding = 0;
  for (const TestRow& r : rows) {
    for (bool b : r.test.bind_as_constant) {
      if (b) {
        ++binding;
        break;
      }
    }
  }
  os << "Selected node tests: " << rows.size() << " — pass " << total.pass << ", fail " << total.fail
     << ", out of scope " << total.out << ". " << binding
     << " of them feed attribute-like operands as graph inputs (the preamble says how they are taken).\n\n";
  os << "| operator | tests | pass | fail | out of scope | status |\n|---|---|---|---|---|---|\n";
  for (const std::string& op : ops) {
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      os << "| " << op << " | 0 | – | – | – | no node test in the data |\n";
      continue;
    }
    const Counts& c = it->second;
    const int n = c.pass + c.fail + c.out;
    const char* status = c.fail == 0 ? (c.pass > 0 ? "all pass" : "out of scope") : (c.pass == 0 ? "failing" : "partial");
    os << "| " << op << " | " << n << " | " << c.pass << " | " << c.fail << " | " << c.out << " | " << status
       << " |\n";
  }
  os << "\n## Failing tests\n\n";
  if (total.fail == 0) os << "None.\n";
  else os << "| test | operator | reason |\n|---|---|---|\n";
  for (const TestRow& r : rows) {
    if (r.result.outcome != Outcome::kFail) continue;
    os << "| " << r.test.name << " | " << r.test.op << " | " << ShortReason(r.result.detail, 240) << " |\n";
  }
  os << "\n## Out of scope\n\n";
  if (total.out == 0) os << "None.\n";
  else os << "| test | operator | reason |\n|---|---|---|\n";
  for (const TestRow& r : rows) {
    if (r.result.outcome != Outcome::kOutOfScope) continue;
    os << "| " << r.test.name << " | " << r.test.op << " | " << ShortReason(r.result.detail, 240) << " |\n";
  }
  return os.str();
}

std::string ExpectedFailuresText(const std::vector<TestRow>& rows, bool inputs_as_defined) {
  std::ostringstream os;
  if (inputs_as_defined) {
    os << "# ONNX backend node tests that fail today when every graph input is fed as the test defines it\n"
          "# (kiln-onnx-conformance --inputs-as-defined), one per line:\n"
          "#   test_name   reason\n"
          "# The ctest kiln_onnx_conformance_as_defined runs the tests that feed attribute-like operands as\n"
          "# graph inputs this way; it fails when a test not listed here fails and when a listed test passes.\n"
          "# Regenerate it with\n"
          "#   kiln-onnx-conformance --inputs-as-defined --expected-failures > "
          "tests/onnx_conformance/expected_failures_as_defined.txt\n"
          "# and review the diff.\n";
  } else {
    os << "# ONNX backend node tests (issue 7 operators) that fail today, one per line:\n"
          "#   test_name   reason\n"
          "# The conformance ctests fail when a test not listed here fails and when a\n"
          "# listed test passes, so this is exactly the set of failures. Regenerate it with\n"
          "#   kiln-onnx-conformance --expected-failures > tests/onnx_conformance/expected_failures.txt\n"
          "# and review the diff.\n";
  }
  for (const TestRow& r : rows) {
    if (r.result.outcome != Outcome::kFail) continue;
    os << r.test.name << "  " << OneLine(r.result.detail, 200) << "\n";
  }
  return os.str();
}

}  // namespace conformance
}  // namespace kiln
