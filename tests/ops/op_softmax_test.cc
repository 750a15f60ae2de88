// relax.nn.softmax and relax.nn.log_softmax against plain C++ references:
// any axis (negative too), size-1 dims, large inputs (stability), a symbolic
// row count, float16.
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

// softmax (or log_softmax) of `v` (shape `s`) along `axis` (normalized).
std::vector<double> RefSoftmax(const Shape& s, int axis, const std::vector<double>& v, bool log) {
  std::vector<double> out(v.size());
  ForEachIndex(s, [&](const Shape& i) {
    if (i[axis] != 0) return;
    Shape j = i;
    double mx = -INFINITY, sum = 0;
    for (j[axis] = 0; j[axis] < s[axis]; ++j[axis]) mx = std::max(mx, v[Offset(s, j)]);
    for (j[axis] = 0; j[axis] < s[axis]; ++j[axis]) sum += std::exp(v[Offset(s, j)] - mx);
    for (j[axis] = 0; j[axis] < s[axis]; ++j[axis]) {
      double x = v[Offset(s, j)];
      out[Offset(s, j)] = log ? x - mx - std::log(sum) : std::exp(x - mx) / sum;
    }
  });
  return out;
}

void CheckBoth(const Shape& shape, int64_t axis, const std::string& dtype, double lo, double hi, double tol) {
  DType dt = dtype == "float16" ? DType::Float16() : DType::Float32();
  Tensor x = RandomTensor(shape, dt, 40 + shape.size() + axis, lo, hi);
  std::string a = std::to_string(axis);
  auto r = RunMain(OneOpModule({"x: " + TensorType(shape, dtype)},
                               "(R.nn.softmax(x, axis=" + a + "), R.nn.log_softmax(x, axis=" + a + "))"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  int ax = static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis);
  std::vector<double> xv = ToDoubles(x);
  EXPECT_TRUE(AllClose(r->at(0), RefSoftmax(shape, ax, xv, false), shape, tol, tol)) << "softmax axis " << axis;
  EXPECT_TRUE(AllClose(r->at(1), RefSoftmax(shape, ax, xv, true), shape, tol, tol)) << "log_softmax axis " << axis;
}

TEST(OpSoftmax, AxesAndSizeOneDims) {
  CheckBoth({2, 5}, -1, "float32", -2, 2, 1e-5);
  CheckBoth({3, 1, 4}, 0, "float32", -2, 2, 1e-5);
  CheckBoth({3, 1, 4}, 1, "float32", -2, 2, 1e-5);  // a size-1 axis: softmax 1, log_softmax 0
  CheckBoth({1, 7}, 1, "float32", -2, 2, 1e-5);
}

TEST(OpSoftmax, LargeInputsAreStable) {
  // exp(1000) overflows float32; subtracting the row max keeps it finite.
  CheckBoth({2, 6}, -1, "float32", 900, 1000, 1e-5);
}

TEST(OpSoftmax, Float16) { CheckBoth({3, 8}, -1, "float16", -3, 3, 2e-3); }

// nan_to=c writes c where the softmax is NaN: a fully masked row (every
// input -inf) and a row holding a NaN; the other rows are unchanged. Rows of
// 40 (vector code and a tail).
TEST(OpSoftmax, NanToReplacesNaNRows) {
  const int64_t cols = 40;
  std::vector<double> v(3 * cols);
  for (int64_t j = 0; j < cols; ++j) {
    v[j] = 0.3 * static_cast<double>(j % 9) - 1.0;
    v[cols + j] = -INFINITY;
    v[2 * cols + j] = j == 7 ? NAN : 0.05 * static_cast<double>(j);
  }
  Tensor x = MakeTensor({3, cols}, DType::Float32(), v);
  auto r = RunMain(OneOpModule({"x: " + TensorType({3, cols})}, "R.nn.softmax(x, axis=-1, nan_to=-2.5)"), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> want = RefSoftmax({3, cols}, 1, v, false);
  for (double& w : want)
    if (std::isnan(w)) w = -2.5;
  EXPECT_TRUE(AllClose(r->at(0), want, {3, cols}, 1e-6, 1e-5));
}

TEST(OpSoftmax, SymbolicRows) {
  std::string src = OneOpModule({"x: R.Tensor((\"n\", 4), \"float32\")"}, "R.nn.softmax(x)");
  for (int64_t n : {1, 9}) {
    Tensor x = RandomTensor({n, 4}, DType::Float32(), 50 + n);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), RefSoftmax({n, 4}, 1, ToDoubles(x), false), {n, 4}));
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpSoftmaxError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({2, 3});
  ExpectOpError({x}, "R.nn.softmax(x, axis=2)", StatusCode::kInvalidArgument,
                "R.nn.softmax: axis 2 is out of range for a tensor of rank 2");
  ExpectOpError({x}, "R.nn.log_softmax(x, axis=-3)", StatusCode::kInvalidArgument,
                "R.nn.log_softmax: axis -3 is out of range for a tensor of rank 2");
  ExpectOpError({"i: " + TensorType({2, 3}, "int32")}, "R.nn.softmax(i)", StatusCode::kInvalidArgument,
                "R.nn.softmax: expects a float tensor, got int32");
  ExpectOpError({"s: R.Shape([2])"}, "R.nn.softmax(s)", StatusCode::kInvalidArgument,
                "R.nn.softmax: expects a tensor as argument 1 (data)");
  ExpectOpError({x}, "R.nn.softmax(x, axis=\"a\")", StatusCode::kInvalidArgument, "R.nn.softmax: axis must be an integer");
  ExpectOpError({x}, "R.nn.softmax(x, axes=[1])", StatusCode::kInvalidArgument,
                "R.nn.softmax: unknown attribute 'axes' (known: axis, nan_to)");
  ExpectOpError({x}, "R.nn.softmax(x, nan_to=\"a\")", StatusCode::kInvalidArgument,
                "R.nn.softmax: nan_to must be a number");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
