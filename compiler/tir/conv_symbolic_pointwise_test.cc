// Pointwise convolutions of symbolic height and width (the symbolic conv
// schedule's flat rows, conv_symbolic_schedule.h) with a bias and a
// hard-swish after them, as PP-OCRv4's LCNet blocks have them: rows of 240
// flat columns, the last one with the rest, tiles of 8 channels x 48
// columns then at most two of 32 (the row's 16-column vectors exactly). The
// tile widths of the lowered kernel, then the numbers against a
// double-precision reference at plane sizes around every rule (driver + VM).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/nest_util.h"
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

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, h, w], w[O, C, 1, 1], b[O, 1, 1]) = hardswish(conv2d(x, w) + b).
std::string Module(int64_t c, int64_t o) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"h\", \"w\"") +
         ", w: " + T(s(o) + ", " + s(c) + ", 1, 1") + ", b: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
         "            e = R.add(c, b)\n            gv = R.nn.hardswish(e)\n            R.output(gv)\n"
         "        return gv\n";
}

TEST(ConvSymbolicPointwiseTest, FlatRowsTakeTilesOf48Columns) {
  // 8-channel tiles (96 -> 96) and 6-channel ones (36 -> 18): the 48-column
  // tiles, and the 32-column ones for rows they fit better.
  for (auto [c, o] : {std::pair<int64_t, int64_t>{96, 96}, {36, 18}}) {
    SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o));
    PrimFunc f = LowerPrimFunc(Module(c, o), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    test_util::TileCensus census = CountTiles(f);
    EXPECT_EQ(census.global_updates, 0);
    EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), 48), census.fma_widths.end());
    EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), 32), census.fma_widths.end());
  }
}

// Sequences of a 48-column tile loop followed by a 32-column one (the names
// SymConvKernel gives them: xt48, xt32): WideRowTiles' exact cover of a
// row's 16-column vectors.
int WideThenNarrow(const PrimFunc& f) {
  struct Find : StmtExprVisitor {
    int found = 0;
    static bool Loop(const Stmt& s, const std::string& name) {
      const auto* loop = As<ForNode>(s);
      return loop != nullptr && loop->loop_var->name.rfind(name, 0) == 0;
    }
    void VisitStmt(const Stmt& s) override {
      if (const auto* seq = As<SeqStmtNode>(s)) {
        for (size_t i = 0; i + 1 < seq->seq.size(); ++i)
          if (Loop(seq->seq[i], "xt48") && Loop(seq->seq[i + 1], "xt32")) ++found;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.VisitStmt(f->body);
  return find.found;
}

TEST(ConvSymbolicPointwiseTest, FlatRowsCoverTheirVectorsExactly) {
  // A flat row of 80 columns (an 8 x 10 plane) is one 48-column tile and one
  // of 32, as the pinned schedule has it, not two of 48 (96 columns
  // computed): the flat rows take WideRowTiles.
  PrimFunc f = LowerPrimFunc(Module(96, 96), Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_GE(WideThenNarrow(f), 1);
}

void CheckNumbers(int64_t c, int64_t o, int threads, int64_t n, const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o) + " threads " + std::to_string(threads) + " batch " +
               std::to_string(n));
  auto mod = CompileAndLoad(Module(c, o), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(o * c, 2, 0.5f), b = RandomFloats(o, 3, 3.0f);
  for (auto [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t hw = h * wd;
    std::vector<float> x = RandomFloats(n * c * hw, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, c, h, wd}, x), FloatTensor({o, c, 1, 1}, w), FloatTensor({o, 1, 1}, b)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, h, wd}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t p = 0; p < hw; ++p) {
          double v = b[oc];
          for (int64_t ic = 0; ic < c; ++ic) v += double(x[(i * c + ic) * hw + p]) * w[oc * c + ic];
          const double want = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
          const float at = got[(i * o + oc) * hw + p];
          if (!(std::fabs(at - want) <= 1e-5 * double(c) + 1e-5) && ++bad <= 5)
            ADD_FAILURE() << "image " << i << " o " << oc << " point " << p << ": got " << at << ", want " << want;
        }
    EXPECT_EQ(bad, 0);
  }
}

// Planes (h, w) around the rules: under 48 points (32-, 16-, 8-column
// and single-column tiles), 48, 140 (one row: 3 x 48 recompute 4 columns,
// 5 x 32 20), 256 (one row: 8 x 32 exactly, not 240 and a row of 16), 280
// and 287 (one row), 288 (240 and a row of 48), 400 (240 and 160: 5 x 32),
// 480 and 960 (PP-OCRv4's 6 x 80 and 12 x 80: rows of 240), 481 (240 and
// 241).
// 49, 64, 80, 100 and 112 (one row: 2 x 32 the last moved back, 2 x 32,
// 48 + 32, 48 + 2 x 32 the last moved back, 48 + 2 x 32).
const std::vector<std::pair<int64_t, int64_t>> kPlanes = {
    {1, 1},  {1, 7},  {5, 7},   {1, 33},  {1, 48},  {7, 20},  {16, 16}, {7, 40},
    {7, 41}, {12, 24}, {20, 20}, {6, 80}, {12, 80}, {13, 37}, {3, 80},
    {1, 49}, {8, 8},  {8, 10},  {10, 10}, {7, 16}};

TEST(ConvSymbolicPointwiseTest, Numbers) {
  CheckNumbers(24, 24, 1, 1, kPlanes);
  CheckNumbers(13, 18, 2, 2, kPlanes);
  CheckNumbers(40, 7, 2, 1, {{6, 80}, {13, 37}, {7, 41}, {1, 5}});
}

// The lane widths of the vectorized FMAs whose operands include a load of
// the local column "col" (PointDots' dot products).
std::vector<int64_t> DotWidths(const PrimFunc& f) {
  struct Find : StmtExprVisitor {
    std::vector<int64_t> widths;
    std::vector<int64_t> vec;
    bool reads_col = false;
    void VisitStmt(const Stmt& s) override {
      const auto* loop = As<ForNode>(s);
      const int64_t* e = loop != nullptr ? nest::ConstInt(loop->extent) : nullptr;
      const bool v = loop != nullptr && loop->for_kind == ForKind::kVectorized && e != nullptr;
      if (v) vec.push_back(*e);
      if (const auto* st = As<BufferStoreNode>(s); st != nullptr && st->buffer->name == "dot" && !vec.empty()) {
        reads_col = false;
        VisitExpr(st->value);
        if (reads_col) widths.push_back(vec.back());
      }
      StmtExprVisitor::VisitStmt(s);
      if (v) vec.pop_back();
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) reads_col |= l->buffer->name == "col";
      StmtExprVisitor::VisitExpr(e);
    }
  } find;
  find.VisitStmt(f->body);
  return find.widths;
}

TEST(ConvSymbolicPointwiseTest, PlanesOfFewPointsTakeDotProducts) {
  // mtcnn_pnet's 32 -> 4 and 32 -> 2 on a 1 x 1 plane (at 12 x 12): planes
  // of under 8 points take dot products over vectors of 16 input channels
  // (8 when C is a multiple of 8 only), where one-column tiles ran a scalar
  // FMA chain per output channel. C not a multiple of 8: no dot products.
  for (auto [c, o, vl] : {std::tuple<int64_t, int64_t, int64_t>{32, 4, 16}, {24, 2, 8}, {12, 4, 0}}) {
    SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o));
    PrimFunc f = LowerPrimFunc(Module(c, o), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    std::vector<int64_t> widths = DotWidths(f);
    if (vl == 0) {
      EXPECT_TRUE(widths.empty());
    } else {
      EXPECT_FALSE(widths.empty());
      for (int64_t w : widths) EXPECT_EQ(w, vl);
    }
  }
  // Planes of 1 to 7 points (dot products), 8 and 9 (the flat tiles); 4, 2,
  // 3 and 5 output channels (tiles of 4, 2, 3 and 1); batches of 1 and 2;
  // two threads.
  const std::vector<std::pair<int64_t, int64_t>> few = {{1, 1}, {1, 2}, {2, 2}, {1, 5}, {2, 3}, {7, 1}, {2, 4}, {3, 3}};
  CheckNumbers(32, 4, 1, 1, few);
  CheckNumbers(32, 2, 2, 2, few);
  CheckNumbers(16, 3, 1, 2, few);
  CheckNumbers(48, 5, 1, 1, few);
  // Enough MACs a point for the tiles to run in parallel (two threads).
  CheckNumbers(256, 128, 2, 2, {{1, 1}, {2, 3}, {1, 7}, {3, 3}});
}

// The dot products' FMAs (stores to "dot") that read X through a view of a
// 1-point plane (3 dimensions, the last 1): X's channels in place.
int InPlaceDots(const PrimFunc& f) {
  struct Find : StmtExprVisitor {
    int count = 0;
    bool in_place = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s); st != nullptr && st->buffer->name == "dot") {
        in_place = false;
        VisitExpr(st->value);
        count += in_place;
      }
      StmtExprVisitor::VisitStmt(s);
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->shape.size() == 3) {
        const int64_t* last = nest::ConstInt(l->buffer->shape[2]);
        in_place |= last != nullptr && *last == 1;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } find;
  find.VisitStmt(f->body);
  return find.count;
}

TEST(ConvSymbolicPointwiseTest, OnePointPlanesReadTheirChannelsInPlace) {
  // A 1 x 1 plane (mtcnn_pnet's heads at 12 x 12): the dot products read X's
  // channels, contiguous there, as vectors, without the gather into "col"
  // (32 strided scalar copies unrolled: 10 of the 32 -> 4 kernel's 38 cache
  // lines that ran). Planes of 2 to 7 points still gather. (The numbers:
  // PlanesOfFewPointsTakeDotProducts' planes of 1 x 1, 1 x 2, ...)
  PrimFunc f = LowerPrimFunc(Module(32, 4), Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(InPlaceDots(f), 1);  // one FMA: kb and the rows are loops
  EXPECT_FALSE(DotWidths(f).empty());
}

// main(x0..x{k-1}[n, ci, h, w], w[O, k * ci, 1, 1], b[O, 1, 1]) =
// hardswish(conv2d(concat(x0..x{k-1}, axis=1), w) + b): YOLOv8's C2f blocks
// end in a concatenation read by a 1x1 convolution. The concatenation is the
// fused kernel's own buffer, which the flat rows read in place. With
// `silu_last`, the last source is silu(x{k-1}), computed in the kernel (a
// buffer of the kernel's own, as a Winograd output fused before the block's
// convolution is).
std::string ConcatModule(int64_t k, int64_t ci, int64_t o, bool silu_last = false) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(";
  std::string names;
  for (int64_t i = 0; i < k; ++i) {
    src += "x" + s(i) + ": " + T("\"n\", " + s(ci) + ", \"h\", \"w\"") + ", ";
    names += (i ? ", " : "") + std::string(silu_last && i == k - 1 ? "a" : "x" + s(i));
  }
  src += "w: " + T(s(o) + ", " + s(k * ci) + ", 1, 1") + ", b: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n";
  if (silu_last) {
    src += "            sg = R.sigmoid(x" + s(k - 1) + ")\n            a = R.multiply(x" + s(k - 1) + ", sg)\n";
  }
  src += "            cat = R.concat((" + names + "), axis=1)\n"
         "            c = R.nn.conv2d(cat, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
         "            e = R.add(c, b)\n            gv = R.nn.hardswish(e)\n            R.output(gv)\n"
         "        return gv\n";
  return src;
}

// Stores into a buffer of `channels` channels (dimension 1 of a rank-4
// buffer or of its flat rank-3 view): the concatenation's copy, the output.
int StoresWithChannels(const PrimFunc& f, int64_t channels) {
  struct Count : StmtExprVisitor {
    int64_t channels = 0;
    int stores = 0;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s)) {
        const auto& shape = st->buffer->shape;
        const auto* c = shape.size() >= 3 ? shape[1].as<IntImmNode>() : nullptr;
        if (c != nullptr && c->value == channels) ++stores;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } count;
  count.channels = channels;
  count.VisitStmt(f->body);
  return count.stores;
}

TEST(ConvSymbolicPointwiseTest, ConcatenationReadInPlaceTakesFlatRows) {
  // The 48-column tiles come only with the flat rows (image rows of a
  // symbolic width take the 32-, 16- and 8-column ones).
  PrimFunc f = LowerPrimFunc(ConcatModule(2, 16, 16), Options(2), "conv2d");
  ASSERT_NE(f, nullptr);
  test_util::TileCensus census = CountTiles(f);
  EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), 48), census.fma_widths.end());
}

TEST(ConvSymbolicPointwiseTest, ConcatenatedTensorsReadInPlaceWithoutTheCopy) {
  // The tiles read each concatenated tensor where it is (parameters, and a
  // SiLU the kernel computes): nothing stores the 32- or 48-channel
  // concatenation any more, and the output (24 channels) is still stored.
  for (bool silu : {false, true}) {
    SCOPED_TRACE(silu ? "silu" : "parameters");
    const int64_t k = silu ? 3 : 2;
    PrimFunc f = LowerPrimFunc(ConcatModule(k, 16, 8, silu), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(StoresWithChannels(f, k * 16), 0);
    EXPECT_GT(StoresWithChannels(f, 8), 0);
    test_util::TileCensus census = CountTiles(f);
    EXPECT_EQ(census.global_updates, 0);
    EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), 48), census.fma_widths.end());
  }
}

void CheckConcatNumbers(int64_t k, int64_t ci, int64_t o, int threads, int64_t n,
                        const std::vector<std::pair<int64_t, int64_t>>& sizes, bool silu_last = false) {
  SCOPED_TRACE(std::to_string(k) + " x " + std::to_string(ci) + " -> " + std::to_string(o) + " threads " +
               std::to_string(threads) + " batch " + std::to_string(n) + (silu_last ? " silu" : ""));
  const int64_t c = k * ci;
  auto mod = CompileAndLoad(ConcatModule(k, ci, o, silu_last), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(o * c, 2, 0.5f), b = RandomFloats(o, 3, 3.0f);
  for (auto [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t hw = h * wd;
    std::vector<std::vector<float>> xs;
    std::vector<Any> args;
    for (int64_t i = 0; i < k; ++i) {
      xs.push_back(RandomFloats(n * ci * hw, 1 + h * 100 + wd + i * 7919));
      args.push_back(FloatTensor({n, ci, h, wd}, xs.back()));
    }
    args.push_back(FloatTensor({o, c, 1, 1}, w));
    args.push_back(FloatTensor({o, 1, 1}, b));
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, h, wd}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t p = 0; p < hw; ++p) {
          double v = b[oc];
          for (int64_t ic = 0; ic < c; ++ic) {
            double xv = xs[ic / ci][(i * ci + ic % ci) * hw + p];
            if (silu_last && ic / ci == k - 1) xv = xv / (1.0 + std::exp(-xv));
            v += xv * w[oc * c + ic];
          }
          const double want = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
          const float at = got[(i * o + oc) * hw + p];
          if (!(std::fabs(at - want) <= 1e-5 * double(c) + 1e-5) && ++bad <= 5)
            ADD_FAILURE() << "image " << i << " o " << oc << " point " << p << ": got " << at << ", want " << want;
        }
    EXPECT_EQ(bad, 0);
  }
}

TEST(ConvSymbolicPointwiseTest, ConcatenationNumbers) {
  const std::vector<std::pair<int64_t, int64_t>> planes = {{1, 1}, {5, 7}, {10, 10}, {13, 37}, {17, 19}, {40, 40}};
  CheckConcatNumbers(2, 16, 24, 1, 1, planes);
  CheckConcatNumbers(3, 5, 13, 2, 2, planes);
  CheckConcatNumbers(4, 8, 16, 2, 2, {{7, 41}, {10, 10}, {3, 80}});
  // A source the kernel computes (read in place too), odd sizes and batches.
  CheckConcatNumbers(3, 16, 8, 1, 1, planes, true);
  CheckConcatNumbers(2, 5, 8, 2, 3, {{1, 1}, {7, 41}, {10, 10}, {3, 80}}, true);
}

// main(x[n, C, h, w], s[n, C, 1, 1], w[O, C, 1, 1], b[O, 1, 1]) =
// conv2d(x * s, w) + b: a squeeze-excite block's scaled input read by its
// projection (PP-OCR's LCNet blocks). With `keep`, x * s is returned too.
// With `divide`, the input is x / s instead (a divide a point: kept as its
// own pass, not redone in every tile of channels).
std::string ScaledModule(int64_t c, int64_t o, bool keep = false, bool divide = false) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"h\", \"w\"") +
         ", sc: " + T("\"n\", " + s(c) + ", 1, 1") + ", w: " + T(s(o) + ", " + s(c) + ", 1, 1") +
         ", b: " + T(s(o) + ", 1, 1") + ")" + (keep ? "" : " -> R.Tensor(dtype=\"float32\", ndim=4)") +
         ":\n        with R.dataflow():\n" +
         (divide ? "            xs = R.divide(x, sc)\n" : "            xs = R.multiply(x, sc)\n") +
         "            c = R.nn.conv2d(xs, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
         "            gv = R.add(c, b)\n" +
         (keep ? "            r = (gv, xs)\n            R.output(r)\n        return r\n"
               : "            R.output(gv)\n        return gv\n");
}

TEST(ConvSymbolicPointwiseTest, ScaledInputComputedInTheTiles) {
  // The scaled input (40 channels) is never stored: the tiles multiply x by
  // s as they load it. Returned as well, it is stored (and the tiles read
  // it); divided by s, it is stored (MatchPrologueNest's cost rule).
  PrimFunc f = LowerPrimFunc(ScaledModule(40, 16), Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(StoresWithChannels(f, 40), 0);
  EXPECT_GT(StoresWithChannels(f, 16), 0);
  test_util::TileCensus census = CountTiles(f);
  EXPECT_EQ(census.global_updates, 0);
  EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), 48), census.fma_widths.end());
  PrimFunc kept = LowerPrimFunc(ScaledModule(40, 16, true), Options(1), "multiply");
  ASSERT_NE(kept, nullptr);
  EXPECT_GT(StoresWithChannels(kept, 40), 0);
  PrimFunc divided = LowerPrimFunc(ScaledModule(40, 16, false, true), Options(1), "conv2d");
  ASSERT_NE(divided, nullptr);
  EXPECT_GT(StoresWithChannels(divided, 40), 0);
}

TEST(ConvSymbolicPointwiseTest, ScaledInputNumbers) {
  // Against a double-precision reference: batches of 1 and 3, planes
  // around the flat rows' rules, 1 and 2 threads.
  for (auto [c, o, threads, n] : {std::tuple<int64_t, int64_t, int, int64_t>{40, 16, 1, 1}, {13, 24, 2, 3}}) {
    SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o) + " threads " + std::to_string(threads));
    auto mod = CompileAndLoad(ScaledModule(c, o), Options(threads), threads);
    ASSERT_NE(mod, nullptr);
    std::vector<float> w = RandomFloats(o * c, 2, 0.5f), b = RandomFloats(o, 3, 3.0f);
    std::vector<float> sc = RandomFloats(n * c, 4, 1.0f);
    for (auto [h, wd] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 33}, {8, 10}, {2, 96}, {3, 96}, {13, 37}}) {
      SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
      const int64_t hw = h * wd;
      std::vector<float> x = RandomFloats(n * c * hw, 1 + h * 100 + wd);
      std::vector<Any> args = {FloatTensor({n, c, h, wd}, x), FloatTensor({n, c, 1, 1}, sc),
                               FloatTensor({o, c, 1, 1}, w), FloatTensor({o, 1, 1}, b)};
      Result<Tensor> out = InvokeMain(*mod, args);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, h, wd}));
      const float* got = out->data<float>();
      int bad = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t oc = 0; oc < o; ++oc)
          for (int64_t p = 0; p < hw; ++p) {
            double want = b[oc];
            for (int64_t ic = 0; ic < c; ++ic)
              want += double(x[(i * c + ic) * hw + p] * sc[i * c + ic]) * w[oc * c + ic];
            const float at = got[(i * o + oc) * hw + p];
            if (!(std::fabs(at - want) <= 1e-5 * double(c) + 1e-5) && ++bad <= 5)
              ADD_FAILURE() << "image " << i << " o " << oc << " point " << p << ": got " << at << ", want " << want;
          }
      EXPECT_EQ(bad, 0);
    }
  }
}

// main(x[n, C, h, w], b[O, 1, 1]) = hardswish(conv2d(x, W, padding k / 2) +
// b) with W[O, C, k, k] a constant (bound by name): pack-constant-weights
// gives it the blocked layout OIHW8o, which the symbolic tiles read (8
// output channels of a tap from one 32-byte block).
// (pad >= 0: that padding instead of k / 2.)
std::string ConstWeightModule(int64_t c, int64_t o, int64_t k, int64_t pad = -1) {
  auto s = [](int64_t v) { return std::to_string(v); };
  const std::string p = s(pad >= 0 ? pad : k / 2);
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"h\", \"w\"") +
         ", w: " + T(s(o) + ", " + s(c) + ", " + s(k) + ", " + s(k)) + ", b: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, strides=[1, 1], padding=[" + p + ", " + p + ", " + p + ", " + p +
         "], dilation=[1, 1])\n            e = R.add(c, b)\n            gv = R.nn.hardswish(e)\n"
         "            R.output(gv)\n        return gv\n";
}

driver::CompileOptions BoundOptions(int threads, int64_t c, int64_t o, int64_t k, const std::vector<float>& w) {
  driver::CompileOptions options = test_util::ThreadsOptions(threads, /*winograd=*/false);
  options.params = {{"w", FloatTensor({o, c, k, k}, w)}};
  return options;
}

// Loads in the kernel's tiles of a rank-5 buffer (the packed weight) and of
// a rank-4 buffer with `o` first and `c` second (an OIHW weight).
std::pair<int, int> WeightLoads(const PrimFunc& f, int64_t o, int64_t c) {
  struct Count : StmtExprVisitor {
    int64_t o = 0, c = 0;
    int packed = 0, oihw = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) {
        const auto& shape = l->buffer->shape;
        const auto* d0 = shape.size() == 4 ? shape[0].as<IntImmNode>() : nullptr;
        const auto* d1 = shape.size() == 4 ? shape[1].as<IntImmNode>() : nullptr;
        packed += shape.size() == 5;
        oihw += d0 != nullptr && d1 != nullptr && d0->value == o && d1->value == c;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } count;
  count.o = o, count.c = c;
  count.VisitStmt(f->body);
  return {count.packed, count.oihw};
}

TEST(ConvSymbolicPointwiseTest, ConstantWeightIsReadPacked) {
  // 1 x 1 and padded 3 x 3: the symbolic tiles (no naive update left) read
  // the weight packed as [O / 8, C, k, k, 8], never OIHW.
  for (int64_t k : {1, 3}) {
    SCOPED_TRACE("k " + std::to_string(k));
    std::vector<float> w = RandomFloats(24 * 16 * k * k, 2, 0.5f);
    PrimFunc f = LowerPrimFunc(ConstWeightModule(16, 24, k), BoundOptions(1, 16, 24, k, w), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(CountTiles(f).global_updates, 0);
    auto [packed, oihw] = WeightLoads(f, 24, 16);
    EXPECT_GT(packed, 0);
    EXPECT_EQ(oihw, 0);
  }
}

// The module of ConstWeightModule against a double-precision reference at
// each (h, w).
void CheckConstWeight(int64_t c, int64_t o, int64_t k, int64_t pad, int threads, int64_t n,
                      const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o) + " k " + std::to_string(k) + " pad " +
               std::to_string(pad) + " threads " + std::to_string(threads) + " batch " + std::to_string(n));
  std::vector<float> w = RandomFloats(o * c * k * k, 2, 0.5f), b = RandomFloats(o, 3, 3.0f);
  auto mod = CompileAndLoad(ConstWeightModule(c, o, k, pad), BoundOptions(threads, c, o, k, w), threads);
  ASSERT_NE(mod, nullptr);
  for (auto [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t ho = h + 2 * pad - k + 1, wo = wd + 2 * pad - k + 1;
    std::vector<float> x = RandomFloats(n * c * h * wd, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, c, h, wd}, x), FloatTensor({o, 1, 1}, b)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, ho, wo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t y = 0; y < ho; ++y)
          for (int64_t xx = 0; xx < wo; ++xx) {
            double v = b[oc];
            for (int64_t ic = 0; ic < c; ++ic)
              for (int64_t ky = 0; ky < k; ++ky)
                for (int64_t kx = 0; kx < k; ++kx) {
                  const int64_t iy = y + ky - pad, ix = xx + kx - pad;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                  v += double(x[((i * c + ic) * h + iy) * wd + ix]) * w[((oc * c + ic) * k + ky) * k + kx];
                }
            const double want = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
            const float at = got[((i * o + oc) * ho + y) * wo + xx];
            if (!(std::fabs(at - want) <= 1e-5 * double(c * k * k) + 1e-5) && ++bad <= 5)
              ADD_FAILURE() << "image " << i << " o " << oc << " (" << y << ", " << xx << "): got " << at << ", want "
                            << want;
          }
    EXPECT_EQ(bad, 0);
  }
}

TEST(ConvSymbolicPointwiseTest, ConstantWeightNumbers) {
  // Against a double-precision reference: 1 x 1 (flat rows) and padded
  // 3 x 3 (image rows, row tiles), batches of 1 and 3, 1 and 2 threads,
  // output channels in one block of 8 (left OIHW: PackConstantWeights) and
  // in several.
  struct Case {
    int64_t c, o, k;
    int threads;
    int64_t n;
  };
  for (const Case& t : {Case{16, 24, 1, 1, 1}, Case{13, 16, 1, 2, 3}, Case{24, 8, 1, 2, 1}, Case{8, 16, 3, 1, 3},
                        Case{5, 24, 3, 2, 1}}) {
    CheckConstWeight(t.c, t.o, t.k, t.k / 2, t.threads, t.n,
                     {{1, 1}, {1, 33}, {8, 10}, {5, 7}, {16, 16}, {13, 37}, {6, 80}});
  }
}

// Loads of the packed weight whose last index is a vectorized loop's
// variable (a vector of one block's output channels).
int ChannelVectorLoads(const PrimFunc& f) {
  struct Count : StmtExprVisitor {
    std::vector<const VarNode*> vec;
    int loads = 0;
    void VisitStmt(const Stmt& s) override {
      const auto* loop = As<ForNode>(s);
      if (loop != nullptr && loop->for_kind == ForKind::kVectorized) vec.push_back(loop->loop_var.get());
      StmtExprVisitor::VisitStmt(s);
      if (loop != nullptr && loop->for_kind == ForKind::kVectorized) vec.pop_back();
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->shape.size() == 5 && !vec.empty()) {
        const auto* v = l->indices[4].as<VarNode>();
        loads += v != nullptr && v == vec.back();
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } count;
  count.VisitStmt(f->body);
  return count.loads;
}

TEST(ConvSymbolicPointwiseTest, TinyUnpaddedPlanesTakeChannelVectors) {
  // An unpadded 3 x 3 with a packed weight (mtcnn_pnet's 16 -> 32): output
  // spans under 8 flat columns (a 1 x 1 output: a matrix-vector product)
  // take vectors of 8 output channels (the weight's blocks), every lane
  // useful; spans of 8 to 31 one tile from column 0 over a zero-tailed copy.
  std::vector<float> w = RandomFloats(32 * 16 * 9, 2, 0.5f);
  PrimFunc f = LowerPrimFunc(ConstWeightModule(16, 32, 3, 0), BoundOptions(1, 16, 32, 3, w), "conv2d");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(ChannelVectorLoads(f), 0);
  bool small = false;
  struct Find : StmtExprVisitor {
    bool* found;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s)) *found |= a->buffer->name.find("_small") != std::string::npos;
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.found = &small;
  find.VisitStmt(f->body);
  EXPECT_TRUE(small);
  // The padded one reads the weight by output channel rows only.
  PrimFunc padded = LowerPrimFunc(ConstWeightModule(16, 32, 3), BoundOptions(1, 16, 32, 3, w), "conv2d");
  ASSERT_NE(padded, nullptr);
  EXPECT_EQ(ChannelVectorLoads(padded), 0);
  // Spans of 1 to 7 (channel vectors), 8 to 31 (one tile of 8, 16 or 32
  // over the copy) and more (the in-place tiles); 8, 16, 32 and 24 output
  // channels (tiles of 1, 2, 4 and 3 blocks); a batch of 2; two threads.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{3, 3}, {3, 4}, {3, 9}, {4, 4}, {4, 5}, {5, 5}, {3, 18},
                                                          {6, 6}, {5, 9}, {7, 7}, {9, 9}, {12, 12}, {24, 24}, {20, 66}};
  CheckConstWeight(16, 32, 3, 0, 1, 1, sizes);
  CheckConstWeight(10, 16, 3, 0, 2, 2, sizes);
  CheckConstWeight(5, 8, 3, 0, 1, 1, sizes);
  CheckConstWeight(7, 24, 3, 0, 1, 2, sizes);
}

TEST(ConvSymbolicPointwiseTest, FlatRowTailColumnsTakeChannelVectors) {
  // A packed 1 x 1 (24 -> 16 and 13 -> 24): a flat row's last 1 or 2
  // columns past its 16-column vectors are vectors of 8 output channels
  // (one weight block), X broadcast. OIHW weights (runtime ones) keep the
  // tiles.
  for (auto [c, o] : {std::pair<int64_t, int64_t>{24, 16}, {13, 24}}) {
    SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o));
    std::vector<float> w = RandomFloats(o * c, 2, 0.5f);
    PrimFunc f = LowerPrimFunc(ConstWeightModule(c, o, 1), BoundOptions(1, c, o, 1, w), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(CountTiles(f).global_updates, 0);
    EXPECT_GT(ChannelVectorLoads(f), 0);
  }
  PrimFunc oihw = LowerPrimFunc(Module(24, 16), Options(1), "conv2d");
  ASSERT_NE(oihw, nullptr);
  EXPECT_EQ(ChannelVectorLoads(oihw), 0);
  // Planes whose flat span ends 1 or 2 columns past a vector (50 = 48 + 2,
  // 17, 33, 65, 49, 481 and 289 in two flat rows, the last with the tail),
  // and around them (36, 20: 4 columns past; under 8 points: 1, 4, 6, 7,
  // 5; 13, 16, 31, 64, 256: the tiles alone); input channels a multiple of
  // 8 (partial sums over interleaved channels) and not (13: one chain); a
  // batch of 3; two threads.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {1, 50}, {2, 25}, {1, 17}, {1, 33}, {6, 6},  {1, 36}, {5, 13}, {4, 5},   {1, 1},  {1, 4},  {2, 3},
      {1, 7},  {1, 5},  {1, 13}, {4, 4},  {1, 31}, {8, 8},  {1, 49}, {13, 37}, {17, 17}, {16, 16}};
  CheckConstWeight(24, 16, 1, 0, 1, 1, sizes);
  CheckConstWeight(13, 24, 1, 0, 2, 3, sizes);
  CheckConstWeight(200, 32, 1, 0, 1, 2, sizes);
}

TEST(ConvSymbolicPointwiseTest, ScaledInputTailColumnsNumbers) {
  // The squeeze-excite scale computed in the tiles (ScaledModule) with a
  // constant, packed weight: the tail columns read x * s too. Against a
  // double-precision reference.
  const int64_t c = 40, o = 16, n = 2;
  std::vector<float> w = RandomFloats(o * c, 2, 0.5f), b = RandomFloats(o, 3, 3.0f);
  std::vector<float> sc = RandomFloats(n * c, 4, 1.0f);
  auto mod = CompileAndLoad(ScaledModule(c, o), BoundOptions(1, c, o, 1, w), 1);
  ASSERT_NE(mod, nullptr);
  for (auto [h, wd] : std::vector<std::pair<int64_t, int64_t>>{{1, 50}, {1, 6}, {2, 25}, {1, 33}, {1, 35}, {1, 48}}) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const int64_t hw = h * wd;
    std::vector<float> x = RandomFloats(n * c * hw, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, c, h, wd}, x), FloatTensor({n, c, 1, 1}, sc), FloatTensor({o, 1, 1}, b)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, h, wd}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t p = 0; p < hw; ++p) {
          double want = b[oc];
          for (int64_t ic = 0; ic < c; ++ic) want += double(x[(i * c + ic) * hw + p] * sc[i * c + ic]) * w[oc * c + ic];
          const float at = got[(i * o + oc) * hw + p];
          if (!(std::fabs(at - want) <= 1e-5 * double(c) + 1e-5) && ++bad <= 5)
            ADD_FAILURE() << "image " << i << " o " << oc << " point " << p << ": got " << at << ", want " << want;
        }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
