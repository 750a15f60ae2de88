// The banded depthwise kernel (depthwise_banded.h) that ScheduleSymbolicConvs
// runs for depthwise convolutions compiled once with a symbolic height and
// width (and batch), or a symbolic width only. Structure (the band, its
// run-time row blocks, register tiles of one and two vectors, the epilogue
// in the tiles' stores) and numbers through the driver and the VM against a
// double-precision reference, at several run-time sizes: widths of 1, under
// one vector (the other kernel's, at run time), not multiples of 16 or of a
// tile, several tiles, planes of several row blocks; strides 1, 2 x 2,
// 2 x 1 and 1 x 2; 3 x 3 and 5 x 5; no epilogue, scale + shift + ReLU and
// hard-swish; batches of one and two; one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/depthwise_reference_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using namespace test_util;  // NOLINT

struct DwCase {
  int64_t c, k, sh, sw;
  std::string epilogue = "none";  // none | bn_relu | hardswish
  int64_t height = 0, width = 0;  // static extents (0: symbolic)
  int64_t Pad() const { return k / 2; }
  int64_t Ho(int64_t h) const { return (h + 2 * Pad() - k) / sh + 1; }
  int64_t Wo(int64_t w) const { return (w + 2 * Pad() - k) / sw + 1; }
  std::string Name() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "c%ld k%ld s%ld,%ld %s h%ld w%ld", long(c), long(k), long(sh), long(sw),
                  epilogue.c_str(), long(height), long(width));
    return buf;
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, c, h, w], w, scale, shift): a depthwise conv2d (groups = c,
// padding k / 2) and its epilogue; n symbolic, h and w unless static.
std::string DwModule(const DwCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string h = k.height > 0 ? s(k.height) : "\"h\"", w = k.width > 0 ? s(k.width) : "\"w\"";
  std::string p = s(k.Pad());
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(k.c) + ", " + h +
                    ", " + w) + ", w: " + T(s(k.c) + ", 1, " + s(k.k) + ", " + s(k.k)) + ", scale: " +
                    T(s(k.c) + ", 1, 1") + ", shift: " + T(s(k.c) + ", 1, 1") + ") -> R.Tensor(dtype=\"float32\", ndim=4):\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.sh) + ", " + s(k.sw) + "], padding=[" + p + ", " + p + ", " +
         p + ", " + p + "], groups=" + s(k.c) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "hardswish") {
    src += "            e = R.add(c, shift)\n            gv = R.nn.hardswish(e)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n            gv = R.nn.relu(e)\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads, /*winograd=*/false); }

// What the lowered kernel holds: the band, the tiles' FMAs (16-lane
// vectors in unrolled rows), parallel loops and guarded reads.
struct Shape {
  bool band = false;
  int alloc_in_parallel = 0;
  TileCensus tiles;
};

Shape ShapeOf(const PrimFunc& f) {
  Shape s;
  s.tiles = CountTiles(f);
  s.band = testing::Print(f).find("_band = T.decl_buffer") != std::string::npos;
  return s;
}

TEST(DepthwiseBandedTest, TakesSymbolicDepthwise) {
  for (const DwCase& k : {DwCase{8, 3, 2, 2, "hardswish"}, DwCase{8, 5, 2, 1, "bn_relu"}, DwCase{6, 3, 1, 2},
                          DwCase{8, 3, 1, 1, "hardswish"}, DwCase{8, 5, 1, 1, "none", 12, 0}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    Shape s = ShapeOf(f);
    std::string text = testing::Print(f);
    EXPECT_TRUE(s.band) << text;
    // Rows of at least 16 columns take it, at run time.
    EXPECT_NE(text.find(">= 16:"), std::string::npos) << text;
    // Tiles of one and of two 16-lane vectors.
    EXPECT_NE(std::find(s.tiles.fma_widths.begin(), s.tiles.fma_widths.end(), 16), s.tiles.fma_widths.end());
    EXPECT_NE(std::find(s.tiles.fma_widths.begin(), s.tiles.fma_widths.end(), 32), s.tiles.fma_widths.end());
    // No bounds test and no update of a global buffer left: the naive nest is gone.
    EXPECT_EQ(s.tiles.guarded, 0) << text;
    EXPECT_EQ(s.tiles.global_updates, 0);
    EXPECT_GE(s.tiles.parallel, 1);
    // The band's rows in run-time blocks.
    EXPECT_NE(text.find("dw_block_rows"), std::string::npos) << text;
    // The epilogue is in the tiles' stores: no buffer of the output's size
    // is left for the convolution.
    for (const auto& a : testing::CountStmts(f).allocations) EXPECT_NE(a.shape.size(), 4u) << text;
  }
  // Pointwise and grouped (two channels a group) convolutions are not its.
  std::string grouped = DwModule(DwCase{8, 3, 2, 2});
  grouped.replace(grouped.find("w: R.Tensor((8, 1, 3, 3)"), 24, "w: R.Tensor((8, 2, 3, 3)");
  grouped.replace(grouped.find("groups=8"), 8, "groups=4");
  PrimFunc g = LowerPrimFunc(grouped, Options(1), "conv2d");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(ShapeOf(g).band) << testing::Print(g);
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Stride 1: a row's last columns go into its last tile, widened to three
// or four vectors (two for rows of 17 to 31 columns), not into tiles of
// one vector, whose four accumulators left the FMAs latency-bound.
// Strided planes keep the one-vector tiles.
TEST(DepthwiseBandedTest, StrideOneRowEndInWidenedTile) {
  PrimFunc f = LowerPrimFunc(DwModule(DwCase{8, 5, 1, 1, "hardswish"}), Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  std::string text = testing::Print(f);
  EXPECT_NE(text.find("dw_acc = T.decl_buffer((4, 48)"), std::string::npos) << text;
  EXPECT_NE(text.find("dw_acc = T.decl_buffer((4, 64)"), std::string::npos) << text;
  // The one-vector tile is left only for rows narrower than a vector.
  EXPECT_EQ(Occurrences(text, "dw_acc = T.decl_buffer((4, 16)"), 1) << text;
  PrimFunc g = LowerPrimFunc(DwModule(DwCase{8, 5, 2, 2, "hardswish"}), Options(1), "conv2d");
  ASSERT_NE(g, nullptr);
  std::string strided = testing::Print(g);
  EXPECT_EQ(strided.find("dw_acc = T.decl_buffer((4, 48)"), std::string::npos) << strided;
  EXPECT_EQ(Occurrences(strided, "dw_acc = T.decl_buffer((4, 16)"), 2) << strided;
}

// Row stride only (3x3/(2, 1), PP-OCR's classifier): a row's 17 to 31
// columns after its whole tiles take one tile of two vectors (the second
// moved back to end at the row's end), as the pinned kernel's tiles of two
// do, not two tiles of one vector; 1 to 16 columns keep one vector.
TEST(DepthwiseBandedTest, RowStrideRestInTwoVectorTile) {
  PrimFunc f = LowerPrimFunc(DwModule(DwCase{8, 3, 2, 1, "bn_relu"}), Options(1), "conv2d");
  ASSERT_NE(f, nullptr);
  std::string text = testing::Print(f);
  // The whole tiles' and the rest's (the tiles of 1 to 3 rows have theirs
  // of one vector).
  EXPECT_EQ(Occurrences(text, "dw_acc = T.decl_buffer((4, 32)"), 2) << text;
  // The rest of 1 to 16 columns, and a row narrower than a vector.
  EXPECT_EQ(Occurrences(text, "dw_acc = T.decl_buffer((4, 16)"), 2) << text;
}

// A block's last one or two rows of a 5x5 plane with one column phase
// (planes 1 or 2 rows tall: PP-OCR's classifier at height 32): tiles of 8
// vectors for one row and 6 for two (then one tile of the row's rest), not
// tiles of one vector whose single chain of 25 FMAs waited on its latency;
// and each kernel row's taps under a test that some row of the tile reads
// inside the input (at row stride 2 too: PP-OCR's 5x5/(2, 1) layers on
// planes 2 rows tall). 3x3 kernels, column stride 2, three rows and whole
// tiles of 4 rows keep their tiles and unconditional taps.
TEST(DepthwiseBandedTest, ShortRowTailsTakeWideTilesAndSkipOutsideRows) {
  auto skips = [](const std::string& text) {
    int n = 0;
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);) {
      size_t at = l.find_first_not_of(' ');
      // if <first input row of tap ky> < h and <last> >= 0 (the tile's rows
      // after the block's whole tiles of 4).
      const std::string test = "if dw_y0 ";
      if (at != std::string::npos && l.compare(at, test.size(), test) == 0 &&
          l.find("dw_rows // 4 * ") != std::string::npos && l.find(" < h") != std::string::npos)
        ++n;
    }
    return n;
  };
  for (const DwCase& k : {DwCase{8, 5, 1, 1, "hardswish"}, DwCase{8, 5, 2, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    EXPECT_NE(text.find("dw_acc = T.decl_buffer((1, 128)"), std::string::npos) << text;
    EXPECT_NE(text.find("dw_acc = T.decl_buffer((2, 96)"), std::string::npos) << text;
    EXPECT_EQ(text.find("dw_acc = T.decl_buffer((3, 48)"), std::string::npos) << text;
    // Rest tiles of 1..8 vectors, each with one test per kernel row (and of
    // 1..6, each with one per input row of its two: k + sh).
    const int n = skips(text);
    EXPECT_GE(n, k.k * 8 + (k.k + k.sh) * 6) << text;
  }
  for (const DwCase& k : {DwCase{8, 5, 2, 2, "hardswish"}, DwCase{8, 3, 1, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc g = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(g, nullptr);
    std::string text = testing::Print(g);
    EXPECT_EQ(text.find("dw_acc = T.decl_buffer((1, 128)"), std::string::npos) << text;
    EXPECT_EQ(skips(text), 0) << text;
  }
}

// Tiles of two or more rows at column stride 1 load each band row's vectors
// at a column offset once (into dw_line) for every (output row, kernel row)
// pair that reads them: a whole tile of 4 rows reads (4 - 1) * sh + kh band
// rows, once per vector, where a load per tap read 4 * kh. Column stride 2
// and tiles of one row keep a load per tap.
TEST(DepthwiseBandedTest, TilesLoadEachBandRowOnce) {
  // Band loads in the first tile of `rows` rows, and whether it has dw_line.
  auto loads_in_tile = [](const std::string& text, int rows, int cols, bool* line) {
    const std::string decl = "dw_acc = T.decl_buffer((" + std::to_string(rows) + ", " + std::to_string(cols * 16) + ")";
    size_t at = text.find(decl);
    if (at == std::string::npos) return -1;
    size_t end = text.find("dw_acc = T.decl_buffer(", at + decl.size());
    std::string tile = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    *line = tile.find("dw_line") != std::string::npos;
    int n = 0;
    for (size_t p = tile.find("_band["); p != std::string::npos; p = tile.find("_band[", p + 1)) ++n;
    return n;
  };
  for (const DwCase& k : {DwCase{8, 5, 1, 1, "hardswish"}, DwCase{8, 3, 1, 1}, DwCase{8, 5, 2, 1, "bn_relu"}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    const int cols = k.sh == 1 ? 2 : 1;  // stride 1's whole tiles of 2 vectors, strided planes' 1
    bool line = false;
    EXPECT_EQ(loads_in_tile(text, 4, cols, &line), (3 * k.sh + k.k) * cols) << text;
    EXPECT_TRUE(line) << text;
    EXPECT_EQ(loads_in_tile(text, 3, 1, &line), (2 * k.sh + k.k)) << text;
    EXPECT_TRUE(line) << text;
  }
  DwCase s12{8, 3, 1, 2};
  PrimFunc g = LowerPrimFunc(DwModule(s12), Options(1), "conv2d");
  ASSERT_NE(g, nullptr);
  std::string text = testing::Print(g);
  bool line = true;
  // One load per tap, in the unrolled loop over the tile's 4 rows.
  EXPECT_EQ(loads_in_tile(text, 4, 1, &line), 3 * 3) << text;
  EXPECT_FALSE(line) << text;
}

// The band's copy: one loop over the band rows, the row phases inside it
// (the input's rows in order), not one loop per row phase.
TEST(DepthwiseBandedTest, CopyReadsInputRowsInOrder) {
  for (const DwCase& k : {DwCase{8, 3, 2, 2, "hardswish"}, DwCase{8, 5, 2, 1}, DwCase{8, 3, 1, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    EXPECT_EQ(Occurrences(text, "for bi in"), 1) << text;
  }
}

// Stride 2 both ways: each tile vector's chain in one 16-lane loop, its
// zero and every tap's FMA. (A loop per tap, over every vector and row of the tile, left the
// accumulators in the stack frame: 192 ch 40^2 -> 20^2 5x5/2 took 2x.)
// Returns, for each vector loop holding FMAs, how many it holds directly,
// negated when it does not zero its accumulator first.
std::vector<int> FmasPerVectorLoop(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  std::vector<int> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("in T.vectorized(T.int64(16)):") == std::string::npos) continue;
    size_t depth = indent(lines[i]);
    int fmas = 0;
    bool zeroed = false;
    for (size_t j = i + 1; j < lines.size() && indent(lines[j]) > depth; ++j) {
      if (lines[j].find("dw_acc[") == std::string::npos) continue;
      if (lines[j].find("\"fma\"") != std::string::npos) ++fmas;
      else if (fmas == 0 && lines[j].find("= T.float32(0)") != std::string::npos) zeroed = true;
    }
    if (fmas > 0) out.push_back(zeroed ? fmas : -fmas);
  }
  return out;
}

TEST(DepthwiseBandedTest, VectorChainInOneLoop) {
  for (const DwCase& k : {DwCase{8, 5, 2, 2, "hardswish"}, DwCase{8, 3, 2, 1}, DwCase{8, 3, 1, 2, "bn_relu"},
                          DwCase{8, 5, 1, 1, "bn_relu"}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    std::vector<int> fmas = FmasPerVectorLoop(text);
    ASSERT_FALSE(fmas.empty()) << text;
    // The others keep a loop per tap (zeroed before, in its own loop).
    const bool strided = k.sh > 1 && k.sw > 1;
    for (int n : fmas) EXPECT_EQ(n, strided ? k.k * k.k : -1) << text;
  }
}

void CheckNumbers(const DwCase& k, int threads, const std::vector<std::pair<int64_t, int64_t>>& sizes, int64_t n) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + " n " + std::to_string(n));
  auto mod = CompileAndLoad(DwModule(k), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(k.c * k.k * k.k, 2), scale = RandomFloats(k.c, 3), shift = RandomFloats(k.c, 4);
  for (const auto& hw : sizes) {
    int64_t h = hw.first, wd = hw.second, ho = k.Ho(h), wo = k.Wo(wd);
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    std::vector<float> x = RandomFloats(n * k.c * h * wd, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, k.c, h, wd}, x), FloatTensor({k.c, 1, k.k, k.k}, w),
                             FloatTensor({k.c, 1, 1}, scale), FloatTensor({k.c, 1, 1}, shift)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.c, ho, wo}));
    dw_test::ExpectDepthwise({k.c, k.k, k.sh, k.sw, k.Pad(), k.epilogue}, out->data<float>(), x, w, scale, shift, n, h, wd);
  }
}

// Heights and widths: 1, under one vector, 16 +- 1, 32 +- 1 (one main tile
// of two vectors), a main tile and a vector's remainder, several tiles, and
// planes tall enough for several row tiles and row blocks.
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1},   {2, 3},   {5, 15},  {4, 16},   {3, 17},
                                                         {9, 31},  {7, 32},  {8, 33},  {11, 50},  {16, 64},
                                                         {24, 161}, {48, 320}, {63, 97}, {130, 90}};

TEST(DepthwiseBandedTest, SymbolicNumbers) {
  CheckNumbers(DwCase{5, 3, 2, 2}, 1, kSizes, 1);
  CheckNumbers(DwCase{4, 3, 2, 2, "hardswish"}, 2, kSizes, 2);
  CheckNumbers(DwCase{3, 5, 2, 2, "bn_relu"}, 1, kSizes, 1);
  CheckNumbers(DwCase{4, 5, 2, 1, "hardswish"}, 2, kSizes, 1);
  CheckNumbers(DwCase{3, 3, 2, 1}, 1, kSizes, 2);
  CheckNumbers(DwCase{4, 3, 1, 2, "bn_relu"}, 1, kSizes, 1);
  CheckNumbers(DwCase{2, 5, 1, 2}, 2, kSizes, 1);
  // 5x5/2 planes of one-vector tiles only (PP-OCRv4's 40^2 -> 20^2), odd sizes.
  CheckNumbers(DwCase{6, 5, 2, 2, "bn_relu"}, 2, {{40, 40}, {37, 39}, {41, 21}, {35, 62}}, 2);
}

TEST(DepthwiseBandedTest, SymbolicWidthStaticHeightNumbers) {
  // PP-OCRv4's recognizer at a fixed height: only the width is symbolic.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t w : {1, 7, 16, 40, 79, 80, 161}) sizes.push_back({12, w});
  CheckNumbers(DwCase{4, 5, 2, 1, "hardswish", 12, 0}, 1, sizes, 1);
  CheckNumbers(DwCase{4, 3, 1, 2, "bn_relu", 12, 0}, 2, sizes, 1);
}

TEST(DepthwiseBandedTest, StrideOneWidenedTileNumbers) {
  // Rows ending in each kind of last tile: whole tiles (32, 64), widened
  // by one vector (33, 40, 48) or two (49, 63, 80 + 20), two vectors under
  // one tile (17, 20, 31), one (16); row counts with and without a rest.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t w : {16, 17, 20, 31, 32, 33, 40, 48, 49, 63, 64, 100}) sizes.push_back({w % 3 == 0 ? 20 : 7, w});
  CheckNumbers(DwCase{6, 5, 1, 1, "hardswish"}, 1, sizes, 1);
  CheckNumbers(DwCase{3, 3, 1, 1, "bn_relu"}, 2, sizes, 2);
}

TEST(DepthwiseBandedTest, StrideOneNumbers) {
  CheckNumbers(DwCase{5, 3, 1, 1, "hardswish"}, 1, kSizes, 1);
  CheckNumbers(DwCase{3, 5, 1, 1, "bn_relu"}, 2, kSizes, 2);
  CheckNumbers(DwCase{4, 3, 1, 1}, 2, kSizes, 1);
}

TEST(DepthwiseBandedTest, ShortRowTailNumbers) {
  // Planes of 1, 2 and 3 rows (and taller ones ending in 1 or 2 rows:
  // 5 and 6 at stride 1, 9 and 11 at stride 2 x 1), rows of one vector to
  // more than one tile of 8 (128 + 22) with every count of vectors in the
  // rest tile.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  const int64_t widths[] = {16, 17, 33, 50, 64, 65, 96, 100, 113, 128, 150, 257};
  int64_t i = 0;
  for (int64_t h : {1, 2, 3, 5, 6, 9, 11})
    for (int64_t k = 0; k < 3; ++k) sizes.push_back({h, widths[(i++) % 12]});
  CheckNumbers(DwCase{4, 5, 1, 1, "hardswish"}, 1, sizes, 2);
  CheckNumbers(DwCase{3, 3, 1, 1, "bn_relu"}, 2, sizes, 1);
  CheckNumbers(DwCase{4, 5, 2, 1, "hardswish"}, 1, sizes, 1);
  CheckNumbers(DwCase{3, 3, 2, 1}, 1, sizes, 2);
}

// Row stride 2's two-row tails in wide tiles (5x5/(2, 1)): planes whose
// output is 1 to 4 rows (input 1 to 8 rows: tails of 1 and 2 rows after
// none or one whole tile), odd widths from under a vector to over a tile
// of 6, batch 1 and 2, 1 and 2 threads.
TEST(DepthwiseBandedTest, StridedTwoRowTailNumbers) {
  std::vector<std::pair<int64_t, int64_t>> sizes;
  const int64_t widths[] = {15, 17, 33, 49, 81, 97, 99, 113, 129};
  int64_t i = 0;
  for (int64_t h : {1, 2, 3, 4, 5, 6, 7, 8, 11, 12})
    for (int64_t k = 0; k < 2; ++k) sizes.push_back({h, widths[(i++) % 9]});
  CheckNumbers(DwCase{5, 5, 2, 1, "hardswish"}, 1, sizes, 1);
  CheckNumbers(DwCase{3, 5, 2, 1, "bn_relu"}, 2, sizes, 2);
  CheckNumbers(DwCase{4, 5, 2, 1}, 2, sizes, 1);
}

TEST(DepthwiseBandedTest, RowStrideRestTileNumbers) {
  // Rows of 4 to 8 output rows whose columns end in a rest of 17 to 31
  // (17, 31, 49, 50, 63), 1 to 16 (33, 48, 80) or none (32, 64), under a
  // vector (15) and between one and two (16, 20).
  std::vector<std::pair<int64_t, int64_t>> sizes;
  int64_t i = 0;
  for (int64_t w : {15, 16, 17, 20, 31, 32, 33, 48, 49, 50, 63, 64, 80}) sizes.push_back({8 + (i++ % 9), w});
  CheckNumbers(DwCase{3, 3, 2, 1, "bn_relu"}, 2, sizes, 1);
  CheckNumbers(DwCase{4, 5, 2, 1, "hardswish"}, 1, sizes, 2);
}

TEST(DepthwiseBandedTest, BandRowReuseNumbers) {
  // Planes of 2 to 4 rows and taller ones (tiles of 4 rows, then rests of
  // 1 to 3), odd widths of one to several vectors.
  std::vector<std::pair<int64_t, int64_t>> sizes = {{2, 17}, {3, 33}, {4, 47}, {7, 25}, {8, 50}, {13, 97}, {15, 16}};
  CheckNumbers(DwCase{5, 5, 1, 1, "hardswish"}, 1, sizes, 2);
  CheckNumbers(DwCase{3, 3, 2, 1, "bn_relu"}, 2, sizes, 1);
}

// Narrow rows (at most 14 columns) of 16 or more channels: the channel-block
// kernel (depthwise_channel_block_symbolic.h), a branch per two output
// widths, chosen at run time; the others keep theirs.
TEST(DepthwiseChannelBlockSymbolicTest, TakesNarrowRows) {
  PrimFunc f = LowerPrimFunc(DwModule(DwCase{32, 5, 1, 1, "hardswish"}), Options(2), "conv2d");
  ASSERT_NE(f, nullptr);
  std::string text = testing::Print(f);
  EXPECT_NE(text.find("transpose16"), std::string::npos) << text;
  EXPECT_NE(text.find("_cmajor = T.decl_buffer"), std::string::npos) << text;
  // The run-time test on the output width, and the band for wide rows.
  EXPECT_NE(text.find("<= 14"), std::string::npos) << text;
  EXPECT_TRUE(ShapeOf(f).band) << text;
  // Fewer than 16 channels: not its.
  PrimFunc g = LowerPrimFunc(DwModule(DwCase{8, 5, 1, 1, "hardswish"}), Options(2), "conv2d");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(testing::Print(g).find("transpose16"), std::string::npos);
}

// Sizes around the kernel's limits: output widths 1..14 (odd ones compute
// a column more than they store),
// planes of 16 pixels and fewer (another kernel's), widths of 15 and 16
// (the others'), windows over 32 KiB (tall planes: the others'), a last
// channel block moved back (24 and 40 channels), strides 1, 2 and (2, 1).
TEST(DepthwiseChannelBlockSymbolicTest, Numbers) {
  std::vector<std::pair<int64_t, int64_t>> sizes = {{8, 10}, {16, 20}, {4, 4}, {3, 5}, {2, 8}, {5, 14}, {7, 13},
                                                    {6, 12}, {9, 11}, {1, 16}, {12, 1}, {20, 2}, {10, 15},
                                                    {4, 16}, {80, 14}, {11, 7}, {13, 9}, {17, 3}, {6, 6}};
  CheckNumbers(DwCase{24, 5, 1, 1, "hardswish"}, 1, sizes, 1);
  CheckNumbers(DwCase{16, 3, 1, 1, "bn_relu"}, 2, sizes, 2);
  CheckNumbers(DwCase{40, 5, 2, 2, "bn_relu"}, 2, sizes, 1);
  CheckNumbers(DwCase{32, 3, 2, 2}, 1, sizes, 2);
  CheckNumbers(DwCase{24, 5, 2, 1, "hardswish"}, 1, sizes, 1);
  CheckNumbers(DwCase{16, 5, 1, 1, "hardswish", 8, 0}, 1, {{8, 10}, {8, 3}, {8, 14}, {8, 20}}, 2);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
