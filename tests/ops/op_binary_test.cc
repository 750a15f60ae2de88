// Binary operators with numpy broadcasting and where
// (compiler/relax/op_elementwise.cc) against plain C++ references.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/ops/op_elem_test_util.h"

namespace kiln {
namespace optest {
namespace {

using Ref2 = std::function<double(double, double)>;

struct BinaryCase {
  std::string expr;  // over parameters a and b
  Ref2 ref;
  double tol = 1e-5;
};

// Compiles one module returning every case's expression over (a, b) and
// checks each against the broadcast reference.
void CheckCases(const std::vector<BinaryCase>& cases, const Tensor& a, const std::string& a_type, const Tensor& b,
                const std::string& b_type) {
  std::string tuple = "(";
  for (const auto& c : cases) tuple += c.expr + ", ";
  tuple += ")";
  auto r = RunMain(OneOpModule({"a: " + a_type, "b: " + b_type}, tuple), {a, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), cases.size());
  Shape out = BroadcastShape(a.shape(), b.shape());
  std::vector<double> av = ToDoubles(a), bv = ToDoubles(b);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<double> want;
    ForEachIndex(out, [&](const Shape& i) {
      want.push_back(cases[k].ref(av[BroadcastOffset(a.shape(), i)], bv[BroadcastOffset(b.shape(), i)]));
    });
    EXPECT_TRUE(AllClose(r->at(k), want, out, cases[k].tol, cases[k].tol)) << cases[k].expr;
  }
}

double FloorMod(double x, double y) { return x - std::floor(x / y) * y; }

TEST(OpBinary, ArithmeticFloat32Broadcasts) {
  // (3, 1, 4) with (5, 1): both sides broadcast; b is kept away from 0.
  Tensor a = RandomTensor({3, 1, 4}, DType::Float32(), 21, -3.0, 3.0);
  Tensor b = RandomTensor({5, 1}, DType::Float32(), 22, 0.5, 2.5);
  std::vector<BinaryCase> cases = {
      {"R.add(a, b)", [](double x, double y) { return x + y; }},
      {"R.subtract(a, b)", [](double x, double y) { return x - y; }},
      {"R.multiply(a, b)", [](double x, double y) { return x * y; }},
      {"R.divide(a, b)", [](double x, double y) { return x / y; }},
      {"R.floor_divide(a, b)", [](double x, double y) { return std::floor(x / y); }},
      {"R.floor_mod(a, b)", FloorMod},
      {"R.power(R.abs(a), b)", [](double x, double y) { return std::pow(std::fabs(x), y); }, 2e-5},
      {"R.maximum(a, b)", [](double x, double y) { return std::max(x, y); }},
      {"R.minimum(a, b)", [](double x, double y) { return std::min(x, y); }},
      {"R.less(a, b)", [](double x, double y) { return x < y ? 1.0 : 0.0; }},
      {"R.greater_equal(a, b)", [](double x, double y) { return x >= y ? 1.0 : 0.0; }},
  };
  CheckCases(cases, a, TensorType({3, 1, 4}), b, TensorType({5, 1}));
}

TEST(OpBinary, ComparisonsOnIntegersWithTies) {
  // Small integers so that equal elements occur.
  Tensor a = RandomTensor({2, 3}, DType::Int32(), 23, -2.0, 2.0);
  Tensor b = RandomTensor({3}, DType::Int32(), 24, -2.0, 2.0);
  auto cmp = [](std::function<bool(double, double)> f) { return [f](double x, double y) { return f(x, y) ? 1.0 : 0.0; }; };
  std::vector<BinaryCase> cases = {
      {"R.equal(a, b)", cmp([](double x, double y) { return x == y; })},
      {"R.not_equal(a, b)", cmp([](double x, double y) { return x != y; })},
      {"R.less(a, b)", cmp([](double x, double y) { return x < y; })},
      {"R.less_equal(a, b)", cmp([](double x, double y) { return x <= y; })},
      {"R.greater(a, b)", cmp([](double x, double y) { return x > y; })},
      {"R.greater_equal(a, b)", cmp([](double x, double y) { return x >= y; })},
      {"R.logical_and(a, b)", cmp([](double x, double y) { return x != 0 && y != 0; })},
      {"R.logical_or(a, b)", cmp([](double x, double y) { return x != 0 || y != 0; })},
      {"R.maximum(a, b)", [](double x, double y) { return std::max(x, y); }},
  };
  CheckCases(cases, a, TensorType({2, 3}, "int32"), b, TensorType({3}, "int32"));
}

TEST(OpBinary, LogicalOnBools) {
  Tensor a = MakeTensor({2, 2}, DType::Bool(), {0, 1, 0, 1});
  Tensor b = MakeTensor({1, 2}, DType::Bool(), {0, 1});
  std::vector<BinaryCase> cases = {
      {"R.logical_and(a, b)", [](double x, double y) { return x && y ? 1.0 : 0.0; }},
      {"R.logical_or(a, b)", [](double x, double y) { return x || y ? 1.0 : 0.0; }},
      {"R.equal(a, b)", [](double x, double y) { return x == y ? 1.0 : 0.0; }},
  };
  CheckCases(cases, a, TensorType({2, 2}, "bool"), b, TensorType({1, 2}, "bool"));
}

TEST(OpBinary, IntegerDivisionSemantics) {
  // Negative operands on both sides and a zero divisor.
  Tensor a = MakeTensor({8}, DType::Int32(), {7, -7, 7, -7, 0, 5, -9, 3});
  Tensor b = MakeTensor({8}, DType::Int32(), {2, 2, -2, -2, 3, 0, 4, 1});
  auto guard = [](std::function<double(double, double)> f) {
    return [f](double x, double y) { return y == 0 ? 0.0 : f(x, y); };
  };
  std::vector<BinaryCase> cases = {
      {"R.divide(a, b)", guard([](double x, double y) { return std::trunc(x / y); })},
      {"R.floor_divide(a, b)", guard([](double x, double y) { return std::floor(x / y); })},
      {"R.floor_mod(a, b)", guard(FloorMod)},
      {"R.power(a, R.abs(b))", [](double x, double y) { return std::pow(x, std::fabs(y)); }},
      {"R.subtract(a, b)", [](double x, double y) { return x - y; }},
  };
  CheckCases(cases, a, TensorType({8}, "int32"), b, TensorType({8}, "int32"));

  Tensor c = RandomTensor({3, 1}, DType::Int64(), 25, -1e9, 1e9);
  Tensor d = RandomTensor({1, 4}, DType::Int64(), 26, -1e9, 1e9);
  CheckCases({{"R.add(a, b)", [](double x, double y) { return x + y; }},
              {"R.floor_divide(a, b)", [](double x, double y) { return y == 0 ? 0 : std::floor(x / y); }}},
             c, TensorType({3, 1}, "int64"), d, TensorType({1, 4}, "int64"));
}

TEST(OpBinary, Float16AndScalarOperand) {
  Tensor a = RandomTensor({2, 5}, DType::Float16(), 27, -2.0, 2.0);
  Tensor b = RandomTensor({}, DType::Float16(), 28, 0.5, 1.5);
  std::vector<BinaryCase> cases = {
      {"R.add(a, b)", [](double x, double y) { return x + y; }, 2e-3},
      {"R.multiply(a, b)", [](double x, double y) { return x * y; }, 2e-3},
      {"R.divide(a, b)", [](double x, double y) { return x / y; }, 2e-3},
  };
  CheckCases(cases, a, TensorType({2, 5}, "float16"), b, "R.Tensor((), \"float16\")");
}

TEST(OpBinary, WhereBroadcastsThreeWays) {
  Tensor c = MakeTensor({2, 1, 3}, DType::Bool(), {1, 0, 1, 0, 0, 1});
  Tensor a = RandomTensor({4, 1}, DType::Float32(), 29);
  Tensor b = RandomTensor({3}, DType::Float32(), 30);
  auto r = RunMain(OneOpModule({"c: " + TensorType({2, 1, 3}, "bool"), "a: " + TensorType({4, 1}), "b: " + TensorType({3})},
                               "R.where(c, a, b)"),
                   {c, a, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> cv = ToDoubles(c), av = ToDoubles(a), bv = ToDoubles(b), want;
  Shape out = {2, 4, 3};
  ForEachIndex(out, [&](const Shape& i) {
    want.push_back(cv[BroadcastOffset({2, 1, 3}, i)] ? av[BroadcastOffset({4, 1}, i)] : bv[BroadcastOffset({3}, i)]);
  });
  EXPECT_TRUE(AllClose(r->at(0), want, out));
}

TEST(OpBinary, SymbolicShapeRunsForTwoSizes) {
  std::vector<std::string> params = {"a: R.Tensor((\"n\", 4), \"float32\")", "b: R.Tensor((1, 4), \"float32\")"};
  EXPECT_EQ(InferredType(params, "R.multiply(a, b)"), "R.Tensor((n, 4), dtype=\"float32\")");
  EXPECT_EQ(InferredType(params, "R.less(a, b)"), "R.Tensor((n, 4), dtype=\"bool\")");
  Tensor b = RandomTensor({1, 4}, DType::Float32(), 31);
  Tensor a1 = RandomTensor({1, 4}, DType::Float32(), 32);
  Tensor a3 = RandomTensor({3, 4}, DType::Float32(), 33);
  auto r = RunEach(OneOpModule(params, "R.where(R.less(a, b), R.subtract(b, a), R.multiply(a, b))"), {{a1, b}, {a3, b}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t k = 0; k < 2; ++k) {
    const Tensor& a = k == 0 ? a1 : a3;
    std::vector<double> av = ToDoubles(a), bv = ToDoubles(b), want;
    ForEachIndex(a.shape(), [&](const Shape& i) {
      double x = av[Offset(a.shape(), i)], y = bv[BroadcastOffset({1, 4}, i)];
      want.push_back(x < y ? y - x : x * y);
    });
    EXPECT_TRUE(AllClose(r->at(k).at(0), want, a.shape()));
  }
}

TEST(OpBinary, Diagnostics) {
  const std::string x = "x: R.Tensor((2, 3), \"float32\")";
  const std::string y = "y: R.Tensor((4, 3), \"float32\")";
  const std::string i = "i: R.Tensor((2, 3), \"int32\")";
  const std::string b = "c: R.Tensor((2, 3), \"bool\")";
  const std::string s = "s: R.Shape([2, 3])";
  const std::string n = "n1: R.Tensor((\"n\",), \"float32\")";
  const std::string m = "m1: R.Tensor((\"m\",), \"float32\")";
  const std::string u = "u: R.Tensor(ndim=2, dtype=\"float32\")";
  const std::string v = "v: R.Tensor((2, 3), \"float32x4\")";
  auto inv = StatusCode::kInvalidArgument;
  auto unimpl = StatusCode::kUnimplemented;
  ExpectErrors({
      {{x, s}, "R.add(x, s)", inv, "R.add expects two tensors"},
      {{x, i}, "R.power(x, i)", inv, "R.power: operand dtypes differ: float32 and int32"},
      {{x, y}, "R.maximum(x, y)", inv, "R.maximum: shapes (2, 3) and (4, 3) do not broadcast (2 vs 4)"},
      {{n, m}, "R.equal(n1, m1)", unimpl, "R.equal: cannot prove that dimensions n and m are equal or 1"},
      {{b}, "R.add(c, c)", inv, "R.add: does not accept bool tensors"},
      {{v}, "R.add(v, v)", inv, "R.add: vector dtype float32x4 is not supported"},
      {{b, x, s}, "R.where(c, x, s)", inv, "R.where expects three tensors"},
      {{b, x, i}, "R.where(c, x, i)", inv, "R.where: operand dtypes differ: float32 and int32"},
      {{b, x, y}, "R.where(c, x, y)", inv, "R.where: shapes (2, 3) and (4, 3) do not broadcast (2 vs 4)"},
      {{x, u}, "R.floor_divide(x, u)", unimpl, "R.floor_divide: legalization needs known shapes"},
      {{b, x, u}, "R.where(c, x, u)", unimpl, "R.where: legalization needs known shapes"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
