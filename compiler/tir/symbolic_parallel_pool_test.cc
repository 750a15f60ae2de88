// A symbolic-batch max_pool2d compiled for two threads through the driver:
// SpreadSymbolicParallel (symbolic_parallel.h) fuses its batch and channel
// loops, so batch 1 splits across the threads, and the kernel computes the
// same numbers at batches 1 and 3 (VM against a reference in the test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"
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

// SPPF's 5 x 5 / 1 max pool with padding 2 on x[n, 6, "h", "w"] (YOLOv8,
// compiled once for every image size).
const char* kSppf = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6, "h", "w"), dtype="float32")) -> R.Tensor(dtype="float32", ndim=4):
        with R.dataflow():
            gv = R.nn.max_pool2d(x, pool_size=[5, 5], strides=[1, 1], padding=[2, 2, 2, 2])
            R.output(gv)
        return gv
)";

// Counts what the separable schedule writes: the row buffer, vectorized loops.
struct SeparableCensus : StmtExprVisitor {
  int row_buffers = 0, vectorized = 0;
  void VisitStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name.find("_window_rows") != std::string::npos)
      ++row_buffers;
    if (const auto* f = As<ForNode>(s); f != nullptr && f->for_kind == ForKind::kVectorized) ++vectorized;
    StmtExprVisitor::VisitStmt(s);
  }
};

TEST(SymbolicParallelPoolTest, SppfMaxPoolOverRunTimePlanesIsSeparable) {
  // Each output row: one row of X's width padded with -inf, V = max over
  // the 5 rows of the window (one vector loop to set it, one over the tap
  // rows unrolled), then the output row = max over the 5 column shifts of V
  // (one vector loop, its taps unrolled): 3 vectorized loops.
  for (int threads : {1, 2}) {
    driver::CompileOptions options;
    options.num_threads_hint = threads;
    PrimFunc f = test_util::LowerPrimFunc(kSppf, options, "max_pool2d");
    ASSERT_NE(f, nullptr);
    SeparableCensus census;
    census.VisitStmt(f->body);
    EXPECT_EQ(census.row_buffers, 1) << Print(f);
    EXPECT_EQ(census.vectorized, 3) << Print(f);

    auto mod = test_util::CompileAndLoad(kSppf, options, threads);
    ASSERT_NE(mod, nullptr);
    const int64_t c = 6;
    // Planes narrower and shorter than the window, odd sizes, rows around
    // one 8- and 16-lane vector, nudenet's 10 x 10 and 20 x 20; a batch of 2.
    const std::vector<std::vector<int64_t>> sizes = {{1, 1, 1}, {1, 2, 3}, {1, 5, 4}, {2, 7, 9},
                                                     {1, 10, 10}, {1, 13, 17}, {2, 20, 20}, {1, 6, 33}};
    for (const auto& size : sizes) {
      const int64_t n = size[0], h = size[1], w = size[2];
      SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) + " h " + std::to_string(h) +
                   " w " + std::to_string(w));
      std::vector<float> x = test_util::RandomFloats(n * c * h * w, 7 + h * 31 + w);
      // A NaN propagates to every output whose window holds it.
      if (h * w > 3) x[3] = std::numeric_limits<float>::quiet_NaN();
      Result<Tensor> out = test_util::InvokeMain(*mod, {test_util::FloatTensor({n, c, h, w}, x)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, c, h, w}));
      const float* got = out->data<float>();
      int bad = 0;
      for (int64_t p = 0; p < n * c; ++p)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t xo = 0; xo < w; ++xo) {
            float want = -std::numeric_limits<float>::infinity();
            bool nan = false;
            for (int64_t a = std::max<int64_t>(0, y - 2); a < std::min(h, y + 3); ++a)
              for (int64_t b = std::max<int64_t>(0, xo - 2); b < std::min(w, xo + 3); ++b) {
                const float v = x[(p * h + a) * w + b];
                nan |= std::isnan(v);
                want = std::max(want, v);
              }
            const float g = got[(p * h + y) * w + xo];
            const bool ok = nan ? std::isnan(g) : g == want;
            if (!ok && bad++ < 5)
              ADD_FAILURE() << "plane " << p << " y " << y << " x " << xo << ": got " << g << ", want "
                            << (nan ? std::numeric_limits<float>::quiet_NaN() : want);
          }
      EXPECT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
