// strided_slice: numpy slicing (negative indices and strides, clamping, empty
// results) against a plain C++ reference, symbolic extents, and every error.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

struct Slice {
  int axis;
  int64_t begin, end, stride;
};

// numpy's x[b:e:s] along each listed axis, written independently of Kiln.
std::vector<double> Reference(const Tensor& x, const Shape& s, const std::vector<Slice>& slices, Shape* out) {
  std::vector<std::vector<int64_t>> picks(s.size());
  for (size_t d = 0; d < s.size(); ++d)
    for (int64_t i = 0; i < s[d]; ++i) picks[d].push_back(i);
  for (const Slice& sl : slices) {
    int64_t n = s[sl.axis];
    std::vector<int64_t> p;
    auto fix = [&](int64_t v, bool is_begin) {
      if (v < 0) v += n;
      if (sl.stride > 0) return std::clamp<int64_t>(v, 0, n);
      (void)is_begin;
      return std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t b = fix(sl.begin, true), e = fix(sl.end, false);
    for (int64_t i = b; sl.stride > 0 ? i < e : i > e; i += sl.stride) p.push_back(i);
    picks[sl.axis] = p;
  }
  out->clear();
  for (const auto& p : picks) out->push_back(static_cast<int64_t>(p.size()));
  std::vector<double> v = ToDoubles(x), want;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape j(i.size());
    for (size_t d = 0; d < i.size(); ++d) j[d] = picks[d][i[d]];
    want.push_back(v[Offset(s, j)]);
  });
  return want;
}

std::string Call(const std::string& x, const std::vector<Slice>& slices) {
  std::string axes, begin, end, strides;
  for (size_t k = 0; k < slices.size(); ++k) {
    std::string sep = k ? ", " : "";
    axes += sep + std::to_string(slices[k].axis);
    begin += sep + std::to_string(slices[k].begin);
    end += sep + std::to_string(slices[k].end);
    strides += sep + std::to_string(slices[k].stride);
  }
  return "R.strided_slice(" + x + ", axes=[" + axes + "], begin=[" + begin + "], end=[" + end + "], strides=[" +
         strides + "])";
}

TEST(OpSlice, StaticMatchesNumpy) {
  Shape xs{5, 1, 6};
  Tensor x = RandomTensor(xs, DType::Float32(), 41);
  std::vector<std::vector<Slice>> cases = {
      {{0, 1, 4, 1}},                       // plain
      {{2, -4, -1, 1}},                     // negative indices
      {{0, 4, 0, -1}, {2, 5, -7, -2}},      // negative strides, end before the start
      {{2, -100, 100, 2}},                  // clamped to the bounds
      {{0, 3, 1, 1}},                       // empty
      {{1, 0, 1, 1}, {-1, 0, 6, 3}},        // size-1 axis, negative axis
      {{0, 2147483647, -2147483648LL, -2}},  // TVM's "whole axis, reversed"
  };
  std::vector<std::string> exprs;
  for (const auto& c : cases) exprs.push_back(Call("x", c));
  // Positional tuples (newer TVM printers) and strides omitted.
  exprs.push_back("R.strided_slice(x, (2,), (1,), (3,))");
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs)}, exprs), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), cases.size() + 1);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<Slice> c = cases[k];
    for (auto& s : c)
      if (s.axis < 0) s.axis += 3;
    Shape out;
    std::vector<double> want = Reference(x, xs, c, &out);
    EXPECT_TRUE(AllClose(r->at(k), want, out)) << exprs[k];
  }
  Shape out;
  std::vector<double> want = Reference(x, xs, {{2, 1, 3, 1}}, &out);
  EXPECT_TRUE(AllClose(r->at(cases.size()), want, out));
}

TEST(OpSlice, HalfAndInteger) {
  Tensor h = RandomTensor({4, 4}, DType{kDLFloat, 16, 1}, 42);
  Tensor i = RandomTensor({7}, DType{kDLInt, 32, 1}, 43, -100, 100);
  auto r = RunMain(MultiOpModule({"h: " + TensorType({4, 4}, "float16"), "i: " + TensorType({7}, "int32")},
                                 {Call("h", {{0, 1, 3, 1}, {1, 3, 0, -1}}), Call("i", {{0, 6, -8, -3}})}),
                   {h, i});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape out;
  std::vector<double> want = Reference(h, {4, 4}, {{0, 1, 3, 1}, {1, 3, 0, -1}}, &out);
  EXPECT_TRUE(AllClose(r->at(0), want, out, 0, 0));
  want = Reference(i, {7}, {{0, 6, -8, -3}}, &out);
  EXPECT_TRUE(AllClose(r->at(1), want, out, 0, 0));
}

// Symbolic n: the extent stays a formula of n where the slice is in bounds.
TEST(OpSlice, SymbolicExtents) {
  std::string src = MultiOpModule({"x: R.Tensor((\"n\", 4), \"float32\")"},
                                  {Call("x", {{0, 1, 2147483647, 1}}), Call("x", {{0, 0, -1, 1}}),
                                   Call("x", {{0, 0, 2147483647, 2}}), Call("x", {{0, -1, -2147483648LL, -1}}),
                                   Call("x", {{1, 1, 3, 1}}), Call("x", {{0, -2, 2147483647, 1}})},
                                  {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((n - 1, 4), dtype=\"float32\"), R.Tensor((n - 1, 4), dtype=\"float32\"), "
            "R.Tensor(((n + 1) // 2, 4), dtype=\"float32\"), R.Tensor((n, 4), dtype=\"float32\"), "
            "R.Tensor((n, 2), dtype=\"float32\"), R.Tensor((2, 4), dtype=\"float32\"))");
  for (int64_t n : {5, 2}) {
    Tensor x = RandomTensor({n, 4}, DType::Float32(), 44 + n);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::vector<Slice>> cases = {{{0, 1, n, 1}}, {{0, 0, -1, 1}}, {{0, 0, n, 2}},
                                             {{0, -1, -n - 1, -1}}, {{1, 1, 3, 1}}, {{0, -2, n, 1}}};
    for (size_t k = 0; k < cases.size(); ++k) {
      Shape out;
      std::vector<double> want = Reference(x, {n, 4}, cases[k], &out);
      EXPECT_TRUE(AllClose(r->at(k), want, out)) << k << " n=" << n;
    }
  }
}

// begin and end as R.shape arguments holding symbolic values (ONNX slices
// whose bounds come from shape arithmetic): x[n // 2 : n] on a symbolic axis
// and c[: n] on a static one; the kernels take n as a scalar.
TEST(OpSlice, SymbolicIndices) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((\"n\", 3), \"float32\")", "c: R.Tensor((8, 3), \"float32\")"},
      {"R.strided_slice(x, R.shape([0]), R.shape([n // 2]), R.shape([n]), R.shape([1]))",
       "R.strided_slice(c, R.shape([0]), R.shape([0]), R.shape([n]), R.shape([1]))"},
      {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((n - n // 2, 3), dtype=\"float32\"), R.Tensor((n, 3), dtype=\"float32\"))");
  for (int64_t n : {5, 8}) {
    Tensor x = RandomTensor({n, 3}, DType::Float32(), 50 + n);
    Tensor c = RandomTensor({8, 3}, DType::Float32(), 60 + n);
    auto r = RunMain(src, {x, c});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape out;
    std::vector<double> want = Reference(x, {n, 3}, {{0, n / 2, n, 1}}, &out);
    EXPECT_TRUE(AllClose(r->at(0), want, out)) << "n=" << n;
    want = Reference(c, {8, 3}, {{0, 0, n, 1}}, &out);
    EXPECT_TRUE(AllClose(r->at(1), want, out)) << "n=" << n;
  }
}

// assume_inbound=False clamps symbolic indices with min/max.
TEST(OpSlice, SymbolicClampedWhenNotInbound) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((\"n\",), \"float32\")"},
      {"R.strided_slice(x, axes=[0], begin=[1], end=[3], assume_inbound=False)"}, {"n"});
  for (int64_t n : {5, 2, 1}) {
    Tensor x = RandomTensor({n}, DType::Float32(), 47 + n);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape out;
    std::vector<double> want = Reference(x, {n}, {{0, 1, 3, 1}}, &out);
    EXPECT_TRUE(AllClose(r->at(0), want, out)) << "n=" << n;
  }
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpSliceError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpSliceError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.strided_slice(x, axes=[0], begin=[0])", StatusCode::kInvalidArgument,
     "R.strided_slice: axes, begin and end are required"},
    {"R.strided_slice(x, axes=[0, 1], begin=[0], end=[1])", StatusCode::kInvalidArgument,
     "R.strided_slice: axes, begin, end and strides must have the same length, got 2, 1, 1, 2"},
    {"R.strided_slice(x, axes=[0], begin=[0], end=[1], strides=[0])", StatusCode::kInvalidArgument,
     "R.strided_slice: strides must not be 0"},
    {"R.strided_slice(x, axes=[2], begin=[0], end=[1])", StatusCode::kInvalidArgument,
     "R.strided_slice: axis 2 is out of range for rank 2"},
    {"R.strided_slice(x, axes=[0, 0], begin=[0, 0], end=[1, 1])", StatusCode::kInvalidArgument,
     "R.strided_slice: axis 0 is given more than once"},
    {"R.strided_slice(x, axes=[0], begin=[0], end=[1], assume_inbound=\"yes\")", StatusCode::kInvalidArgument,
     "R.strided_slice: assume_inbound must be True or False"},
    {"R.strided_slice(x, (0,), (x,), (1,))", StatusCode::kInvalidArgument,
     "R.strided_slice: begin (argument 2) must be a tuple of integers (R.prim_value) or R.shape([...])"},
    {"R.strided_slice(x, (0,), (0,), (1,), (1,), (1,))", StatusCode::kInvalidArgument,
     "R.strided_slice: takes 1 to 5 arguments, got 6"},
    {"R.strided_slice(u, axes=[0], begin=[0], end=[1])", StatusCode::kUnimplemented,
     "R.strided_slice: legalization needs argument 0 of known shape and dtype, got R.Tensor(ndim=2, "
     "dtype=\"float32\")"},
};

INSTANTIATE_TEST_SUITE_P(All, OpSliceError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
