// if/else parsed from text compiles and runs: each branch is taken for the
// matching condition (a 0-d bool tensor, and an R.Prim("bool") value), with
// branch-local names, a nested if and a dataflow block before the if.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

const char* kSource = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        if c:
            gv = R.add(x, x)
            y: R.Tensor((n, 4), dtype="float32") = gv
        else:
            gv = R.multiply(x, x)
            y: R.Tensor((n, 4), dtype="float32") = R.nn.relu(gv)
        return y

    @R.function
    def nested(c: R.Prim("bool"), d: R.Prim("bool"), x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        with R.dataflow():
            lv = R.multiply(x, x)
            R.output(lv)
        if c:
            z = R.add(lv, x)
        else:
            if d:
                w = R.subtract(lv, x)
            else:
                w = x
            z = R.multiply(w, w)
        return z
)";

Tensor Bool0d(bool v) {
  Tensor t = Tensor::Empty(Span<const int64_t>(), DType::Bool()).value();
  *t.data<uint8_t>() = v ? 1 : 0;
  return t;
}

TEST(RelaxIfE2E, TensorConditionTakesEachBranch) {
  auto module = CompileAndLoad(kSource, "if.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  for (int64_t n : {1, 3}) {
    Tensor x = RandomTensor({n, 4}, 7 + n);
    for (bool c : {true, false}) {
      Any result;
      std::vector<Any> args = {Bool0d(c), x};
      Status s = ctx->Invoke("main", args, &result);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE(result.is_tensor());
      const Tensor& y = result.tensor();
      ASSERT_EQ(y.NumElements(), n * 4);
      for (int64_t i = 0; i < n * 4; ++i) {
        float v = x.data<float>()[i];
        float want = c ? v + v : v * v;  // v * v >= 0: relu keeps it
        EXPECT_FLOAT_EQ(y.data<float>()[i], want) << "c=" << c << " i=" << i;
      }
    }
  }
}

TEST(RelaxIfE2E, PrimConditionsAndNestedIf) {
  auto module = CompileAndLoad(kSource, "if.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  Tensor x = RandomTensor({2}, 3);
  for (bool c : {true, false})
    for (bool d : {true, false}) {
      Any result;
      std::vector<Any> args = {Any(c), Any(d), x};
      Status s = ctx->Invoke("nested", args, &result);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE(result.is_tensor());
      for (int64_t i = 0; i < 2; ++i) {
        float v = x.data<float>()[i], e = v * v;
        float w = d ? e - v : v;
        float want = c ? e + v : w * w;
        EXPECT_NEAR(result.tensor().data<float>()[i], want, 1e-5f) << "c=" << c << " d=" << d;
      }
    }
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
