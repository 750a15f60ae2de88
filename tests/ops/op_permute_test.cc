// permute_dims: every permutation of a rank-3 tensor with size-1 dims,
// axes=None, negative axes, symbolic and composite dimensions, float16 and
// integers, against a plain C++ reference; and every error.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

// out[i] = x[j] with j[axes[k]] = i[k].
std::vector<double> PermuteRef(const Tensor& x, const Shape& xs, const std::vector<int>& axes, Shape* out) {
  out->clear();
  for (int a : axes) out->push_back(xs[a]);
  std::vector<double> v = ToDoubles(x), want;
  ForEachIndex(*out, [&](const Shape& i) {
    Shape j(xs.size());
    for (size_t k = 0; k < axes.size(); ++k) j[axes[k]] = i[k];
    want.push_back(v[Offset(xs, j)]);
  });
  return want;
}

std::string AxesText(const std::vector<int>& axes) {
  std::string s = "[";
  for (size_t k = 0; k < axes.size(); ++k) s += (k ? ", " : "") + std::to_string(axes[k]);
  return s + "]";
}

TEST(OpPermute, AllPermutationsMatchReference) {
  Shape xs{2, 1, 3};
  Tensor x = RandomTensor(xs, DType::Float32(), 91);
  std::vector<std::vector<int>> perms;
  std::vector<int> p{0, 1, 2};
  do perms.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  std::vector<std::string> exprs;
  for (const auto& q : perms) exprs.push_back("R.permute_dims(x, axes=" + AxesText(q) + ")");
  exprs.push_back("R.permute_dims(x)");                   // reversed
  exprs.push_back("R.permute_dims(x, axes=[-1, 0, -2])");  // negative axes
  exprs.push_back("R.permute_dims(x, axes=None)");
  auto r = RunMain(MultiOpModule({"x: " + TensorType(xs)}, exprs), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), perms.size() + 3);
  Shape out;
  for (size_t k = 0; k < perms.size(); ++k) {
    EXPECT_TRUE(AllClose(r->at(k), PermuteRef(x, xs, perms[k], &out), out)) << exprs[k];
  }
  EXPECT_TRUE(AllClose(r->at(perms.size()), PermuteRef(x, xs, {2, 1, 0}, &out), out));
  EXPECT_TRUE(AllClose(r->at(perms.size() + 1), PermuteRef(x, xs, {2, 0, 1}, &out), out));
  EXPECT_TRUE(AllClose(r->at(perms.size() + 2), PermuteRef(x, xs, {2, 1, 0}, &out), out));
}

TEST(OpPermute, SymbolicHalfAndInteger) {
  std::string src = MultiOpModule(
      {"h: R.Tensor((\"n\", 3), \"float16\")", "i: R.Tensor((2, \"n\", 1), \"int64\")"},
      {"R.permute_dims(h)", "R.permute_dims(i, axes=[1, 2, 0])",
       "R.permute_dims(R.reshape(h, R.shape([n * 3])), axes=[0])",
       "R.permute_dims(R.reshape(h, R.shape([1, n * 3])))"},
      {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred,
            "R.Tuple(R.Tensor((3, n), dtype=\"float16\"), R.Tensor((n, 1, 2), dtype=\"int64\"), "
            "R.Tensor((n * 3,), dtype=\"float16\"), R.Tensor((n * 3, 1), dtype=\"float16\"))");
  for (int64_t n : {4, 1}) {
    Tensor h = RandomTensor({n, 3}, DType{kDLFloat, 16, 1}, 92 + n);
    Tensor i = RandomTensor({2, n, 1}, DType::Int64(), 93 + n, -1000, 1000);
    auto r = RunMain(src, {h, i});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Shape out;
    EXPECT_TRUE(AllClose(r->at(0), PermuteRef(h, {n, 3}, {1, 0}, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(1), PermuteRef(i, {2, n, 1}, {1, 2, 0}, &out), out, 0, 0));
    EXPECT_TRUE(AllClose(r->at(2), ToDoubles(h), {n * 3}, 0, 0));
    EXPECT_TRUE(AllClose(r->at(3), ToDoubles(h), {n * 3, 1}, 0, 0));
  }
}

struct ErrorCase {
  const char* expr;
  StatusCode code;
  const char* message;  // after "t.relax:6:18: "
};

class OpPermuteError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpPermuteError, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = MultiOpModule({"x: R.Tensor((2, 3), \"float32\")", "u: R.Tensor(ndim=2, dtype=\"float32\")"},
                                  {c.expr});
  EXPECT_TRUE(FailsWith(src, c.code, std::string("t.relax:6:18: ") + c.message)) << c.expr;
}

const ErrorCase kErrors[] = {
    {"R.permute_dims(R.shape([2]))", StatusCode::kInvalidArgument, "R.permute_dims expects a tensor"},
    {"R.permute_dims(x, axes=\"a\")", StatusCode::kInvalidArgument,
     "R.permute_dims: axes must be a list of integers or None"},
    {"R.permute_dims(x, axes=[0])", StatusCode::kInvalidArgument,
     "R.permute_dims: 1 axes given for a tensor of rank 2"},
    {"R.permute_dims(x, axes=[0, 0])", StatusCode::kInvalidArgument,
     "R.permute_dims: axes are not a permutation of 0..1"},
    {"R.permute_dims(x, axes=[0, 2])", StatusCode::kInvalidArgument,
     "R.permute_dims: axes are not a permutation of 0..1"},
    {"R.permute_dims(u)", StatusCode::kUnimplemented, "R.permute_dims: legalization needs known shapes"},
};

INSTANTIATE_TEST_SUITE_P(All, OpPermuteError, ::testing::ValuesIn(kErrors));

}  // namespace
}  // namespace optest
}  // namespace kiln
