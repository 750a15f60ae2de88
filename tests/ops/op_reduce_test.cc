// Reductions (compiler/relax/op_reduce.cc) against plain C++ references over
// any axes, with and without keepdims.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/ops/op_elem_test_util.h"

namespace kiln {
namespace optest {
namespace {

enum class Kind { kSum, kMean, kProd, kMax, kMin, kVariance, kStd, kArgMax, kArgMin };

struct ReduceCase {
  std::string expr;  // over x
  Kind kind;
  std::vector<int64_t> axes;  // normalized; empty: all
  bool keepdims = false;
  double tol = 1e-5;
};

// The reference: groups the elements of x by their output index and folds
// each group in row-major order (argmax/argmin: flat index within the group).
std::pair<std::vector<double>, Shape> Reference(const ReduceCase& c, const Shape& shape, const std::vector<double>& xv) {
  std::vector<bool> reduced(shape.size(), c.axes.empty());
  for (int64_t a : c.axes) reduced[a] = true;
  Shape out, group;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) out.push_back(shape[d]);
    else if (c.keepdims) out.push_back(1);
    if (reduced[d]) group.push_back(shape[d]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(NumElements(out)));
  ForEachIndex(shape, [&](const Shape& i) {
    Shape o;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d]) o.push_back(i[d]);
      else if (c.keepdims) o.push_back(0);
    }
    groups[Offset(out, o)].push_back(xv[Offset(shape, i)]);
  });
  std::vector<double> want;
  for (const auto& g : groups) {
    double n = static_cast<double>(g.size()), acc = 0;
    switch (c.kind) {
      case Kind::kSum: for (double v : g) acc += v; break;
      case Kind::kMean: for (double v : g) acc += v / n; break;
      case Kind::kProd: acc = 1; for (double v : g) acc *= v; break;
      case Kind::kMax: acc = -HUGE_VAL; for (double v : g) acc = std::max(acc, v); break;
      case Kind::kMin: acc = HUGE_VAL; for (double v : g) acc = std::min(acc, v); break;
      case Kind::kVariance:
      case Kind::kStd: {
        double mean = 0;
        for (double v : g) mean += v / n;
        for (double v : g) acc += (v - mean) * (v - mean) / n;
        if (c.kind == Kind::kStd) acc = std::sqrt(acc);
        break;
      }
      case Kind::kArgMax:
      case Kind::kArgMin: {
        size_t best = 0;
        for (size_t k = 1; k < g.size(); ++k) {
          if (std::isnan(g[best])) break;
          bool better = std::isnan(g[k]) || (c.kind == Kind::kArgMax ? g[k] > g[best] : g[k] < g[best]);
          if (better) best = k;
        }
        acc = static_cast<double>(best);
        break;
      }
    }
    want.push_back(acc);
  }
  return {want, out};
}

void CheckCases(const std::vector<ReduceCase>& cases, const Tensor& x, const std::string& x_type) {
  std::string tuple = "(";
  for (const auto& c : cases) tuple += c.expr + ", ";
  tuple += ")";
  auto r = RunMain(OneOpModule({"x: " + x_type}, tuple), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), cases.size());
  std::vector<double> xv = ToDoubles(x);
  for (size_t k = 0; k < cases.size(); ++k) {
    auto want = Reference(cases[k], x.shape(), xv);
    EXPECT_TRUE(AllClose(r->at(k), want.first, want.second, cases[k].tol, cases[k].tol)) << cases[k].expr;
  }
}

TEST(OpReduce, FloatReductionsOverAnyAxes) {
  Tensor x = RandomTensor({2, 3, 1, 4}, DType::Float32(), 41, 0.5, 1.5);
  std::vector<ReduceCase> cases = {
      {"R.sum(x, axis=[1])", Kind::kSum, {1}},
      {"R.sum(x)", Kind::kSum, {}},
      {"R.sum(x, axis=None, keepdims=True)", Kind::kSum, {}, true},
      {"R.mean(x, axis=[0, 2], keepdims=True)", Kind::kMean, {0, 2}, true},
      {"R.mean(x, axis=[-1, 1])", Kind::kMean, {1, 3}},
      {"R.max(x, axis=[-1])", Kind::kMax, {3}},
      {"R.min(x, axis=[1, 3], keepdims=True)", Kind::kMin, {1, 3}, true},
      {"R.prod(x, axis=[3])", Kind::kProd, {3}},
      {"R.variance(x, axis=[1])", Kind::kVariance, {1}},
      {"R.std(x, keepdims=True)", Kind::kStd, {}, true},
      {"R.argmax(x, axis=1)", Kind::kArgMax, {1}},
      {"R.argmin(x, axis=-1, keepdims=True)", Kind::kArgMin, {3}, true},
      {"R.argmax(x)", Kind::kArgMax, {}},
      {"R.sum(x, axis=[2])", Kind::kSum, {2}},  // a size-1 axis
  };
  CheckCases(cases, x, TensorType({2, 3, 1, 4}));
}

TEST(OpReduce, ArgMaxTiesAndNaN) {
  // Ties: the first occurrence wins; a NaN is the extreme (numpy).
  const double nan = std::nan("");
  Tensor x = MakeTensor({3, 4}, DType::Float32(), {1, 3, 3, 0, 2, nan, 5, nan, -1, -1, -4, -4});
  std::vector<ReduceCase> cases = {
      {"R.argmax(x, axis=1)", Kind::kArgMax, {1}},
      {"R.argmin(x, axis=1)", Kind::kArgMin, {1}},
      {"R.argmin(x, axis=0, keepdims=True)", Kind::kArgMin, {0}, true},
  };
  CheckCases(cases, x, TensorType({3, 4}));
  Tensor i = MakeTensor({2, 3}, DType::Int32(), {4, 7, 7, -2, -2, 9});
  CheckCases({{"R.argmax(x, axis=1)", Kind::kArgMax, {1}},
              {"R.argmin(x)", Kind::kArgMin, {}},
              {"R.sum(x, axis=[0])", Kind::kSum, {0}},
              {"R.max(x, axis=[1], keepdims=True)", Kind::kMax, {1}, true},
              {"R.mean(x, axis=[1])", Kind::kMean, {1}, false, 0.5}},  // integer mean truncates
             i, TensorType({2, 3}, "int32"));
}

TEST(OpReduce, Float16AccumulatesInFloat32) {
  // 4096 ones: a float16 accumulator would stop at 2048.
  Tensor x = MakeTensor({2, 4096}, DType::Float16(), std::vector<double>(8192, 1.0));
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 4096}, "float16")},
                               "(R.sum(x, axis=[1]), R.mean(x, axis=[1]), R.max(x, axis=[1]), R.variance(x, axis=[1]))"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), {4096, 4096}, {2}));
  EXPECT_TRUE(AllClose(r->at(1), {1, 1}, {2}));
  EXPECT_TRUE(AllClose(r->at(2), {1, 1}, {2}));
  EXPECT_TRUE(AllClose(r->at(3), {0, 0}, {2}));
}

TEST(OpReduce, SymbolicShapes) {
  std::vector<std::string> params = {"x: R.Tensor((\"n\", 4), \"float32\")"};
  EXPECT_EQ(InferredType(params, "R.sum(x, axis=[0])"), "R.Tensor((4,), dtype=\"float32\")");
  EXPECT_EQ(InferredType(params, "R.mean(x, axis=[1], keepdims=True)"), "R.Tensor((n, 1), dtype=\"float32\")");
  EXPECT_EQ(InferredType(params, "R.argmax(x, axis=0)"), "R.Tensor((4,), dtype=\"int64\")");
  EXPECT_EQ(InferredType({"x: R.Tensor(ndim=3, dtype=\"float32\")"}, "R.sum(x, axis=[0, 1])"),
            "R.Tensor(ndim=1, dtype=\"float32\")");
  EXPECT_EQ(InferredType({"x: R.Tensor(ndim=3, dtype=\"float32\")"}, "R.max(x, keepdims=True)"),
            "R.Tensor(ndim=3, dtype=\"float32\")");
  EXPECT_EQ(InferredType({"x: R.Tensor(ndim=3, dtype=\"float32\")"}, "R.argmin(x)"), "R.Tensor((), dtype=\"int64\")");
  Tensor x1 = RandomTensor({1, 4}, DType::Float32(), 42);
  Tensor x6 = RandomTensor({6, 4}, DType::Float32(), 43);
  auto r = RunEach(OneOpModule(params, "(R.mean(x, axis=[0]), R.variance(x, axis=[0]), R.argmax(x, axis=0))"),
                   {{x1}, {x6}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t k = 0; k < 2; ++k) {
    const Tensor& x = k == 0 ? x1 : x6;
    std::vector<double> xv = ToDoubles(x);
    auto mean = Reference({"", Kind::kMean, {0}}, x.shape(), xv);
    auto var = Reference({"", Kind::kVariance, {0}}, x.shape(), xv);
    auto arg = Reference({"", Kind::kArgMax, {0}}, x.shape(), xv);
    EXPECT_TRUE(AllClose(r->at(k).at(0), mean.first, mean.second));
    EXPECT_TRUE(AllClose(r->at(k).at(1), var.first, var.second));
    EXPECT_TRUE(AllClose(r->at(k).at(2), arg.first, arg.second));
  }
}

TEST(OpReduce, Diagnostics) {
  const std::string x = "x: R.Tensor((2, 3), \"float32\")";
  const std::string i = "x: R.Tensor((2, 3), \"int32\")";
  const std::string b = "x: R.Tensor((2, 3), \"bool\")";
  auto inv = StatusCode::kInvalidArgument;
  ExpectErrors({
      {{"s: R.Shape([2])"}, "R.sum(s)", inv, "R.sum: the operand must be a tensor, got R.Shape((2,))"},
      {{b}, "R.max(x)", inv, "R.max: does not accept bool tensors"},
      {{i}, "R.variance(x)", inv, "R.variance: requires a float tensor, got int32"},
      {{x}, "R.sum(x, axis=[2])", inv, "R.sum: axis 2 is out of range for a tensor of rank 2"},
      {{x}, "R.mean(x, axis=[-3])", inv, "R.mean: axis -3 is out of range for a tensor of rank 2"},
      {{x}, "R.sum(x, axis=[1, -1])", inv, "R.sum: axis -1 is repeated"},
      {{x}, "R.sum(x, axis=\"rows\")", inv, "R.sum: axis must be a list of integers or None, got a string"},
      {{x}, "R.argmax(x, axis=[0, 1])", inv, "R.argmax: axis must be an integer or None, got a list"},
      {{x}, "R.sum(x, keepdims=\"yes\")", inv, "R.sum: keepdims must be True or False, got a string"},
      {{"x: R.Tensor(ndim=2, dtype=\"float32\")"}, "R.sum(x)", StatusCode::kUnimplemented,
       "R.sum: legalization needs a known shape"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
