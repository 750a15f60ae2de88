#include "compiler/params/param_file.h"

#include <fstream>
#include <iterator>

namespace kiln {
namespace params {

Result<ParamList> ReadParamFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open the parameter file");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return NotFound(path + ": error reading the parameter file");
  // Zip archives start with a local header, or (empty) with the end record.
  bool zip = bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' &&
             ((bytes[2] == 3 && bytes[3] == 4) || (bytes[2] == 5 && bytes[3] == 6));
  if (zip) return ParseNpz(bytes.data(), bytes.size(), path);
  return ParseSafetensors(bytes.data(), bytes.size(), path);
}

}  // namespace params
}  // namespace kiln
