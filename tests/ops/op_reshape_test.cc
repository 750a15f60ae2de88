// reshape (-1 and 0), flatten, squeeze, expand_dims, broadcast_to: results
// against plain C++ references, symbolic shapes, and every error message.
#include <gtest/gtest.h>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

TEST(OpReshape, StaticFamilyMatchesReference) {
  Tensor x = RandomTensor({2, 3, 4}, DType::Float32(), 11);
  Tensor y = RandomTensor({1, 3, 1}, DType::Float32(), 12);
  auto r = RunMain(MultiOpModule({"x: " + TensorType({2, 3, 4}), "y: " + TensorType({1, 3, 1})},
                                 {"R.reshape(x, R.shape([4, -1]))", "R.reshape(x, R.shape([0, 12]))",
                                  "R.reshape(x, (6, 1, 4))", "R.flatten(x)", "R.squeeze(y)",
                                  "R.squeeze(y, axis=[-1])", "R.expand_dims(x, axis=[0, -1])",
                                  "R.broadcast_to(y, R.shape([2, 4, 3, 5]))", "R.reshape(y, R.shape([-1]))",
                                  "R.expand_dims(y, axis=1)"}),
                   {x, y});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 10u);
  EXPECT_TRUE(AllClose(r->at(0), Same(x), {4, 6}));
  EXPECT_TRUE(AllClose(r->at(1), Same(x), {2, 12}));
  EXPECT_TRUE(AllClose(r->at(2), Same(x), {6, 1, 4}));
  EXPECT_TRUE(AllClose(r->at(3), Same(x), {24}));
  EXPECT_TRUE(AllClose(r->at(4), Same(y), {3}));
  EXPECT_TRUE(AllClose(r->at(5), Same(y), {1, 3}));
  EXPECT_TRUE(AllClose(r->at(6), Same(x), {1, 2, 3, 4, 1}));
  std::vector<double> yv = ToDoubles(y), want;
  Shape bshape{2, 4, 3, 5};
  ForEachIndex(bshape, [&](const Shape& i) { want.push_back(yv[BroadcastOffset({1, 3, 1}, i)]); });
  EXPECT_TRUE(AllClose(r->at(7), want, bshape));
  EXPECT_TRUE(AllClose(r->at(8), Same(y), {3}));
  EXPECT_TRUE(AllClose(r->at(9), Same(y), {1, 1, 3, 1}));
}

// The index arithmetic of a reshape that regroups dimensions, checked element
// by element through a transpose in between (so order matters).
TEST(OpReshape, RegroupAfterTransposeMatchesReference) {
  Tensor x = RandomTensor({4, 6}, DType::Float32(), 13);
  auto r = RunMain(MultiOpModule({"x: " + TensorType({4, 6})},
                                 {"R.reshape(R.permute_dims(x), R.shape([3, 2, 2, 2]))"}),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> xv = ToDoubles(x), want;
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i) want.push_back(xv[i * 6 + j]);
  EXPECT_TRUE(AllClose(r->at(0), want, {3, 2, 2, 2}));
}

TEST(OpReshape, HalfAndIntegerTypes) {
  Tensor h = RandomTensor({3, 4}, DType{kDLFloat, 16, 1}, 14);
  Tensor i = RandomTensor({2, 1}, DType{kDLInt, 32, 1}, 15, -100, 100);
  Tensor l = RandomTensor({5}, DType::Int64(), 16, -100, 100);
  auto r = RunMain(MultiOpModule({"h: " + TensorType({3, 4}, "float16"), "i: " + TensorType({2, 1}, "int32"),
                                  "l: " + TensorType({5}, "int64")},
                                 {"R.reshape(h, R.shape([2, 3, 2]))", "R.broadcast_to(i, R.shape([3, 2, 4]))",
                                  "R.expand_dims(l, axis=[0])", "R.flatten(h)"}),
                   {h, i, l});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).dtype(), (DType{kDLFloat, 16, 1}));
  EXPECT_TRUE(AllClose(r->at(0), Same(h), {2, 3, 2}, 0, 0));
  std::vector<double> iv = ToDoubles(i), want;
  ForEachIndex({3, 2, 4}, [&](const Shape& k) { want.push_back(iv[BroadcastOffset({2, 1}, k)]); });
  EXPECT_TRUE(AllClose(r->at(1), want, {3, 2, 4}, 0, 0));
  EXPECT_TRUE(AllClose(r->at(2), Same(l), {1, 5}, 0, 0));
  EXPECT_TRUE(AllClose(r->at(3), Same(h), {12}, 0, 0));
}

TEST(OpReshape, SymbolicShapesInferAndRun) {
  std::string src = MultiOpModule(
      {"x: R.Tensor((\"n\", 2, 2), \"float32\")"},
      {"R.reshape(x, R.shape([-1]))", "R.reshape(R.reshape(x, R.shape([-1])), R.shape([n, 4]))", "R.flatten(x)",
       "R.squeeze(R.expand_dims(x, axis=[1, 3]), axis=[1])", "R.reshape(x, R.shape([0, 4]))",
       "R.broadcast_to(R.reshape(x, R.shape([n, 1, 4])), R.shape([n, 3, 4]))"},
      {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((n * 4,), dtype=\"float32\"), R.Tensor((n, 4), dtype=\"float32\"), "
            "R.Tensor((n * 4,), dtype=\"float32\"), R.Tensor((n, 2, 1, 2), dtype=\"float32\"), "
            "R.Tensor((n, 4), dtype=\"float32\"), R.Tensor((n, 3, 4), dtype=\"float32\"))");
  for (int64_t n : {3, 1}) {
    Tensor x = RandomTensor({n, 2, 2}, DType::Float32(), 17 + n);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), Same(x), {n * 4}));
    EXPECT_TRUE(AllClose(r->at(1), Same(x), {n, 4}));
    EXPECT_TRUE(AllClose(r->at(2), Same(x), {n * 4}));
    EXPECT_TRUE(AllClose(r->at(3), Same(x), {n, 2, 1, 2}));
    EXPECT_TRUE(AllClose(r->at(4), Same(x), {n, 4}));
    std::vector<double> xv = ToDoubles(x), want;
    ForEachIndex({n, 3, 4}, [&](const Shape& i) { want.push_back(xv[i[0] * 4 + i[2]]); });
    EXPECT_TRUE(AllClose(r->at(5), want, {n, 3, 4}));
  }
}

// Shapes known only by rank stay so; an unknown-rank squeeze gives R.Tensor.
TEST(OpReshape, PartialStructInfo) {
  std::string src = MultiOpModule({"x: R.Tensor(ndim=3, dtype=\"float32\")", "s: R.Shape(ndim=2)"},
                                  {"R.reshape(x, s)", "R.reshape(x, R.shape([-1, 2]))", "R.flatten(x)",
                                   "R.squeeze(x, axis=[0])", "R.expand_dims(x, axis=[0])", "R.squeeze(x)"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor(ndim=2, dtype=\"float32\"), R.Tensor(ndim=2, dtype=\"float32\"), "
            "R.Tensor(ndim=1, dtype=\"float32\"), R.Tensor(ndim=2, dtype=\"float32\"), "
            "R.Tensor(ndim=4, dtype=\"float32\"), R.Tensor(dtype=\"float32\"))");
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpReshapeError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpReshapeError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3, 4), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")",
                                   "m: R.Tensor((\"n\", 5), \"float32\")", "s: R.Shape(ndim=2)"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.reshape(x)", StatusCode::kInvalidArgument, "R.reshape: takes 2 arguments, got 1"},
    {"R.reshape(x, R.shape([5, 5]))", StatusCode::kInvalidArgument,
     "R.reshape: cannot reshape (2, 3, 4) (24 elements) to (5, 5) (25 elements)"},
    {"R.reshape(x, R.shape([-1, -1]))", StatusCode::kInvalidArgument,
     "R.reshape: at most one dimension of the new shape may be -1"},
    {"R.reshape(x, R.shape([-2, 12]))", StatusCode::kInvalidArgument,
     "R.reshape: dimension 0 of the new shape is -2; dimensions are >= 1, or -1 (inferred) or 0 (copied)"},
    {"R.reshape(x, R.shape([6, 1, 1, 0]))", StatusCode::kInvalidArgument,
     "R.reshape: dimension 3 of the new shape is 0 (copy) but the input (2, 3, 4) has rank 3"},
    {"R.reshape(x, R.shape([5, -1]))", StatusCode::kInvalidArgument,
     "R.reshape: cannot reshape (2, 3, 4) (24 elements) to (5, -1): 24 is not a multiple of 5"},
    {"R.reshape(x, \"a\")", StatusCode::kInvalidArgument,
     "R.reshape: the target shape must be R.shape([...]) or a tuple of integers, got R.Object"},
    {"R.reshape(x, (2, \"a\"))", StatusCode::kInvalidArgument,
     "R.reshape: the target shape must hold integers, as in R.shape([2, n])"},
    {"R.reshape(R.shape([2]), R.shape([2]))", StatusCode::kInvalidArgument,
     "R.reshape: argument 0 must be a tensor, got R.Shape((2,))"},
    {"R.reshape(x, s)", StatusCode::kUnimplemented,
     "R.reshape: legalization needs a result of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"R.reshape(u, R.shape([4, 4]))", StatusCode::kUnimplemented,
     "R.reshape: legalization needs argument 0 of known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"R.flatten(x, x)", StatusCode::kInvalidArgument, "R.flatten: takes 1 arguments, got 2"},
    {"R.squeeze(x, axis=[1])", StatusCode::kInvalidArgument, "R.squeeze: dimension 1 of (2, 3, 4) is 3, not 1"},
    {"R.squeeze(x, axis=[3])", StatusCode::kInvalidArgument, "R.squeeze: axis 3 is out of range for rank 3"},
    {"R.squeeze(x, axis=[-4])", StatusCode::kInvalidArgument, "R.squeeze: axis -4 is out of range for rank 3"},
    {"R.squeeze(x, axis=\"a\")", StatusCode::kInvalidArgument,
     "R.squeeze: axis must be an integer or a list of integers"},
    {"R.squeeze(x, (0, \"a\"))", StatusCode::kInvalidArgument,
     "R.squeeze: axis (argument 1) must be a tuple of constant integers"},
    {"R.expand_dims(x)", StatusCode::kInvalidArgument, "R.expand_dims: axis is required, as in axis=[0]"},
    {"R.expand_dims(x, axis=[0, 0])", StatusCode::kInvalidArgument, "R.expand_dims: axis 0 is given more than once"},
    {"R.expand_dims(x, axis=[5])", StatusCode::kInvalidArgument, "R.expand_dims: axis 5 is out of range for rank 4"},
    {"R.broadcast_to(x, R.shape([3, 4]))", StatusCode::kInvalidArgument,
     "R.broadcast_to: cannot broadcast rank 3 to the lower rank 2 of (3, 4)"},
    {"R.broadcast_to(x, R.shape([2, 2, 4]))", StatusCode::kInvalidArgument,
     "R.broadcast_to: cannot broadcast (2, 3, 4) to (2, 2, 4): dimension 1 is 3, not 1 or 2"},
    {"R.broadcast_to(m, R.shape([7, 2, 6]))", StatusCode::kInvalidArgument,
     "R.broadcast_to: cannot broadcast (n, 5) to (7, 2, 6): dimension 1 is 5, not 1 or 6"},
};

INSTANTIATE_TEST_SUITE_P(All, OpReshapeError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
