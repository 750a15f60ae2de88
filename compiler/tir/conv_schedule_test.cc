// ScheduleConvs: what the rewrite produces for legalized conv2d (the structure
// of the lowered loop nest: micro-kernels, packing, tiles; no numbers). The
// numbers are in conv_schedule_numbers_test.cc, _pointwise_ and _weights_.
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include <set>

#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

TEST(ConvScheduleTest, ResNetBlockConvBecomesMicroKernelWithFusedEpilogue) {
  ConvCase k{1, 64, 56, 56, 64, 3, 3};
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bn_residual_relu";
  PrimFunc f = LowerConv(k, 2);
  ASSERT_NE(f, nullptr);
  Census c = Count(f);
  EXPECT_EQ(c.fma, 1);  // 64 channels = 8 full row blocks: one kernel
  // The convolution's output and every intermediate of the epilogue are gone:
  // only the padded input, accumulators and the tile copy are allocated.
  for (const std::string& s : c.stored) EXPECT_TRUE(s == "x_padded" || s == "acc" || s == "tile" || s == "gv") << s;
  EXPECT_EQ(c.stored.back(), "gv");
  EXPECT_EQ(c.parallel, 2);  // packing and tiles
  // One thread: nothing parallel.
  EXPECT_EQ(Count(LowerConv(k, 1)).parallel, 0);
}

TEST(ConvScheduleTest, DepthwiseWithFewChannelsPacksTheWholeInputOnce) {
  // 2 channels of 14 x 14: too few bands, so the input is packed once
  // (parallel over channels and pieces of rows: 2 channels make 16 tasks);
  // the tile loop is too little work to be parallel.
  ConvCase k{1, 2, 14, 14, 2, 3, 3};
  k.groups = 2;
  k.pt = k.pl = k.pb = k.pr = 1;
  Census c = Count(LowerConv(k, 2));
  EXPECT_EQ(c.parallel, 1);
  EXPECT_TRUE(Allocates(c, "_padded"));
  EXPECT_FALSE(Allocates(c, "_band"));
  CheckConv(k, 2);
}

TEST(ConvScheduleTest, DepthwiseConvPacksEachChannelInItsTask) {
  // MobileNetV2's 3x3 depthwise with bias and ReLU6: one task per channel
  // (band = the whole plane), one kernel with the clip fused into its store.
  ConvCase k{1, 32, 112, 112, 32, 3, 3};
  k.groups = 32;
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bias_relu6";
  Census c = Count(LowerConv(k, 2));
  EXPECT_EQ(c.fma, 1);
  EXPECT_EQ(c.parallel, 1);
  for (const std::string& s : c.stored) EXPECT_TRUE(s == "x_band" || s == "acc" || s == "tile" || s == "gv") << s;
}



TEST(ConvScheduleTest, LeftoverChannelsGetOneTileOfTheirOwn) {
  // 12 = 8 + a tile of the 4 rows left (an 18 x 18 output built for two
  // threads: no shift planes, whose tiles are 6 rows at 7 x 7), not 4
  // one-row tiles.
  ConvCase k{1, 5, 20, 20, 12, 3, 3};
  PrimFunc f = LowerConv(k, 2);
  ASSERT_NE(f, nullptr);
  Census c = Count(f);
  EXPECT_EQ(c.fma, 2);
  EXPECT_EQ(AccRows(c), (std::vector<int64_t>{8, 4}));
  CheckConv(k, 2);
  // DeepCut's 1-D branches (a row of 21, kernels 1 x 9 to 1 x 12, 150 or
  // 100 channels): shift-plane tiles of 24 channels and one of the 6 or 4
  // left; odd channel counts and widths around them.
  struct Want {
    ConvCase k;
    std::vector<int64_t> rows;
  };
  for (const Want& want : {Want{{1, 32, 1, 21, 150, 1, 11}, {24, 6}}, Want{{1, 32, 1, 21, 100, 1, 12}, {24, 4}},
                           Want{{1, 32, 1, 21, 150, 1, 9}, {24, 6}}, Want{{2, 7, 1, 19, 29, 1, 5}, {24, 5}},
                           Want{{1, 9, 3, 23, 13, 1, 10}, {8, 5}}}) {
    ConvCase d = want.k;
    d.epilogue = "bias_relu6";
    Census dc = Count(LowerConv(d, 1));
    EXPECT_EQ(PackedPlanes(dc), d.kw) << d.Name();
    EXPECT_EQ(AccRows(dc), want.rows) << d.Name();
    CheckConv(d, 1);
    CheckConv(d, 2);
  }
}

TEST(ConvScheduleTest, NonConvolutionsAreLeftAlone) {
  // S[i] += A[i, j] is a reduction but no convolution.
  Var i = MakeVar("i"), j = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(8)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(8)}, DType::Float32());
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(j), 0),
                                               Store(s, FloatImm(DType::Float32(), 0), {PrimExpr(i)}), nullptr);
  Stmt upd = Store(s, Load(s, {PrimExpr(i)}) + Load(a, {PrimExpr(i), PrimExpr(j)}), {PrimExpr(i)});
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "f";
  for (const Buffer& b : {a, s}) {
    Var h = MakeVar(b->name + "_handle", HandleType());
    f->params.push_back(h);
    f->buffer_map.push_back({h, b});
  }
  f->body = std::make_shared<ForNode>(i, 0, 8, ForKind::kSerial,
                                      std::make_shared<ForNode>(j, 0, 8, ForKind::kSerial, Seq({init, upd})));
  PrimFunc pf = f;
  EXPECT_EQ(ScheduleConvs(pf, 8), pf);
}

TEST(ConvScheduleTest, StridedSingleChannelFilterLongerThanAnUnrolledWindowTakesTheTiles) {
  // One input and one output channel with a stride is left to the window
  // schedule only while that unrolls the window: a 1 x 256 / 2 filter (a
  // 1-D low-pass before decimation, lifted to conv2d) takes the tiles,
  // its input split into the 2 column phases; a 1 x 9 / 2 one stays. The
  // row is too long for the strided depthwise schedule's band in L1
  // (depthwise_schedule.h), which would come first.
  ConvCase k{1, 1, 1, 10000, 1, 1, 256};
  k.sw = 2;
  k.pl = k.pr = 127;
  k.epilogue = "bias_relu6";
  ASSERT_GT(k.kh * k.kw, MaxUnrolledWindowTaps());
  Census c = Count(LowerConv(k, 1));
  EXPECT_GE(c.fma, 1);
  EXPECT_TRUE(Allocates(c, "_padded"));
  CheckConv(k, 1);
  CheckConv(k, 2);
  ConvCase short_window = k;
  short_window.kw = 9;
  short_window.pl = short_window.pr = 4;
  Census s = Count(LowerConv(short_window, 1));
  EXPECT_FALSE(Allocates(s, "_padded"));
  EXPECT_LT(s.max_depth, 7);
  CheckConv(short_window, 1);
}

TEST(ConvScheduleTest, StridedSingleChannelFilterLongerThanAnUnrolledWindowTakesTheTilesOnAShortRowToo) {
  // A row short enough for the strided depthwise schedule's band in L1
  // (depthwise_schedule.h): that schedule unrolls every tap in each tile
  // (hundreds of KB of code for 256 taps), so it leaves such windows to
  // the tiles as well, whose tap loop stays a loop (one FMA).
  ConvCase k{1, 1, 1, 1200, 1, 1, 256};
  k.sw = 2;
  k.pl = k.pr = 127;
  Census c = Count(LowerConv(k, 1));
  EXPECT_EQ(c.fma, 1);
  EXPECT_TRUE(Allocates(c, "_padded"));
  EXPECT_FALSE(Allocates(c, "_phases"));
  CheckConv(k, 1);
}

// Stores into the packed input ("<input>_padded") and prefetch calls in
// the lowered code: each stays one statement when emitted in a loop.
struct PackCode : StmtExprVisitor {
  int pack_stores = 0, prefetches = 0;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) prefetches += c->op == "prefetch";
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      const std::string& b = st->buffer->name;
      pack_stores += b.size() >= 7 && b.compare(b.size() - 7, 7, "_padded") == 0;
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

TEST(ConvScheduleTest, ColumnStrideOfManyPhasesPacksThemInALoop) {
  // Basic Pitch's filter banks: 1 x 256 windows with column stride 256 (36
  // filters over one row, no padding). The tiles split the input into 256
  // column phases; unrolled per phase, the pack, its zeroing and the 128
  // weight-row prefetch hints a tap made ~17.7k instructions a kernel. A
  // loop over the phases keeps a handful of stores; the 2 phases of a
  // stride of 2 stay unrolled.
  ConvCase k{1, 1, 1, 256 * 12 + 68, 32, 1, 256};
  k.sw = 256;
  k.weights = "constant";
  PrimFunc f = LowerConv(k, 1, BoundWeights(k));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(PackedPlanes(Count(f)), 256);
  PackCode code;
  code.VisitStmt(f->body);
  EXPECT_GT(code.pack_stores, 0);
  EXPECT_LE(code.pack_stores, 8);
  EXPECT_GT(code.prefetches, 0);
  EXPECT_LE(code.prefetches, 4);
  CheckConv(k, 1);
  CheckConv(k, 2);
  // Many phases with column padding: each phase's inside columns from its
  // index (some phases start a column later, some end one earlier).
  ConvCase padded{2, 3, 2, 700, 8, 1, 40};
  padded.sw = 20;
  padded.pl = 7;
  padded.pr = 13;
  padded.epilogue = "bias_relu6";
  CheckConv(padded, 1);
  CheckConv(padded, 2);
  PackCode pc;
  pc.VisitStmt(LowerConv(padded, 1)->body);
  EXPECT_LE(pc.pack_stores, 8);
  // Stride 2: the two phases' stores unrolled, as before.
  ConvCase two = k;
  two.sw = 2;
  two.pl = two.pr = 127;
  PackCode tc;
  tc.VisitStmt(LowerConv(two, 1, BoundWeights(two))->body);
  EXPECT_GE(tc.pack_stores, 2);
}

TEST(ConvScheduleTest, PointwiseConvReadsItsInputInPlace) {
  // 1x1, stride 1, no padding: no packed copy of the input; a strided or
  // padded 1x1 still packs.
  ConvCase k{1, 24, 14, 14, 40, 1, 1};
  k.epilogue = "bias_relu6";
  Census c = Count(LowerConv(k, 2));
  EXPECT_FALSE(Allocates(c, "_padded"));
  EXPECT_FALSE(Allocates(c, "_band"));
  // Flat write-back: the accumulators go straight to the output, with no
  // tile copy for the row-segment arithmetic.
  EXPECT_FALSE(Allocates(c, "tile"));
  ConvCase strided = k;
  strided.sh = strided.sw = 2;
  EXPECT_TRUE(Allocates(Count(LowerConv(strided, 2)), "_padded"));
}

TEST(ConvScheduleTest, StridedPointwisePacksOnlyThePhaseItReads) {
  // A 1x1 kernel with a stride reads one row and column phase of the input:
  // one packed plane, not sh x sw. Even and odd sizes, padding (the phase
  // then starts in the padding), unequal strides, a batch, two threads.
  ConvCase a{1, 32, 28, 28, 40, 1, 1};
  a.sh = a.sw = 2;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 24, 13, 15, 16, 1, 1};
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  ConvCase c{1, 16, 17, 19, 24, 1, 1};
  c.sh = 3, c.sw = 2;
  for (const ConvCase& k : {a, b, c}) {
    EXPECT_EQ(PackedPlanes(Count(LowerConv(k, 2))), 1) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleTest, PointwiseLastColumnTileIsNarrower) {
  // 13 x 13 = 169 columns: three 48-wide tiles and a 32-wide last one (a
  // kernel of its own), not four 48-wide tiles; 16 x 16 = 256 columns need
  // no narrower tile (256 = 16 x 16: 32-wide tiles all through).
  ConvCase k{1, 24, 13, 13, 40, 1, 1};
  EXPECT_EQ(Count(LowerConv(k, 1)).fma, 2);
  ConvCase even{1, 24, 16, 16, 40, 1, 1};
  EXPECT_EQ(Count(LowerConv(even, 1)).fma, 1);
}


// ------------------------------------------------------- packed weights

TEST(ConvScheduleTest, ConstantWeightsArePackedAndReadInBlocks) {
  ConvCase k{1, 16, 14, 14, 24, 3, 3};
  k.pt = k.pl = k.pb = k.pr = 1;
  k.epilogue = "bn_residual_relu";
  k.weights = "constant";
  PrimFunc f = LowerConv(k, 2, BoundWeights(k));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(MaxParamRank(f), 5u);  // the kernel reads the packed (3, 16, 3, 3, 8) constant
  EXPECT_EQ(CountFma(f), 1);  // 24 channels = 3 blocks: one 8-row kernel, no leftovers
  // Not packable (12 channels): the plain weight, as before.
  k.o = 12;
  f = LowerConv(k, 2, BoundWeights(k));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(MaxParamRank(f), 4u);
}

TEST(ConvScheduleTest, TilesOneRowWideStoreTheirAccumulatorsInPlace) {
  // 3 -> 32 at 48^2 (MTCNN ONet's first layer): flat tiles of 48 columns,
  // the padded row's width, so each tile is output row col0 / 48. Its 46
  // columns go straight from the accumulators to the output (one vector
  // loop per channel), with no copy of the tile to the stack and none of
  // the per-row segment arithmetic.
  ConvCase k{2, 3, 48, 48, 32, 3, 3};
  k.epilogue = "bn_relu";
  for (int threads : {1, 2}) {
    PrimFunc f = LowerConv(k, threads);
    ASSERT_NE(f, nullptr);
    Census c = Count(f);
    for (const std::string& s : c.stored) EXPECT_NE(s, "tile") << threads << " threads";
    struct RowStores : StmtExprVisitor {
      int vectors = 0;
      void VisitStmt(const Stmt& s) override {
        if (const auto* l = As<ForNode>(s); l != nullptr && l->for_kind == ForKind::kVectorized) {
          const auto* st = As<BufferStoreNode>(l->body);
          const auto* e = l->extent.as<IntImmNode>();
          vectors += st != nullptr && st->buffer->name == "gv" && e != nullptr && e->value == 46;
        }
        StmtExprVisitor::VisitStmt(s);
      }
    } rows;
    rows.VisitStmt(f->body);
    EXPECT_EQ(rows.vectors, 1) << threads << " threads";
    CheckConv(k, threads);
  }
}

TEST(ConvScheduleTest, ColumnPlaneTilesStoreWholeVectors) {
  // A Keras Conv1D as tf2onnx exports it: conv2d over [N, C, L, 1] with a
  // (5, 1) kernel (magika: 256 -> 512, L 512 -> 508). Output rows are one
  // float wide, so a flat tile's columns are consecutive output rows: whole
  // tiles store 16-float vectors straight from the accumulators; only the
  // last, which runs past row 108, goes through the copy and the per-row
  // segments. Numbers against the reference with and without an epilogue,
  // 1 and 2 threads, and a length that leaves no partial tile.
  // (ColumnWriteBack; the narrower last tile: ColumnPlaneTail.)
  for (int64_t h : {112, 100}) {
    for (const char* epi : {"none", "bn_relu"}) {
      // 160 -> 96 channels: weights past the border-split rule's 256 KiB,
      // which would take the column plane otherwise.
      ConvCase k{1, 160, h, 1, 96, 5, 1};
      k.epilogue = epi;
      for (int threads : {1, 2}) {
        PrimFunc f = LowerConv(k, threads);
        ASSERT_NE(f, nullptr);
        struct Stores : StmtExprVisitor {
          int whole = 0;
          void VisitStmt(const Stmt& s) override {
            if (const auto* l = As<ForNode>(s); l != nullptr && l->for_kind == ForKind::kVectorized) {
              const auto* st = As<BufferStoreNode>(l->body);
              const auto* e = l->extent.as<IntImmNode>();
              bool out = st != nullptr && st->buffer->name != "acc" && st->buffer->name != "tile";
              bool from_acc = false;
              if (out) {
                struct Acc : StmtExprVisitor {
                  bool found = false;
                  void VisitExpr(const PrimExpr& x) override {
                    if (const auto* ld = x.as<BufferLoadNode>()) found = found || ld->buffer->name == "acc";
                    StmtExprVisitor::VisitExpr(x);
                  }
                } acc;
                acc.VisitExpr(st->value);
                from_acc = acc.found;
              }
              whole += out && from_acc && e != nullptr && e->value == 16;
            }
            StmtExprVisitor::VisitStmt(s);
          }
        } stores;
        stores.VisitStmt(f->body);
        EXPECT_GT(stores.whole, 0) << k.Name() << ", " << threads << " threads";
        // 108 rows: 2 x 48 + a last tile of 16 moved back to end at row
        // 108 (ColumnPlaneTail), not 3 x 48; 96 rows: 2 x 48.
        struct Widths : StmtExprVisitor {
          std::set<int64_t> acc;
          void VisitStmt(const Stmt& s) override {
            if (const auto* a = As<AllocateNode>(s); a != nullptr && a->buffer->name == "acc") {
              if (const auto* w = a->buffer->shape.back().as<IntImmNode>()) acc.insert(w->value);
            }
            StmtExprVisitor::VisitStmt(s);
          }
        } widths;
        widths.VisitStmt(f->body);
        EXPECT_EQ(widths.acc, (h == 112 ? std::set<int64_t>{16, 48} : std::set<int64_t>{48}))
            << k.Name() << ", " << threads << " threads";
        CheckConv(k, threads);
      }
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
