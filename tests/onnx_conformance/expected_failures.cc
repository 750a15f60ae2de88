#include "tests/onnx_conformance/expected_failures.h"

#include <fstream>
#include <sstream>

namespace kiln {
namespace conformance {

namespace {

std::string Trim(const std::string& s) {
  const char* ws = " \t\r";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

}  // namespace

Result<ExpectedFailures> ParseExpectedFailures(const std::string& text, const std::string& file_name) {
  ExpectedFailures out;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = file_name + ":" + std::to_string(line_no) + ": ";
    size_t split = line.find_first_of(" \t");
    const std::string name = line.substr(0, split);
    const std::string reason = split == std::string::npos ? "" : Trim(line.substr(split));
    if (name.rfind("test_", 0) != 0) {
      return InvalidArgument(where + "'" + name + "' is not a node test name (they start with test_)");
    }
    if (reason.empty()) return InvalidArgument(where + name + " has no reason; write why it fails after the name");
    if (!out.emplace(name, reason).second) return InvalidArgument(where + name + " is listed twice");
  }
  return out;
}

Result<ExpectedFailures> ReadExpectedFailures(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound(path + ": cannot open the expected-failures file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseExpectedFailures(ss.str(), path);
}

}  // namespace conformance
}  // namespace kiln
