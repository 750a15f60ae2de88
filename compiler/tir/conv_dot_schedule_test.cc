// ScheduleDotConvs on single-tap convolutions (conv_dot_schedule.h): a 1 x 1
// kernel on one output row of at most 8 points whose weight is not packed
// (an SE block's FC on a pooled [N, C, 1, 1], output channels that 8 does
// not divide): the reduction vectorized, serial when the product is small,
// and the numbers against a double-precision reference at odd sizes, with
// the batch static and symbolic (driver + VM).
#include "compiler/tir/conv_dot_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::CountTiles;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads); }

struct PointCase {
  int64_t c, o, w;  // input channels, output channels, row width (the height is 1)
  int64_t batch;    // 0: the symbolic "n"
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[N, C, 1, W], w[O, C, 1, 1], b[O, 1, 1]) = relu(conv2d(x, w) + b).
std::string Module(const PointCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  const std::string n = k.batch > 0 ? s(k.batch) : "\"n\"";
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(n + ", " + s(k.c) + ", 1, " + s(k.w)) +
         ", w: " + T(s(k.o) + ", " + s(k.c) + ", 1, 1") + ", b: " + T(s(k.o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
         "            d = R.add(c, b)\n            gv = R.nn.relu(d)\n            R.output(gv)\n        return gv\n";
}

// The vector widths of the fmas that read the staged input ("col", images x
// points x channels; the symbolic schedule's dot products over planes of
// under 8 points gather into a 2-D "col" of their own, not counted), and
// how many of them sit inside a parallel loop (the bias and relu after the
// kernel are a loop of their own, which the elementwise schedule may run in
// parallel: not counted).
struct DotCensus {
  std::vector<int64_t> widths;
  int parallel = 0;
};

DotCensus Census(const PrimFunc& f) {
  struct V : StmtExprVisitor {
    DotCensus c;
    int64_t width = 0;
    int parallel_depth = 0;
    void VisitStmt(const Stmt& st) override {
      const auto* loop = As<ForNode>(st);
      int64_t was = width;
      const bool parallel = loop != nullptr && loop->for_kind == ForKind::kParallel;
      parallel_depth += parallel ? 1 : 0;
      if (loop != nullptr && loop->for_kind == ForKind::kVectorized)
        if (const auto* e = loop->extent.as<IntImmNode>()) width = e->value;
      StmtExprVisitor::VisitStmt(st);
      width = was;
      parallel_depth -= parallel ? 1 : 0;
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* call = e.as<CallNode>(); call != nullptr && call->op == "fma" && width > 0)
        for (const PrimExpr& a : call->args)
          if (const auto* l = a.as<BufferLoadNode>();
              l != nullptr && l->buffer->name == "col" && l->indices.size() == 3) {
            c.widths.push_back(width);
            c.parallel += parallel_depth > 0 ? 1 : 0;
          }
      StmtExprVisitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(f->body);
  return v.c;
}

void CheckNumbers(const PointCase& k, int threads, const std::vector<int64_t>& batches) {
  SCOPED_TRACE("c" + std::to_string(k.c) + " o" + std::to_string(k.o) + " w" + std::to_string(k.w) + " batch " +
               (k.batch > 0 ? std::to_string(k.batch) : "symbolic") + " threads " + std::to_string(threads));
  auto mod = CompileAndLoad(Module(k), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  for (int64_t n : batches) {
    std::vector<float> x = RandomFloats(n * k.c * k.w, 1 + n), w = RandomFloats(k.o * k.c, 2),
                       b = RandomFloats(k.o, 3);
    std::vector<Any> args = {FloatTensor({n, k.c, 1, k.w}, x), FloatTensor({k.o, k.c, 1, 1}, w),
                             FloatTensor({k.o, 1, 1}, b)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.o, 1, k.w}));
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < k.o; ++o)
        for (int64_t p = 0; p < k.w; ++p) {
          double acc = b[o];
          for (int64_t c = 0; c < k.c; ++c) acc += double(x[(i * k.c + c) * k.w + p]) * w[o * k.c + c];
          const float got = out->data<float>()[(i * k.o + o) * k.w + p];
          if (std::abs(got - std::max(acc, 0.0)) > 1e-4 * (1.0 + std::abs(acc)) && ++bad <= 5)
            ADD_FAILURE() << "batch " << n << " image " << i << " o " << o << " p " << p << ": " << got << " vs "
                          << acc;
        }
    EXPECT_EQ(bad, 0) << "batch " << n;
  }
}

TEST(ConvDotScheduleTest, SingleTapOnFewPointsVectorizesTheReduction) {
  // PP-OCRv4's SE block (240 -> 60 on a pooled 1 x 1 plane, the batch
  // symbolic): the static schedule ran a padded 32-column tile (and a
  // parallel packing loop) for its one column. Rows of 1, 3 and 8 points,
  // static and symbolic batches: the reduction in 16-lane vectors, no
  // read-modify-write of the output left, and no parallel loop for a
  // product this small.
  for (const PointCase& k : {PointCase{240, 60, 1, 0}, PointCase{240, 60, 1, 1}, PointCase{96, 20, 3, 0},
                             PointCase{64, 36, 8, 2}}) {
    SCOPED_TRACE(Module(k));
    PrimFunc f = LowerPrimFunc(Module(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    DotCensus c = Census(f);
    ASSERT_FALSE(c.widths.empty());
    EXPECT_EQ(*std::max_element(c.widths.begin(), c.widths.end()), 16);
    EXPECT_EQ(CountTiles(f).global_updates, 0);
    EXPECT_EQ(c.parallel, 0);
  }
}

TEST(ConvDotScheduleTest, SingleTapWithAStaticBatchOfEnoughWorkIsParallel) {
  // 32 images of 480 -> 120 (1.8 M multiply-adds): parallel for two
  // threads, serial for one.
  PointCase k{480, 120, 1, 32};
  PrimFunc two = LowerPrimFunc(Module(k), Options(2), "conv2d");
  PrimFunc one = LowerPrimFunc(Module(k), Options(1), "conv2d");
  ASSERT_NE(two, nullptr);
  ASSERT_NE(one, nullptr);
  EXPECT_FALSE(Census(two).widths.empty());
  EXPECT_GE(Census(two).parallel, 1);
  EXPECT_EQ(Census(one).parallel, 0);
}

TEST(ConvDotScheduleTest, SingleTapWithASymbolicWidthIsLeftToTheOtherSchedules) {
  // The symbolic schedule's flat rows take a pointwise row of run-time
  // width: nothing is staged.
  const std::string src =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("1, 32, 1, \"w\"") + ", w: " +
      T("20, 32, 1, 1") + ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
      "            gv = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
      "            R.output(gv)\n        return gv\n";
  PrimFunc f = LowerPrimFunc(src, Options(2), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Census(f).widths.empty());
}

TEST(ConvDotScheduleTest, SingleTapNumbers) {
  // Odd sizes: 17 input channels (8-lane vectors and a tail of 1 into lane
  // 0), 5 output channels (the last tile of 4 moved back over the first), 3
  // (one tile of 3 rows), rows of 1 to 8 points (8: 24 accumulators hold
  // 3 rows), symbolic and static batches, one and two threads.
  CheckNumbers(PointCase{240, 60, 1, 0}, 2, {1, 3});
  CheckNumbers(PointCase{240, 60, 1, 1}, 1, {1});
  CheckNumbers(PointCase{17, 5, 1, 0}, 2, {1, 2});
  CheckNumbers(PointCase{17, 3, 7, 0}, 1, {2});
  CheckNumbers(PointCase{33, 11, 3, 2}, 2, {2});
  CheckNumbers(PointCase{64, 36, 8, 0}, 2, {1, 4});
  CheckNumbers(PointCase{480, 120, 1, 32}, 2, {32});
}

}  // namespace
}  // namespace tir
}  // namespace kiln
