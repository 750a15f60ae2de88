// Data types in DLPack's encoding (code, bits, lanes).
#ifndef KILN_RUNTIME_DTYPE_H_
#define KILN_RUNTIME_DTYPE_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

#include "runtime/status.h"

namespace kiln {

struct DType {
  uint8_t code = kDLFloat;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  static constexpr DType Float32() { return DType{kDLFloat, 32, 1}; }
  static constexpr DType Float64() { return DType{kDLFloat, 64, 1}; }
  static constexpr DType Float16() { return DType{kDLFloat, 16, 1}; }
  static constexpr DType Int64() { return DType{kDLInt, 64, 1}; }
  static constexpr DType Int32() { return DType{kDLInt, 32, 1}; }
  static constexpr DType Int8() { return DType{kDLInt, 8, 1}; }
  static constexpr DType UInt8() { return DType{kDLUInt, 8, 1}; }
  static constexpr DType Bool() { return DType{kDLUInt, 1, 1}; }

  size_t bytes() const { return (static_cast<size_t>(bits) * lanes + 7) / 8; }
  bool operator==(const DType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DType& o) const { return !(*this == o); }
  DLDataType dl() const { return DLDataType{code, bits, lanes}; }
  static DType FromDL(DLDataType t) { return DType{t.code, t.bits, t.lanes}; }
  bool is_float() const { return code == kDLFloat || code == kDLBfloat; }
  bool is_int() const { return code == kDLInt || code == kDLUInt; }
};

// "float32", "int64", "bool", "float32x4".
std::string DTypeToString(DType t);
// Inverse of DTypeToString; also accepts "f32", "i64" and numpy descriptors ("<f4").
Result<DType> ParseDType(const std::string& s);

}  // namespace kiln

#endif  // KILN_RUNTIME_DTYPE_H_
