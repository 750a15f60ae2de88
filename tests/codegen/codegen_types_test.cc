// Every dtype the operators use, through the kernels they become: casts
// between all pairs, integer division of negative operands and by zero,
// min/max and comparisons (NaN included), logical operators on bool, float16
// computed in float32, lazy if_then_else. Kernels are TVMScript text run over
// chosen and random inputs and compared with C++.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

const char* kTypes[] = {"float32", "float64", "float16", "int8", "uint8", "int32", "int64", "uint32", "bool"};

DType Parse(const std::string& s) {
  if (s == "float32") return DType::Float32();
  if (s == "float64") return DType::Float64();
  if (s == "float16") return DType{kDLFloat, 16, 1};
  if (s == "bool") return DType::Bool();
  if (s[0] == 'u') return DType{kDLUInt, static_cast<uint8_t>(std::stoi(s.substr(4))), 1};
  return DType{kDLInt, static_cast<uint8_t>(std::stoi(s.substr(3))), 1};
}

// Values are carried as long double (exact for every type here).
using LD = long double;

void Set(const Tensor& t, int64_t i, LD v) {
  DType d = t.dtype();
  void* p = t.raw_data();
  if (d.code == kDLFloat && d.bits == 16) static_cast<_Float16*>(p)[i] = static_cast<_Float16>(static_cast<float>(v));
  else if (d.code == kDLFloat && d.bits == 32) static_cast<float*>(p)[i] = static_cast<float>(v);
  else if (d.code == kDLFloat) static_cast<double*>(p)[i] = static_cast<double>(v);
  else if (d.bits == 1) static_cast<uint8_t*>(p)[i] = v != 0;
  else if (d.code == kDLUInt && d.bits == 8) static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
  else if (d.code == kDLUInt) static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(static_cast<int64_t>(v));
  else if (d.bits == 8) static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v));
  else if (d.bits == 32) static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v));
  else static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
}

LD Get(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  const void* p = t.raw_data();
  if (d.code == kDLFloat && d.bits == 16) return static_cast<float>(static_cast<const _Float16*>(p)[i]);
  if (d.code == kDLFloat && d.bits == 32) return static_cast<const float*>(p)[i];
  if (d.code == kDLFloat) return static_cast<const double*>(p)[i];
  if (d.bits == 1) return static_cast<const uint8_t*>(p)[i];
  if (d.code == kDLUInt && d.bits == 8) return static_cast<const uint8_t*>(p)[i];
  if (d.code == kDLUInt) return static_cast<const uint32_t*>(p)[i];
  if (d.bits == 8) return static_cast<const int8_t*>(p)[i];
  if (d.bits == 32) return static_cast<const int32_t*>(p)[i];
  return static_cast<LD>(static_cast<const int64_t*>(p)[i]);
}

// What a value of `from` becomes in `to` (the contract of CastValue).
LD RefCast(LD v, DType from, DType to) {
  if (to.bits == 1) return (v != 0 || std::isnan(v)) ? 1 : 0;
  if (to.code == kDLFloat) {
    if (to.bits == 16) return static_cast<float>(static_cast<_Float16>(static_cast<float>(v)));
    if (to.bits == 32) {
      // int64 -> float32 rounds once (no double intermediate).
      if (from.code == kDLInt && from.bits == 64) return static_cast<float>(static_cast<int64_t>(v));
      return static_cast<float>(v);
    }
    return static_cast<double>(v);
  }
  if (from.code != kDLFloat) {  // int -> int: wrap
    int64_t w = static_cast<int64_t>(v);
    if (to.code == kDLUInt) return to.bits == 8 ? static_cast<uint8_t>(w) : static_cast<uint32_t>(w);
    return to.bits == 8 ? static_cast<int8_t>(w) : to.bits == 32 ? static_cast<int32_t>(w) : w;
  }
  // float -> int: NaN -> 0; saturate to int32 (int64 for 64-bit and uint32), then wrap.
  if (std::isnan(v)) return 0;
  LD t = std::trunc(v);
  bool wide = to.bits == 64 || (to.code == kDLUInt && to.bits == 32);
  LD lo = wide ? -9223372036854775808.0L : -2147483648.0L;
  LD hi = wide ? 9223372036854775807.0L : 2147483647.0L;
  int64_t s = t <= lo ? static_cast<int64_t>(lo) : t >= hi ? static_cast<int64_t>(hi) : static_cast<int64_t>(t);
  return RefCast(static_cast<LD>(s), DType::Int64(), to);
}

std::vector<LD> Inputs(DType d) {
  if (d.bits == 1) return {0, 1, 1, 0};
  if (d.code == kDLFloat) {
    const LD inf = INFINITY;
    std::vector<LD> v = {0, -0.0, 0.49, -0.49, 1.5, -1.5, 2.7, -2.7, 100.9, -100.9, 200, -200, 255.9, 300,
                         65504, -65504, 3e9, -3e9, 1e10, -1e10, inf, -inf, NAN};
    if (d.bits == 16) v = {0, -0.0, 0.49, -0.49, 1.5, -1.5, 2.7, -2.7, 100.9, -100.9, 200, -200, 255.9, 300, 65504, -65504, inf, -inf, NAN};
    // Make each exactly representable in the source type.
    for (auto& x : v) x = RefCast(x, DType::Float64(), d);
    return v;
  }
  std::vector<LD> v = {0, 1, -1, 7, -7, 100, -100, 127, -128, 200, 255, 256, 1000, -1000, 2147483647.0L,
                       -2147483648.0L, 4294967295.0L, 1099511627776.0L, -1099511627776.0L, 9007199254740993.0L};
  for (auto& x : v) x = RefCast(x, DType::Int64(), d);  // wrap into the type
  return v;
}

bool Same(LD a, LD b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

TEST(CodegenTypesTest, CastBetweenEveryPairOfTypes) {
  std::vector<ElementwiseKernel> ks;
  for (std::string from : kTypes)
    for (std::string to : kTypes)
      if (from != to) ks.push_back({"cast_" + from + "_" + to, "T.Cast(\"" + to + "\", A[i])", from, to});
  auto lib = BuildText(ElementwiseModule(ks));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  for (const auto& k : ks) {
    DType from = Parse(k.in_dtype), to = Parse(k.out_dtype);
    std::vector<LD> in = Inputs(from);
    int64_t n = static_cast<int64_t>(in.size());
    Tensor a = MakeTensor({n}, from), c = MakeTensor({n}, to);
    for (int64_t i = 0; i < n; ++i) Set(a, i, in[i]);
    std::string err;
    ASSERT_EQ(RunKernel(**lib, k.name, {a, c}, &err), 0) << err;
    for (int64_t i = 0; i < n; ++i) {
      LD want = RefCast(in[i], from, to);
      EXPECT_TRUE(Same(Get(c, i), want)) << k.name << "(" << static_cast<double>(in[i]) << ") = "
                                         << static_cast<double>(Get(c, i)) << ", want " << static_cast<double>(want);
    }
  }
}

// floordiv / floormod / truncdiv with the divide-by-0 and -1 guards.
LD RefIntOp(const std::string& op, int64_t a, int64_t b, DType t) {
  auto wrap = [&](int64_t v) { return RefCast(static_cast<LD>(v), DType::Int64(), t); };
  if (b == 0) return 0;
  if (b == -1 && t.code == kDLInt) return op == "mod" ? 0 : wrap(-a);
  int64_t q = a / b, r = a % b;
  if (op == "tdiv") return wrap(q);
  bool adjust = r != 0 && ((r < 0) != (b < 0));
  if (op == "div") return wrap(adjust ? q - 1 : q);
  return wrap(adjust ? r + b : r);
}

TEST(CodegenTypesTest, IntegerDivisionMinMaxAndComparisons) {
  std::vector<ElementwiseKernel> ks;
  for (std::string t : {"int8", "uint8", "int32", "int64", "uint32"}) {
    ks.push_back({"div_" + t, "A[i] // B[i]", t, t});
    ks.push_back({"mod_" + t, "A[i] % B[i]", t, t});
    ks.push_back({"tdiv_" + t, "T.truncdiv(A[i], B[i])", t, t});
    ks.push_back({"max_" + t, "T.max(A[i], B[i])", t, t});
    ks.push_back({"min_" + t, "T.min(A[i], B[i])", t, t});
    ks.push_back({"lt_" + t, "A[i] < B[i]", t, "bool"});
    ks.push_back({"ge_" + t, "A[i] >= B[i]", t, "bool"});
    ks.push_back({"abs_" + t, "T.abs(A[i])", t, t});
  }
  auto lib = BuildText(ElementwiseModule(ks));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  std::mt19937 rng(7);
  for (const auto& k : ks) {
    DType t = Parse(k.in_dtype), out = Parse(k.out_dtype);
    std::vector<LD> base = Inputs(t);
    std::vector<LD> av, bv;
    for (LD x : base)
      for (LD y : base) {
        av.push_back(x);
        bv.push_back(y);
      }
    int64_t n = static_cast<int64_t>(av.size());
    Tensor a = MakeTensor({n}, t), b = MakeTensor({n}, t), c = MakeTensor({n}, out);
    for (int64_t i = 0; i < n; ++i) {
      Set(a, i, av[i]);
      Set(b, i, bv[i]);
    }
    bool unary = k.name.compare(0, 3, "abs") == 0;
    std::vector<Tensor> args = unary ? std::vector<Tensor>{a, c} : std::vector<Tensor>{a, b, c};
    std::string err;
    ASSERT_EQ(RunKernel(**lib, k.name, args, &err), 0) << err;
    std::string op = k.name.substr(0, k.name.find('_'));
    for (int64_t i = 0; i < n; ++i) {
      int64_t x = static_cast<int64_t>(av[i]), y = static_cast<int64_t>(bv[i]);
      LD want = op == "max"   ? std::max(x, y)
                : op == "min" ? std::min(x, y)
                : op == "lt"  ? (x < y)
                : op == "ge"  ? (x >= y)
                : op == "abs" ? RefCast(static_cast<LD>(x < 0 ? -x : x), DType::Int64(), t)
                              : RefIntOp(op, x, y, t);
      ASSERT_EQ(Get(c, i), want) << k.name << "(" << x << ", " << y << ")";
    }
  }
}

// The kernel names fmax, fmin, fdiv, isnan, isinf are also libc/libm symbols:
// this test fails if the library binds its kernel table to the process's
// functions of the same name (it is linked with -Bsymbolic).
TEST(CodegenTypesTest, FloatMinMaxComparisonsAndLogic) {
  std::vector<ElementwiseKernel> ks = {
      {"fmax", "T.max(A[i], B[i])", "float32", "float32"},
      {"fmin", "T.min(A[i], B[i])", "float32", "float32"},
      // Against a constant (ReLU, clip): one vmaxps / vminps, NaN still out.
      {"fmaxk", "T.max(A[i], T.float32(0))", "float32", "float32"},
      {"fmink", "T.min(T.float32(6), A[i])", "float32", "float32"},
      {"flt", "A[i] < B[i]", "float32", "bool"},
      {"fle", "A[i] <= B[i]", "float32", "bool"},
      {"feq", "A[i] == B[i]", "float32", "bool"},
      {"fne", "A[i] != B[i]", "float32", "bool"},
      {"fand", "A[i] < B[i] and B[i] > T.float32(0)", "float32", "bool"},
      {"f_or", "A[i] < B[i] or not B[i] > T.float32(0)", "float32", "bool"},
      {"fsel", "T.Select(A[i] > B[i], A[i] - B[i], B[i] * T.float32(2))", "float32", "float32"},
      {"fdiv", "A[i] / B[i]", "float64", "float64"},
      {"ffloordiv", "A[i] // B[i]", "float64", "float64"},
      {"ffloormod", "A[i] % B[i]", "float64", "float64"},
      {"isnan", "T.call_intrin(\"bool\", \"tir.isnan\", A[i])", "float32", "bool"},
      {"isinf", "T.call_intrin(\"bool\", \"tir.isinf\", A[i])", "float32", "bool"},
      {"isfinite", "T.call_intrin(\"bool\", \"isfinite\", A[i])", "float32", "bool"},
      {"isnan16", "T.call_intrin(\"bool\", \"tir.isnan\", A[i])", "float16", "bool"},
      {"band", "A[i] and B[i]", "bool", "bool"},
      {"bor", "A[i] or not B[i]", "bool", "bool"},
      {"beq", "A[i] == B[i]", "bool", "bool"},
  };
  auto lib = BuildText(ElementwiseModule(ks));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  std::vector<LD> base = {0, -0.0, 1, -1, 2.5, -2.5, 7, -7, 1e30, INFINITY, -INFINITY, NAN};
  for (const auto& k : ks) {
    DType t = Parse(k.in_dtype), out = Parse(k.out_dtype);
    std::vector<LD> av, bv;
    std::vector<LD> vals = t.bits == 1 ? std::vector<LD>{0, 1} : base;
    for (LD x : vals)
      for (LD y : vals) {
        av.push_back(RefCast(x, DType::Float64(), t));
        bv.push_back(RefCast(y, DType::Float64(), t));
      }
    int64_t n = static_cast<int64_t>(av.size());
    Tensor a = MakeTensor({n}, t), b = MakeTensor({n}, t), c = MakeTensor({n}, out);
    for (int64_t i = 0; i < n; ++i) {
      Set(a, i, av[i]);
      Set(b, i, bv[i]);
    }
    bool unary = k.expr.find("B[i]") == std::string::npos;
    std::string err;
    ASSERT_EQ(RunKernel(**lib, k.name, unary ? std::vector<Tensor>{a, c} : std::vector<Tensor>{a, b, c}, &err), 0)
        << err;
    for (int64_t i = 0; i < n; ++i) {
      LD x = av[i], y = bv[i];
      float xf = static_cast<float>(x), yf = static_cast<float>(y);
      LD want;
      const std::string& o = k.name;
      if (o == "fmax") want = (std::isnan(x) || std::isnan(y)) ? NAN : (xf > yf ? xf : yf);
      else if (o == "fmin") want = (std::isnan(x) || std::isnan(y)) ? NAN : (xf < yf ? xf : yf);
      else if (o == "fmaxk") want = std::isnan(x) ? NAN : (xf > 0 ? xf : 0.0f);
      else if (o == "fmink") want = std::isnan(x) ? NAN : (xf < 6 ? xf : 6.0f);
      else if (o == "flt") want = xf < yf;
      else if (o == "fle") want = xf <= yf;
      else if (o == "feq") want = xf == yf;
      else if (o == "fne") want = xf != yf;
      else if (o == "fand") want = xf < yf && yf > 0;
      else if (o == "f_or") want = xf < yf || !(yf > 0);
      else if (o == "fsel") want = xf > yf ? xf - yf : yf * 2;
      else if (o == "fdiv") want = static_cast<double>(x) / static_cast<double>(y);
      else if (o == "ffloordiv") want = std::floor(static_cast<double>(x) / static_cast<double>(y));
      else if (o == "ffloormod") {
        double q = std::floor(static_cast<double>(x) / static_cast<double>(y));
        want = static_cast<double>(x) - q * static_cast<double>(y);
      } else if (o == "isnan" || o == "isnan16") want = std::isnan(x);
      else if (o == "isinf") want = std::isinf(x);
      else if (o == "isfinite") want = std::isfinite(x);
      else if (o == "band") want = x != 0 && y != 0;
      else if (o == "bor") want = x != 0 || y == 0;
      else want = x == y;  // beq
      LD got = Get(c, i);
      // max/min of +-0 may pick either zero.
      bool zeros = ((o == "fmax" || o == "fmin") && x == 0 && y == 0) || (o == "fmaxk" && x == 0);
      EXPECT_TRUE(zeros ? got == 0 : Same(got, want))
          << o << "(" << static_cast<double>(x) << ", " << static_cast<double>(y) << ") = " << static_cast<double>(got)
          << ", want " << static_cast<double>(want);
    }
  }
}

TEST(CodegenTypesTest, Float16ComputesInFloat32AndRoundsOnce) {
  std::vector<ElementwiseKernel> ks = {
      {"h_exp", "T.exp(A[i])", "float16", "float16"},
      {"h_tanh", "T.tanh(A[i])", "float16", "float16"},
      {"h_sqrt", "T.sqrt(A[i])", "float16", "float16"},
      {"h_round", "T.round(A[i])", "float16", "float16"},
      {"h_fma", "A[i] * B[i] + A[i]", "float16", "float16"},
      {"h_max", "T.max(A[i], B[i])", "float16", "float16"},
  };
  auto lib = BuildText(ElementwiseModule(ks));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-8, 8);
  const int64_t n = 4099;
  DType h{kDLFloat, 16, 1};
  Tensor a = MakeTensor({n}, h), b = MakeTensor({n}, h), c = MakeTensor({n}, h);
  for (int64_t i = 0; i < n; ++i) {
    Set(a, i, d(rng));
    Set(b, i, d(rng));
  }
  for (const auto& k : ks) {
    bool binary = k.expr.find("B[i]") != std::string::npos;
    ASSERT_EQ(RunKernel(**lib, k.name, binary ? std::vector<Tensor>{a, b, c} : std::vector<Tensor>{a, c}), 0);
    for (int64_t i = 0; i < n; ++i) {
      float x = static_cast<float>(Get(a, i)), y = static_cast<float>(Get(b, i));
      float want = k.name == "h_exp"    ? std::exp(x)
                   : k.name == "h_tanh" ? std::tanh(x)
                   : k.name == "h_sqrt" ? std::sqrt(x)
                   : k.name == "h_round" ? std::nearbyint(x)
                   : k.name == "h_max"  ? std::max(x, y)
                                        : static_cast<float>(static_cast<_Float16>(x * y)) + x;
      float w16 = static_cast<float>(static_cast<_Float16>(want));
      float got = static_cast<float>(Get(c, i));
      if (std::isnan(w16)) {
        EXPECT_TRUE(std::isnan(got)) << k.name << "(" << x << ")";
        continue;
      }
      // One float16 ULP (2^-10 relative) for the math; exact for the rest.
      float tol = (k.name == "h_exp" || k.name == "h_tanh") ? std::fabs(w16) * 0.0009765625f : 0.0f;
      EXPECT_LE(std::fabs(got - w16), tol) << k.name << "(" << x << ", " << y << ")";
    }
  }
}

TEST(CodegenTypesTest, IfThenElseEvaluatesOnlyTheTakenSide) {
  // The untaken side reads 4 GB past the buffer: evaluating it would crash.
  std::vector<ElementwiseKernel> ks = {
      {"ite", "T.if_then_else(i < T.int64(1000000), A[i] * T.float32(2), A[i + T.int64(1000000000)])", "float32",
       "float32"}};
  auto lib = BuildText(ElementwiseModule(ks));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  const int64_t n = 1003;
  Tensor a = MakeTensor({n}), c = MakeTensor({n});
  FillRandom(a, 9);
  ASSERT_EQ(RunKernel(**lib, "ite", {a, c}), 0);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] * 2) << i;
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
