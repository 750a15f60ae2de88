// relax.nn.dropout (inference) and relax.nn.pad (constant, reflect, edge)
// against plain C++ references; every error message of op_nn_misc.cc.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/ops/op_shape_test_util.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

TEST(OpNnMisc, DropoutIsIdentityWithFullMask) {
  Tensor x = RandomTensor({2, 1, 3}, DType::Float32(), 1);
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 1, 3})}, "R.nn.dropout(x, rate=0.25)"), {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE(AllClose(r->at(0), ToDoubles(x), {2, 1, 3}, 0, 0));
  EXPECT_TRUE(AllClose(r->at(1), std::vector<double>(6, 1.0), {2, 1, 3}, 0, 0));
}

// numpy.pad on doubles.
std::vector<double> RefPad(const Shape& s, const std::vector<double>& v, const std::vector<int64_t>& w,
                           const std::string& mode, double value, Shape* os) {
  os->clear();
  for (size_t d = 0; d < s.size(); ++d) os->push_back(s[d] + w[2 * d] + w[2 * d + 1]);
  std::vector<double> out;
  ForEachIndex(*os, [&](const Shape& i) {
    Shape j(s.size());
    bool inside = true;
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t k = i[d] - w[2 * d], n = s[d];
      if (k < 0 || k >= n) {
        inside = false;
        if (mode == "edge") k = std::min(std::max<int64_t>(k, 0), n - 1);
        if (mode == "reflect") k = k < 0 ? -k : 2 * (n - 1) - k;
      }
      j[d] = k;
    }
    out.push_back(inside || mode != "constant" ? v[Offset(s, j)] : value);
  });
  return out;
}

TEST(OpNnMisc, PadModes) {
  struct Case {
    Shape s;
    std::vector<int64_t> w;
    std::string mode, attrs;
    double value;
  };
  for (const Case& c : {Case{{2, 3}, {1, 0, 2, 1}, "constant", "pad_value=1.5", 1.5},
                        Case{{2, 3}, {0, 1, 1, 1}, "constant", "", 0.0},
                        Case{{3, 4}, {2, 1, 3, 2}, "reflect", "pad_mode=\"reflect\"", 0.0},
                        Case{{1, 4}, {2, 0, 1, 3}, "edge", "pad_mode=\"edge\"", 0.0}}) {
    Tensor x = RandomTensor(c.s, DType::Float32(), 2);
    Shape os;
    std::vector<double> want = RefPad(c.s, ToDoubles(x), c.w, c.mode, c.value, &os);
    std::string w = "[";
    for (size_t k = 0; k < c.w.size(); ++k) w += (k ? ", " : "") + std::to_string(c.w[k]);
    std::string expr = "R.nn.pad(x, pad_width=" + w + "]" + (c.attrs.empty() ? "" : ", " + c.attrs) + ")";
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.s)}, expr), {x});
    ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 0, 0)) << expr;
  }
}

TEST(OpNnMisc, PadSymbolicAndInteger) {
  std::string src = OneOpModule({"x: R.Tensor((\"n\", 2), \"int32\")"}, "R.nn.pad(x, pad_width=[1, 1, 0, 2], pad_value=7)");
  for (int64_t n : {1, 4}) {
    Tensor x = RandomTensor({n, 2}, DType::Int32(), 3, -9, 9);
    Shape os;
    std::vector<double> want = RefPad({n, 2}, ToDoubles(x), {1, 1, 0, 2}, "constant", 7, &os);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 0, 0));
  }
}

// pad_width as an R.shape argument of symbolic values: (n, 3) padded to
// (n + n // 2 + 1, 5) in edge mode, the kernel taking n as a scalar.
TEST(OpNnMisc, PadBySymbolicWidths) {
  std::string src = MultiOpModule({"x: R.Tensor((\"n\", 3), \"float32\")"},
                                  {"R.nn.pad(x, R.shape([n // 2, 1, 1, 1]), pad_mode=\"edge\")"}, {"n"});
  auto inferred = InferredResult(src);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(*inferred, "R.Tensor((n + n // 2 + 1, 5), dtype=\"float32\")");
  for (int64_t n : {2, 5}) {
    Tensor x = RandomTensor({n, 3}, DType::Float32(), 11 + n);
    Shape os;
    std::vector<double> want = RefPad({n, 3}, ToDoubles(x), {n / 2, 1, 1, 1}, "edge", 0, &os);
    auto r = RunMain(src, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, os, 0, 0)) << n;
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpNnMiscError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({2, 3});
  ExpectOpError({x}, "R.nn.dropout(x, rate=1.0)", StatusCode::kInvalidArgument,
                "R.nn.dropout: rate must be in [0, 1), got 1.000000");
  ExpectOpError({x}, "R.nn.pad(x)", StatusCode::kInvalidArgument, "R.nn.pad: pad_width is required");
  ExpectOpError({x}, "R.nn.pad(x, pad_width=[1, 1])", StatusCode::kInvalidArgument,
                "R.nn.pad: pad_width has 2 values; a tensor of rank 2 needs 4 (before, after per axis)");
  ExpectOpError({x}, "R.nn.pad(x, pad_width=[1, 1, -1, 0])", StatusCode::kInvalidArgument,
                "R.nn.pad: pad_width must not be negative");
  ExpectOpError({x}, "R.nn.pad(x, pad_width=[0, 0, 3, 0], pad_mode=\"reflect\")", StatusCode::kInvalidArgument,
                "R.nn.pad: reflect padding of axis 1 must be smaller than its size 3");
  ExpectOpError({x}, "R.nn.pad(x, pad_width=[0, 0, 1, 0], pad_mode=\"wrap\")", StatusCode::kInvalidArgument,
                "R.nn.pad: pad_mode \"wrap\" is not supported (expected one of \"constant\", \"reflect\", \"edge\")");
  ExpectOpError({"e: " + TensorType({0, 3})}, "R.nn.pad(e, pad_width=[1, 0, 0, 0], pad_mode=\"edge\")",
                StatusCode::kInvalidArgument, "R.nn.pad: cannot edge-pad an empty axis 0");
  ExpectOpError({x}, "R.nn.pad(x, R.shape([0, 0, 1, 0]), pad_width=[0, 0, 1, 0])", StatusCode::kInvalidArgument,
                "R.nn.pad: pad_width is given both as an attribute and as an argument");
  ExpectOpError({x}, "R.nn.pad(x, x)", StatusCode::kInvalidArgument,
                "R.nn.pad: the pad_width argument must be R.shape([...])");
  ExpectOpError({x}, "R.nn.pad(x, R.shape([0, 0, 1, 0]), R.shape([0]))", StatusCode::kInvalidArgument,
                "R.nn.pad: takes the data and at most one pad_width argument");
  ExpectOpError({x}, "R.nn.pad(x, R.shape([0, 0, -1, 0]))", StatusCode::kInvalidArgument,
                "R.nn.pad: pad_width must not be negative");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
