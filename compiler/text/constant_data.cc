#include "compiler/text/constant_data.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "compiler/text/printer_util.h"
#include "runtime/half_float.h"

namespace kiln {
namespace text {
namespace {

template <typename T>
void Put(const Tensor& t, int64_t index, T v) {
  t.data<T>()[index] = v;
}

std::string FloatText(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  std::string s = FloatRepr(v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// The shortest decimal whose float value `same` accepts (reads back to the
// stored bits); the double repr of a float may be longer than needed.
template <typename Same>
std::string ShortestFloat(float v, Same same) {
  if (!std::isfinite(v)) return FloatText(v);
  for (int prec = 1; prec <= 9; ++prec) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*g", prec, static_cast<double>(v));
    double back = std::strtod(buf, nullptr);
    if (same(static_cast<float>(back))) return FloatText(back);
  }
  return FloatText(v);
}

}  // namespace

bool IsConstantDType(DType t) {
  if (t.lanes != 1) return false;
  if (t == DType::Bool()) return true;
  switch (t.code) {
    case kDLFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat: return t.bits == 16;
    case kDLInt:
    case kDLUInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    default: return false;
  }
}

namespace {

// [-2^63, 2^63): the doubles that convert to int64 (NaN fails both tests).
bool InInt64(double f) { return f >= -9223372036854775808.0 && f < 9223372036854775808.0; }

}  // namespace

bool LiteralFits(const Literal& v, DType t) {
  if (!v.is_float || t == DType::Bool() || (t.code != kDLInt && t.code != kDLUInt)) return true;
  return InInt64(v.f);
}

void StoreLiteral(const Tensor& t, int64_t index, const Literal& v) {
  DType d = t.dtype();
  KILN_CHECK(IsConstantDType(d));
  double f = v.is_float ? v.f : static_cast<double>(v.i);
  // Only integer dtypes use i; a float dtype may hold any float.
  int64_t i = !v.is_float ? v.i : InInt64(v.f) ? static_cast<int64_t>(v.f) : 0;
  if (d == DType::Bool()) return Put<uint8_t>(t, index, f != 0 ? 1 : 0);
  if (d.code == kDLFloat) {
    if (d.bits == 16) return Put<uint16_t>(t, index, FloatToHalf(static_cast<float>(f)));
    if (d.bits == 32) return Put<float>(t, index, static_cast<float>(f));
    return Put<double>(t, index, f);
  }
  if (d.code == kDLBfloat) return Put<uint16_t>(t, index, FloatToBFloat16(static_cast<float>(f)));
  switch (d.bits) {
    case 8: return d.code == kDLInt ? Put<int8_t>(t, index, static_cast<int8_t>(i)) : Put<uint8_t>(t, index, static_cast<uint8_t>(i));
    case 16:
      return d.code == kDLInt ? Put<int16_t>(t, index, static_cast<int16_t>(i)) : Put<uint16_t>(t, index, static_cast<uint16_t>(i));
    case 32:
      return d.code == kDLInt ? Put<int32_t>(t, index, static_cast<int32_t>(i)) : Put<uint32_t>(t, index, static_cast<uint32_t>(i));
    default:
      return d.code == kDLInt ? Put<int64_t>(t, index, i) : Put<uint64_t>(t, index, static_cast<uint64_t>(i));
  }
}

std::string LiteralText(const Tensor& t, int64_t index) {
  DType d = t.dtype();
  KILN_CHECK(IsConstantDType(d));
  if (d == DType::Bool()) return t.data<uint8_t>()[index] ? "True" : "False";
  if (d.code == kDLFloat && d.bits == 64) return FloatText(t.data<double>()[index]);
  if (d.code == kDLFloat && d.bits == 32) {
    float v = t.data<float>()[index];
    return ShortestFloat(v, [v](float w) { return w == v; });
  }
  if (d.code == kDLFloat || d.code == kDLBfloat) {
    bool half = d.code == kDLFloat;
    uint16_t bits = t.data<uint16_t>()[index];
    float v = half ? HalfToFloat(bits) : BFloat16ToFloat(bits);
    return ShortestFloat(v, [half, bits](float w) { return (half ? FloatToHalf(w) : FloatToBFloat16(w)) == bits; });
  }
  switch (d.bits) {
    case 8: return d.code == kDLInt ? std::to_string(t.data<int8_t>()[index]) : std::to_string(t.data<uint8_t>()[index]);
    case 16: return d.code == kDLInt ? std::to_string(t.data<int16_t>()[index]) : std::to_string(t.data<uint16_t>()[index]);
    case 32: return d.code == kDLInt ? std::to_string(t.data<int32_t>()[index]) : std::to_string(t.data<uint32_t>()[index]);
    default: return d.code == kDLInt ? std::to_string(t.data<int64_t>()[index]) : std::to_string(t.data<uint64_t>()[index]);
  }
}

}  // namespace text
}  // namespace kiln
