// Unary elementwise operators (compiler/relax/op_unary.cc) against plain C++
// references: many operators share one compiled module (a tuple result), so
// each test compiles once or twice.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/ops/op_elem_test_util.h"

namespace kiln {
namespace optest {
namespace {

using Ref = std::function<double(double)>;

struct UnaryCase {
  std::string expr;  // over the parameter x
  Ref ref;
  double atol = 1e-5, rtol = 1e-5;
};

std::vector<double> Map(const std::vector<double>& in, const Ref& f) {
  std::vector<double> out;
  for (double v : in) out.push_back(f(v));
  return out;
}

double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double Clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }
double HardSigmoid(double v) { return Clamp(v / 6.0 + 0.5, 0.0, 1.0); }
double Sign(double v) { return std::isnan(v) ? v : v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }

// Compiles one module whose result is the tuple of every case's expression
// over `x` and checks each field.
void CheckCases(const std::vector<UnaryCase>& cases, const Tensor& x, const std::string& x_type) {
  std::string tuple = "(";
  for (const auto& c : cases) tuple += c.expr + ", ";
  tuple += ")";
  auto r = RunMain(OneOpModule({"x: " + x_type}, tuple), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), cases.size());
  std::vector<double> xv = ToDoubles(x);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(AllClose(r->at(i), Map(xv, cases[i].ref), x.shape(), cases[i].atol, cases[i].rtol)) << cases[i].expr;
  }
}

TEST(OpUnary, MathAndActivationsFloat32) {
  // Size-1 dimension in the middle; values cover both signs.
  Tensor x = RandomTensor({2, 1, 7}, DType::Float32(), 11, -3.0, 3.0);
  const double kT = 2e-5;  // transcendental functions: a few ulp of float32
  std::vector<UnaryCase> cases = {
      {"R.exp(x)", [](double v) { return std::exp(v); }, kT, kT},
      {"R.tanh(x)", [](double v) { return std::tanh(v); }, kT, kT},
      {"R.sigmoid(x)", Sigmoid, kT, kT},
      {"R.erf(x)", [](double v) { return std::erf(v); }, kT, kT},
      {"R.nn.gelu(x)", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, kT, kT},
      {"R.nn.gelu_tanh(x)",
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, kT, kT},
      {"R.nn.silu(x)", [](double v) { return v * Sigmoid(v); }, kT, kT},
      {"R.nn.relu(x)", [](double v) { return std::max(v, 0.0); }},
      {"R.nn.leakyrelu(x, alpha=0.2)", [](double v) { return v >= 0 ? v : 0.2 * v; }},
      {"R.nn.leaky_relu(x)", [](double v) { return v >= 0 ? v : 0.01 * v; }},
      {"R.clip(x, R.prim_value(-1), R.prim_value(2))", [](double v) { return Clamp(v, -1, 2); }},
      {"R.clip(x, min=0, max=6)", [](double v) { return Clamp(v, 0, 6); }},
      {"R.hard_sigmoid(x)", HardSigmoid},
      {"R.nn.hard_sigmoid(x, alpha=0.2, beta=0.5)", [](double v) { return Clamp(0.2 * v + 0.5, 0, 1); }},
      {"R.hard_swish(x)", [](double v) { return v * HardSigmoid(v); }},
      {"R.nn.hardswish(x)", [](double v) { return v * HardSigmoid(v); }},
      {"R.negative(x)", [](double v) { return -v; }},
      {"R.abs(x)", [](double v) { return std::fabs(v); }},
      {"R.square(x)", [](double v) { return v * v; }},
  };
  CheckCases(cases, x, TensorType({2, 1, 7}));
}

TEST(OpUnary, PositiveDomainFloat32) {
  Tensor x = RandomTensor({3, 5}, DType::Float32(), 12, 0.01, 50.0);
  const double kT = 2e-5;
  std::vector<UnaryCase> cases = {
      {"R.log(x)", [](double v) { return std::log(v); }, kT, kT},
      {"R.sqrt(x)", [](double v) { return std::sqrt(v); }, kT, kT},
      {"R.rsqrt(x)", [](double v) { return 1.0 / std::sqrt(v); }, kT, kT},
  };
  CheckCases(cases, x, TensorType({3, 5}));
}

TEST(OpUnary, RoundingSignAndPredicatesOnSpecialValues) {
  const double inf = HUGE_VAL, nan = std::nan("");
  std::vector<double> v = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7, 0.0, 3.0, inf, -inf, nan, 1e30, -4.49, 4.51};
  Tensor x = MakeTensor({16}, DType::Float32(), v);
  std::vector<UnaryCase> cases = {
      {"R.floor(x)", [](double a) { return std::floor(a); }},
      {"R.ceil(x)", [](double a) { return std::ceil(a); }},
      {"R.round(x)", [](double a) { return std::nearbyint(a); }},  // half to even (default rounding mode)
      {"R.sign(x)", Sign},
      {"R.isnan(x)", [](double a) { return std::isnan(a) ? 1.0 : 0.0; }},
      {"R.isinf(x)", [](double a) { return std::isinf(a) ? 1.0 : 0.0; }},
      {"R.isfinite(x)", [](double a) { return std::isfinite(a) ? 1.0 : 0.0; }},
      {"R.logical_not(x)", [](double a) { return a == 0 ? 1.0 : 0.0; }},
      {"R.nn.relu(x)", [](double a) { return std::isnan(a) ? a : std::max(a, 0.0); }},
  };
  // NaN through relu: max(NaN, 0) may give either operand; keep it out of the check.
  v[12] = 0.25;
  Tensor no_nan = MakeTensor({16}, DType::Float32(), v);
  CheckCases({cases.begin(), cases.end() - 1}, x, TensorType({16}));
  CheckCases({cases.back()}, no_nan, TensorType({16}));
}

TEST(OpUnary, IntegerOperands) {
  Tensor x = RandomTensor({4, 1, 3}, DType::Int32(), 13, -9.0, 9.0);
  std::vector<UnaryCase> cases = {
      {"R.nn.relu(x)", [](double a) { return std::max(a, 0.0); }},
      {"R.negative(x)", [](double a) { return -a; }},
      {"R.abs(x)", [](double a) { return std::fabs(a); }},
      {"R.sign(x)", Sign},
      {"R.square(x)", [](double a) { return a * a; }},
      {"R.clip(x, R.prim_value(-3), R.prim_value(4))", [](double a) { return Clamp(a, -3, 4); }},
      {"R.floor(x)", [](double a) { return a; }},
      {"R.isnan(x)", [](double) { return 0.0; }},
  };
  CheckCases(cases, x, TensorType({4, 1, 3}, "int32"));
}

TEST(OpUnary, Float16) {
  Tensor x = RandomTensor({2, 9}, DType::Float16(), 14, -3.0, 3.0);
  // Reference on the fp16 inputs; the result is rounded to fp16 (rel. 2^-11).
  std::vector<UnaryCase> cases = {
      {"R.exp(x)", [](double v) { return std::exp(v); }, 1e-3, 2e-3},
      {"R.nn.gelu(x)", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, 1e-3, 2e-3},
      {"R.nn.silu(x)", [](double v) { return v * Sigmoid(v); }, 1e-3, 2e-3},
      {"R.negative(x)", [](double v) { return -v; }, 0, 0},
  };
  CheckCases(cases, x, TensorType({2, 9}, "float16"));
}

TEST(OpUnary, AsTypeBetweenEveryDtype) {
  std::vector<double> v = {-2.75, -1.0, -0.5, 0.0, 0.5, 1.0, 2.25, 100.7};
  Tensor x = MakeTensor({2, 4}, DType::Float32(), v);
  auto trunc = [](double a) { return std::trunc(a); };
  std::vector<UnaryCase> cases = {
      {"R.astype(x, dtype=\"float16\")", [](double a) { return a; }, 0.05, 1e-3},
      {"R.astype(x, dtype=\"int64\")", trunc},
      {"R.astype(x, dtype=\"int32\")", trunc},
      {"R.astype(x, dtype=\"int8\")", trunc},
      {"R.astype(x, dtype=\"bool\")", [](double a) { return a != 0 ? 1.0 : 0.0; }},
      {"R.astype(x, \"float32\")", [](double a) { return a; }},
  };
  CheckCases(cases, x, TensorType({2, 4}));

  // Integers and bools to the other types (uint8 from non-negative values).
  Tensor i = MakeTensor({5}, DType::Int32(), {0, 1, 7, 200, 255});
  CheckCases({{"R.astype(x, dtype=\"uint8\")", [](double a) { return a; }},
              {"R.astype(x, dtype=\"float32\")", [](double a) { return a; }},
              {"R.astype(x, dtype=\"float16\")", [](double a) { return a; }},
              {"R.astype(x, dtype=\"bool\")", [](double a) { return a != 0; }},
              {"R.astype(R.astype(x, dtype=\"bool\"), dtype=\"float32\")", [](double a) { return a != 0; }},
              {"R.astype(R.astype(x, dtype=\"uint8\"), dtype=\"int64\")", [](double a) { return a; }}},
             i, TensorType({5}, "int32"));
}

// Float -> integer casts over rows long enough for vector code and a tail,
// with the values where the conversion saturates: NaN -> 0, the int32 range's
// ends, and narrower types wrapping from the saturated int32 (as before the
// emitter spelled the saturation as selects around fptosi).
TEST(OpUnary, AsTypeFloatToIntSaturatesInVectorLoops) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  const std::vector<double> edge = {nan, inf, -inf, 3e9, -3e9, 2147483520.0, 2147483648.0, -2147483648.0,
                                    -2147483904.0, 300.7, -1.5, 255.9, -129.9, 0.5, 127.2, -0.75, 65536.5};
  std::vector<double> v;
  for (int i = 0; i < 3 * 40; ++i) v.push_back(i % 2 ? edge[(i / 2) % edge.size()] : (i - 60) * 2.375);
  Tensor x = MakeTensor({3, 40}, DType::Float32(), v);
  auto sat32 = [](double a) -> int64_t {
    if (std::isnan(a)) return 0;
    if (a >= 2147483648.0) return 2147483647;
    if (a <= -2147483648.0) return -2147483648LL;
    return static_cast<int64_t>(std::trunc(a));
  };
  auto wrap = [](int64_t i, int bits, bool is_signed) {
    const uint64_t m = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(i) & m;
    return is_signed && (u >> (bits - 1)) ? static_cast<double>(static_cast<int64_t>(u) - (int64_t{1} << bits))
                                          : static_cast<double>(u);
  };
  CheckCases({{"R.astype(x, dtype=\"int32\")", [&](double a) { return static_cast<double>(sat32(a)); }, 0, 0},
              {"R.astype(x, dtype=\"int8\")", [&](double a) { return wrap(sat32(a), 8, true); }, 0, 0},
              {"R.astype(x, dtype=\"uint8\")", [&](double a) { return wrap(sat32(a), 8, false); }, 0, 0}},
             x, TensorType({3, 40}));
}

// A symbolic first dimension: compiled once, run for n = 1 and n = 5.
TEST(OpUnary, SymbolicShapeRunsForTwoSizes) {
  std::string src = OneOpModule({"x: R.Tensor((\"n\", 4), \"float32\")"}, "R.nn.gelu(R.sqrt(R.abs(x)))");
  Tensor x1 = RandomTensor({1, 4}, DType::Float32(), 16, -4.0, 4.0);
  Tensor x5 = RandomTensor({5, 4}, DType::Float32(), 17, -4.0, 4.0);
  auto r = RunEach(src, {{x1}, {x5}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto ref = [](double v) {
    double s = std::sqrt(std::fabs(v));
    return 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
  };
  EXPECT_TRUE(AllClose(r->at(0).at(0), Map(ToDoubles(x1), ref), {1, 4}, 2e-5, 2e-5));
  EXPECT_TRUE(AllClose(r->at(1).at(0), Map(ToDoubles(x5), ref), {5, 4}, 2e-5, 2e-5));
}

// Inference keeps symbolic shapes and sets the result dtype.
TEST(OpUnary, InferenceKeepsSymbolicShape) {
  std::vector<std::string> x = {"x: R.Tensor((\"n\", 4), \"float32\")"};
  EXPECT_EQ(InferredType(x, "R.isnan(x)"), "R.Tensor((n, 4), dtype=\"bool\")");
  EXPECT_EQ(InferredType(x, "R.astype(x, dtype=\"int8\")"), "R.Tensor((n, 4), dtype=\"int8\")");
  EXPECT_EQ(InferredType(x, "R.exp(x)"), "R.Tensor((n, 4), dtype=\"float32\")");
  EXPECT_EQ(InferredType({"x: R.Tensor(ndim=3, dtype=\"float32\")"}, "R.logical_not(x)"),
            "R.Tensor(ndim=3, dtype=\"bool\")");
}

TEST(OpUnary, Diagnostics) {
  const std::string f = "x: R.Tensor((2, 3), \"float32\")";
  const std::string i = "x: R.Tensor((2, 3), \"int32\")";
  const std::string b = "x: R.Tensor((2, 3), \"bool\")";
  const std::string u = "x: R.Tensor(ndim=2, dtype=\"float32\")";
  const std::string s = "s: R.Shape([2, 3])";
  const std::string n = "y: R.Tensor((\"n\",), \"int64\")";
  auto inv = StatusCode::kInvalidArgument;
  ExpectErrors({
      {{s}, "R.exp(s)", inv, "R.exp expects a tensor"},
      {{i}, "R.exp(x)", inv, "R.exp: requires a float tensor, got int32"},
      {{b}, "R.abs(x)", inv, "R.abs: does not accept a bool tensor"},
      {{"x: R.Tensor((2, 3), \"float32x4\")"}, "R.exp(x)", inv, "R.exp: vector dtype float32x4 is not supported"},
      {{f}, "R.clip(x, R.prim_value(0), R.prim_value(1), R.prim_value(2))", inv,
       "R.clip: takes x, min and max, got 4 arguments"},
      {{f}, "R.clip(x, R.prim_value(2), R.prim_value(1))", inv, "R.clip: min 2.000000 is greater than max 1.000000"},
      {{f}, "R.clip(x, R.prim_value(0))", inv, "R.clip: missing max"},
      {{f}, "R.clip(x, x, R.prim_value(1))", inv, "R.clip: min must be a constant R.prim_value"},
      {{f, n}, "R.clip(x, R.prim_value(0), R.prim_value(n))", inv, "R.clip: max must be a constant, got n"},
      {{f}, "R.clip(x, min=0, max=\"big\")", inv, "R.clip: max must be a number, got a string"},
      {{f}, "R.nn.leakyrelu(x, alpha=\"a\")", inv, "R.nn.leakyrelu: alpha must be a number, got a string"},
      {{f}, "R.astype(x)", inv, "R.astype: needs dtype=\"...\""},
      {{f}, "R.astype(x, dtype=\"float33\")", inv, "R.astype: dtype \"float33\" is not a dtype"},
      {{f}, "R.astype(x, dtype=1)", inv, "R.astype: dtype must be a string, got an integer"},
      {{f}, "R.astype(x, dtype=\"float32x4\")", inv, "R.astype: cannot convert to float32x4"},
      {{f}, "R.astype(x, \"int8\", \"int8\")", inv, "R.astype: takes x and dtype, got 3 arguments"},
      {{f}, "R.astype(x, \"int7b\")", inv, "R.astype: \"int7b\" is not a dtype"},
      {{f}, "R.astype(x, 1)", inv, "R.astype: the dtype must be a string, as in R.astype(x, dtype=\"float16\")"},
      {{u}, "R.exp(x)", StatusCode::kUnimplemented, "R.exp: legalization needs a known shape"},
      {{"x: R.Tensor((2, 3))"}, "R.exp(x)", StatusCode::kUnimplemented, "R.exp: legalization needs a known dtype"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
