// concat and split: results against plain C++ references (size-1 and empty
// parts, negative axes, tuple variables), symbolic axes, and every error.
#include <gtest/gtest.h>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

// The elements of `x` (shape `s`) with index i[axis] in [begin, begin + len).
std::vector<double> Slab(const Tensor& x, const Shape& s, int axis, int64_t begin, int64_t len) {
  std::vector<double> v = ToDoubles(x), out;
  Shape part = s;
  part[axis] = len;
  ForEachIndex(part, [&](const Shape& i) {
    Shape j = i;
    j[axis] += begin;
    out.push_back(v[Offset(s, j)]);
  });
  return out;
}

// Reference concat of tensors with shapes `shapes` along `axis`.
std::vector<double> Concat(const std::vector<Tensor>& xs, const std::vector<Shape>& shapes, int axis, Shape* out) {
  *out = shapes[0];
  (*out)[axis] = 0;
  for (const auto& s : shapes) (*out)[axis] += s[axis];
  std::vector<double> want;
  ForEachIndex(*out, [&](const Shape& i) {
    int64_t k = i[axis];
    size_t j = 0;
    while (k >= shapes[j][axis]) k -= shapes[j++][axis];
    Shape idx = i;
    idx[axis] = k;
    want.push_back(ToDoubles(xs[j])[Offset(shapes[j], idx)]);
  });
  return want;
}

TEST(OpConcat, StaticMatchesReference) {
  Tensor a = RandomTensor({2, 3}, DType::Float32(), 21);
  Tensor b = RandomTensor({2, 1}, DType::Float32(), 22);
  Tensor c = RandomTensor({2, 4}, DType::Float32(), 23);
  Tensor d = RandomTensor({1, 3}, DType::Float32(), 24);
  auto r = RunMain(MultiOpModule({"a: " + TensorType({2, 3}), "b: " + TensorType({2, 1}), "c: " + TensorType({2, 4}),
                                  "d: " + TensorType({1, 3})},
                                 {"R.concat((a, b, c), axis=1)", "R.concat((d, a, d), axis=-2)", "~(a, a)",
                                  "R.concat(r2, axis=0)", "R.concat((b,), axis=1)"}),
                   {a, b, c, d});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  Shape s;
  std::vector<double> want = Concat({a, b, c}, {{2, 3}, {2, 1}, {2, 4}}, 1, &s);
  EXPECT_TRUE(AllClose(r->at(0), want, s));
  want = Concat({d, a, d}, {{1, 3}, {2, 3}, {1, 3}}, 0, &s);
  EXPECT_TRUE(AllClose(r->at(1), want, s));
  want = Concat({a, a}, {{2, 3}, {2, 3}}, 0, &s);
  EXPECT_TRUE(AllClose(r->at(2), want, s));
  EXPECT_TRUE(AllClose(r->at(3), ToDoubles(b), {2, 1}));
}

TEST(OpSplit, StaticMatchesReference) {
  Shape xs{4, 6};
  Tensor x = RandomTensor(xs, DType::Float32(), 25);
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs)},
                                 {"~R.split(x, indices_or_sections=3, axis=1)", "r0[0]", "r0[1]", "r0[2]",
                                  "~R.split(x, indices_or_sections=[1, -1], axis=0)", "r4[0]", "r4[1]", "r4[2]",
                                  "~R.split(x, indices_or_sections=[2, 9], axis=-1)", "r8[0]", "r8[1]",
                                  "~R.split(x, indices_or_sections=4, axis=-1)", "r11[0]", "r11[3]",
                                  "~R.split(x, 1)", "r14[0]"}),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 11u);
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(AllClose(r->at(j), Slab(x, xs, 1, 2 * j, 2), {4, 2})) << j;
  EXPECT_TRUE(AllClose(r->at(3), Slab(x, xs, 0, 0, 1), {1, 6}));
  EXPECT_TRUE(AllClose(r->at(4), Slab(x, xs, 0, 1, 2), {2, 6}));
  EXPECT_TRUE(AllClose(r->at(5), Slab(x, xs, 0, 3, 1), {1, 6}));
  // Cut points past the end are clamped, as numpy does: the last part is empty.
  EXPECT_TRUE(AllClose(r->at(6), Slab(x, xs, 1, 0, 2), {4, 2}));
  EXPECT_TRUE(AllClose(r->at(7), Slab(x, xs, 1, 2, 4), {4, 4}));
  // 6 in 4 sections (TVM): ceil(6 / 4) = 2 each, the last gets what is left (0).
  EXPECT_TRUE(AllClose(r->at(8), Slab(x, xs, 1, 0, 2), {4, 2}));
  EXPECT_TRUE(AllClose(r->at(9), {}, {4, 0}));
  EXPECT_TRUE(AllClose(r->at(10), ToDoubles(x), xs));
}

TEST(OpConcatSplit, HalfAndIntegerTypes) {
  Tensor h = RandomTensor({2, 2}, DType{kDLFloat, 16, 1}, 26);
  Tensor i = RandomTensor({3, 2}, DType{kDLInt, 32, 1}, 27, -50, 50);
  Tensor l = RandomTensor({5}, DType::Int64(), 28, -50, 50);
  auto r = RunMain(MultiOpModule({"h: " + TensorType({2, 2}, "float16"), "i: " + TensorType({3, 2}, "int32"),
                                  "l: " + TensorType({5}, "int64")},
                                 {"R.concat((h, h), axis=1)", "R.concat((i, i), axis=0)",
                                  "~R.split(l, indices_or_sections=[2])", "r2[0]", "r2[1]"}),
                   {h, i, l});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape s;
  EXPECT_TRUE(AllClose(r->at(0), Concat({h, h}, {{2, 2}, {2, 2}}, 1, &s), s, 0, 0));
  EXPECT_TRUE(AllClose(r->at(1), Concat({i, i}, {{3, 2}, {3, 2}}, 0, &s), s, 0, 0));
  EXPECT_TRUE(AllClose(r->at(2), Slab(l, {5}, 0, 0, 2), {2}, 0, 0));
  EXPECT_TRUE(AllClose(r->at(3), Slab(l, {5}, 0, 2, 3), {3}, 0, 0));
}

TEST(OpConcatSplit, SymbolicAxes) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((\"n\", 4), \"float32\")", "y: R.Tensor((\"m\", 4), \"float32\")"},
      {"R.concat((x, y, x), axis=0)", "~R.split(R.reshape(x, R.shape([-1])), indices_or_sections=2)", "r1[0]", "r1[1]",
       "~R.split(x, indices_or_sections=[1], axis=0)", "r4[0]", "r4[1]",
       "~R.split(y, indices_or_sections=[1, 3], axis=1)", "r7[0]", "r7[1]", "r7[2]",
       "R.concat((R.reshape(x, R.shape([-1])), R.reshape(y, R.shape([-1]))), axis=0)"},
      {"n", "m"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((m + n * 2, 4), dtype=\"float32\"), R.Tensor((n * 2,), dtype=\"float32\"), "
            "R.Tensor((n * 2,), dtype=\"float32\"), R.Tensor((1, 4), dtype=\"float32\"), "
            "R.Tensor((n - 1, 4), dtype=\"float32\"), R.Tensor((m, 1), dtype=\"float32\"), "
            "R.Tensor((m, 2), dtype=\"float32\"), R.Tensor((m, 1), dtype=\"float32\"), "
            "R.Tensor((m * 4 + n * 4,), dtype=\"float32\"))");
  for (auto [n, m] : {std::pair<int64_t, int64_t>{3, 2}, {1, 5}}) {
    Tensor x = RandomTensor({n, 4}, DType::Float32(), 29 + n);
    Tensor y = RandomTensor({m, 4}, DType::Float32(), 30 + m);
    auto r = RunMain(src, {x, y});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape s;
    EXPECT_TRUE(AllClose(r->at(0), Concat({x, y, x}, {{n, 4}, {m, 4}, {n, 4}}, 0, &s), s));
    std::vector<double> xv = ToDoubles(x);
    EXPECT_TRUE(AllClose(r->at(1), Slab(x, {n * 4}, 0, 0, n * 2), {n * 2}));
    EXPECT_TRUE(AllClose(r->at(2), Slab(x, {n * 4}, 0, n * 2, n * 2), {n * 2}));
    EXPECT_TRUE(AllClose(r->at(3), Slab(x, {n, 4}, 0, 0, 1), {1, 4}));
    EXPECT_TRUE(AllClose(r->at(4), Slab(x, {n, 4}, 0, 1, n - 1), {n - 1, 4}));
    EXPECT_TRUE(AllClose(r->at(5), Slab(y, {m, 4}, 1, 0, 1), {m, 1}));
    EXPECT_TRUE(AllClose(r->at(6), Slab(y, {m, 4}, 1, 1, 2), {m, 2}));
    EXPECT_TRUE(AllClose(r->at(7), Slab(y, {m, 4}, 1, 3, 1), {m, 1}));
    std::vector<double> cat = xv, yv = ToDoubles(y);
    cat.insert(cat.end(), yv.begin(), yv.end());
    EXPECT_TRUE(AllClose(r->at(8), cat, {n * 4 + m * 4}));
  }
}

// A split of an odd symbolic extent in 2 sections: ceil(n / 2) and the rest.
TEST(OpConcatSplit, SymbolicSectionsOfAnyExtent) {
  std::string src = MultiOpModule({"x: R.Tensor((\"n\",), \"float32\")"},
                                  {"~R.split(x, indices_or_sections=2)", "r0[0]", "r0[1]"}, {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred, "R.Tuple(R.Tensor(((n + 1) // 2,), dtype=\"float32\"), R.Tensor((n - (n + 1) // 2,), dtype=\"float32\"))");
  for (int64_t n : {5, 4}) {
    Tensor x = RandomTensor({n}, DType::Float32(), 31 + n);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int64_t h = (n + 1) / 2;
    EXPECT_TRUE(AllClose(r->at(0), Slab(x, {n}, 0, 0, h), {h}));
    EXPECT_TRUE(AllClose(r->at(1), Slab(x, {n}, 0, h, n - h), {n - h}));
  }
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpConcatSplitError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpConcatSplitError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "y: R.Tensor((2, 4), \"float16\")",
                                   "z: R.Tensor((2, 3, 1), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")",
                                   "w: R.Tensor(\"float32\")"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.concat(x, axis=0)", StatusCode::kInvalidArgument,
     "R.concat: expects a tuple of tensors, as in R.concat((a, b), axis=0), got R.Tensor((2, 3), \"float32\")"},
    {"R.concat((), axis=0)", StatusCode::kInvalidArgument, "R.concat: needs at least one tensor"},
    {"R.concat((x, R.shape([1])), axis=0)", StatusCode::kInvalidArgument,
     "R.concat: field 1 of the tuple is R.Shape((1,)), not a tensor"},
    {"R.concat((x, y), axis=1)", StatusCode::kInvalidArgument,
     "R.concat: tensors have different dtypes: float32 and float16 (field 1)"},
    {"R.concat((x, z), axis=1)", StatusCode::kInvalidArgument,
     "R.concat: tensors have different ranks: 2 and 3 (field 1)"},
    {"R.concat((x, x), axis=2)", StatusCode::kInvalidArgument, "R.concat: axis 2 is out of range for rank 2"},
    {"R.concat((x, R.permute_dims(x)), axis=1)", StatusCode::kInvalidArgument,
     "R.concat: shapes (2, 3) and (3, 2) (field 1) differ in dimension 0, which is not the concat axis 1"},
    {"R.concat((x, x), axis=None)", StatusCode::kInvalidArgument,
     "R.concat: axis=None concatenates 1-D tensors, got rank 2"},
    {"R.concat((x, x), axis=\"a\")", StatusCode::kInvalidArgument, "R.concat: axis must be an integer"},
    {"R.concat((x, x), 0, 1)", StatusCode::kInvalidArgument, "R.concat: takes 1 to 2 arguments, got 3"},
    {"R.concat((u, x), axis=0)", StatusCode::kUnimplemented,
     "R.concat: legalization needs a result of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"R.split(x, indices_or_sections=0)", StatusCode::kInvalidArgument,
     "R.split: the number of sections must be >= 1, got 0"},
    {"R.split(x, indices_or_sections=4, axis=0)", StatusCode::kInvalidArgument,
     "R.split: cannot split dimension 2 into 4 sections"},
    {"R.split(x, indices_or_sections=\"a\")", StatusCode::kInvalidArgument,
     "R.split: indices_or_sections must be an integer or a list of integers"},
    {"R.split(x)", StatusCode::kInvalidArgument, "R.split: indices_or_sections is required"},
    {"R.split(x, 2, axis=-3)", StatusCode::kInvalidArgument, "R.split: axis -3 is out of range for rank 2"},
    {"R.split(w, 2)", StatusCode::kInvalidArgument, "R.split: needs a tensor of known rank"},
    {"R.split(u, 2)", StatusCode::kUnimplemented,
     "R.split: legalization needs argument 0 of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
};

INSTANTIATE_TEST_SUITE_P(All, OpConcatSplitError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
