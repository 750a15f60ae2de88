#include "tests/onnx_conformance/compare.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln {
namespace conformance {

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

bool IsFloat(DType t) { return t.code == kDLFloat; }

// Element i as double (floats) for the tolerance check.
double FloatAt(const Tensor& t, int64_t i) {
  switch (t.dtype().bits) {
    case 16: return HalfToFloat(t.data<uint16_t>()[i]);
    case 32: return t.data<float>()[i];
    default: return t.data<double>()[i];
  }
}

// Element i as int64 (integers and bools) for exact comparison.
int64_t IntAt(const Tensor& t, int64_t i) {
  const DType d = t.dtype();
  const bool is_unsigned = d.code == kDLUInt;
  switch (d.bytes()) {
    case 1: return is_unsigned ? int64_t{t.data<uint8_t>()[i]} : int64_t{t.data<int8_t>()[i]};
    case 2: return is_unsigned ? int64_t{t.data<uint16_t>()[i]} : int64_t{t.data<int16_t>()[i]};
    case 4: return is_unsigned ? int64_t{t.data<uint32_t>()[i]} : int64_t{t.data<int32_t>()[i]};
    default: return t.data<int64_t>()[i];
  }
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  float value;
  if (exp == 0) {
    value = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    value = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    value = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits |= sign;
  std::memcpy(&value, &bits, 4);
  return value;
}

Status CompareTensors(const Tensor& got, const Tensor& expected, const Tolerance& tol, const std::string& what) {
  if (!got.defined()) return InvalidArgument(what + ": no tensor");
  if (got.dtype() != expected.dtype()) {
    return InvalidArgument(what + ": dtype " + got.TypeString() + ", expected " + expected.TypeString());
  }
  if (got.shape() != expected.shape()) {
    return InvalidArgument(what + ": shape " + ShapeText(got.shape()) + ", expected " + ShapeText(expected.shape()));
  }
  if (!got.IsCompact()) return InvalidArgument(what + ": result is not compact (strided view)");
  const int64_t n = expected.NumElements();
  int64_t bad = 0, first = -1;
  double worst = 0, first_got = 0, first_exp = 0;
  const bool is_float = IsFloat(expected.dtype());
  for (int64_t i = 0; i < n; ++i) {
    double g, e;
    bool ok;
    if (is_float) {
      g = FloatAt(got, i);
      e = FloatAt(expected, i);
      if (std::isnan(e) || std::isnan(g)) {
        ok = std::isnan(e) && std::isnan(g);
      } else if (std::isinf(e) || std::isinf(g)) {
        ok = g == e;
      } else {
        ok = std::fabs(g - e) <= tol.atol + tol.rtol * std::fabs(e);
      }
    } else {
      int64_t gi = IntAt(got, i), ei = IntAt(expected, i);
      g = static_cast<double>(gi);
      e = static_cast<double>(ei);
      ok = gi == ei;
    }
    if (!ok) {
      if (first < 0) first = i, first_got = g, first_exp = e;
      ++bad;
      if (std::isfinite(g - e)) worst = std::fmax(worst, std::fabs(g - e));
    }
  }
  if (bad == 0) return Status::Ok();
  return InvalidArgument(StrFormat("%s: %lld of %lld elements differ (rtol %g, atol %g%s); first at flat index %lld: "
                                   "got %.9g, expected %.9g; largest |difference| %.3g",
                                   what.c_str(), static_cast<long long>(bad), static_cast<long long>(n), tol.rtol,
                                   tol.atol, is_float ? "" : ", exact for integers", static_cast<long long>(first),
                                   first_got, first_exp, worst));
}

}  // namespace conformance
}  // namespace kiln
