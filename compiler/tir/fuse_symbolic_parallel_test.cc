// FuseSymbolicParallelLoops: a parallel loop of symbolic extent takes the
// static independent loops inside it (before/after TIR text); loops whose
// iterations share elements, static parallel loops and vectorized inner
// loops are left alone; and a symbolic-batch max_pool2d compiled for two
// threads fuses its batch and channel loops and computes the same numbers
// at batches 1 and 3 (driver + VM against a reference in the test).
#include "compiler/tir/fuse_symbolic_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;

// The first PrimFunc of `src` with the pass applied, printed.
std::string Fused(const std::string& src) {
  PrimFunc f = ParseFunc(src, "k");
  if (f == nullptr) return "(parse failed)";
  PrimFunc out = FuseSymbolicParallelLoops(f);
  return out.get() == f.get() ? "(unchanged)" : Print(out);
}

std::string Printed(const std::string& src) {
  PrimFunc f = ParseFunc(src, "k");
  return f == nullptr ? "(parse failed)" : Print(f);
}

TEST(FuseSymbolicParallelTest, BatchTakesTheChannelLoop) {
  // A pool over [N, 32, H, 64]: the batch loop takes c (32 < 64
  // iterations), not y (symbolic).
  const std::string before = R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    h = T.int64()
    A = T.match_buffer(a_handle, (n, 32, h, 256), "float32")
    B = T.match_buffer(b_handle, (n, 32, h, 64), "float32")
    for i in T.parallel(n):
        for c in range(T.int64(32)):
            for y in range(h):
                for x in range(T.int64(64)):
                    B[i, c, y, x] = T.max(A[i, c, y, x * 4], A[i, c, y, x * 4 + 1])
)";
  const std::string after = R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    h = T.int64()
    A = T.match_buffer(a_handle, (n, 32, h, 256), "float32")
    B = T.match_buffer(b_handle, (n, 32, h, 64), "float32")
    for i_fused in T.parallel(n * 32):
        i: T.int64 = i_fused // 32
        c: T.int64 = i_fused % 32
        for y in range(h):
            for x in range(T.int64(64)):
                B[i, c, y, x] = T.max(A[i, c, y, x * 4], A[i, c, y, x * 4 + 1])
)";
  EXPECT_EQ(Fused(before), Printed(after));
}

TEST(FuseSymbolicParallelTest, SmallLoopsAreTakenUntilEnoughIterations) {
  // 4 x 8 = 32 < 64: the third static loop is taken too (4 x 8 x 4 = 128).
  const std::string before = R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 4, 8, 4, 16), "float32")
    B = T.match_buffer(b_handle, (n, 4, 8, 4, 16), "float32")
    for i in T.parallel(n):
        for p in range(T.int64(4)):
            for q in range(T.int64(8)):
                for r in range(T.int64(4)):
                    for s in T.vectorized(T.int64(16)):
                        B[i, p, q, r, s] = A[i, p, q, r, s] * T.float32(2)
)";
  const std::string after = R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 4, 8, 4, 16), "float32")
    B = T.match_buffer(b_handle, (n, 4, 8, 4, 16), "float32")
    for i_fused in T.parallel(n * 128):
        i: T.int64 = i_fused // 128
        p: T.int64 = i_fused // 32 % 4
        q: T.int64 = i_fused // 4 % 8
        r: T.int64 = i_fused % 4
        for s in T.vectorized(T.int64(16)):
            B[i, p, q, r, s] = A[i, p, q, r, s] * T.float32(2)
)";
  EXPECT_EQ(Fused(before), Printed(after));
}

TEST(FuseSymbolicParallelTest, LoopsThatMayNotSplitAreLeftAlone) {
  // c accumulates into B[i, y]: iterations of c share elements.
  EXPECT_EQ(Fused(R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 8, 16), "float32")
    B = T.match_buffer(b_handle, (n, 16), "float32")
    for i in T.parallel(n):
        for c in range(T.int64(8)):
            for y in range(T.int64(16)):
                B[i, y] = B[i, y] + A[i, c, y]
)"),
            "(unchanged)");
  // A static parallel loop: the default schedule chose it knowing its extent.
  EXPECT_EQ(Fused(R"(
@T.prim_func
def k(A: T.Buffer((4, 8, 16), "float32"), B: T.Buffer((4, 8, 16), "float32")):
    for i in T.parallel(T.int64(4)):
        for c in range(T.int64(8)):
            for y in range(T.int64(16)):
                B[i, c, y] = A[i, c, y]
)"),
            "(unchanged)");
  // The loop inside is the innermost one: it stays a loop.
  EXPECT_EQ(Fused(R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 8), "float32")
    B = T.match_buffer(b_handle, (n, 8), "float32")
    for i in T.parallel(n):
        for c in range(T.int64(8)):
            B[i, c] = A[i, c] * T.float32(2)
)"),
            "(unchanged)");
  // The loop inside is vectorized (or symbolic): nothing static to take.
  EXPECT_EQ(Fused(R"(
@T.prim_func
def k(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 16), "float32")
    B = T.match_buffer(b_handle, (n, 16), "float32")
    for i in T.parallel(n):
        for y in T.vectorized(T.int64(16)):
            B[i, y] = A[i, y]
)"),
            "(unchanged)");
}

// max_pool2d (1 x 4, stride 4) on x[n, 8, "h", 16], as PLCMOS pools its
// spectrogram features.
const char* kPool = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8, "h", 16), dtype="float32")) -> R.Tensor(dtype="float32", ndim=4):
        with R.dataflow():
            gv = R.nn.max_pool2d(x, pool_size=[1, 4], strides=[1, 4])
            R.output(gv)
        return gv
)";

driver::CompileOptions TwoThreads() {
  driver::CompileOptions options;
  options.num_threads_hint = 2;
  return options;
}

TEST(FuseSymbolicParallelTest, SymbolicBatchPoolSplitsAtBatchOne) {
  PrimFunc f = test_util::LowerPrimFunc(kPool, TwoThreads(), "max_pool2d");
  ASSERT_NE(f, nullptr);
  const auto* loop = As<ForNode>(f->body);
  ASSERT_NE(loop, nullptr) << Print(f);
  EXPECT_EQ(loop->for_kind, ForKind::kParallel) << Print(f);
  EXPECT_NE(Print(f).find("T.parallel(n * 8)"), std::string::npos) << Print(f);

  auto mod = test_util::CompileAndLoad(kPool, TwoThreads(), 2);
  ASSERT_NE(mod, nullptr);
  const int64_t c = 8, w = 16, wo = 4;
  for (int64_t n : {1, 3}) {
    for (int64_t h : {1, 5}) {
      SCOPED_TRACE("n " + std::to_string(n) + " h " + std::to_string(h));
      std::vector<float> x = test_util::RandomFloats(n * c * h * w, 20 + n * h);
      Result<Tensor> out = test_util::InvokeMain(*mod, {test_util::FloatTensor({n, c, h, w}, x)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, c, h, wo}));
      const float* got = out->data<float>();
      int bad = 0;
      for (int64_t i = 0; i < n * c * h; ++i)
        for (int64_t xo = 0; xo < wo; ++xo) {
          const float* row = &x[i * w + xo * 4];
          float want = std::max(std::max(row[0], row[1]), std::max(row[2], row[3]));
          if (got[i * wo + xo] != want && bad++ < 5)
            ADD_FAILURE() << "row " << i << " x " << xo << ": got " << got[i * wo + xo] << ", want " << want;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
