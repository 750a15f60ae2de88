// json_value.h: a small JSON reader for the model configuration Triton hands a backend
// (TRITONBACKEND_ModelConfig serialized to JSON). Only what a config holds: objects,
// arrays, strings, numbers, booleans, null. Not a general-purpose parser: no streaming,
// numbers kept as double and as their text (protobuf's JSON writes int64 fields as
// strings, "dims": ["784"], so both spellings are read as integers).
//
// Thread-compatible; values are plain data.
#ifndef KILN_SERVING_TRITON_BACKEND_JSON_VALUE_H_
#define KILN_SERVING_TRITON_BACKEND_JSON_VALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::triton {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // a string's value, a number's spelling
  std::vector<JsonValue> items;                             // array
  std::vector<std::pair<std::string, JsonValue>> members;  // object, in order

  // The member `key` of an object, or nullptr (also for a non-object).
  const JsonValue* Find(const std::string& key) const;
  // An integer from a number or a string of digits ("784", "-1"); false otherwise.
  bool AsInt(int64_t* out) const;
};

// Parses `size` bytes of `text`. On failure returns false and sets `error` to a message
// with the byte offset.
bool ParseJson(const char* text, size_t size, JsonValue* out, std::string* error);

}  // namespace kiln::triton

#endif  // KILN_SERVING_TRITON_BACKEND_JSON_VALUE_H_
