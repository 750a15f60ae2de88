#include "tests/ops/op_test_util.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "compiler/text/text.h"
#include "runtime/any.h"
#include "tests/e2e/e2e_util.h"
#include "vm/module.h"

namespace kiln {
namespace optest {
namespace {

// fp16 <-> float, round to nearest even (the test's own conversion).
uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  int32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      float f = std::ldexp(static_cast<float>(mant), -24);
      return sign ? -f : f;
    }
  } else {
    x = sign | (static_cast<uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double Get(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  const char* p = static_cast<const char*>(t.raw_data());
  if (d == DType::Float32()) return reinterpret_cast<const float*>(p)[i];
  if (d == DType{kDLFloat, 64, 1}) return reinterpret_cast<const double*>(p)[i];
  if (d == DType{kDLFloat, 16, 1}) return HalfToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
  if (d == DType{kDLInt, 8, 1}) return reinterpret_cast<const int8_t*>(p)[i];
  if (d == DType{kDLInt, 32, 1}) return reinterpret_cast<const int32_t*>(p)[i];
  if (d == DType::Int64()) return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
  if (d == DType{kDLUInt, 8, 1}) return reinterpret_cast<const uint8_t*>(p)[i];
  if (d == DType::Bool()) return reinterpret_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  ADD_FAILURE() << "op_test_util: unsupported dtype " << DTypeToString(d);
  return 0;
}

void Set(const Tensor& t, int64_t i, double v) {
  DType d = t.dtype();
  char* p = static_cast<char*>(t.raw_data());
  if (d == DType::Float32()) reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
  else if (d == DType{kDLFloat, 64, 1}) reinterpret_cast<double*>(p)[i] = v;
  else if (d == DType{kDLFloat, 16, 1}) reinterpret_cast<uint16_t*>(p)[i] = FloatToHalf(static_cast<float>(v));
  else if (d == DType{kDLInt, 8, 1}) reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
  else if (d == DType{kDLInt, 32, 1}) reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
  else if (d == DType::Int64()) reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
  else if (d == DType{kDLUInt, 8, 1}) reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
  else if (d == DType::Bool()) reinterpret_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
  else ADD_FAILURE() << "op_test_util: unsupported dtype " << DTypeToString(d);
}

std::string ShapeText(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

}  // namespace

std::string OneOpModule(const std::vector<std::string>& params, const std::string& expr) {
  std::ostringstream os;
  os << "@I.ir_module\nclass Module:\n    @R.function\n    def main(";
  for (size_t i = 0; i < params.size(); ++i) os << (i ? ", " : "") << params[i];
  os << "):\n        with R.dataflow():\n            r = " << expr << "\n            R.output(r)\n        return r\n";
  return os.str();
}

std::string TensorType(const Shape& shape, const std::string& dtype) {
  std::string s = "R.Tensor(" + ShapeText(shape);
  if (shape.size() == 1) s = "R.Tensor((" + std::to_string(shape[0]) + ",)";
  return s + ", \"" + dtype + "\")";
}

Result<std::vector<Tensor>> RunMain(const std::string& source, const std::vector<Tensor>& inputs,
                                    const driver::CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Module> mod, e2e::CompileAndLoad(source, "op.relax", options));
  std::unique_ptr<vm::Context> ctx = mod->CreateContext();
  std::vector<Any> args(inputs.begin(), inputs.end());
  Any result;
  KILN_RETURN_IF_ERROR(ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result));
  std::vector<Tensor> out;
  if (result.is_tuple()) {
    for (const Any& f : result.tuple_fields()) {
      KILN_ASSIGN_OR_RETURN(Tensor t, f.AsTensor());
      out.push_back(t);
    }
  } else {
    KILN_ASSIGN_OR_RETURN(Tensor t, result.AsTensor());
    out.push_back(t);
  }
  return out;
}

Tensor MakeTensor(const Shape& shape, DType dtype, const std::vector<double>& values) {
  Result<Tensor> t = Tensor::Empty(Span<const int64_t>(shape.data(), shape.size()), dtype);
  KILN_CHECK(t.ok(), "MakeTensor: %s", t.status().message().c_str());
  KILN_CHECK(static_cast<int64_t>(values.size()) == NumElements(shape), "MakeTensor: %zu values for the shape", values.size());
  for (size_t i = 0; i < values.size(); ++i) Set(*t, static_cast<int64_t>(i), values[i]);
  return *t;
}

Tensor RandomTensor(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(NumElements(shape)));
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (double& x : v) {
    // SplitMix64
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double u = static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
    x = lo + (hi - lo) * u;
    if (!dtype.is_float()) x = std::floor(x);
  }
  return MakeTensor(shape, dtype, v);
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = Get(t, static_cast<int64_t>(i));
  return v;
}

::testing::AssertionResult AllClose(const Tensor& got, const std::vector<double>& want, const Shape& want_shape,
                                    double atol, double rtol) {
  if (got.shape() != want_shape) {
    return ::testing::AssertionFailure() << "shape " << ShapeText(got.shape()) << ", expected " << ShapeText(want_shape);
  }
  std::vector<double> g = ToDoubles(got);
  if (g.size() != want.size()) return ::testing::AssertionFailure() << "reference has " << want.size() << " values";
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < g.size(); ++i) {
    bool both_nan = std::isnan(g[i]) && std::isnan(want[i]);
    bool same_inf = std::isinf(g[i]) && g[i] == want[i];
    if (both_nan || same_inf) continue;
    if (!(std::fabs(g[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      if (bad++ < 5) os << " [" << i << "] got " << g[i] << " want " << want[i] << ";";
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << g.size() << " elements differ:" << os.str();
  return ::testing::AssertionSuccess();
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void ForEachIndex(const Shape& shape, const std::function<void(const Shape&)>& f) {
  if (NumElements(shape) == 0) return;
  Shape idx(shape.size(), 0);
  while (true) {
    f(idx);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

int64_t Offset(const Shape& shape, const Shape& index) {
  int64_t off = 0;
  for (size_t i = 0; i < shape.size(); ++i) off = off * shape[i] + index[i];
  return off;
}

int64_t BroadcastOffset(const Shape& in, const Shape& out_index) {
  int64_t off = 0;
  size_t lead = out_index.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) off = off * in[i] + (in[i] == 1 ? 0 : out_index[lead + i]);
  return off;
}

Shape BroadcastShape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace optest
}  // namespace kiln
