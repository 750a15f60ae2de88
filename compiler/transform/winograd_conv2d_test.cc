// winograd-conv2d: which conv2d calls it rewrites and what it leaves alone.
// The numbers of rewritten convolutions (through the whole driver, against
// a double reference) are checked in compiler/tir/conv_schedule_test.cc
// (WinogradNumbers).
#include "compiler/transform/winograd_conv2d.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/transform/bind_params.h"

namespace kiln {
namespace {

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

std::string ConvModule(const std::string& x, const std::string& w, const std::string& attrs) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(x) + ", w: " + T(w) +
         "):\n        with R.dataflow():\n            gv = R.nn.conv2d(x, w" + attrs +
         ")\n            R.output(gv)\n        return gv\n";
}

Tensor Ones(const std::vector<int64_t>& shape) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = 1.0f;
  return t;
}

// The printed module after binding `w` (when bind_w) and the pass.
std::string Rewrite(const std::string& source, const std::vector<int64_t>& w_shape, bool bind_w = true) {
  Result<ir::IRModule> m = text::ParseModule(source, "conv.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  if (!n.ok()) return "";
  ir::IRModule mod = *n;
  if (bind_w) {
    Result<ir::IRModule> bound = transform::BindParams(mod, {{"w", Ones(w_shape)}});
    EXPECT_TRUE(bound.ok()) << bound.status().message();
    if (!bound.ok()) return "";
    mod = *bound;
  }
  Result<ir::IRModule> out = transform::WinogradConv2d(mod);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? text::PrintModule(*out) : "";
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(WinogradConv2d, ConstantThreeByThreeBecomesTransformsAndMatmul) {
  std::string out = Rewrite(ConvModule("1, 32, 20, 20", "24, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {24, 32, 3, 3});
  EXPECT_TRUE(Contains(out, "winograd_input_f2x3")) << out;
  EXPECT_TRUE(Contains(out, "winograd_output_f2x3")) << out;
  EXPECT_TRUE(Contains(out, "R.matmul(")) << out;
  EXPECT_TRUE(Contains(out, "R.nn.pad(")) << out;
  EXPECT_FALSE(Contains(out, "R.nn.conv2d(")) << out;
  // 100 tiles of 2 x 2: the transformed input is (16, C, T).
  EXPECT_TRUE(Contains(out, "R.Tensor((16, 32, 100)")) << out;
  // No padding and an even output: no pad.
  std::string nopad = Rewrite(ConvModule("1, 32, 22, 22", "16, 32, 3, 3", ""), {16, 32, 3, 3});
  EXPECT_TRUE(Contains(nopad, "winograd_input_f2x3")) << nopad;
  EXPECT_FALSE(Contains(nopad, "R.nn.pad(")) << nopad;
}

TEST(WinogradConv2d, TileSizeAndProductLayoutFollowTheShape) {
  // 30 x 30 outputs: 64 tiles of 4x4, 8 a row: F(4x4), channel-major product.
  std::string f4 = Rewrite(ConvModule("1, 32, 30, 30", "16, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {16, 32, 3, 3});
  EXPECT_TRUE(Contains(f4, "winograd_input_f4x3")) << f4;
  EXPECT_TRUE(Contains(f4, "winograd_output_f4x3")) << f4;
  EXPECT_TRUE(Contains(f4, "R.Tensor((36, 32, 64)")) << f4;
  EXPECT_TRUE(Contains(f4, "R.matmul(")) << f4;
  EXPECT_FALSE(Contains(f4, "winograd_matmul")) << f4;
  // F(4x4) with static sizes: the input transform reads the unpadded input
  // and makes the padding in its local row (1 + 30 + 3 columns), testing
  // the input rows on the first and last tile rows only (1 <= ty < 7 read
  // inside the image): no pad kernel. (F(2x2) keeps the pad, above.)
  EXPECT_FALSE(Contains(f4, "R.nn.pad(")) << f4;
  EXPECT_TRUE(Contains(f4, "winograd_input_f4x3(X: T.Buffer((1, 32, 30, 30)")) << f4;
  EXPECT_TRUE(Contains(f4, "row = T.decl_buffer((34,), \"float32\", scope=\"local\")")) << f4;
  EXPECT_TRUE(Contains(f4, "if 0 < ty and ty < 7:")) << f4;
  // 13 x 13: 16 tiles of 4x4 (too few), 49 of 2x2, 7 a row: F(2x2) with the
  // tile-major product (49, 32) per element.
  std::string tm = Rewrite(ConvModule("1, 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 32, 3, 3});
  EXPECT_TRUE(Contains(tm, "winograd_input_f2x3")) << tm;
  EXPECT_TRUE(Contains(tm, "winograd_matmul")) << tm;
  EXPECT_TRUE(Contains(tm, "R.Tensor((16, 49, 32)")) << tm;
  EXPECT_FALSE(Contains(tm, "R.matmul(")) << tm;
  // 256 output channels: the weight's rows padded to 272 floats.
  std::string padded = Rewrite(ConvModule("1, 32, 13, 13", "256, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {256, 32, 3, 3});
  EXPECT_TRUE(Contains(padded, "R.Tensor((16, 49, 256)")) << padded;
  EXPECT_TRUE(Contains(padded, "(16, 32, 272)")) << padded;
  // 16 input channels: F(4x4) only (55 x 55: 196 tiles of 4x4).
  std::string c16 = Rewrite(ConvModule("1, 16, 55, 55", "64, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {64, 16, 3, 3});
  EXPECT_TRUE(Contains(c16, "winograd_input_f4x3")) << c16;
  // 40 output channels (not whole 16-float vectors): channel-major.
  std::string cm = Rewrite(ConvModule("1, 32, 13, 13", "40, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {40, 32, 3, 3});
  EXPECT_TRUE(Contains(cm, "R.matmul(")) << cm;
  EXPECT_FALSE(Contains(cm, "winograd_matmul")) << cm;
}

// The tile-major output kernel computes each tile in a buffer it allocates
// inside its block; the block's read regions leave that buffer out, so the
// printed module parses back (the tuner stores kernels as text).
TEST(WinogradConv2d, TileMajorOutputKernelPrintsTextThatParsesBack) {
  Result<ir::IRModule> m = text::ParseModule(ConvModule("1, 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), "conv.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  ASSERT_TRUE(n.ok()) << n.status().message();
  Result<ir::IRModule> bound = transform::BindParams(*n, {{"w", Ones({32, 32, 3, 3})}});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  Result<ir::IRModule> out = transform::WinogradConv2d(*bound);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<ir::Expr> constants;
  std::string tm = text::PrintModule(*out, &constants);
  ASSERT_TRUE(Contains(tm, "y_tile")) << tm;
  EXPECT_FALSE(Contains(tm, "y_tile[T.int64(0):")) << tm;
  Result<ir::IRModule> again = text::ParseModule(tm, "printed.relax", constants);
  EXPECT_TRUE(again.ok()) << again.status().message();
}

// The tile-major output kernel runs its (image, block of 16 channels) pairs
// in one parallel loop: batch 2 x 32 channels, 4 pairs. (Its stores'
// channel is block * 16 + lane, which the default schedule cannot split
// among threads: it left the transform serial.)
TEST(WinogradConv2d, TileMajorOutputKernelIsParallelOverImagesAndChannelBlocks) {
  std::string tm = Rewrite(ConvModule("2, 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 32, 3, 3});
  ASSERT_TRUE(Contains(tm, "y_tile")) << tm;
  EXPECT_TRUE(Contains(tm, "for n_ob in T.parallel(T.int64(4))")) << tm;
  // Symbolic batch: the pairs' count is the batch's multiple.
  std::string sym = Rewrite(ConvModule("\"n\", 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 32, 3, 3});
  ASSERT_TRUE(Contains(sym, "y_tile")) << sym;
  EXPECT_TRUE(Contains(sym, "for n_ob in T.parallel(n * 2)")) << sym;
}

TEST(WinogradConv2d, OtherConvolutionsAreLeftAlone) {
  struct Case {
    const char* why;
    std::string x, w, attrs;
    std::vector<int64_t> w_shape;
    bool bind = true;
  };
  const std::vector<Case> cases = {
      {"stride 2", "1, 32, 40, 40", "16, 32, 3, 3", ", strides=[2, 2], padding=[1, 1, 1, 1]", {16, 32, 3, 3}},
      {"dilation 2", "1, 32, 40, 40", "16, 32, 3, 3", ", dilation=[2, 2]", {16, 32, 3, 3}},
      {"groups", "1, 32, 40, 40", "16, 16, 3, 3", ", groups=2", {16, 16, 3, 3}},
      {"1x1 kernel", "1, 32, 40, 40", "16, 32, 1, 1", "", {16, 32, 1, 1}},
      {"5x5 kernel", "1, 32, 40, 40", "16, 32, 5, 5", "", {16, 32, 5, 5}},
      {"few input channels", "1, 8, 40, 40", "16, 8, 3, 3", "", {16, 8, 3, 3}},
      {"16 input channels and too few 4x4 tiles for F(4x4)", "1, 16, 13, 13", "16, 16, 3, 3",
       ", padding=[1, 1, 1, 1]", {16, 16, 3, 3}},
      {"few output channels", "1, 32, 40, 40", "8, 32, 3, 3", "", {8, 32, 3, 3}},
      {"24 output channels in F(4x4): a channel-major product of few rows", "1, 96, 80, 80", "24, 96, 3, 3",
       ", padding=[1, 1, 1, 1]", {24, 96, 3, 3}},
      {"few tiles (5 x 5: 9)", "1, 64, 5, 5", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]", {64, 64, 3, 3}},
      {"weight is an input", "1, 32, 40, 40", "16, 32, 3, 3", "", {16, 32, 3, 3}, false},
      {"NHWC", "1, 40, 40, 32", "16, 32, 3, 3", ", data_layout=\"NHWC\", out_layout=\"NHWC\"", {16, 32, 3, 3}},
  };
  for (const Case& c : cases) {
    std::string out = Rewrite(ConvModule(c.x, c.w, c.attrs), c.w_shape, c.bind);
    EXPECT_TRUE(Contains(out, "R.nn.conv2d(")) << c.why << "\n" << out;
    EXPECT_FALSE(Contains(out, "winograd")) << c.why << "\n" << out;
  }
}

// The Relax function of the rewritten module (the kernels left out).
std::string MainOf(const std::string& printed) {
  size_t at = printed.find("    @R.function");
  size_t end = printed.find("\n# Metadata", at);
  return at == std::string::npos ? printed : printed.substr(at, end == std::string::npos ? end : end - at);
}

TEST(WinogradConv2d, SymbolicHeightAndWidthBeforeAfter) {
  // Tile counts are ceil-divisions of the symbolic output. F(4x4) from the
  // cost rule at the nominal image size: the input transform reads x
  // itself (winograd_input_rows.h: the padding and the zeros past the
  // input made in its rows), so no pad kernel. The product channel-major
  // (80 tiles a row at the nominal size: at least kWinogradWideTileCols).
  std::string before = ConvModule("\"n\", 32, \"h\", \"w\"", "16, 32, 3, 3", ", padding=[1, 1, 1, 1]");
  const char* after = R"(    @R.function
    def main(x: R.Tensor(("n", 32, "h", "w"), dtype="float32")) -> R.Tensor(("n", 16, "h", "w"), dtype="float32"):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        cls = Module
        with R.dataflow():
            wino_in: R.Tensor((36, 32, n * ((h + 3) // 4) * ((w + 3) // 4)), dtype="float32") = R.call_tir(cls.winograd_input_f4x3, (x,), out_sinfo=R.Tensor((36, 32, n * ((h + 3) // 4) * ((w + 3) // 4)), dtype="float32"))
            wino_w: R.Tensor((36, 16, 32), dtype="float32") = metadata["relax.expr.Constant"][0]
            wino_mm: R.Tensor((36, 16, n * ((h + 3) // 4) * ((w + 3) // 4)), dtype="float32") = R.matmul(wino_w, wino_in)
            gv: R.Tensor((n, 16, h, w), dtype="float32") = R.call_tir(cls.winograd_output_f4x3, (wino_mm,), out_sinfo=R.Tensor((n, 16, h, w), dtype="float32"))
            R.output(gv)
        return gv
)";
  std::string out = Rewrite(before, {16, 32, 3, 3});
  EXPECT_EQ(MainOf(out), after) << out;
  // The partial last tiles: guarded stores. The input rows outside x: left
  // out of the sums by a test in a plain row, or (where the block's loads
  // stay inside x's memory) by a select of a load from a clamped row; the
  // columns outside x by a select.
  EXPECT_TRUE(Contains(out, "if ty * 4 + 3 < h and tx * 4 + 3 < w:")) << out;
  EXPECT_TRUE(Contains(out, "if 0 <= ty * 4 + -1 and ty * 4 + -1 < h:")) << out;
  EXPECT_TRUE(Contains(out, "T.Select(0 <= ty * 4 - 1 + 0 and ty * 4 - 1 + 0 < h, X[n_1, c, T.max(0, T.min(ty * 4 - 1 + 0, h - 1))"))
      << out;
  EXPECT_TRUE(Contains(out, "T.Select(T.Cast(\"float32\", 0 - c0) <= colf[T.int64(0), T.int64(0), q] and")) << out;
  // Whole tiles in vector blocks of 16, then of 4, one output row at a time.
  EXPECT_TRUE(Contains(out, "for txv in T.vectorized(T.int64(16)):")) << out;
  EXPECT_TRUE(Contains(out, "for txi in T.vectorized(T.int64(4)):")) << out;
  // A static width of 40 (10 tiles a row): tile-major, its stores copied
  // from a tile's channel lanes.
  std::string tm = Rewrite(ConvModule("\"n\", 32, \"h\", 40", "16, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {16, 32, 3, 3});
  EXPECT_TRUE(Contains(tm, "cls.winograd_matmul")) << tm;
  // (The last tile row's tiles copy min(4, h - 4 ty) rows: no test per
  // element.)
  EXPECT_TRUE(Contains(tm, "T.grid(T.int64(16), T.min(4, h - ty * 4), T.min(4, 40 - tx * 4)):")) << tm;
  EXPECT_FALSE(Contains(tm, "if ty * 4 + i < h")) << tm;
  EXPECT_FALSE(Contains(tm, "R.nn.pad(")) << tm;
  // 24 output channels would take the channel-major product: left direct
  // with symbolic shapes.
  std::string cm = Rewrite(ConvModule("\"n\", 32, \"h\", \"w\"", "24, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {24, 32, 3, 3});
  EXPECT_TRUE(Contains(cm, "R.nn.conv2d(")) << cm;
  EXPECT_FALSE(Contains(cm, "winograd")) << cm;
  std::string cmb = Rewrite(ConvModule("\"n\", 32, 24, 22", "24, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {24, 32, 3, 3});
  EXPECT_TRUE(Contains(cmb, "R.nn.conv2d(")) << cmb;
}

// Tile-major output over a symbolic height or width: the whole tiles of a
// row past its blocks of kWinogradInputLanes store without tests; only a
// partial last tile column (and the last tile row) copy fewer rows and
// columns, min(4, h - 4 ty) and min(4, w - 4 tx) of them (run-time loop
// extents; before, all 16 of each channel, each behind a test). Width 40
// (10 whole tiles: two blocks of 4, then 2 whole tiles), width 38 (9 whole
// tiles: two blocks, one whole tile, a partial one).
TEST(WinogradConv2d, TileMajorOutputGuardsOnlyPartialTiles) {
  struct Case {
    const char* width;
    const char* whole;    // the unguarded whole tiles past the blocks
    const char* partial;  // the guarded partial tile column
  };
  for (const Case& c : {Case{"40", "for tx in range(10 - (0 + T.int64(2) * T.int64(4))):",
                             "T.grid(T.int64(16), T.min(4, h - ty * 4), T.min(4, 40 - (10 + tx) * 4)):"},
                        Case{"38", "for tx in range(9 - (0 + T.int64(2) * T.int64(4))):",
                             "T.grid(T.int64(16), T.min(4, h - ty * 4), T.min(4, 38 - (9 + tx) * 4)):"}}) {
    std::string tm = Rewrite(ConvModule(std::string("\"n\", 32, \"h\", ") + c.width, "16, 32, 3, 3",
                                        ", padding=[1, 1, 1, 1]"),
                             {16, 32, 3, 3});
    const size_t at = tm.find("def winograd_output_f4x3");
    ASSERT_NE(at, std::string::npos) << tm;
    const std::string k = tm.substr(at, tm.find("    def ", at + 1) - at);
    // The whole tiles' loop, then the partial column's, then the last tile
    // row's (every tile guarded).
    const size_t whole = k.find(c.whole), partial = k.find(c.partial);
    ASSERT_NE(whole, std::string::npos) << c.width << "\n" << k;
    ASSERT_NE(partial, std::string::npos) << c.width << "\n" << k;
    EXPECT_EQ(k.substr(whole, partial - whole).find("if "), std::string::npos) << c.width << "\n" << k;
    size_t guarded = 0;
    for (size_t p = k.find("T.min(4, h - ty * 4)"); p != std::string::npos; p = k.find("T.min(4, h - ty * 4)", p + 1))
      ++guarded;
    EXPECT_EQ(guarded, 2u) << c.width << "\n" << k;
    EXPECT_EQ(k.find("if ty * 4 + i < h"), std::string::npos) << c.width << "\n" << k;
  }
}

TEST(WinogradConv2d, SymbolicBatchBeforeAfter) {
  // A static 13 x 13 image with a symbolic batch, decided at batch 1 (16
  // tiles of 4x4, 49 of 2x2). Before kSymbolicBatchF4MaxWeightBytes: the
  // same choices as at batch 1 (F(2x2), tile-major, a pad kernel). Now a
  // transformed F(4x4) weight of at most 1 MiB (32 -> 32: 144 KiB) takes
  // F(4x4) (no pad kernel: its input transform reads x) and n * 16 tiles.
  std::string before = ConvModule("\"n\", 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]");
  const char* after = R"(    @R.function
    def main(x: R.Tensor(("n", 32, 13, 13), dtype="float32")) -> R.Tensor(("n", 32, 13, 13), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            wino_in: R.Tensor((36, 32, n * 16), dtype="float32") = R.call_tir(cls.winograd_input_f4x3, (x,), out_sinfo=R.Tensor((36, 32, n * 16), dtype="float32"))
            wino_w: R.Tensor((36, 32, 32), dtype="float32") = metadata["relax.expr.Constant"][0]
            wino_mm: R.Tensor((36, n * 16, 32), dtype="float32") = R.call_tir(cls.winograd_matmul, (wino_in, wino_w), out_sinfo=R.Tensor((36, n * 16, 32), dtype="float32"), tir_vars=R.shape([n]))
            gv: R.Tensor((n, 32, 13, 13), dtype="float32") = R.call_tir(cls.winograd_output_f4x3, (wino_mm,), out_sinfo=R.Tensor((n, 32, 13, 13), dtype="float32"))
            R.output(gv)
        return gv
)";
  std::string out = Rewrite(before, {32, 32, 3, 3});
  EXPECT_EQ(MainOf(out), after) << out;
  // 96 -> 96: 1.27 MiB of F(4x4) weight, over the limit: F(2x2) as at
  // batch 1, and as before.
  std::string big = ConvModule("\"n\", 96, 13, 13", "96, 96, 3, 3", ", padding=[1, 1, 1, 1]");
  const char* big_after = R"(    @R.function
    def main(x: R.Tensor(("n", 96, 13, 13), dtype="float32")) -> R.Tensor(("n", 96, 13, 13), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            padded: R.Tensor((n, 96, 16, 16), dtype="float32") = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 2, 1, 2])
            wino_in: R.Tensor((16, 96, n * 49), dtype="float32") = R.call_tir(cls.winograd_input_f2x3, (padded,), out_sinfo=R.Tensor((16, 96, n * 49), dtype="float32"))
            wino_w: R.Tensor((16, 96, 96), dtype="float32") = metadata["relax.expr.Constant"][0]
            wino_mm: R.Tensor((16, n * 49, 96), dtype="float32") = R.call_tir(cls.winograd_matmul, (wino_in, wino_w), out_sinfo=R.Tensor((16, n * 49, 96), dtype="float32"), tir_vars=R.shape([n]))
            gv: R.Tensor((n, 96, 13, 13), dtype="float32") = R.call_tir(cls.winograd_output_f2x3, (wino_mm,), out_sinfo=R.Tensor((n, 96, 13, 13), dtype="float32"))
            R.output(gv)
        return gv
)";
  std::string big_out = Rewrite(big, {96, 96, 3, 3});
  EXPECT_EQ(MainOf(big_out), big_after) << big_out;
  EXPECT_FALSE(Contains(big_out, "T.Select(")) << big_out;
  // A static batch of 1 keeps the rule: F(2x2) for 32 -> 32 too.
  std::string one = Rewrite(ConvModule("1, 32, 13, 13", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 32, 3, 3});
  EXPECT_TRUE(Contains(one, "winograd_input_f2x3")) << one;
}

TEST(WinogradConv2d, SymbolicBatchInputTransformIsTileMajorInGroupsOfImages) {
  // F(4x4) on a static 24 x 22 image (6 x 6 tiles): with a static batch one
  // vectorized loop over all the channel's tiles per pass
  // (winograd_input_tile_major.h). Before, a symbolic batch stored each of
  // the pass's 6 streams in a loop of its own over one tile row (6 lanes):
  // 36 such loops. Now groups of 28 images (28 x 36 tiles x 6 phases x 4
  // bytes: 24 KiB): the phases of a group's rows, then one loop over a whole
  // group's 1008 tiles, or over the last group's images * 36.
  auto count = [](const std::string& s, const std::string& part) {
    int k = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++k;
    return k;
  };
  std::string sym = Rewrite(ConvModule("\"n\", 16, 24, 22", "32, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 16, 3, 3});
  const std::string in = sym.substr(0, sym.find("def winograd_output_f4x3"));
  EXPECT_TRUE(Contains(in, "winograd_input_f4x3")) << sym;
  EXPECT_EQ(count(in, "for tx in T.vectorized(T.int64(6)):"), 6) << sym;
  EXPECT_EQ(count(in, "ph = T.decl_buffer((6048,), \"float32\", scope=\"local\")"), 6) << sym;
  EXPECT_EQ(count(in, "images: T.int64 = T.min(28, n - ng * 28)"), 6) << sym;
  EXPECT_EQ(count(in, "for t in T.vectorized(T.int64(1008)):"), 6) << sym;
  EXPECT_EQ(count(in, "for t in T.vectorized(images * 36):"), 6) << sym;
  EXPECT_TRUE(Contains(in, "ph[1008 + ((nl * 6 + ty) * 6 + tx)] = row[tx * 4 + 1]")) << sym;
  EXPECT_TRUE(Contains(in, "V[T.int64(35), c, ng * 1008 + t] = T.float32(4) * ph[1008 + t] - T.float32(5) * "
                           "ph[3024 + t] + ph[5040 + t]"))
      << sym;
  std::string fixed = Rewrite(ConvModule("1, 16, 24, 22", "32, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 16, 3, 3});
  EXPECT_TRUE(Contains(fixed, "winograd_input_f4x3")) << fixed;
  EXPECT_EQ(count(fixed, "for tx in T.vectorized(T.int64(6)):"), 6) << fixed;
  EXPECT_EQ(count(fixed, "for t in T.vectorized(T.int64(36)):"), 6) << fixed;
}

TEST(WinogradConv2d, SymbolicBatchSmallImagesGoOneAtATime) {
  // F(4x4) on a static 10 x 10 image (2 x 2 tiles, MTCNN ONet's 64 -> 64
  // layer; 32 channels take F(4x4) by the small-weight rule): groups of 256
  // images, and a last group of fewer than kTileMajorInputMinTiles (16)
  // tiles goes one image at a time, each output stream a static 4-lane loop
  // of its own over the image's phases (a batch of 1 to 3). Before, that
  // group's streams were one loop of images * 4 masked lanes.
  auto count = [](const std::string& s, const std::string& part) {
    int k = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++k;
    return k;
  };
  std::string sym = Rewrite(ConvModule("\"n\", 32, 10, 10", "32, 32, 3, 3", ""), {32, 32, 3, 3});
  const std::string in = sym.substr(0, sym.find("def winograd_output_f4x3"));
  EXPECT_TRUE(Contains(in, "winograd_input_f4x3")) << sym;
  EXPECT_EQ(count(in, "if images * 4 < 16:"), 6) << sym;
  EXPECT_EQ(count(in, "ph_image = T.decl_buffer((24,), \"float32\", scope=\"local\")"), 6) << sym;
  EXPECT_EQ(count(in, "for t in T.vectorized(T.int64(4)):"), 36) << sym;
  EXPECT_TRUE(Contains(in, "V[T.int64(5), c, (ng * 256 + nl) * 4 + t] = T.float32(4) * ph_image[4 + t] - "
                           "T.float32(5) * ph_image[12 + t] + ph_image[20 + t]"))
      << sym;
  // The grouped form stays for the larger groups.
  EXPECT_EQ(count(in, "for t in T.vectorized(T.int64(1024)):"), 6) << sym;
  EXPECT_EQ(count(in, "for t in T.vectorized(images * 4):"), 6) << sym;
  // Images of 16 tiles or more (24 x 22: 36) always keep the groups.
  std::string big = Rewrite(ConvModule("\"n\", 16, 24, 22", "32, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 16, 3, 3});
  EXPECT_FALSE(Contains(big, "ph_image")) << big;
}

TEST(WinogradConv2d, StaticInputTransformIsTileMajor) {
  // Static sizes, F(4x4) (winograd_input_tile_major.h): each pass stores
  // its tile rows' 6 stride-4 phases into a buffer of the channel's tiles,
  // then all of V's 6 outputs of the pass in one vectorized loop over every
  // tile of the channel (images included), instead of a loop over one tile
  // row (6 lanes here) per output.
  auto count = [](const std::string& s, const std::string& part) {
    int k = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++k;
    return k;
  };
  // 24 x 22 with padding 1: 6 x 6 tiles.
  std::string one = Rewrite(ConvModule("1, 16, 24, 22", "32, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 16, 3, 3});
  EXPECT_TRUE(Contains(one, "winograd_input_f4x3")) << one;
  EXPECT_EQ(count(one, "ph = T.decl_buffer((216,), \"float32\", scope=\"local\")"), 6) << one;
  EXPECT_EQ(count(one, "for t in T.vectorized(T.int64(36)):"), 6) << one;
  EXPECT_TRUE(Contains(one, "ph[36 + ((n * 6 + ty) * 6 + tx)] = row[tx * 4 + 1]")) << one;
  EXPECT_TRUE(Contains(one, "V[T.int64(35), c, t] = T.float32(4) * ph[36 + t] - T.float32(5) * ph[108 + t] + ph[180 + t]"))
      << one;
  // Two images: one loop over both images' 72 tiles.
  std::string two = Rewrite(ConvModule("2, 16, 24, 22", "32, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 16, 3, 3});
  EXPECT_EQ(count(two, "for t in T.vectorized(T.int64(72)):"), 6) << two;
  // A phase buffer past 24 KiB (33 x 33 = 1089 tiles, 6 phases: 26 KiB):
  // the row layout, outputs stored per tile row.
  std::string big = Rewrite(ConvModule("1, 32, 132, 132", "32, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {32, 32, 3, 3});
  EXPECT_TRUE(Contains(big, "winograd_input_f4x3")) << big;
  EXPECT_FALSE(Contains(big, "ph = T.decl_buffer(")) << big;
  const std::string big_in = big.substr(0, big.find("def winograd_output_f4x3"));
  EXPECT_EQ(count(big_in, "for tx in T.vectorized(T.int64(33)):"), 6) << big;
}

TEST(WinogradConv2d, StaticChannelMajorOutputTransformIsTileMajor) {
  // Static sizes, F(4x4), channel-major product (40 output channels)
  // (winograd_output_tile_major.h): per channel one vectorized loop over
  // all its tiles into a buffer of 16 planes (36 tiles, 48 floats apart),
  // then each output row in one loop over its 5 whole tiles (22 = 5 x 4 +
  // 2), 4 stores a tile, and 2 stores for the partial tile; the last tile
  // row (23 = 5 x 4 + 3) has 3 rows.
  auto count = [](const std::string& s, const std::string& part) {
    int k = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++k;
    return k;
  };
  std::string out = Rewrite(ConvModule("1, 32, 23, 22", "40, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {40, 32, 3, 3});
  const std::string wo = out.substr(out.find("def winograd_output_f4x3"));
  EXPECT_TRUE(Contains(wo, "y_planes = T.decl_buffer((768,), \"float32\", scope=\"local\")")) << out;
  EXPECT_EQ(count(wo, "for t in T.vectorized(T.int64(36)):"), 1) << out;
  EXPECT_EQ(count(wo, "for tx in T.vectorized(T.int64(5)):"), 7) << out;
  EXPECT_TRUE(Contains(wo, "if ty < 5:")) << out;
  EXPECT_TRUE(Contains(wo, "Y[n, o, ty * 4 + 2, tx * 4 + 3] = y_planes[528 + (n * 6 + ty) * 6 + tx]")) << out;
  EXPECT_TRUE(Contains(wo, "Y[n, o, ty * 4 + 2, T.int64(21)] = y_planes[432 + (n * 6 + ty) * 6 + 5]")) << out;
  EXPECT_FALSE(Contains(wo, "col % 4")) << out;
  // Past 24 KiB of planes (33 x 33 tiles): the row layout.
  std::string big = Rewrite(ConvModule("1, 32, 132, 132", "40, 32, 3, 3", ", padding=[1, 1, 1, 1]"), {40, 32, 3, 3});
  const std::string big_out = big.substr(big.find("def winograd_output_f4x3"));
  EXPECT_FALSE(Contains(big_out, "y_planes")) << big;
  EXPECT_TRUE(Contains(big_out, "for tx in T.vectorized(T.int64(33)):")) << big;
}

TEST(WinogradConv2d, SymbolicShapesFollowTheCostRule) {
  // A symbolic batch decides at batch 1: 5 x 5 is 9 tiles, too few.
  std::string few = Rewrite(ConvModule("\"n\", 64, 5, 5", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]"), {64, 64, 3, 3});
  EXPECT_TRUE(Contains(few, "R.nn.conv2d(")) << few;
  // A layer at 1/32 of a symbolic image (10 x 10 at the nominal 320):
  // 9 tiles of 4x4, 25 of 2x2: F(2x2), tile-major.
  std::string deep = Rewrite(ConvModule("1, 64, \"h // 32\", \"w // 32\"", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]"),
                             {64, 64, 3, 3});
  EXPECT_TRUE(Contains(deep, "winograd_input_f2x3")) << deep;
  EXPECT_TRUE(Contains(deep, "winograd_matmul")) << deep;
  // F(2x2) reads x itself as F(4x4) does (winograd_input_rows.h): no pad
  // kernel; its input is x, bound to (1, 64, h // 32, w // 32).
  EXPECT_FALSE(Contains(deep, "R.nn.pad(")) << deep;
  EXPECT_TRUE(Contains(deep, "R.call_tir(cls.winograd_input_f2x3, (x,)")) << deep;
  EXPECT_TRUE(Contains(deep, "row_ph = T.decl_buffer((4, 2, 17)")) << deep;
  // Too few input channels for F(2x2) there.
  std::string c16 = Rewrite(ConvModule("1, 16, \"h // 32\", \"w // 32\"", "64, 16, 3, 3", ", padding=[1, 1, 1, 1]"),
                            {64, 16, 3, 3});
  EXPECT_TRUE(Contains(c16, "R.nn.conv2d(")) << c16;
  // 16 input channels and a symbolic height and width (80 x 80 at the
  // nominal 320): a choice at run time (both forms); with a static image,
  // F(4x4).
  std::string s16 = Rewrite(ConvModule("1, 16, \"h // 4\", \"w // 4\"", "16, 16, 3, 3", ", padding=[1, 1, 1, 1]"),
                            {16, 16, 3, 3});
  EXPECT_TRUE(Contains(s16, "R.nn.conv2d(")) << s16;
  EXPECT_TRUE(Contains(s16, "winograd_matmul")) << s16;
  EXPECT_TRUE(Contains(s16, "if R.prim_value(")) << s16;
  std::string p16 = Rewrite(ConvModule("1, 16, 80, 80", "16, 16, 3, 3", ", padding=[1, 1, 1, 1]"), {16, 16, 3, 3});
  EXPECT_TRUE(Contains(p16, "winograd_input_f4x3")) << p16;
  // A symbolic batch over a 900 x 161 map of 64 channels: one image's
  // transformed tiles take 85 MB, over kMaxSymbolicWinogradBytes: one
  // banded kernel (BandedBeforeAfter).
  std::string big = Rewrite(ConvModule("\"n\", 64, 900, 161", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]"), {64, 64, 3, 3});
  EXPECT_TRUE(Contains(big, "winograd_banded_f4x3")) << big;
  // The same map pinned to batch 1 too.
  std::string big1 = Rewrite(ConvModule("1, 64, 900, 161", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]"), {64, 64, 3, 3});
  EXPECT_TRUE(Contains(big1, "winograd_banded_f4x3")) << big1;
  // A symbolic width there: the bands need a static one: direct.
  std::string wide = Rewrite(ConvModule("1, 64, 900, \"w\"", "64, 64, 3, 3", ", padding=[1, 1, 1, 1]"), {64, 64, 3, 3});
  EXPECT_TRUE(Contains(wide, "R.nn.conv2d(")) << wide;
  // 24 output channels (not a multiple of 16): direct.
  std::string o24 = Rewrite(ConvModule("\"n\", 64, 900, 161", "24, 64, 3, 3", ", padding=[1, 1, 1, 1]"), {24, 64, 3, 3});
  EXPECT_TRUE(Contains(o24, "R.nn.conv2d(")) << o24;
}

TEST(WinogradConv2d, BandedBeforeAfter) {
  // Symbolic batch and height, 161 columns, 80 -> 64 channels: at the
  // nominal height 320, 80 x 41 tiles of 4x4 take 38 MB (over 32 MiB). No
  // pad binding: the kernel reads its padding as zeros; the weight is
  // tile-major (36, C, O).
  std::string before = ConvModule("\"n\", 80, \"h\", 161", "64, 80, 3, 3", ", padding=[1, 1, 1, 1]");
  const char* after = R"(    @R.function
    def main(x: R.Tensor(("n", 80, "h", 161), dtype="float32")) -> R.Tensor(("n", 64, "h", 161), dtype="float32"):
        n = T.int64()
        h = T.int64()
        cls = Module
        with R.dataflow():
            wino_w: R.Tensor((36, 80, 64), dtype="float32") = metadata["relax.expr.Constant"][0]
            gv: R.Tensor((n, 64, h, 161), dtype="float32") = R.call_tir(cls.winograd_banded_f4x3, (x, wino_w), out_sinfo=R.Tensor((n, 64, h, 161), dtype="float32"))
            R.output(gv)
        return gv
)";
  std::string out = Rewrite(before, {64, 80, 3, 3});
  EXPECT_EQ(MainOf(out), after) << out;
}

// A symbolic height and width with 16 input channels: Winograd wins only at
// mid-size planes, so both forms go in and an If on the number of tiles
// chooses at run time (winograd_choice.h); the bias + ReLU after the
// convolution goes into both branches.
std::string EpilogueModule(const std::string& x, const std::string& w) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(x) + ", w: " + T(w) + ", b: " +
         T("1, 32, 1, 1") +
         "):\n        with R.dataflow():\n            y = R.nn.conv2d(x, w)\n            z = R.add(y, b)\n"
         "            gv = R.nn.relu(z)\n            R.output(gv)\n        return gv\n";
}

size_t Count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(WinogradConv2d, UpperBoundsThatDecideTheRunTimeChoice) {
  // --bound: with h, w <= 22 the tiles T = ceil(Ho / 4) * ceil(Wo / 4) are
  // at most 5 * 5 = 25, under the 32 the If tests for (kMinWinogradF4Tiles):
  // the direct convolution, no If and no Winograd kernels. Without bounds
  // (before), or with a bound that does not decide it (26: 36 tiles), or
  // with one variable unbounded, the If stays.
  auto rewrite = [](const std::map<std::string, int64_t>& bounds) -> std::string {
    Result<ir::IRModule> m = relax::InferStructInfo(
        *text::ParseModule(EpilogueModule("1, 16, \"h\", \"w\"", "32, 16, 3, 3"), "conv.relax"));
    EXPECT_TRUE(m.ok());
    if (!m.ok()) return "";
    Result<ir::IRModule> out =
        transform::WinogradConv2d(*transform::BindParams(*m, {{"w", Ones({32, 16, 3, 3})}}), bounds);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? text::PrintModule(*out) : "";
  };
  std::string before = rewrite({});
  EXPECT_EQ(Count(before, "if R.prim_value("), 1u) << before;
  std::string decided = rewrite({{"h", 22}, {"w", 22}});
  EXPECT_EQ(Count(decided, "if R.prim_value("), 0u) << decided;
  EXPECT_FALSE(Contains(decided, "winograd")) << decided;
  EXPECT_EQ(Count(decided, "R.nn.conv2d("), 1u) << decided;
  std::string loose = rewrite({{"h", 26}, {"w", 26}});
  EXPECT_EQ(Count(loose, "if R.prim_value("), 1u) << loose;
  std::string one = rewrite({{"h", 20}});
  EXPECT_EQ(Count(one, "if R.prim_value("), 1u) << one;
}

TEST(WinogradConv2d, FewInputChannelsOverASymbolicPlaneChooseAtRunTime) {
  // Before (the plane known): 16 -> 32 at 117 x 157 is F(4x4), no branch.
  std::string known = Rewrite(EpilogueModule("1, 16, 117, 157", "32, 16, 3, 3"), {32, 16, 3, 3});
  EXPECT_TRUE(Contains(known, "winograd_output_f4x3")) << known;
  EXPECT_FALSE(Contains(known, "R.nn.conv2d(")) << known;
  EXPECT_FALSE(Contains(known, "if R.prim_value(")) << known;
  // After (symbolic): an If on the tiles T = ceil(Ho / 4) * ceil(Wo / 4)
  // and the tile columns ceil(Wo / 4): tile-major Winograd for 32 <= T <=
  // 1365 (the static rule's F(4x4) bound; 6 MiB of 36 x 32 x T floats) on
  // rows of fewer than 16 tiles, else the direct convolution; each branch
  // ends with its own copy of the epilogue, whose result the If binds.
  std::string sym = Rewrite(EpilogueModule("1, 16, \"h\", \"w\"", "32, 16, 3, 3"), {32, 16, 3, 3});
  EXPECT_EQ(Count(sym, "if R.prim_value("), 1u) << sym;
  EXPECT_TRUE(Contains(sym, ">= 32")) << sym;
  EXPECT_TRUE(Contains(sym, "<= 1365")) << sym;
  EXPECT_TRUE(Contains(sym, "< 16")) << sym;
  EXPECT_TRUE(Contains(sym, "winograd_output_f4x3")) << sym;
  EXPECT_TRUE(Contains(sym, "winograd_matmul")) << sym;
  EXPECT_EQ(Count(sym, "R.nn.conv2d("), 1u) << sym;
  EXPECT_EQ(Count(sym, "R.add("), 2u) << sym;
  EXPECT_EQ(Count(sym, "R.nn.relu("), 2u) << sym;
  EXPECT_LT(sym.find("if R.prim_value("), sym.find("R.nn.relu(")) << sym;
  EXPECT_TRUE(Contains(sym, "gv: R.Tensor((1, 32, h - 2, w - 2), dtype=\"float32\") = gv_w")) << sym;
  EXPECT_TRUE(Contains(sym, "gv: R.Tensor((1, 32, h - 2, w - 2), dtype=\"float32\") = gv_d")) << sym;
  // The If in a block of its own (not inside a dataflow block): the
  // printed module parses back.
  {
    Result<ir::IRModule> m = relax::InferStructInfo(
        *text::ParseModule(EpilogueModule("1, 16, \"h\", \"w\"", "32, 16, 3, 3"), "conv.relax"));
    ASSERT_TRUE(m.ok());
    Result<ir::IRModule> out = transform::WinogradConv2d(*transform::BindParams(*m, {{"w", Ones({32, 16, 3, 3})}}));
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<ir::Expr> constants;
    std::string printed = text::PrintModule(*out, &constants);
    Result<ir::IRModule> parsed = text::ParseModule(printed, "choice.relax", constants);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  }
  // 16 output channels: the same choice (before, direct and no If).
  std::string o16 = Rewrite(ConvModule("1, 16, \"h\", \"w\"", "16, 16, 3, 3", ""), {16, 16, 3, 3});
  EXPECT_TRUE(Contains(o16, "winograd_matmul")) << o16;
  EXPECT_EQ(Count(o16, "if R.prim_value("), 1u) << o16;
  EXPECT_TRUE(Contains(o16, "<= 2730")) << o16;
  // Fewer than 16 output channels (kMinWinogradOutputChannels): direct, no If.
  std::string o8 = Rewrite(ConvModule("1, 16, \"h\", \"w\"", "8, 16, 3, 3", ""), {8, 16, 3, 3});
  EXPECT_FALSE(Contains(o8, "winograd")) << o8;
  EXPECT_FALSE(Contains(o8, "if R.prim_value(")) << o8;
  // A result used besides the epilogue: the If binds the convolution's
  // output and the epilogue stays after it.
  std::string src = EpilogueModule("1, 16, \"h\", \"w\"", "32, 16, 3, 3");
  src.replace(src.find("            R.output(gv)"), 24, "            s = R.sum(y)\n            R.output(gv, s)");
  std::string shared = Rewrite(src, {32, 16, 3, 3});
  EXPECT_EQ(Count(shared, "R.nn.relu("), 1u) << shared;
  EXPECT_TRUE(Contains(shared, "= y_winograd")) << shared;
}

}  // namespace
}  // namespace kiln
