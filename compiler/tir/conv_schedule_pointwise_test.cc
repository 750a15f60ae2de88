// Compiled 1x1 and few-tap convolutions against a double-precision reference:
// in-place pointwise reads, column chunks, row tiles, shift planes, and the
// ResNet layer shapes.
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

TEST(ConvScheduleNumbersTest, PointwiseInPlace) {
  // H * W of 49 (the last column tile moved back over the first), 200 (a
  // partial last tile), 16 (one tile), 15 (too small: packed), a batch of 2
  // (the last tile of image 0 must not read image 1), constant weights,
  // leftover single-row channels, fused epilogues.
  ConvCase a{1, 32, 7, 7, 40, 1, 1};
  a.epilogue = "bias_relu6";
  ConvCase b{1, 24, 10, 20, 36, 1, 1};
  b.epilogue = "bn_residual_relu";
  ConvCase c{2, 16, 4, 4, 24, 1, 1};
  ConvCase d{1, 8, 3, 5, 16, 1, 1};
  ConvCase e{2, 20, 7, 7, 33, 1, 1};
  e.weights = "constant";
  e.epilogue = "bn_relu";
  // A narrower last column tile (169 = 3 x 48 + 25: 32 wide), a batch of 2,
  // leftover channels, a residual read through it.
  ConvCase f{2, 24, 13, 13, 41, 1, 1};
  f.epilogue = "bn_residual_relu";
  // An input over 512 KB with 3 row blocks: each column tile's row blocks
  // run back to back (RowBlocksFastest), 61 x 59 = 3599 columns (a partial
  // last tile).
  ConvCase g{1, 40, 61, 59, 24, 1, 1};
  g.epilogue = "bn_residual_relu";
  // Remainder tiles (packed weights, a few last columns one 8-channel
  // vector each) with their partial sums over interleaved channels: 49 =
  // 48 + 1 column (4 sums; 37 channels, one left over), 50 = 48 + 2 (2
  // sums; 19 channels) in a batch of 2.
  ConvCase h{1, 37, 7, 7, 24, 1, 1};
  h.weights = "packed";
  h.epilogue = "bias_relu6";
  ConvCase i{2, 19, 5, 10, 16, 1, 1};
  i.weights = "packed";
  i.epilogue = "bn_residual_relu";
  for (const ConvCase& k : {a, b, c, d, e, f, g, h, i}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

// The value of the tile loop's `rb` (row block) let, printed; "" if none.
std::string RowBlockIndex(const PrimFunc& f) {
  struct Finder : StmtExprVisitor {
    std::string found;
    void VisitStmt(const Stmt& s) override {
      if (const auto* l = As<LetStmtNode>(s)) {
        if (l->var->name == "rb" && found.empty()) found = text::PrintPrimExpr(l->value);
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } finder;
  finder.VisitStmt(f->body);
  return finder.found;
}

TEST(ConvScheduleNumbersTest, PointwiseColumnChunks) {
  // An input over 512 KB (64 x 45 x 47 floats, 529 KB) and 9 row blocks:
  // the tile loop runs every row block over a chunk of column tiles (21 of
  // 48 columns: 256 KB of input) before the next chunk, the last chunk
  // holding the 3 tiles left (45 = 21 + 21 + 3), so the row block divides
  // by the chunk's width, min(21, 45 - first). A batch of 2 and a residual
  // epilogue; a partial last column tile (2115 = 44 x 48 + 3).
  ConvCase k{1, 64, 45, 47, 72, 1, 1};
  k.epilogue = "bn_residual_relu";
  ConvCase batch = k;
  batch.n = 2;
  for (const ConvCase& c : {k, batch}) {
    std::string rb = RowBlockIndex(LowerConv(c, 2));
    EXPECT_NE(rb.find("T.min(21"), std::string::npos) << c.Name() << ": " << rb;
    CheckConv(c, 1);
    CheckConv(c, 2);
  }
  // An input that L2 keeps (24 x 45 x 47 floats, 198 KB): column tiles
  // fastest over the whole plane, the row block a plain division.
  ConvCase small{1, 24, 45, 47, 72, 1, 1};
  EXPECT_EQ(RowBlockIndex(LowerConv(small, 2)).find("T.min"), std::string::npos);
}

TEST(ConvScheduleNumbersTest, PointwiseOnTinyPlanesIsMatrixVector) {
  // Squeeze-and-excitation FCs: 1x1 on a pooled 1 x 1 plane (and 2 x 2),
  // packed weights. No packed input and no 16-column tile: each row block
  // is one RemainderTile (8 channels per vector, partial sums over
  // interleaved channels), 4 FMAs per unrolled group of 4 input channels.
  ConvCase a{1, 96, 1, 1, 24, 1, 1};
  a.weights = "packed";
  a.epilogue = "bias_relu6";
  ConvCase b{2, 37, 1, 1, 16, 1, 1};
  b.weights = "packed";
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 20, 2, 2, 32, 1, 1};
  c.weights = "packed";
  for (const ConvCase& k : {a, b, c}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_FALSE(Allocates(census, "_padded")) << k.Name();
    EXPECT_TRUE(std::count(census.allocated.begin(), census.allocated.end(), "acc_rem") == 1) << k.Name();
    EXPECT_TRUE(std::count(census.allocated.begin(), census.allocated.end(), "acc") == 0) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, MatrixVectorOfLargeWeightsIsParallel) {
  // A matrix-vector product streams its weights: MobileNetV3's 960 -> 240 SE
  // FC (230 K multiply-adds, under kMinParallelConvWork, but 921 KiB of
  // weights) runs its row blocks in parallel with two threads; 120 -> 480
  // (57.6 K weight elements, under 64 K) stays serial, and so does anything
  // with one thread.
  ConvCase big{1, 960, 1, 1, 240, 1, 1};
  big.weights = "packed";
  big.epilogue = "bias_relu6";
  ConvCase small{1, 120, 1, 1, 480, 1, 1};
  small.weights = "packed";
  EXPECT_EQ(Count(LowerConv(big, 2)).parallel, 1);
  EXPECT_EQ(Count(LowerConv(big, 1)).parallel, 0);
  EXPECT_EQ(Count(LowerConv(small, 2)).parallel, 0);
  CheckConv(big, 2);
}

TEST(ConvScheduleNumbersTest, RowTilesForFewTaps) {
  // Few taps per output (a 3-channel stem, grouped 3x3 of 4 channels per
  // group): tiles of one output row, stored as whole vectors (no copy of
  // the accumulators), the last column tile moved back to end at the row's
  // end. SqueezeNet's stem shape with 16 channels: 111 columns, 32 + 32 + a
  // 48-wide last tile from column 63; 64 columns in two tiles with a batch
  // of 2, leftover single-row channels, a residual; groups.
  ConvCase a{1, 3, 224, 224, 16, 3, 3};
  a.sh = a.sw = 2;
  a.epilogue = "bn_relu";
  ConvCase b{2, 3, 64, 64, 21, 3, 3};
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 8, 66, 66, 16, 3, 3};
  c.groups = 2;
  for (const ConvCase& k : {a, b, c}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_TRUE(Allocates(census, "_padded")) << k.Name();
    EXPECT_FALSE(Allocates(census, "tile")) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // Many taps (32 x 3 x 3 = 288): the flat tiles and their row-segment
  // write-back.
  ConvCase many{1, 32, 30, 30, 16, 3, 3};
  // (Built for two threads: with one, its 28 x 28 plane takes shift planes.)
  EXPECT_TRUE(Allocates(Count(LowerConv(many, 2)), "tile"));
}

TEST(ConvScheduleNumbersTest, ShiftPlanesForSmallPlanes) {
  // Stride 1, weights read as given, output planes of at most 64 elements:
  // the input is packed as one plane per kernel column (kw planes, rows Wo
  // apart) and a tile is a whole plane (49 = 3 vectors of 16 and one of 1).
  // 7x7 with a residual epilogue; 5x5 in a batch of 2 with 13 channels (a
  // 12-row tile and a leftover row); 6x6 without padding; a 1x3 kernel; a
  // dilated 3x3; asymmetric padding. Planes of several tiles: 14 x 14 =
  // 4 x 48 + a last tile of 4 columns (20 channels: leftover rows too),
  // 12 x 12 = 3 x 48.
  ConvCase a{1, 16, 7, 7, 24, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  ConvCase b{2, 8, 5, 5, 13, 3, 3};
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bias_relu6";
  ConvCase c{1, 4, 8, 8, 16, 3, 3};
  ConvCase d{1, 5, 7, 9, 8, 1, 3};
  d.pl = d.pr = 1;
  d.epilogue = "bn_relu";
  ConvCase e{1, 3, 9, 9, 8, 3, 3};
  e.dh = e.dw = 2;
  e.pt = e.pl = e.pb = e.pr = 1;
  ConvCase f{1, 6, 6, 6, 10, 3, 3};
  f.pt = 2;
  f.pl = 1;
  f.pr = 2;
  ConvCase g{1, 8, 14, 14, 20, 3, 3};
  g.pt = g.pl = g.pb = g.pr = 1;
  g.epilogue = "bn_residual_relu";
  ConvCase h{1, 4, 12, 12, 8, 3, 3};
  h.pt = h.pl = h.pb = h.pr = 1;
  // An epilogue the flat store cannot take (a residual broadcast over the
  // rows): the tile is copied out and stored row segment by row segment,
  // 49 columns in one tile and 14 x 14 in several.
  ConvCase i = a;
  i.epilogue = "row_residual_relu";
  ConvCase j = g;
  j.epilogue = "row_residual_relu";
  for (const ConvCase* kp : {&a, &b, &c, &d, &e, &f, &g, &h, &i, &j}) {
    const ConvCase& k = *kp;
    Census census = Count(LowerConv(k, 2));
    EXPECT_EQ(PackedPlanes(census), k.kw) << k.Name();  // one plane per kernel column
    // The row-broadcast residual is fused and goes through the copied tile.
    EXPECT_EQ(Allocates(census, "tile"), k.epilogue == "row_residual_relu") << k.Name();
    // Whole-plane tiles whose tail columns read only padding at some taps
    // skip those taps for the tail: 7 x 7 with padding 1 (the 49th column
    // reads the input at 4 of 9 taps) and the dilated 9 x 9 -> 7 x 7. In the
    // 5 x 5 and the asymmetric 6 x 7 every tap reaches some tail column, 8 x 8
    // has no tail, and multi-tile planes are left alone.
    bool skips = kp == &a || kp == &e || kp == &i;
    EXPECT_EQ(census.tail_loops > 0, skips) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  // 28 x 28 (784 columns): shift planes in kernels built for one thread
  // only (with two, the three packed copies are shared between the cores).
  {
    ConvCase m{1, 4, 28, 28, 8, 3, 3};
    m.pt = m.pl = m.pb = m.pr = 1;
    for (int threads : {1, 2}) {
      EXPECT_EQ(PackedPlanes(Count(LowerConv(m, threads))), threads == 1 ? m.kw : 1) << "threads " << threads;
      CheckConv(m, threads);
    }
  }
  // Not for larger planes (18 x 18 = 324 columns), strides, or packed weights.
  ConvCase big{1, 8, 18, 18, 16, 3, 3};
  big.pt = big.pl = big.pb = big.pr = 1;
  ConvCase strided{1, 8, 13, 13, 16, 3, 3};
  strided.sh = strided.sw = 2;
  ConvCase packed = a;
  packed.weights = "packed";
  for (const ConvCase& k : {big, strided, packed}) {
    EXPECT_EQ(PackedPlanes(Count(LowerConv(k, 2))), k.sh * k.sw) << k.Name();
    CheckConv(k, 2);
  }
}

// The length of a plane of the packed input ("<input>_padded", dimension
// 3); -1 without one.
int64_t PackedPlaneLength(const Census& c) {
  for (size_t i = 0; i < c.allocated.size(); ++i) {
    const std::string& a = c.allocated[i];
    if (a.size() >= 7 && a.compare(a.size() - 7, 7, "_padded") == 0 && c.allocated_shapes[i].size() == 4) {
      return c.allocated_shapes[i][3];
    }
  }
  return -1;
}

TEST(ConvScheduleNumbersTest, ShiftPlanesPackNoRowPastTheReads) {
  // Shift-plane tiles read the Ho + (Kh - 1) * Dh packed rows only, so no
  // row is packed past them: a plane is those rows rounded up to 16 floats
  // (it was one row more: on a 1-D conv, twice the packing). 1-D convs
  // (one row; 128 channels, so that its 320 KiB of weights keep it from the
  // border-split rule): width 500 in tiles with a narrower last one (one thread),
  // an odd 37 in one tile with a tail; 2-D with odd widths: 6 x 9 in one
  // tile (padding on top only), 5 x 13 (65 columns) in tiles, dilated.
  ConvCase a{1, 128, 1, 500, 128, 1, 5};
  a.pl = a.pr = 2;
  ConvCase b{1, 5, 1, 37, 12, 1, 3};
  b.pl = b.pr = 1;
  b.epilogue = "bias_relu6";
  ConvCase c{1, 6, 7, 9, 10, 3, 3};
  c.pt = c.pl = c.pr = 1;
  ConvCase d{1, 4, 5, 13, 9, 3, 3};
  d.pt = d.pl = d.pb = d.pr = 1;
  d.epilogue = "bn_relu";
  ConvCase e{1, 3, 9, 11, 8, 3, 3};
  e.dh = e.dw = 2;
  e.pt = e.pl = e.pb = e.pr = 1;
  for (const ConvCase& k : {a, b, c, d, e}) {
    const int64_t ho = k.h + k.pt + k.pb - (k.kh - 1) * k.dh;
    const int64_t wo = k.w + k.pl + k.pr - (k.kw - 1) * k.dw;
    Census census = Count(LowerConv(k, 1));
    ASSERT_EQ(PackedPlanes(census), k.kw) << k.Name();  // shift planes
    const int64_t rows = ho + (k.kh - 1) * k.dh;
    EXPECT_EQ(PackedPlaneLength(census), (rows * wo + 15) / 16 * 16) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, ResNetLayerShapes) {
  // Two layers of issue 4 at their real sizes (the others differ only in
  // channel counts), so the tiles, edges and threads are the benchmark's.
  ConvCase a{1, 256, 14, 14, 256, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_residual_relu";
  CheckConv(a, 2);
  ConvCase b{1, 3, 224, 224, 64, 7, 7};
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 3;
  // The stem's 147 taps per output still run row tiles (no accumulator copy).
  EXPECT_FALSE(Allocates(Count(LowerConv(b, 2)), "tile"));
  CheckConv(b, 2);
}


}  // namespace
}  // namespace tir
}  // namespace kiln
