// Scans and selection (compiler/relax/op_scan.cc): cumsum, cumprod, topk
// against plain C++ references.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "tests/ops/op_elem_test_util.h"

namespace kiln {
namespace optest {
namespace {

// Scan of `x` (shape) along `axis` (-1: flattened).
std::vector<double> Scan(const std::vector<double>& x, const Shape& shape, int axis, bool prod, bool exclusive) {
  std::vector<double> out(x.size());
  if (axis < 0) {
    double acc = prod ? 1 : 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (exclusive) out[i] = acc;
      acc = prod ? acc * x[i] : acc + x[i];
      if (!exclusive) out[i] = acc;
    }
    return out;
  }
  ForEachIndex(shape, [&](const Shape& i) {
    if (i[axis] != 0) return;
    double acc = prod ? 1 : 0;
    Shape j = i;
    for (int64_t k = 0; k < shape[axis]; ++k) {
      j[axis] = k;
      int64_t o = Offset(shape, j);
      if (exclusive) out[o] = acc;
      acc = prod ? acc * x[o] : acc + x[o];
      if (!exclusive) out[o] = acc;
    }
  });
  return out;
}

TEST(OpScan, CumsumAndCumprod) {
  Shape s = {2, 3, 4};
  Tensor x = RandomTensor(s, DType::Float32(), 61, 0.5, 1.5);
  auto r = RunMain(OneOpModule({"x: " + TensorType(s)},
                               "(R.cumsum(x, axis=1), R.cumsum(x), R.cumsum(x, axis=-1, exclusive=True), "
                               "R.cumprod(x, axis=0), R.cumprod(x, axis=2, exclusive=True), "
                               "R.cumsum(x, axis=2, dtype=\"float16\"))"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> xv = ToDoubles(x);
  EXPECT_TRUE(AllClose(r->at(0), Scan(xv, s, 1, false, false), s));
  EXPECT_TRUE(AllClose(r->at(1), Scan(xv, s, -1, false, false), {24}));
  EXPECT_TRUE(AllClose(r->at(2), Scan(xv, s, 2, false, true), s));
  EXPECT_TRUE(AllClose(r->at(3), Scan(xv, s, 0, true, false), s));
  EXPECT_TRUE(AllClose(r->at(4), Scan(xv, s, 2, true, true), s));
  EXPECT_EQ(r->at(5).dtype(), DType::Float16());
  EXPECT_TRUE(AllClose(r->at(5), Scan(xv, s, 2, false, false), s, 1e-2, 2e-3));
}

TEST(OpScan, CumsumOfIntegersAndBools) {
  Tensor i = MakeTensor({2, 3}, DType::Int32(), {1, -2, 3, 4, 5, -6});
  Tensor b = MakeTensor({5}, DType::Bool(), {1, 0, 1, 1, 0});
  auto r = RunMain(OneOpModule({"i: " + TensorType({2, 3}, "int32"), "b: " + TensorType({5}, "bool")},
                               "(R.cumsum(i, axis=0), R.cumsum(i, dtype=\"int64\"), R.cumsum(b, axis=0, dtype=\"int32\"))"),
                   {i, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), {1, -2, 3, 5, 3, -3}, {2, 3}));
  EXPECT_EQ(r->at(1).dtype(), DType::Int64());
  EXPECT_TRUE(AllClose(r->at(1), {1, -1, 2, 6, 11, 5}, {6}));
  EXPECT_TRUE(AllClose(r->at(2), {1, 1, 2, 3, 3}, {5}));
}

// Reference top-k along `axis`: stable order (value, then lower index).
void TopK(const std::vector<double>& x, const Shape& shape, int axis, int64_t k, bool largest, std::vector<double>* values,
          std::vector<double>* indices, Shape* out_shape) {
  *out_shape = shape;
  (*out_shape)[axis] = k;
  values->assign(static_cast<size_t>(NumElements(*out_shape)), 0);
  indices->assign(values->size(), 0);
  ForEachIndex(shape, [&](const Shape& i) {
    if (i[axis] != 0) return;
    std::vector<int64_t> order(static_cast<size_t>(shape[axis]));
    std::iota(order.begin(), order.end(), 0);
    Shape j = i;
    auto at = [&](int64_t m) {
      j[axis] = m;
      return x[Offset(shape, j)];
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return largest ? at(a) > at(b) : at(a) < at(b); });
    for (int64_t t = 0; t < k; ++t) {
      Shape o = i;
      o[axis] = t;
      (*values)[Offset(*out_shape, o)] = at(order[t]);
      (*indices)[Offset(*out_shape, o)] = static_cast<double>(order[t]);
    }
  });
}

TEST(OpScan, TopK) {
  Shape s = {3, 6};
  // Integers with ties.
  Tensor x = RandomTensor(s, DType::Int32(), 62, -3.0, 3.0);
  Tensor f = RandomTensor({2, 5, 2}, DType::Float32(), 63);
  auto r = RunMain(OneOpModule({"x: " + TensorType(s, "int32"), "f: " + TensorType({2, 5, 2})},
                               "(R.topk(x, k=3)[0], R.topk(x, k=3)[1], "
                               "R.topk(x, k=2, axis=0, largest=False, dtype=\"int64\")[0], "
                               "R.topk(x, k=2, axis=0, largest=False, dtype=\"int64\")[1], "
                               "R.topk(f, k=5, axis=1, ret_type=\"values\"), R.topk(f, k=1, axis=-2, ret_type=\"indices\"), "
                               "R.topk(x, k=0, largest=False)[0], R.topk(x, k=0, largest=False)[1])"),
                   {x, f});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 8u);
  std::vector<double> xv = ToDoubles(x), fv = ToDoubles(f), values, indices;
  Shape out;
  TopK(xv, s, 1, 3, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(0), values, out));
  EXPECT_EQ(r->at(1).dtype(), DType::Int32());
  EXPECT_TRUE(AllClose(r->at(1), indices, out));
  TopK(xv, s, 0, 2, false, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(2), values, out));
  EXPECT_EQ(r->at(3).dtype(), DType::Int64());
  EXPECT_TRUE(AllClose(r->at(3), indices, out));
  TopK(fv, {2, 5, 2}, 1, 5, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(4), values, out));
  TopK(fv, {2, 5, 2}, 1, 1, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(5), indices, out));
  TopK(xv, s, 1, 6, false, &values, &indices, &out);  // k = 0: the whole axis
  EXPECT_TRUE(AllClose(r->at(6), values, out));
}

TEST(OpScan, TopKOfLongRowsWithTiesAndSortedRows) {
  // The heap kernel: rows far longer than k, odd k (a heap whose last inner
  // node has one child), many ties (integers in [-4, 4]: every kept value
  // ties with others, the order must stay value then lower index), rows
  // already sorted best first, worst first (every element enters) and
  // constant, k = the whole row, and the reduced axis not innermost.
  Shape s = {3, 1001};
  Tensor x = RandomTensor(s, DType::Int32(), 64, -4.5, 4.5);
  std::vector<float> ramps;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < 257; ++i) ramps.push_back(r == 0 ? static_cast<float>(i) : r == 1 ? static_cast<float>(-i) : 2.5f);
  Tensor g = MakeTensor({3, 257}, DType::Float32(), std::vector<double>(ramps.begin(), ramps.end()));
  Tensor f = RandomTensor({2, 300, 3}, DType::Float32(), 65);
  auto r = RunMain(OneOpModule({"x: " + TensorType(s, "int32"), "g: " + TensorType({3, 257}),
                                "f: " + TensorType({2, 300, 3})},
                               "(R.topk(x, k=37)[0], R.topk(x, k=37)[1], "
                               "R.topk(x, k=100, largest=False)[1], "
                               "R.topk(g, k=64)[1], R.topk(g, k=257, largest=False)[1], "
                               "R.topk(f, k=21, axis=1)[0], R.topk(f, k=21, axis=1)[1])"),
                   {x, g, f});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 7u);
  std::vector<double> xv = ToDoubles(x), gv = ToDoubles(g), fv = ToDoubles(f), values, indices;
  Shape out;
  TopK(xv, s, 1, 37, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(0), values, out));
  EXPECT_TRUE(AllClose(r->at(1), indices, out));
  TopK(xv, s, 1, 100, false, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(2), indices, out));
  TopK(gv, {3, 257}, 1, 64, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(3), indices, out));
  TopK(gv, {3, 257}, 1, 257, false, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(4), indices, out));
  TopK(fv, {2, 300, 3}, 1, 21, true, &values, &indices, &out);
  EXPECT_TRUE(AllClose(r->at(5), values, out));
  EXPECT_TRUE(AllClose(r->at(6), indices, out));
}

TEST(OpScan, CumsumOverMiddleAndLeadingAxesOfOddSizes) {
  // The axis loop between the axes before and after it: inner rows of odd
  // width (vector remainders), a leading axis, exclusive forms.
  Shape s = {3, 129, 37};
  Tensor x = RandomTensor(s, DType::Float32(), 66, -1.0, 1.0);
  auto r = RunMain(OneOpModule({"x: " + TensorType(s)},
                               "(R.cumsum(x, axis=1), R.cumsum(x, axis=0, exclusive=True), "
                               "R.cumprod(x, axis=1, exclusive=True), R.cumsum(x, axis=2))"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> xv = ToDoubles(x);
  EXPECT_TRUE(AllClose(r->at(0), Scan(xv, s, 1, false, false), s, 1e-4, 1e-4));
  EXPECT_TRUE(AllClose(r->at(1), Scan(xv, s, 0, false, true), s, 1e-4, 1e-4));
  EXPECT_TRUE(AllClose(r->at(2), Scan(xv, s, 1, true, true), s, 1e-4, 1e-4));
  EXPECT_TRUE(AllClose(r->at(3), Scan(xv, s, 2, false, false), s, 1e-4, 1e-4));
}

TEST(OpScan, SymbolicShapes) {
  std::vector<std::string> params = {"x: R.Tensor((\"n\", 3), \"float32\")"};
  EXPECT_EQ(InferredType(params, "R.cumsum(x)"), "R.Tensor((n * 3,), dtype=\"float32\")");
  EXPECT_EQ(InferredType(params, "R.topk(x, k=2, axis=1)"),
            "R.Tuple(R.Tensor((n, 2), dtype=\"float32\"), R.Tensor((n, 2), dtype=\"int32\"))");
  Tensor x1 = RandomTensor({1, 3}, DType::Float32(), 64);
  Tensor x4 = RandomTensor({4, 3}, DType::Float32(), 65);
  auto r = RunEach(OneOpModule(params, "(R.cumsum(x, axis=0), R.topk(x, k=1, axis=0, ret_type=\"values\"))"), {{x1}, {x4}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t k = 0; k < 2; ++k) {
    const Tensor& x = k == 0 ? x1 : x4;
    std::vector<double> xv = ToDoubles(x), values, indices;
    Shape out;
    EXPECT_TRUE(AllClose(r->at(k).at(0), Scan(xv, x.shape(), 0, false, false), x.shape()));
    TopK(xv, x.shape(), 0, 1, true, &values, &indices, &out);
    EXPECT_TRUE(AllClose(r->at(k).at(1), values, out));
  }
}

TEST(OpScan, Diagnostics) {
  const std::string x = "x: R.Tensor((2, 3), \"float32\")";
  auto inv = StatusCode::kInvalidArgument;
  ExpectErrors({
      {{"b: R.Tensor((2, 3), \"bool\")"}, "R.cumsum(b)", inv, "R.cumsum: of a bool tensor needs dtype=\"...\""},
      {{x}, "R.cumsum(x, axis=2)", inv, "R.cumsum: axis 2 is out of range for a tensor of rank 2"},
      {{x}, "R.cumprod(x, exclusive=2)", inv, "R.cumprod: exclusive must be True or False, got an integer"},
      {{"s: R.Tensor((), \"float32\")"}, "R.topk(s)", inv, "R.topk: needs a tensor of rank >= 1"},
      {{x}, "R.topk(x, k=4)", inv, "R.topk: k = 4 is larger than axis 1 of (2, 3)"},
      {{x}, "R.topk(x, ret_type=\"all\")", inv, "R.topk: ret_type must be \"both\", \"values\" or \"indices\", got \"all\""},
      {{x}, "R.topk(x, ret_type=1)", inv, "R.topk: ret_type must be a string, got an integer"},
      {{x}, "R.topk(x, dtype=\"float32\")", inv, "R.topk: index dtype must be an integer type, got float32"},
      {{x}, "R.topk(x, k=\"two\")", inv, "R.topk: k must be an integer, got a string"},
      {{"b: R.Tensor((2, 3), \"bool\")"}, "R.topk(b)", inv, "R.topk: does not accept bool tensors"},
      {{"s: R.Shape([2])"}, "R.cumsum(s)", inv, "R.cumsum: the operand must be a tensor, got R.Shape((2,))"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
