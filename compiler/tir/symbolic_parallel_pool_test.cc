// A symbolic-batch max_pool2d compiled for two threads through the driver:
// SpreadSymbolicParallel (symbolic_parallel.h) fuses its batch and channel
// loops, so batch 1 splits across the threads, and the kernel computes the
// same numbers at batches 1 and 3 (VM against a reference in the test).
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
using testing::Print;

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

TEST(SymbolicParallelPoolTest, SymbolicBatchPoolSplitsAtBatchOne) {
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
