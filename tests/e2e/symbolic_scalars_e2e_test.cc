// Kernels that take symbolic scalars (R.call_tir's tir_vars): a hand-written
// PrimFunc sized by (n + 31) // 32 * 32 and one scaling by n * 2 - 1, and
// operators on a tensor of length n * 2 - 1 whose kernels (fused) take n as a
// scalar because no buffer has it as a plain dimension. One compile, run at
// two values of n, checked against plain C++.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

const char kModule[] = R"(@I.ir_module
class Module:
    @T.prim_func
    def pad_to_32(A_handle: T.handle, B_handle: T.handle, m: T.int64):
        n = T.int64()
        A = T.match_buffer(A_handle, (n,), "float32")
        B = T.match_buffer(B_handle, (m,), "float32")
        for i in range(m):
            with T.block("B"):
                vi = T.axis.spatial(m, i)
                B[vi] = T.if_then_else(vi < n, A[vi], T.float32(0))

    @T.prim_func
    def scale(A_handle: T.handle, B_handle: T.handle, s: T.int64):
        n = T.int64()
        A = T.match_buffer(A_handle, (n,), "float32")
        B = T.match_buffer(B_handle, (n,), "float32")
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] * T.Cast("float32", s)

    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), y: R.Tensor(("n * 2 - 1",), dtype="float32")):
        n = T.int64()
        cls = Module
        p = R.call_tir(cls.pad_to_32, (x,), out_sinfo=R.Tensor(((n + 31) // 32 * 32,), dtype="float32"), tir_vars=R.shape([(n + 31) // 32 * 32]))
        q = R.call_tir(cls.scale, (x,), out_sinfo=R.Tensor((n,), dtype="float32"), tir_vars=R.shape([n * 2 - 1]))
        with R.dataflow():
            a = R.add(y, y)
            b = R.multiply(a, y)
            R.output(b)
        return (p, q, b)
)";

TEST(SymbolicScalarsE2E, KernelsTakeExpressionsOfSymbolsAtEveryShape) {
  for (bool fuse : {true, false}) {
    driver::CompileOptions options;
    options.fuse = fuse;
    auto module = CompileAndLoad(kModule, "scalars.relax", options);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    for (int64_t n : {5, 40}) {
      Tensor x = RandomTensor({n}, 1);
      Tensor y = RandomTensor({n * 2 - 1}, 2);
      auto ctx = (*module)->CreateContext();
      Any result;
      Status s = ctx->Invoke("main", {Any(x), Any(y)}, &result);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE(result.is_tuple());
      ASSERT_EQ(result.tuple_fields().size(), 3u);
      Tensor p = result.tuple_fields()[0].tensor();
      Tensor q = result.tuple_fields()[1].tensor();
      Tensor b = result.tuple_fields()[2].tensor();
      int64_t padded = (n + 31) / 32 * 32;
      ASSERT_EQ(p.shape(), std::vector<int64_t>{padded}) << n;
      for (int64_t i = 0; i < padded; ++i) {
        EXPECT_EQ(p.data<float>()[i], i < n ? x.data<float>()[i] : 0.0f) << "n=" << n << " i=" << i;
      }
      ASSERT_EQ(q.shape(), std::vector<int64_t>{n});
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_FLOAT_EQ(q.data<float>()[i], x.data<float>()[i] * static_cast<float>(n * 2 - 1)) << n;
      }
      ASSERT_EQ(b.shape(), std::vector<int64_t>{n * 2 - 1});
      for (int64_t i = 0; i < n * 2 - 1; ++i) {
        float v = y.data<float>()[i];
        EXPECT_FLOAT_EQ(b.data<float>()[i], (v + v) * v) << n;
      }
    }
    // y's length must be n * 2 - 1 for the n x gives.
    auto ctx = (*module)->CreateContext();
    Any result;
    Status s = ctx->Invoke("main", {Any(RandomTensor({4}, 1)), Any(RandomTensor({8}, 2))}, &result);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("main: argument y, dimension 0: expected 7"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
