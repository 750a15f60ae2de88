#include "runtime/dtype.h"

#include <cstdlib>

namespace kiln {

std::string DTypeToString(DType t) {
  if (t.code == kDLUInt && t.bits == 1) return "bool";
  std::string base;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    default: base = "unknown" + std::to_string(t.code) + "_"; break;
  }
  base += std::to_string(t.bits);
  if (t.lanes != 1) base += "x" + std::to_string(t.lanes);
  return base;
}

Result<DType> ParseDType(const std::string& s) {
  if (s == "bool") return DType::Bool();
  // numpy descriptors as found in .npy headers
  if (s.size() == 3 && (s[0] == '<' || s[0] == '|' || s[0] == '=')) {
    int bytes = s[2] - '0';
    if (bytes >= 1 && bytes <= 8) {
      if (s[1] == 'f') return DType{kDLFloat, static_cast<uint8_t>(bytes * 8), 1};
      if (s[1] == 'i') return DType{kDLInt, static_cast<uint8_t>(bytes * 8), 1};
      if (s[1] == 'u') return DType{kDLUInt, static_cast<uint8_t>(bytes * 8), 1};
      if (s[1] == 'b' && bytes == 1) return DType{kDLUInt, 8, 1};
    }
  }
  struct Prefix { const char* name; uint8_t code; };
  static const Prefix kPrefixes[] = {{"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt},
                                     {"int", kDLInt},       {"bf", kDLBfloat},   {"f", kDLFloat},
                                     {"u", kDLUInt},        {"i", kDLInt}};
  for (const Prefix& p : kPrefixes) {
    size_t n = std::char_traits<char>::length(p.name);
    if (s.compare(0, n, p.name) != 0 || s.size() == n) continue;
    const char* rest = s.c_str() + n;
    char* end = nullptr;
    long bits = std::strtol(rest, &end, 10);
    long lanes = 1;
    if (*end == 'x') lanes = std::strtol(end + 1, &end, 10);
    if (*end != '\0' || lanes <= 0 || lanes > 65535) break;
    // Only widths that exist: a typo like float33 is an error, not a type.
    bool valid_bits = p.code == kDLFloat    ? (bits == 16 || bits == 32 || bits == 64)
                      : p.code == kDLBfloat ? bits == 16
                                            : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
    if (!valid_bits) break;
    return DType{p.code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
  }
  return InvalidArgument("unknown dtype '" + s + "' (expected e.g. float32, int64, bool)");
}

}  // namespace kiln
