#include "tools/common/element.h"

#include <cinttypes>
#include <cmath>
#include <cstring>

namespace kiln {
namespace tools {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16, round to nearest even; overflow gives inf, NaN stays NaN.
uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // A subnormal half (or zero): the value in units of 2^-24, to nearest even.
    float r = std::nearbyint(BitsFloat(abs) * 16777216.0f);
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = (((abs >> 23) - 127 + 15) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return sign | static_cast<uint16_t>(h);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  return BitsFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // a quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float BFloat16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace

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
