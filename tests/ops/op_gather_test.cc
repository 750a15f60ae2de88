// take, gather_elements and gather_nd: int32/int64 indices (negative ones count from the
// end), modes wrap/clip, scalar and 2-D index tensors, symbolic shapes, and
// every error, against plain C++ references.
#include <gtest/gtest.h>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

// numpy.take(x, idx, axis) after mapping each index by `fix`.
std::vector<double> TakeRef(const Tensor& x, const Shape& xs, const Tensor& ind, const Shape& is, int axis,
                            const std::function<int64_t(int64_t, int64_t)>& fix, Shape* out) {
  out->assign(xs.begin(), xs.begin() + axis);
  out->insert(out->end(), is.begin(), is.end());
  out->insert(out->end(), xs.begin() + axis + 1, xs.end());
  std::vector<double> xv = ToDoubles(x), iv = ToDoubles(ind), want;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape ii(i.begin() + axis, i.begin() + axis + is.size());
    Shape j(i.begin(), i.begin() + axis);
    j.push_back(fix(static_cast<int64_t>(iv[Offset(is, ii)]), xs[axis]));
    j.insert(j.end(), i.begin() + axis + is.size(), i.end());
    want.push_back(xv[Offset(xs, j)]);
  });
  return want;
}

int64_t Numpy(int64_t v, int64_t d) { return v < 0 ? v + d : v; }
int64_t Wrap(int64_t v, int64_t d) { return ((v % d) + d) % d; }
int64_t Clip(int64_t v, int64_t d) { return v < 0 ? 0 : (v >= d ? d - 1 : v); }

TEST(OpTake, MatchesReference) {
  Shape xs{4, 1, 3};
  Tensor x = RandomTensor(xs, DType::Float32(), 51);
  Tensor i32 = MakeTensor({5}, DType{kDLInt, 32, 1}, {0, 3, -1, 2, -4});
  Tensor i64 = MakeTensor({2, 2}, DType::Int64(), {2, 0, -3, 1});
  Tensor far = MakeTensor({4}, DType::Int64(), {5, -7, 2, 9});
  Tensor scalar = MakeTensor({}, DType::Int64(), {-2});
  auto r = RunMain(
      MultiOpModule({"x: " + TensorType(xs), "i32: " + TensorType({5}, "int32"), "i64: " + TensorType({2, 2}, "int64"),
                     "far: " + TensorType({4}, "int64"), "s: R.Tensor((), \"int64\")"},
                    {"R.take(x, i32, axis=0)", "R.take(x, i64, axis=-1)", "R.take(x, far, axis=2, mode=\"wrap\")",
                     "R.take(x, far, axis=0, mode=\"clip\")", "R.take(x, s, axis=2)",
                     "R.take(R.flatten(x), i64)", "R.take(x, i32, 1, mode=\"clip\")"}),
      {x, i32, i64, far, scalar});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape out;
  EXPECT_TRUE(AllClose(r->at(0), TakeRef(x, xs, i32, {5}, 0, Numpy, &out), out));
  EXPECT_TRUE(AllClose(r->at(1), TakeRef(x, xs, i64, {2, 2}, 2, Numpy, &out), out));
  EXPECT_TRUE(AllClose(r->at(2), TakeRef(x, xs, far, {4}, 2, Wrap, &out), out));
  EXPECT_TRUE(AllClose(r->at(3), TakeRef(x, xs, far, {4}, 0, Clip, &out), out));
  EXPECT_TRUE(AllClose(r->at(4), TakeRef(x, xs, scalar, {}, 2, Numpy, &out), out));
  EXPECT_TRUE(AllClose(r->at(5), TakeRef(x, {12}, i64, {2, 2}, 0, Numpy, &out), out));
  EXPECT_TRUE(AllClose(r->at(6), TakeRef(x, xs, i32, {5}, 1, Clip, &out), out));
}

// Embedding lookup: rows of a float16 / int8 table by symbolic-length ids.
TEST(OpTake, EmbeddingWithSymbolicLength) {
  std::string src = MultiOpModule({"w: R.Tensor((6, 4), \"float16\")", "b: R.Tensor((6,), \"int8\")",
                                   "ids: R.Tensor((\"n\",), \"int32\")"},
                                  {"R.take(w, ids, axis=0)", "R.take(b, ids, axis=0)"}, {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred, "R.Tuple(R.Tensor((n, 4), dtype=\"float16\"), R.Tensor((n,), dtype=\"int8\"))");
  Tensor w = RandomTensor({6, 4}, DType{kDLFloat, 16, 1}, 52);
  Tensor b = RandomTensor({6}, DType{kDLInt, 8, 1}, 53, -100, 100);
  for (int64_t n : {3, 1}) {
    Tensor ids = RandomTensor({n}, DType{kDLInt, 32, 1}, 54 + n, -6, 6);
    auto r = RunMain(src, {w, b, ids});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape out;
    EXPECT_TRUE(AllClose(r->at(0), TakeRef(w, {6, 4}, ids, {n}, 0, Numpy, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(1), TakeRef(b, {6}, ids, {n}, 0, Numpy, &out), out, 0, 0));
  }
}

TEST(OpGatherElements, MatchesReference) {
  Shape xs{3, 4};
  Tensor x = RandomTensor(xs, DType::Float32(), 55);
  Tensor i0 = RandomTensor({2, 4}, DType::Int64(), 56, -3, 3);   // along axis 0
  Tensor i1 = RandomTensor({3, 5}, DType{kDLInt, 32, 1}, 57, -4, 4);  // along axis -1
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs), "i0: " + TensorType({2, 4}, "int64"),
                                  "i1: " + TensorType({3, 5}, "int32")},
                                 {"R.gather_elements(x, i0)", "R.gather_elements(x, i1, axis=-1)"}),
                   {x, i0, i1});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> xv = ToDoubles(x);
  for (int k = 0; k < 2; ++k) {
    const Tensor& ind = k == 0 ? i0 : i1;
    Shape is = k == 0 ? Shape{2, 4} : Shape{3, 5};
    std::vector<double> iv = ToDoubles(ind), want;
    ForEachIndex(is, [&](const Shape& i) {
      Shape j = i;
      j[k] = Numpy(static_cast<int64_t>(iv[Offset(is, i)]), xs[k]);
      want.push_back(xv[Offset(xs, j)]);
    });
    EXPECT_TRUE(AllClose(r->at(k), want, is)) << k;
  }
}

// ONNX's GatherND: index tuples on the last axis of the indices, after
// batch_dims shared leading axes.
std::vector<double> GatherNdRef(const Tensor& x, const Shape& xs, const Tensor& ind, const Shape& is, int batch,
                                Shape* out) {
  int64_t k = is.back();
  out->assign(is.begin(), is.end() - 1);
  out->insert(out->end(), xs.begin() + batch + k, xs.end());
  std::vector<double> xv = ToDoubles(x), iv = ToDoubles(ind), want;
  int q = static_cast<int>(is.size()) - 1;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape j(i.begin(), i.begin() + batch);
    Shape at(i.begin(), i.begin() + q);
    at.push_back(0);
    for (int64_t t = 0; t < k; ++t) {
      at.back() = t;
      j.push_back(Numpy(static_cast<int64_t>(iv[Offset(is, at)]), xs[static_cast<size_t>(batch + t)]));
    }
    j.insert(j.end(), i.begin() + q, i.end());
    want.push_back(xv[Offset(xs, j)]);
  });
  return want;
}

TEST(OpGatherNd, MatchesReference) {
  Shape xs{2, 3, 4};
  Tensor x = RandomTensor(xs, DType::Float32(), 61);
  Tensor pairs = RandomTensor({5, 2}, DType{kDLInt, 32, 1}, 62, -2, 2);  // (5, 4)
  Tensor whole = RandomTensor({2, 2, 3}, DType::Int64(), 63, -2, 2);     // (2, 2) scalars
  Tensor rows = RandomTensor({2, 3, 1}, DType::Int64(), 64, -3, 3);      // batch_dims=1: (2, 3, 4)
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs), "p: " + TensorType({5, 2}, "int32"),
                                  "w: " + TensorType({2, 2, 3}, "int64"), "r: " + TensorType({2, 3, 1}, "int64")},
                                 {"R.gather_nd(x, p)", "R.gather_nd(x, w)", "R.gather_nd(x, r, batch_dims=1)"}),
                   {x, pairs, whole, rows});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape out;
  EXPECT_TRUE(AllClose(r->at(0), GatherNdRef(x, xs, pairs, {5, 2}, 0, &out), out));
  EXPECT_TRUE(AllClose(r->at(1), GatherNdRef(x, xs, whole, {2, 2, 3}, 0, &out), out));
  EXPECT_TRUE(AllClose(r->at(2), GatherNdRef(x, xs, rows, {2, 3, 1}, 1, &out), out));
}

TEST(OpGatherNd, IndexTupleLengthMustBeStatic) {
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "i: R.Tensor((4, \"k\"), \"int64\")"},
                                  {"R.gather_nd(x, i)"}, {"k"});
  Status s = NormalizeAndLegalize(src);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("R.gather_nd: the last dimension of indices must be static"), std::string::npos)
      << s.ToString();
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpGatherError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpGatherError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "i: R.Tensor((4,), \"int64\")",
                                   "f: R.Tensor((4,), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.take(x, f, axis=0)", StatusCode::kInvalidArgument, "R.take: indices must be an integer tensor, got float32"},
    {"R.take(x, i)", StatusCode::kInvalidArgument, "R.take: axis=None needs a 1-D tensor, got rank 2"},
    {"R.take(x, i, axis=2)", StatusCode::kInvalidArgument, "R.take: axis 2 is out of range for rank 2"},
    {"R.take(x, i, axis=0, mode=\"nearest\")", StatusCode::kInvalidArgument,
     "R.take: mode must be \"fast\", \"wrap\" or \"clip\", got \"nearest\""},
    {"R.take(x, R.shape([1]), axis=0)", StatusCode::kInvalidArgument,
     "R.take: argument 1 must be a tensor, got R.Shape((1,))"},
    {"R.take(x)", StatusCode::kInvalidArgument, "R.take: takes 2 to 3 arguments, got 1"},
    {"R.take(u, i, axis=0)", StatusCode::kUnimplemented,
     "R.take: legalization needs argument 0 of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"R.gather_elements(x, i)", StatusCode::kInvalidArgument,
     "R.gather_elements: x and indices must have the same rank, got 2 and 1"},
    {"R.gather_elements(x, f)", StatusCode::kInvalidArgument,
     "R.gather_elements: indices must be an integer tensor, got float32"},
    {"R.gather_elements(x, R.reshape(i, R.shape([2, 2])), axis=-3)", StatusCode::kInvalidArgument,
     "R.gather_elements: axis -3 is out of range for rank 2"},
    {"R.gather_nd(x, R.reshape(i, R.shape([2, 2])), batch_dims=2)", StatusCode::kInvalidArgument,
     "R.gather_nd: batch_dims must lie in [0, 2), got 2"},
    {"R.gather_nd(x, R.reshape(i, R.shape([1, 4])))", StatusCode::kInvalidArgument,
     "R.gather_nd: index tuples of length 4 after 0 batch axes do not fit x of rank 2"},
    {"R.gather_nd(x, f)", StatusCode::kInvalidArgument, "R.gather_nd: indices must be an integer tensor, got float32"},
};

INSTANTIATE_TEST_SUITE_P(All, OpGatherError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
