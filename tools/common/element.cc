#include "tools/common/element.h"

#include <cinttypes>
#include <cmath>
#include <cstring>

#include "runtime/half_float.h"

namespace kiln {
namespace tools {

bool IsElementDType(DType d) {
  if (d.lanes != 1) return false;
  switch (d.code) {
    case kDLFloat: return d.bits == 16 || d.bits == 32 || d.bits == 64;
    case kDLBfloat: return d.bits == 16;
    case kDLInt: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case kDLUInt: return d.bits == 1 || d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    default: return false;
  }
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  switch (d.code) {
    case kDLBfloat: return BFloat16ToFloat(t.data<uint16_t>()[i]);
    case kDLFloat:
      if (d.bits == 16) return HalfToFloat(t.data<uint16_t>()[i]);
      if (d.bits == 32) return t.data<float>()[i];
      return t.data<double>()[i];
    case kDLInt:
      if (d.bits == 8) return t.data<int8_t>()[i];
      if (d.bits == 16) return t.data<int16_t>()[i];
      if (d.bits == 32) return t.data<int32_t>()[i];
      return static_cast<double>(t.data<int64_t>()[i]);
    default:  // kDLUInt, bool (one byte per element)
      if (d.bits <= 8) return t.data<uint8_t>()[i];
      if (d.bits == 16) return t.data<uint16_t>()[i];
      if (d.bits == 32) return t.data<uint32_t>()[i];
      return static_cast<double>(t.data<uint64_t>()[i]);
  }
}

void SetElementFromDouble(const Tensor& t, int64_t i, double v) {
  DType d = t.dtype();
  if (d.code == kDLBfloat) {
    t.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v));
  } else if (d.bits == 16) {
    t.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
  } else if (d.bits == 32) {
    t.data<float>()[i] = static_cast<float>(v);
  } else {
    t.data<double>()[i] = v;
  }
}

void SetElementFromInt(const Tensor& t, int64_t i, int64_t v) {
  DType d = t.dtype();
  if (d.code == kDLUInt) {
    SetElementFromUInt(t, i, static_cast<uint64_t>(v));
    return;
  }
  switch (d.bits) {
    case 8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case 16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
    case 32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    default: t.data<int64_t>()[i] = v; break;
  }
}

void SetElementFromUInt(const Tensor& t, int64_t i, uint64_t v) {
  switch (t.dtype().bits) {
    case 1:
    case 8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case 16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case 32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    default: t.data<uint64_t>()[i] = v; break;
  }
}

std::string FormatElementText(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  if (d == DType::Bool()) return t.data<uint8_t>()[i] ? "true" : "false";
  if (d.is_float()) return StrFormat("%g", ElementAsDouble(t, i));
  if (d.code == kDLUInt && d.bits == 64) return StrFormat("%" PRIu64, t.data<uint64_t>()[i]);
  if (d.code == kDLInt && d.bits == 64) return StrFormat("%" PRId64, t.data<int64_t>()[i]);
  return StrFormat("%.0f", ElementAsDouble(t, i));  // exact below 2^53
}

}  // namespace tools
}  // namespace kiln
