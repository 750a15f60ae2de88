// A small JSON value with a strict reader and a one-line writer, for the
// tuner's traces and its JSON-lines database. Numbers keep whether they were
// written as integers, so int64 tile sizes and ids round-trip exactly.
// Thread-compatible.
#ifndef KILN_COMPILER_TUNE_JSON_H_
#define KILN_COMPILER_TUNE_JSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tune {

struct Json {
  enum class Kind : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject } kind = Kind::kNull;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Json> array;
  std::map<std::string, Json> object;  // printed in key order

  static Json Int(int64_t v) { Json j; j.kind = Kind::kInt; j.i = v; return j; }
  static Json Double(double v) { Json j; j.kind = Kind::kDouble; j.d = v; return j; }
  static Json Str(std::string v) { Json j; j.kind = Kind::kString; j.s = std::move(v); return j; }
  static Json Bool(bool v) { Json j; j.kind = Kind::kBool; j.b = v; return j; }
  static Json Array() { Json j; j.kind = Kind::kArray; return j; }
  static Json Object() { Json j; j.kind = Kind::kObject; return j; }

  // The member `key` of an object, or null when absent (or not an object).
  const Json* Get(const std::string& key) const;
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kDouble; }
  double number() const { return kind == Kind::kInt ? static_cast<double>(i) : d; }
};

// One line, no spaces; doubles with 17 significant digits (exact round trip).
std::string WriteJson(const Json& j);
// The whole text must be one value (surrounding whitespace allowed). Errors
// name the byte offset.
Result<Json> ParseJson(const std::string& text);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_JSON_H_
