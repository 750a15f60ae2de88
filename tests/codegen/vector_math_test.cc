// Accuracy of the inline vector math (compiler/codegen/vector_math.h) over the
// ranges networks use and over every class of special value, measured in ULP
// against libm in a wider type (double for float32, long double for float64).
// The kernels are TVMScript text with T.vectorized loops, so the code that
// runs is the vectorized code (the IR test checks that it is);
// VectorMathRoutesTest at the end runs the same sweeps through scalar code
// and explicit 3- to 64-lane vectors as well.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "compiler/text/text.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

using LD = long double;

// |got - ref| in units of the last place of `ref` rounded to T (denormal
// spacing below the normal range). Special values must match exactly.
template <typename T>
double UlpError(T got, LD ref) {
  T rt = static_cast<T>(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(rt) || std::isinf(got)) return got == rt ? 0 : INFINITY;
  int e = 0;
  std::frexp(static_cast<double>(ref), &e);
  const int digits = std::numeric_limits<T>::digits;          // 24 / 53
  const int min_exp = std::numeric_limits<T>::min_exponent;   // -125 / -1021
  LD ulp = std::ldexp(static_cast<LD>(1), std::max(e - digits, min_exp - digits));
  return static_cast<double>(std::fabs(static_cast<LD>(got) - ref) / ulp);
}

template <typename T>
DType DTypeOf() {
  return sizeof(T) == 4 ? DType::Float32() : DType::Float64();
}

// Every math kernel in one library, built once.
class VectorMathTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<ElementwiseKernel> ks;
    for (std::string dt : {"float32", "float64"}) {
      std::string s = dt == "float32" ? "32" : "64";
      for (std::string f : {"exp", "exp2", "log", "log2", "tanh", "sigmoid", "erf", "sin", "cos", "sqrt", "rsqrt"}) {
        ks.push_back({f + s, "T." + f + "(A[i])", dt, dt});
      }
      ks.push_back({"pow" + s, "T.pow(A[i], B[i])", dt, dt});
      // softmax's form (op_softmax.cc): the emitter's exp of a non-positive operand.
      ks.push_back({"expnp" + s, "T.exp(T.min(A[i], T." + dt + "(0)))", dt, dt});
    }
    auto lib = BuildText(ElementwiseModule(ks));
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = lib->release();
  }
  static void TearDownTestSuite() {
    delete lib_;
    lib_ = nullptr;
  }

  template <typename T>
  std::vector<T> Run(const std::string& name, const std::vector<T>& a, const std::vector<T>* b = nullptr) {
    int64_t n = static_cast<int64_t>(a.size());
    Tensor ta = MakeTensor({n}, DTypeOf<T>()), tc = MakeTensor({n}, DTypeOf<T>());
    std::memcpy(ta.raw_data(), a.data(), n * sizeof(T));
    std::vector<Tensor> args{ta};
    if (b != nullptr) {
      Tensor tb = MakeTensor({n}, DTypeOf<T>());
      std::memcpy(tb.raw_data(), b->data(), n * sizeof(T));
      args.push_back(tb);
    }
    args.push_back(tc);
    std::string err;
    EXPECT_EQ(RunKernel(*lib_, name, args, &err), 0) << err;
    return std::vector<T>(tc.data<T>(), tc.data<T>() + n);
  }

  // Max ULP error of kernel `name` over `xs` against `ref`; prints the worst input.
  template <typename T>
  double MaxUlp(const std::string& name, const std::vector<T>& xs, const std::function<LD(LD)>& ref) {
    std::vector<T> got = Run<T>(name, xs);
    double worst = 0;
    T worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      double e = UlpError<T>(got[i], ref(static_cast<LD>(xs[i])));
      if (!(e <= worst)) {
        worst = e;
        worst_x = xs[i];
      }
    }
    std::printf("  %-10s max error %.3f ULP at x = %.9g\n", name.c_str(), worst, static_cast<double>(worst_x));
    return worst;
  }

  static LoadedLibrary* lib_;
};
LoadedLibrary* VectorMathTest::lib_ = nullptr;

// `n` evenly spaced points of [lo, hi] plus `n` uniform random ones.
template <typename T>
std::vector<T> Sweep(double lo, double hi, int n, uint32_t seed) {
  std::vector<T> v;
  for (int i = 0; i <= n; ++i) v.push_back(static_cast<T>(lo + (hi - lo) * i / n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int i = 0; i < n; ++i) v.push_back(static_cast<T>(d(rng)));
  return v;
}

// Random finite positive values with uniformly random bit patterns: every
// binade (denormals included) equally often.
template <typename T>
std::vector<T> AllPositive(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v;
  while (static_cast<int>(v.size()) < n) {
    uint64_t bits = rng();
    T x;
    if (sizeof(T) == 4) {
      uint32_t b32 = static_cast<uint32_t>(bits) & 0x7fffffffu;
      std::memcpy(&x, &b32, 4);
    } else {
      bits &= 0x7fffffffffffffffull;
      std::memcpy(&x, &bits, 8);
    }
    if (std::isfinite(x) && x > 0) v.push_back(x);
  }
  return v;
}

template <typename T>
std::vector<T> Signed(std::vector<T> v) {
  size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

template <typename T>
std::vector<T> Concat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

LD SigmoidRef(LD x) { return 1.0L / (1.0L + std::exp(-x)); }

// ------------------------------------------------------------ float32

TEST_F(VectorMathTest, Float32WithinStatedUlp) {
  using T = float;
  const int n = 100000;
  EXPECT_LE(MaxUlp<T>("exp32", Sweep<T>(-88, 88, n, 1), [](LD x) { return std::exp(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("exp32", Sweep<T>(-103.9, -87, n, 2), [](LD x) { return std::exp(x); }), 1.0);  // denormals
  EXPECT_LE(MaxUlp<T>("exp232", Sweep<T>(-149, 127.9, n, 3), [](LD x) { return std::exp2(x); }), 1.0);
  auto exp_np = [](LD x) { return std::exp(std::min(x, LD(0))); };
  EXPECT_LE(MaxUlp<T>("expnp32", Sweep<T>(-88, 10, n, 31), exp_np), 1.0);
  EXPECT_LE(MaxUlp<T>("expnp32", Sweep<T>(-103.9, -87, n, 32), exp_np), 1.0);  // denormals
  EXPECT_LE(MaxUlp<T>("log32", AllPositive<T>(2 * n, 4), [](LD x) { return std::log(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("log32", Sweep<T>(0.5, 2, n, 5), [](LD x) { return std::log(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("log232", AllPositive<T>(2 * n, 6), [](LD x) { return std::log2(x); }), 2.0);
  EXPECT_LE(MaxUlp<T>("log232", Sweep<T>(0.5, 2, n, 7), [](LD x) { return std::log2(x); }), 2.0);
  auto wide = Concat(Sweep<T>(-20, 20, n, 8), Signed(AllPositive<T>(n, 9)));
  EXPECT_LE(MaxUlp<T>("tanh32", wide, [](LD x) { return std::tanh(x); }), 3.0);
  EXPECT_LE(MaxUlp<T>("sigmoid32", wide, SigmoidRef), 2.5);
  // sigmoid32's own exp(-|x|) (one scale 2^(k+64), denormal results from -87.3 down).
  EXPECT_LE(MaxUlp<T>("sigmoid32", Sweep<T>(-104, 104, 4 * n, 16), SigmoidRef), 2.5);
  EXPECT_LE(MaxUlp<T>("erf32", wide, [](LD x) { return std::erf(x); }), 2.0);
  EXPECT_LE(MaxUlp<T>("sin32", Sweep<T>(-1e5, 1e5, n, 10), [](LD x) { return std::sin(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("cos32", Sweep<T>(-1e5, 1e5, n, 11), [](LD x) { return std::cos(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("sin32", Sweep<T>(-10, 10, n, 12), [](LD x) { return std::sin(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("sqrt32", AllPositive<T>(n, 13), [](LD x) { return std::sqrt(x); }), 0.5);
  EXPECT_LE(MaxUlp<T>("rsqrt32", AllPositive<T>(n, 14), [](LD x) { return 1 / std::sqrt(x); }), 1.5);
}

TEST_F(VectorMathTest, Float32Pow) {
  using T = float;
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> lx(-7, 7), dy(-10, 10);
  std::vector<T> x, y;
  for (int i = 0; i < 100000; ++i) {
    double xv = std::exp(lx(rng)), yv = dy(rng);
    if (std::fabs(yv * std::log(xv)) > 80) continue;
    x.push_back(static_cast<T>(xv));
    y.push_back(static_cast<T>(yv));
  }
  // Negative bases with integer exponents.
  for (int i = -20; i <= 20; ++i) {
    x.push_back(-1.5f);
    y.push_back(static_cast<T>(i));
  }
  std::vector<T> got = Run<T>("pow32", x, &y);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, UlpError<T>(got[i], std::pow(static_cast<LD>(x[i]), static_cast<LD>(y[i]))));
  std::printf("  pow32 max error %.3f ULP\n", worst);
  EXPECT_LE(worst, 1.0);
}

// ------------------------------------------------------------ float64

TEST_F(VectorMathTest, Float64WithinStatedUlp) {
  using T = double;
  const int n = 100000;
  EXPECT_LE(MaxUlp<T>("exp64", Sweep<T>(-708, 709, n, 21), [](LD x) { return std::exp(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("exp64", Sweep<T>(-745, -708, n, 22), [](LD x) { return std::exp(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("exp264", Sweep<T>(-1074, 1023.9, n, 23), [](LD x) { return std::exp2(x); }), 1.0);
  EXPECT_LE(MaxUlp<T>("expnp64", Sweep<T>(-745, 10, n, 33), [](LD x) { return std::exp(std::min(x, LD(0))); }), 1.0);
  EXPECT_LE(MaxUlp<T>("log64", AllPositive<T>(2 * n, 24), [](LD x) { return std::log(x); }), 1.5);
  EXPECT_LE(MaxUlp<T>("log64", Sweep<T>(0.5, 2, n, 25), [](LD x) { return std::log(x); }), 1.5);
  EXPECT_LE(MaxUlp<T>("log264", AllPositive<T>(2 * n, 26), [](LD x) { return std::log2(x); }), 1.5);
  // Near 1 the reduction leaves more: 1.56 ULP at 1.40945 (random doubles rarely land there).
  EXPECT_LE(MaxUlp<T>("log264", Sweep<T>(0.5, 2, n, 29), [](LD x) { return std::log2(x); }), 2.0);
  auto wide = Concat(Sweep<T>(-40, 40, n, 27), Signed(AllPositive<T>(n, 28)));
  EXPECT_LE(MaxUlp<T>("tanh64", wide, [](LD x) { return std::tanh(x); }), 3.0);
  EXPECT_LE(MaxUlp<T>("sigmoid64", wide, SigmoidRef), 2.5);
  EXPECT_LE(MaxUlp<T>("erf64", wide, [](LD x) { return std::erf(x); }), 2.0);
  EXPECT_LE(MaxUlp<T>("sin64", Sweep<T>(-1e5, 1e5, n, 29), [](LD x) { return std::sin(x); }), 2.5);
  EXPECT_LE(MaxUlp<T>("cos64", Sweep<T>(-10, 10, n, 30), [](LD x) { return std::cos(x); }), 2.0);
}

// ------------------------------------------------------------ special values

template <typename T>
void ExpectSame(T got, T want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got;
  } else {
    EXPECT_EQ(got, want) << what;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << ": sign of " << got;
  }
}

template <typename T>
void CheckSpecials(VectorMathTest* t, const std::string& suffix,
                   const std::function<std::vector<T>(const std::string&, const std::vector<T>&)>& run) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max();
  std::vector<T> xs = {0, -0.0, inf, -inf, nan, big, -big, std::numeric_limits<T>::denorm_min()};
  struct Case {
    std::string f;
    std::vector<T> want;  // per xs
  };
  const T tiny = std::numeric_limits<T>::denorm_min();
  std::vector<Case> cases = {
      {"exp", {1, 1, inf, 0, nan, inf, 0, 1}},
      {"exp2", {1, 1, inf, 0, nan, inf, 0, 1}},
      {"expnp", {1, 1, 1, 0, nan, 1, 0, 1}},
      {"log", {-inf, -inf, inf, nan, nan, static_cast<T>(std::log(static_cast<LD>(big))), nan,
               static_cast<T>(std::log(static_cast<LD>(tiny)))}},
      {"tanh", {0, -0.0, 1, -1, nan, 1, -1, tiny}},
      {"sigmoid", {0.5, 0.5, 1, 0, nan, 1, 0, 0.5}},
      {"erf", {0, -0.0, 1, -1, nan, 1, -1, static_cast<T>(std::erf(static_cast<LD>(tiny)))}},
      {"sin", {0, -0.0, nan, nan, nan}},
      {"cos", {1, 1, nan, nan, nan}},
  };
  for (const auto& c : cases) {
    std::vector<T> got = run(c.f + suffix, xs);
    for (size_t i = 0; i < c.want.size(); ++i) {
      ExpectSame<T>(got[i], c.want[i], c.f + suffix + "(" + std::to_string(xs[i]) + ")");
    }
  }
  (void)t;
}

TEST_F(VectorMathTest, SpecialValues) {
  CheckSpecials<float>(this, "32", [&](const std::string& n, const std::vector<float>& x) { return Run<float>(n, x); });
  CheckSpecials<double>(this, "64", [&](const std::string& n, const std::vector<double>& x) { return Run<double>(n, x); });
  // Saturation: exactly +-1 / 0 / 1 far out, and overflow/underflow of exp.
  std::vector<float> far = {9.5f, -9.5f, 30.0f, -30.0f, 89.0f, -104.0f, 88.72f};
  std::vector<float> t = Run<float>("tanh32", far);
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(t[1], -1.0f);
  std::vector<float> s = Run<float>("sigmoid32", far);
  EXPECT_EQ(s[2], 1.0f);
  EXPECT_GT(s[3], 0.0f);  // 9.4e-14, not flushed
  std::vector<float> e = Run<float>("exp32", far);
  EXPECT_EQ(e[4], INFINITY);
  EXPECT_EQ(e[5], 0.0f);
  EXPECT_TRUE(std::isfinite(e[6]));
  // sigmoid's negative side reaches the denormals.
  std::vector<float> d = Run<float>("sigmoid32", std::vector<float>{-100.0f});
  EXPECT_GT(d[0], 0.0f);
  EXPECT_LE(UlpError<float>(d[0], SigmoidRef(-100.0L)), 1.0);
}

TEST_F(VectorMathTest, TanhAroundItsArgumentCap) {
  // Tanh caps |x| at 10 (float) / 20 (double) before its exp, so that no
  // exp(-2|x|) is a denormal: the results there and beyond must still be
  // what they were: exactly +-1 from 9.5 / 20 on, within 3 ULP just below
  // (as everywhere); a cap set too low would show here.
  std::vector<float> xf = {8.5f, 9.0f, 9.5f, 9.99f, 10.0f, 10.5f, 44.0f, 47.0f, 51.0f, 60.0f, 1e30f};
  std::vector<float> neg = xf;
  for (float& v : neg) v = -v;
  xf.insert(xf.end(), neg.begin(), neg.end());
  std::vector<float> tf = Run<float>("tanh32", xf);
  for (size_t i = 0; i < xf.size(); ++i) {
    long double ref = std::tanh(static_cast<long double>(xf[i]));
    if (std::fabs(xf[i]) < 9.5f) {
      EXPECT_LE(UlpError<float>(tf[i], ref), 3.0) << "tanh32(" << xf[i] << ")";
    } else {
      EXPECT_EQ(tf[i], static_cast<float>(ref)) << "tanh32(" << xf[i] << ")";
    }
  }
  std::vector<double> xd = {18.5, 19.0, 19.5, 20.0, 21.0, 200.0, 360.0, 400.0, 1e300};
  std::vector<double> nd = xd;
  for (double& v : nd) v = -v;
  xd.insert(xd.end(), nd.begin(), nd.end());
  std::vector<double> td = Run<double>("tanh64", xd);
  for (size_t i = 0; i < xd.size(); ++i) {
    EXPECT_LE(UlpError<double>(td[i], std::tanh(static_cast<long double>(xd[i]))), 1.0) << "tanh64(" << xd[i] << ")";
    if (std::fabs(xd[i]) >= 20) EXPECT_EQ(std::fabs(td[i]), 1.0) << "tanh64(" << xd[i] << ")";
  }
}

TEST_F(VectorMathTest, PowFollowsC) {
  const float inf = INFINITY, nan = NAN;
  std::vector<float> x = {0.0f, -0.0f, -0.0f, 0.0f, 2.0f,  nan,  1.0f, -1.0f, -2.0f, -2.0f, -inf, -inf, 0.5f, 2.0f, -8.0f};
  std::vector<float> y = {2.0f, 3.0f,  -1.0f, -2.f, 0.0f,  0.0f, nan,  inf,   0.5f,  3.0f,  3.0f, 2.0f, -inf, inf,  1.0f / 3};
  std::vector<float> w = {0.0f, -0.0f, -inf,  inf,  1.0f,  1.0f, 1.0f, 1.0f,  nan,   -8.0f, -inf, inf,  inf,  inf,  nan};
  std::vector<float> got = Run<float>("pow32", x, &y);
  for (size_t i = 0; i < x.size(); ++i) {
    ExpectSame<float>(got[i], w[i], "pow(" + std::to_string(x[i]) + ", " + std::to_string(y[i]) + ")");
    ExpectSame<float>(got[i], std::pow(x[i], y[i]), "C pow agrees");
  }
}

// The optimized LLVM IR of one vectorized float32 elementwise kernel
// computing `expr` of A[i].
Result<std::string> OptimizedIR(const std::string& name, const std::string& expr) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod,
                        text::ParseModule(ElementwiseModule({{name, expr, "float32", "float32"}}), "<t>"));
  std::vector<ir::PrimFunc> funcs;
  for (const auto& e : mod.entries)
    if (e.prim) funcs.push_back(e.prim);
  return codegen::EmitLLVMIR(Prepare(funcs, 1), {});
}

// exp(min(x, 0)) (softmax's form) takes the one-step scale: one shift of
// the rounded exponent into place where exp takes two.
TEST(VectorMathIrTest, ExpOfNonPositiveScalesOnce) {
  auto shifts = [](const std::string& expr) {
    Result<std::string> ir = OptimizedIR("k", expr);
    EXPECT_TRUE(ir.ok()) << ir.status().ToString();
    if (!ir.ok()) return 0;
    int n = 0;
    for (size_t pos = ir->find("= shl <"); pos != std::string::npos; pos = ir->find("= shl <", pos + 1)) ++n;
    return n;
  };
  int general = shifts("T.exp(A[i])");
  int non_positive = shifts("T.exp(T.min(A[i], T.float32(0)))");
  EXPECT_GT(general, 0);
  EXPECT_LT(non_positive, general);
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln

namespace kiln {
namespace codegen_test {
namespace {

// The optimized IR of vectorized exp/log/tanh/erf/sigmoid loops holds vector
// math and declares nothing but LLVM intrinsics (no expf, no libm at all).
TEST(VectorMathIrTest, VectorizedLoopsHoldVectorMathAndNoLibmCalls) {
  for (std::string f : {"exp", "log", "tanh", "erf", "sigmoid"}) {
    Result<std::string> ir = OptimizedIR("k_" + f, "T." + f + "(A[i])");
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
      // 512-bit vectors, or 256-bit where LLVM's tuning for the CPU prefers them.
      EXPECT_TRUE(ir->find("<16 x float>") != std::string::npos || ir->find("<8 x float>") != std::string::npos) << f;
    } else if (__builtin_cpu_supports("avx2")) {
      EXPECT_NE(ir->find("<8 x float>"), std::string::npos) << f;
    }
#endif
    EXPECT_NE(ir->find("x float>"), std::string::npos) << f << ": no vector code";
    std::printf("  %s: %s\n", f.c_str(), ir->find("<16 x float>") != std::string::npos ? "<16 x float>" : "<8 x float> or narrower");
    for (const char* libm : {"@expf", "@logf", "@tanhf", "@erff", "@exp(", "@log("}) {
      EXPECT_EQ(ir->find(libm), std::string::npos) << f << " calls " << libm;
    }
    for (size_t pos = ir->find("\ndeclare"); pos != std::string::npos; pos = ir->find("\ndeclare", pos + 1)) {
      std::string line = ir->substr(pos + 1, ir->find('\n', pos + 1) - pos - 1);
      EXPECT_NE(line.find("@llvm."), std::string::npos) << f << ": " << line;
    }
  }
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln

// ------------------------------------------------------------ every route to the math
//
// The emitter reaches the math helpers three ways, each of which builds the
// expansion at its own type: scalar code (a loop LLVM does not vectorize,
// and every vectorized loop's remainder), a loop LLVM vectorizes (the tests
// above: a T.vectorized loop over a run-time extent, tail-folded at 16
// lanes), and explicit vectors of the loop's constant width (vector_loop.h:
// vectorized loops inside unrolled ones, the depthwise and row-wise
// kernels), which on targets with masked vectors compute 3, 5-7 and 9-15
// lanes at 4, 8 or 16 with masked loads and stores. A wrong expansion on one
// of them (say an estimate without its Newton step on the vector path) went
// unnoticed by the tests above; here every route runs the same sweeps
// against the same bounds, on the host and on an AVX2 target without masks.

namespace kiln {
namespace codegen_test {
namespace {

struct MathCase {
  std::string f;     // T.<f> of the kernel; "expnp" is exp(min(x, 0))
  double bound;      // ULP, as Float32WithinStatedUlp / Float64WithinStatedUlp
  std::function<LD(LD)> ref;
};

template <typename T>
std::string MathExpr(const std::string& f, const std::string& load) {
  std::string dt = sizeof(T) == 4 ? "float32" : "float64";
  if (f == "expnp") return "T.exp(T.min(" + load + ", T." + dt + "(0)))";
  return "T." + f + "(" + load + ")";
}

// The sweeps of Float32WithinStatedUlp / Float64WithinStatedUlp that `f`
// takes (a smaller n: every route runs them), plus the special values.
template <typename T>
std::vector<std::vector<T>> Inputs(const std::string& f, int n) {
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max();
  std::vector<T> special = {0, -0.0, inf, -inf, std::numeric_limits<T>::quiet_NaN(), big, -big,
                            std::numeric_limits<T>::denorm_min()};
  const bool f32 = sizeof(T) == 4;
  std::vector<std::vector<T>> v;
  if (f == "exp") {
    v = {f32 ? Sweep<T>(-88, 88, n, 1) : Sweep<T>(-708, 709, n, 21),
         f32 ? Sweep<T>(-103.9, -87, n, 2) : Sweep<T>(-745, -708, n, 22)};
  } else if (f == "exp2") {
    v = {f32 ? Sweep<T>(-149, 127.9, n, 3) : Sweep<T>(-1074, 1023.9, n, 23)};
  } else if (f == "expnp") {
    v = {f32 ? Sweep<T>(-88, 10, n, 31) : Sweep<T>(-745, 10, n, 33), Sweep<T>(-103.9, -87, n, 32)};
  } else if (f == "log" || f == "log2") {
    v = {AllPositive<T>(2 * n, 4), Sweep<T>(0.5, 2, n, 5)};
  } else if (f == "sin" || f == "cos") {
    v = {Sweep<T>(-1e5, 1e5, n, 10), Sweep<T>(-10, 10, n, 12)};
  } else if (f == "sqrt" || f == "rsqrt") {
    v = {AllPositive<T>(n, 13)};
  } else {  // tanh, sigmoid, erf
    v = {Concat(f32 ? Sweep<T>(-20, 20, n, 8) : Sweep<T>(-40, 40, n, 27), Signed(AllPositive<T>(n, 9)))};
    if (f == "sigmoid") v.push_back(Sweep<T>(-104, 104, 2 * n, 16));
  }
  v.push_back(special);
  return v;
}

template <typename T>
std::vector<MathCase> Cases(bool explicit_vectors) {
  const bool f32 = sizeof(T) == 4;
  auto sig = [](LD x) { return SigmoidRef(x); };
  std::vector<MathCase> c = {
      {"exp", 1.0, [](LD x) { return std::exp(x); }},
      {"expnp", 1.0, [](LD x) { return std::exp(std::min(x, LD(0))); }},
      {"tanh", 3.0, [](LD x) { return std::tanh(x); }},
      {"sigmoid", 2.5, sig},
      {"erf", 2.0, [](LD x) { return std::erf(x); }},
  };
  if (explicit_vectors) return c;  // what vector_loop.cc's EmitsAsVectors admits
  c.push_back({"exp2", 1.0, [](LD x) { return std::exp2(x); }});
  c.push_back({"log", f32 ? 1.0 : 1.5, [](LD x) { return std::log(x); }});
  c.push_back({"log2", 2.0, [](LD x) { return std::log2(x); }});
  c.push_back({"sin", f32 ? 1.0 : 2.5, [](LD x) { return std::sin(x); }});
  c.push_back({"cos", f32 ? 1.0 : 2.5, [](LD x) { return std::cos(x); }});
  if (f32) {
    c.push_back({"sqrt", 0.5, [](LD x) { return std::sqrt(x); }});
    c.push_back({"rsqrt", 1.5, [](LD x) { return 1 / std::sqrt(x); }});
  }
  return c;
}

// Scalar route: a T.serial loop is vectorized by LLVM all the same, so the
// loop reads and writes every third element: a vectorized loop with such a
// gather is marked not to vectorize (kernel_emitter.cc's Loop), as real
// gathers are, and the remainders of LLVM's vector loops run this code too.
std::string ScalarKernel(const std::string& name, const std::string& expr, const std::string& dt) {
  return "    @T.prim_func\n    def " + name + "(a: T.handle, c: T.handle):\n        n = T.int64()\n" +
         "        A = T.match_buffer(a, (n, 3), \"" + dt + "\")\n        C = T.match_buffer(c, (n, 3), \"" + dt + "\")\n" +
         "        for i in T.vectorized(n):\n            C[i, 0] = " + expr + "\n";
}

// Explicit-vector route: rows of 2 x `lanes` floats, each half one
// T.vectorized(lanes) loop inside a T.unroll(2) (kernel_emitter.cc's For).
std::string ExplicitKernel(const std::string& name, const std::string& f, int lanes) {
  std::string shape = "(n, 2, " + std::to_string(lanes) + ")";
  return "    @T.prim_func\n    def " + name + "(a: T.handle, c: T.handle):\n        n = T.int64()\n" +
         "        A = T.match_buffer(a, " + shape + ", \"float32\")\n" +
         "        C = T.match_buffer(c, " + shape + ", \"float32\")\n" +
         "        for o in T.serial(n):\n            for u in T.unroll(2):\n" +
         "                for i in T.vectorized(" + std::to_string(lanes) + "):\n" +
         "                    C[o, u, i] = " + MathExpr<float>(f, "A[o, u, i]") + "\n";
}

// Explicit widths: 16 (one AVX-512 register; the depthwise kernels), 64
// (four chunks), 4 and 8, and the odd widths that masked targets pad
// (3 -> 4, 5 and 7 -> 8, 13 -> 16) and others legalize in pieces.
constexpr int kExplicitLanes[] = {3, 4, 5, 7, 8, 13, 16, 64};

std::string ScalarName(const std::string& f, int bits) { return "s_" + f + std::to_string(bits); }
std::string ExplicitName(const std::string& f, int lanes) { return "x_" + f + "_" + std::to_string(lanes); }

// Every route's kernels; with `explicit_only` = "sigmoid" only that
// function's explicit kernels (the IR test's, compiled in half the time).
std::string RoutesModule(const std::string& explicit_only = "") {
  std::string s = "@I.ir_module\nclass Module:\n";
  for (const MathCase& c : Cases<float>(false)) s += ScalarKernel(ScalarName(c.f, 32), MathExpr<float>(c.f, "A[i, 0]"), "float32");
  for (const MathCase& c : Cases<double>(false)) s += ScalarKernel(ScalarName(c.f, 64), MathExpr<double>(c.f, "A[i, 0]"), "float64");
  for (const MathCase& c : Cases<float>(true)) {
    if (!explicit_only.empty() && c.f != explicit_only) continue;
    for (int lanes : kExplicitLanes) s += ExplicitKernel(ExplicitName(c.f, lanes), c.f, lanes);
  }
  return s;
}

std::vector<ir::PrimFunc> RoutesFuncs(const std::string& explicit_only) {
  Result<ir::IRModule> mod = text::ParseModule(RoutesModule(explicit_only), "<routes>");
  KILN_CHECK(mod.ok(), "%s", mod.status().ToString().c_str());
  std::vector<ir::PrimFunc> funcs;
  for (const auto& e : mod->entries)
    if (e.prim) funcs.push_back(e.prim);
  return Prepare(funcs, 1);
}

// Runs `name` on `xs`, laid out in rows of `row` elements, every
// `stride`-th element one of xs (the rest xs[0]); returns xs's results.
template <typename T>
std::vector<T> RunRows(const LoadedLibrary& lib, const std::string& name, const std::vector<T>& xs,
                       std::vector<int64_t> row, int64_t stride = 1) {
  int64_t per_row = 1;
  for (int64_t d : row) per_row *= d;
  int64_t total = static_cast<int64_t>(xs.size()) * stride;
  int64_t rows = (total + per_row - 1) / per_row;
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), row.begin(), row.end());
  Tensor ta = MakeTensor(shape, DTypeOf<T>()), tc = MakeTensor(shape, DTypeOf<T>());
  T* a = ta.data<T>();
  for (int64_t i = 0; i < rows * per_row; ++i) a[i] = xs[0];
  for (size_t i = 0; i < xs.size(); ++i) a[i * stride] = xs[i];
  std::string err;
  EXPECT_EQ(RunKernel(lib, name, {ta, tc}, &err), 0) << name << ": " << err;
  std::vector<T> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) out[i] = tc.data<T>()[i * stride];
  return out;
}

template <typename T>
double WorstUlp(const std::vector<T>& xs, const std::vector<T>& got, const std::function<LD(LD)>& ref, T* at) {
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double e = UlpError<T>(got[i], ref(static_cast<LD>(xs[i])));
    if (!(e <= worst)) {
      worst = e;
      *at = xs[i];
    }
  }
  return worst;
}

class VectorMathRoutesTest : public ::testing::TestWithParam<std::string> {
 protected:
  // GetParam(): "host" (AVX-512 with masked vectors where the host has it)
  // or an -mcpu name.
  codegen::CodegenOptions Options() const {
    codegen::CodegenOptions o;
    if (GetParam() != "host") o.cpu = GetParam();
    return o;
  }
  void SetUp() override {
#if defined(__x86_64__)
    if (GetParam() == "haswell" && !__builtin_cpu_supports("avx2")) GTEST_SKIP() << "host has no AVX2";
#else
    if (GetParam() != "host") GTEST_SKIP() << "x86 target";
#endif
  }

  template <typename T>
  void CheckScalar(const LoadedLibrary& lib, int n) {
    for (const MathCase& c : Cases<T>(false)) {
      std::string name = ScalarName(c.f, sizeof(T) * 8);
      double worst = 0;
      T at = 0;
      for (const std::vector<T>& xs : Inputs<T>(c.f, n)) {
        T x = 0;
        double e = WorstUlp<T>(xs, RunRows<T>(lib, name, xs, {3}, 3), c.ref, &x);
        if (!(e <= worst)) worst = e, at = x;
      }
      std::printf("  %-12s %.3f ULP at %.9g\n", name.c_str(), worst, static_cast<double>(at));
      EXPECT_LE(worst, c.bound) << name << " at x = " << at;
    }
  }
};

TEST_P(VectorMathRoutesTest, EachRouteEmitsItsCode) {
  Result<std::string> ir = codegen::EmitLLVMIR(RoutesFuncs("sigmoid"), Options());
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  for (int bits : {32, 64}) {
    for (const MathCase& c : bits == 32 ? Cases<float>(false) : Cases<double>(false)) {
      std::string head = "@" + ScalarName(c.f, bits) + "(";
      size_t begin = ir->find(head);
      ASSERT_NE(begin, std::string::npos) << head;
      std::string body = ir->substr(begin, ir->find("\n}\n", begin) - begin);
      // One element per iteration: no vector loads (the SLP vectorizer may
      // pair erf's two polynomials of one element; that is still this route).
      for (const char* v : {"load <", "masked.load", "gather"})
        EXPECT_EQ(body.find(v), std::string::npos) << head << " was vectorized: " << v;
    }
  }
  // The explicit kernels hold vectors of their width (padded to a power of
  // two on masked targets).
  for (int lanes : kExplicitLanes) {
    std::string head = "@" + ExplicitName("sigmoid", lanes) + "(";
    size_t begin = ir->find(head);
    ASSERT_NE(begin, std::string::npos) << head;
    std::string body = ir->substr(begin, ir->find("\n}\n", begin) - begin);
    int w = std::min(lanes, 16), pow2 = 1;
    while (pow2 < w) pow2 *= 2;
    std::string exact = "<" + std::to_string(w) + " x float>";
    std::string padded = "<" + std::to_string(pow2) + " x float>";
    EXPECT_TRUE(body.find(exact) != std::string::npos || body.find(padded) != std::string::npos)
        << head << ": no " << exact << " or " << padded;
#if defined(__x86_64__)
    // On the host with AVX-512 F and VL the odd widths are padded and masked.
    if (GetParam() == "host" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && w > 2 &&
        w != pow2) {
      EXPECT_NE(body.find("masked.load"), std::string::npos) << head << ": not masked";
    }
#endif
  }
}

TEST_P(VectorMathRoutesTest, EveryRouteWithinStatedUlp) {
  auto lib = BuildText(RoutesModule(), Options());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  const int n = 10000;
  CheckScalar<float>(**lib, n);
  CheckScalar<double>(**lib, n);
  for (const MathCase& c : Cases<float>(true)) {
    std::vector<std::vector<float>> inputs = Inputs<float>(c.f, n);
    for (int lanes : kExplicitLanes) {
      std::string name = ExplicitName(c.f, lanes);
      double worst = 0;
      float at = 0;
      for (const std::vector<float>& xs : inputs) {
        float x = 0;
        double e = WorstUlp<float>(xs, RunRows<float>(**lib, name, xs, {2, lanes}), c.ref, &x);
        if (!(e <= worst)) worst = e, at = x;
      }
      std::printf("  %-12s %.3f ULP at %.9g\n", name.c_str(), worst, static_cast<double>(at));
      EXPECT_LE(worst, c.bound) << name << " at x = " << at;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, VectorMathRoutesTest, ::testing::Values("host", "haswell"));

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
