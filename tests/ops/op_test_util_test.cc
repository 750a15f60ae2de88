// The operator-test harness on operators that existed before it (add with
// broadcasting, relu, matmul): the pattern every op_<family>_test.cc follows.
#include "tests/ops/op_test_util.h"

#include <algorithm>

namespace kiln {
namespace optest {
namespace {

TEST(OpTestUtil, BroadcastAddMatchesReference) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{2, 3}, {3}}, Case{{4, 1, 3}, {1, 5, 1}}, Case{{1}, {2, 2}}, Case{{3, 1}, {3, 1}}}) {
    Shape out = BroadcastShape(c.a, c.b);
    Tensor a = RandomTensor(c.a, DType::Float32(), 1);
    Tensor b = RandomTensor(c.b, DType::Float32(), 2);
    std::vector<double> av = ToDoubles(a), bv = ToDoubles(b), want;
    ForEachIndex(out, [&](const Shape& i) { want.push_back(av[BroadcastOffset(c.a, i)] + bv[BroadcastOffset(c.b, i)]); });
    auto r = RunMain(OneOpModule({"a: " + TensorType(c.a), "b: " + TensorType(c.b)}, "R.add(a, b)"), {a, b});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, out));
  }
}

TEST(OpTestUtil, ReluAndMatmul) {
  Tensor x = RandomTensor({3, 4}, DType::Float32(), 3);
  Tensor w = RandomTensor({4, 5}, DType::Float32(), 4);
  std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), want(15, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += xv[i * 4 + k] * wv[k * 5 + j];
      want[i * 5 + j] = std::max(s, 0.0);
    }
  auto r = RunMain(OneOpModule({"x: " + TensorType({3, 4}), "w: " + TensorType({4, 5})}, "R.nn.relu(R.matmul(x, w))"),
                   {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, {3, 5}));
}

TEST(OpTestUtil, AllCloseReportsDifferences) {
  Tensor t = MakeTensor({2}, DType::Float32(), {1.0, 2.0});
  EXPECT_TRUE(AllClose(t, {1.0, 2.0}, {2}));
  EXPECT_FALSE(AllClose(t, {1.0, 2.5}, {2}));
  EXPECT_FALSE(AllClose(t, {1.0, 2.0}, {1, 2}));
}

TEST(OpTestUtil, HalfRoundTripsThroughMakeTensor) {
  Tensor t = MakeTensor({3}, DType{kDLFloat, 16, 1}, {1.0, -0.5, 65504.0});
  EXPECT_EQ(ToDoubles(t), (std::vector<double>{1.0, -0.5, 65504.0}));
}

}  // namespace
}  // namespace optest
}  // namespace kiln
