// kiln-compile options from a YAML file (`--config FILE.yaml`).
//
// The file is a mapping from option names to values, the same names as the
// command-line flags without the leading dashes:
//
//   matmul: dnnl
//   params: weights.npz
//   dump-ir-after: [legalize, lower-tir]   # a list or a single value
//   O: 2
//
// Scalars are taken as their text; a sequence gives a repeated option. The
// result maps each key to its values in order.
//
// Failures (kInvalidArgument unless stated), all naming the file:
//   kNotFound: the file cannot be read; YAML syntax errors (with line and
//   column); a top level that is not a mapping; a key not in `valid_keys`
//   (the message lists them); a value that is a mapping or null.
//
// yaml-cpp reports errors by throwing: this file's .cc is the one place in
// Kiln that catches them and turns them into a Status.
#ifndef KILN_COMPILER_DRIVER_CONFIG_FILE_H_
#define KILN_COMPILER_DRIVER_CONFIG_FILE_H_

#include <map>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace driver {

using OptionValues = std::map<std::string, std::vector<std::string>>;

Result<OptionValues> ReadConfigFile(const std::string& path, const std::vector<std::string>& valid_keys);
// The same over text; `path` labels the messages.
Result<OptionValues> ParseConfig(const std::string& yaml, const std::string& path,
                                 const std::vector<std::string>& valid_keys);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_CONFIG_FILE_H_
