// tile and repeat (numpy semantics) against plain C++ references, with
// symbolic shapes and every error.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

// numpy.tile(x, reps).
std::vector<double> TileRef(const Tensor& x, Shape xs, std::vector<int64_t> reps, Shape* out) {
  size_t n = std::max(xs.size(), reps.size());
  Shape orig = xs;
  while (xs.size() < n) xs.insert(xs.begin(), 1);
  while (reps.size() < n) reps.insert(reps.begin(), 1);
  out->clear();
  for (size_t d = 0; d < n; ++d) out->push_back(xs[d] * reps[d]);
  std::vector<double> v = ToDoubles(x), want;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape j(n);
    for (size_t d = 0; d < n; ++d) j[d] = i[d] % xs[d];
    want.push_back(v[Offset(xs, j)]);
  });
  (void)orig;
  return want;
}

// numpy.repeat(x, r, axis); axis < 0: of the flattened x.
std::vector<double> RepeatRef(const Tensor& x, const Shape& xs, int64_t r, int axis, Shape* out) {
  std::vector<double> v = ToDoubles(x), want;
  if (axis < 0) {
    for (double e : v)
      for (int64_t k = 0; k < r; ++k) want.push_back(e);
    *out = {static_cast<int64_t>(want.size())};
    return want;
  }
  *out = xs;
  (*out)[axis] *= r;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape j = i;
    j[axis] /= r;
    want.push_back(v[Offset(xs, j)]);
  });
  return want;
}

TEST(OpTile, TileAndRepeatMatchReference) {
  Shape xs{2, 1, 3};
  Tensor x = RandomTensor(xs, DType::Float32(), 61);
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs)},
                                 {"R.tile(x, repeats=[2, 3, 1])", "R.tile(x, repeats=[2])", "R.tile(x, (2, 1, 1, 2))",
                                  "R.tile(x, repeats=2)", "R.repeat(x, repeats=2, axis=1)", "R.repeat(x, 3, -1)",
                                  "R.repeat(x, repeats=2)", "R.tile(x, repeats=[1, 0, 1])"}),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape out;
  EXPECT_TRUE(AllClose(r->at(0), TileRef(x, xs, {2, 3, 1}, &out), out));
  EXPECT_TRUE(AllClose(r->at(1), TileRef(x, xs, {2}, &out), out));
  EXPECT_TRUE(AllClose(r->at(2), TileRef(x, xs, {2, 1, 1, 2}, &out), out));
  EXPECT_TRUE(AllClose(r->at(3), TileRef(x, xs, {2}, &out), out));
  EXPECT_TRUE(AllClose(r->at(4), RepeatRef(x, xs, 2, 1, &out), out));
  EXPECT_TRUE(AllClose(r->at(5), RepeatRef(x, xs, 3, 2, &out), out));
  EXPECT_TRUE(AllClose(r->at(6), RepeatRef(x, xs, 2, -1, &out), out));
  EXPECT_TRUE(AllClose(r->at(7), {}, {2, 0, 3}));
}

TEST(OpTile, IntegerHalfAndSymbolic) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((\"n\", 2), \"int32\")", "h: R.Tensor((\"n\",), \"float16\")"},
      {"R.tile(x, repeats=[3, 2])", "R.repeat(x, repeats=2, axis=0)", "R.repeat(h, repeats=3)", "R.tile(h, (2, 1))"},
      {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((n * 3, 4), dtype=\"int32\"), R.Tensor((n * 2, 2), dtype=\"int32\"), "
            "R.Tensor((n * 3,), dtype=\"float16\"), R.Tensor((2, n), dtype=\"float16\"))");
  for (int64_t n : {3, 1}) {
    Tensor x = RandomTensor({n, 2}, DType{kDLInt, 32, 1}, 62 + n, -50, 50);
    Tensor h = RandomTensor({n}, DType{kDLFloat, 16, 1}, 63 + n);
    auto r = RunMain(src, {x, h});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape out;
    EXPECT_TRUE(AllClose(r->at(0), TileRef(x, {n, 2}, {3, 2}, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(1), RepeatRef(x, {n, 2}, 2, 0, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(2), RepeatRef(h, {n}, 3, -1, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(3), TileRef(h, {n}, {2, 1}, &out), out, 0, 0));
  }
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpTileError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpTileError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.tile(x)", StatusCode::kInvalidArgument, "R.tile: repeats is required"},
    {"R.tile(x, repeats=[2, -1])", StatusCode::kInvalidArgument, "R.tile: repeats must be >= 0, got -1"},
    {"R.tile(x, repeats=\"a\")", StatusCode::kInvalidArgument,
     "R.tile: repeats must be an integer or a list of integers"},
    {"R.tile(u, repeats=[2])", StatusCode::kUnimplemented,
     "R.tile: legalization needs argument 0 of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"R.repeat(x)", StatusCode::kInvalidArgument, "R.repeat: repeats (one integer) is required"},
    {"R.repeat(x, repeats=-2)", StatusCode::kInvalidArgument, "R.repeat: repeats must be >= 0, got -2"},
    {"R.repeat(x, repeats=[2])", StatusCode::kInvalidArgument, "R.repeat: repeats must be an integer"},
    {"R.repeat(x, repeats=2, axis=2)", StatusCode::kInvalidArgument, "R.repeat: axis 2 is out of range for rank 2"},
    {"R.repeat(x, 2, 0, 1)", StatusCode::kInvalidArgument, "R.repeat: takes 1 to 3 arguments, got 4"},
};

INSTANTIATE_TEST_SUITE_P(All, OpTileError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
