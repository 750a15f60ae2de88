// One command-line grammar for every Kiln tool.
//
//   --name=value   or   --name value     a flag that takes a value
//   --name                               a switch (no value; "--name=..." is an error)
//   -h, --help                           sets the parser's help bit
//   anything not starting with '-'      a positional argument ("-" alone is one too)
//   --                                   every later argument is positional
//
// Errors are kInvalidArgument and name the flag: "--runs: 'x' is not an
// integer in [1, 1000000000]", "--output needs a value", "unknown flag
// '--foo' (see --help)". A flag registered as single-valued and given twice
// keeps the last value (as most Unix tools do); use AddRepeated to collect.
//
// Thread-compatible: one parser per parse.
#ifndef KILN_TOOLS_COMMON_FLAGS_H_
#define KILN_TOOLS_COMMON_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tools {

class FlagParser {
 public:
  // Takes a value; `set` may reject it with a Status (its message is
  // prefixed with "--name: " unless it already starts with "--").
  void AddValue(const std::string& name, std::function<Status(const std::string&)> set);
  void AddString(const std::string& name, std::string* dst);
  void AddRepeated(const std::string& name, std::vector<std::string>* dst);
  void AddInt(const std::string& name, int64_t min, int64_t max, int64_t* dst);
  void AddInt(const std::string& name, int min, int max, int* dst);
  void AddDouble(const std::string& name, double min, double* dst);
  // One of `choices`.
  void AddChoice(const std::string& name, const std::vector<std::string>& choices, std::string* dst);
  void AddSwitch(const std::string& name, bool* dst);
  // A short spelling ("-o") of a registered flag ("output"): "-o FILE".
  void AddAlias(const std::string& short_name, const std::string& name);

  // Parses argv[1..argc-1]; positional arguments go to *positional.
  Status Parse(int argc, const char* const* argv, std::vector<std::string>* positional);
  bool help() const { return help_; }

 private:
  struct Flag {
    std::string name;  // with the dashes
    bool takes_value = true;
    std::function<Status(const std::string&)> set;
  };
  const Flag* Find(const std::string& name) const;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> aliases_;  // "-o" -> "--output"
  bool help_ = false;
};

// Number parsers with the messages above; `flag` names the flag.
Result<int64_t> ParseIntFlag(const std::string& flag, const std::string& text, int64_t min, int64_t max);
Result<double> ParseDoubleFlag(const std::string& flag, const std::string& text, double min);
// "name=v1,v2,..." (--dim n=1,8,64, --bound n=128): a name and one or more
// integers >= `min`.
Result<std::pair<std::string, std::vector<int64_t>>> ParseNameValues(const std::string& flag,
                                                                      const std::string& text, int64_t min);

// Replaces newlines by spaces: tools print each error on one line.
std::string OneLine(std::string text);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_FLAGS_H_
