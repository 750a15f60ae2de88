// winograd-conv2d with symbolic shapes (transform/winograd_conv2d.h): a
// convolution compiled once with a symbolic batch, or symbolic height and
// width, through the whole driver and the VM, against a double-precision
// direct convolution at several shapes, including outputs that the tile
// size (2 or 4) does not divide, widths of one tile and of one column, and
// batches of 1 and 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/expr_map.h"
#include "compiler/arith/simplify.h"
#include "compiler/driver/compile.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

struct WinoCase {
  std::string n, h, w;  // "n" or a number each
  int64_t c, o;
  int64_t pad;            // on every side
  bool relu;              // bias + relu epilogue (fused into the output transform)
  const char* transform;  // the output transform's name part
  bool tile_major;
  // One banded kernel (winograd_banded.h: one image's transformed tiles
  // over kMaxSymbolicWinogradBytes) instead of the three kernels.
  bool banded = false;
  // The convolution's input is x taken every `sub` rows and columns (a
  // 1 x 1 max pool of stride sub): a layer deeper in the image, which the
  // cost rule sees at 320 / sub.
  int64_t sub = 1;
  // A run-time choice (winograd-conv2d's If on the tiles): the direct
  // convolution stays beside the transforms.
  bool choice = false;
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

std::string Module(const WinoCase& k) {
  auto q = [](const std::string& d) { return std::isdigit(static_cast<unsigned char>(d[0])) ? d : "\"" + d + "\""; };
  std::string s = std::to_string(k.pad);
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " +
                    T(q(k.n) + ", " + std::to_string(k.c) + ", " + q(k.h) + ", " + q(k.w)) + ", w: " +
                    T(std::to_string(k.o) + ", " + std::to_string(k.c) + ", 3, 3") + ", b: " +
                    T("1, " + std::to_string(k.o) + ", 1, 1") + ") -> R.Tensor(dtype=\"float32\", ndim=4):\n";
  src += "        with R.dataflow():\n";
  std::string in = "x";
  if (k.sub > 1) {
    const std::string st = std::to_string(k.sub);
    src += "            xs = R.nn.max_pool2d(x, pool_size=[1, 1], strides=[" + st + ", " + st + "])\n";
    in = "xs";
  }
  src += "            y = R.nn.conv2d(" + in + ", w, padding=[" + s + ", " + s + ", " + s + ", " + s + "])\n";
  if (k.relu) {
    src += "            z = R.add(y, b)\n            gv = R.nn.relu(z)\n";
  } else {
    src += "            gv = y\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

std::vector<float> Reference(const WinoCase& k, int64_t n, int64_t h, int64_t w, const std::vector<float>& x,
                             const std::vector<float>& wt, const std::vector<float>& b) {
  const int64_t ho = h + 2 * k.pad - 2, wo = w + 2 * k.pad - 2;
  std::vector<float> y(n * k.o * ho * wo);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t e = 0; e < 3; ++e) {
                int64_t r = i + a - k.pad, col = j + e - k.pad;
                if (r < 0 || r >= h || col < 0 || col >= w) continue;
                acc += double(x[((in * k.c + c) * h + r) * w + col]) * wt[((o * k.c + c) * 3 + a) * 3 + e];
              }
          if (k.relu) acc = std::max(acc + b[o], 0.0);
          y[((in * k.o + o) * ho + i) * wo + j] = static_cast<float>(acc);
        }
  return y;
}

// The rewritten module's kernels: no conv2d left, the expected transform.
void CheckRewritten(const WinoCase& k, const driver::CompileOptions& options) {
  Result<ir::IRModule> mod = text::ParseModule(Module(k), "wino.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<ir::IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  bool conv = false, transform = false, tile_major = false;
  for (const ir::ModuleEntry& e : lowered->entries) {
    if (!e.prim) continue;
    conv |= e.name.find("conv2d") != std::string::npos;
    transform |= e.name.find(std::string(k.banded ? "winograd_banded_" : "winograd_output_") + k.transform) !=
                 std::string::npos;
    tile_major |= e.name.find("winograd_matmul") != std::string::npos;
  }
  EXPECT_EQ(conv, k.choice);
  EXPECT_TRUE(transform) << "expected " << k.transform;
  EXPECT_EQ(tile_major, k.tile_major);
}

// `threads`: the thread counts compiled for and run with (each a compile).
void CheckNumbers(const WinoCase& k, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<int>& threads_list = {1, 2}) {
  std::vector<float> wt = RandomFloats(k.o * k.c * 9, 7, 0.5f), b = RandomFloats(k.o, 11);
  driver::CompileOptions options;
  options.params = {{"w", FloatTensor({k.o, k.c, 3, 3}, wt)}};
  CheckRewritten(k, options);
  for (int threads : threads_list) {
    options.num_threads_hint = threads;
    std::shared_ptr<const vm::Module> m = CompileAndLoad(Module(k), options, threads);
    ASSERT_NE(m, nullptr);
    for (const std::vector<int64_t>& s : shapes) {
      const int64_t n = s[0], h = s[1], w = s[2];
      SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) + " h " + std::to_string(h) +
                   " w " + std::to_string(w));
      std::vector<float> x = RandomFloats(n * k.c * h * w, 3 + h * 31 + w);
      Result<Tensor> y = InvokeMain(*m, {Any(FloatTensor({n, k.c, h, w}, x)), Any(FloatTensor({1, k.o, 1, 1}, b))});
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      std::vector<float> ref;
      if (k.sub > 1) {
        const int64_t hs = (h - 1) / k.sub + 1, ws = (w - 1) / k.sub + 1;
        std::vector<float> xs(n * k.c * hs * ws);
        for (int64_t p = 0; p < n * k.c; ++p)
          for (int64_t i = 0; i < hs; ++i)
            for (int64_t j = 0; j < ws; ++j) xs[(p * hs + i) * ws + j] = x[(p * h + i * k.sub) * w + j * k.sub];
        ref = Reference(k, n, hs, ws, xs, wt, b);
      } else {
        ref = Reference(k, n, h, w, x, wt, b);
      }
      ASSERT_EQ(y->NumElements(), static_cast<int64_t>(ref.size()));
      double worst = 0, scale = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        // A NaN (an element nothing stored) counts as infinitely wrong:
        // std::max(worst, NaN) would keep worst.
        const double d = std::fabs(double(y->data<float>()[i]) - ref[i]);
        worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
        scale = std::max(scale, std::fabs(double(ref[i])));
      }
      // F(4x4)'s transforms multiply by up to 8 and its weights by 1/24:
      // float32 rounding well under 1e-4 of the output's scale.
      EXPECT_LE(worst, 1e-4 * std::max(scale, 1.0));
    }
  }
}

TEST(WinogradSymbolicTest, SymbolicHeightAndWidth) {
  // The nominal 320 x 320 image: F(4x4), 80 tiles a row: channel-major
  // (kWinogradWideTileCols). (32 input channels: with fewer, a symbolic
  // height or width stays direct.)
  WinoCase f4{"1", "h", "w", 32, 32, 1, true, "f4x3", false};
  CheckNumbers(f4, {{1, 16, 16}, {1, 13, 18}, {1, 9, 5}, {1, 4, 4}, {1, 1, 7}, {1, 30, 3}, {1, 2, 2}});
  // No padding: the output is 2 smaller; batch and size all symbolic.
  WinoCase all{"n", "h", "w", 32, 16, 0, false, "f4x3", false};
  CheckNumbers(all, {{1, 18, 18}, {2, 11, 9}, {3, 3, 3}, {1, 7, 22}});
}

TEST(WinogradSymbolicTest, InputAndOutputTransformColumnBlocks) {
  // The input transform's tile columns that read inside the input go in
  // blocks of 16, then of 4, then one at a time; the rest (one at most)
  // read zeros past it. No padding, F(4x4): w = 157 (MTCNN PNet's 16 -> 32
  // layer) has 39 tile columns, 38 inside: two blocks of 16, one of 4, two
  // single tiles, one guarded; w = 70: 17 inside, one block of 16 and one
  // single tile; w = 86: 21, blocks of 16 and 4 and one single; w = 69:
  // 16 inside, one guarded; w = 22: no block of 16.
  // Channel-major (80 tiles a row at the nominal size): rows of 16 tiles or
  // more go in blocks of 16 whole tiles through a stack buffer of the 4
  // output rows, then one block ending at the row's last tile that stores
  // the columns the others did not (overlapping them); the last tile row
  // stores Ho - 4 ty rows. 155 output columns (w = 157): two blocks and one
  // from tile 23 storing columns 128-154; w = 70 (68 columns, 17 whole
  // tiles): one block and one from tile 1 storing 4 columns; w = 66: exactly
  // one block; w = 64 (62 columns, 16 tiles, the last partial): no whole
  // block, one block from tile 0 storing 62 columns; w = 63: 61 columns.
  // Shorter rows keep the blocks of 4 and single guarded tiles: w = 22
  // (one block of 4 and a tile), w = 17 (three blocks of 4 and a partial
  // tile), w = 5 (one partial tile column). Last tile rows of 1, 2 and 3
  // output rows, batches of 1 to 3, bias + ReLU fused into the output
  // transform. (32 input channels, as in SymbolicHeightAndWidth.)
  WinoCase k{"n", "h", "w", 32, 32, 0, true, "f4x3", false};
  CheckNumbers(k, {{1, 9, 157}, {1, 12, 70}, {2, 7, 86}, {1, 6, 69}, {1, 10, 22}, {1, 6, 66}, {3, 7, 88},
                   {2, 11, 17}, {1, 13, 5}, {1, 8, 64}, {2, 7, 63}, {1, 2, 131}});
}

TEST(WinogradSymbolicTest, InputTransformRowBlocksAndPadding) {
  // F(4x4) over a symbolic height and width reads the unpadded input
  // (winograd_input_rows.h): per tile row, blocks of 16 tiles, the last
  // one's lanes past the row stored on the next rows' first tiles (stored
  // again later), the last row of a channel through a stack tile; rows of
  // at most 8 or 4 tiles in one block of 8 or 4 lanes. Padding
  // 1: w = 80 (20 tiles a row), 40 (10), 20 (5: 8 lanes), 157 (40), 150
  // (38), 9 (3: 4 lanes), 1; heights with a partial last tile row and of
  // one row; batches of 1 and 2 (the second image's rows follow the
  // first's).
  WinoCase p1{"n", "h", "w", 32, 32, 1, true, "f4x3", false};
  CheckNumbers(p1, {{1, 40, 80}, {1, 7, 40}, {2, 20, 20}, {1, 5, 157}, {1, 9, 150}, {1, 13, 9}, {1, 1, 1}});
  // Padding 2: the first tile row reads two rows above the input, and
  // images of one row and column read little else.
  WinoCase p2{"1", "h", "w", 32, 16, 2, false, "f4x3", false};
  CheckNumbers(p2, {{1, 9, 30}, {1, 1, 1}, {1, 2, 18}, {1, 17, 3}});
}

TEST(WinogradSymbolicTest, F2OverASymbolicHeightAndWidth) {
  // A symbolic height and width at 1/16 of the image (20^2 at the nominal
  // 320: 25 tiles of 4x4, F(2x2)), tile-major. The input transform reads
  // the unpadded input in blocks of 16 tiles (winograd_input_rows.h), as
  // F(4x4) does: rows of one block whose loads reach into the rows beside
  // them (columns outside the input selected to zero), the last channel's
  // last rows through a plain row. Convolution inputs (image / 16): 20 x
  // 20 (10 tiles a row), 7 x 33 (17: a second block of one tile), 3 x 32
  // (16), 5 x 5 (3, partial last tiles), 1 x 1, 2 x 3; two images (the
  // second image's rows follow the first's). Rows of 5 to 8 tiles take one
  // block of 8 lanes: 10 x 10 (YOLOv8n's at 160^2, two images), 13 x 15;
  // of 4 or fewer one of 4: 6 x 7.
  WinoCase k{"n", "h", "w", 32, 32, 1, true, "f2x3", true};
  k.sub = 16;
  CheckNumbers(k, {{1, 320, 320}, {1, 100, 520}, {2, 40, 500}, {1, 80, 80}, {2, 65, 65}, {1, 1, 1}, {2, 17, 45},
                   {2, 160, 160}, {1, 208, 240}, {2, 96, 112}});
  // Padding 0, and 2 (the first tile row reading two rows above the
  // input; at 1/32 of the image, 12^2 outputs at the nominal size: F(2x2)).
  WinoCase p0{"n", "h", "w", 32, 16, 0, false, "f2x3", true};
  p0.sub = 16;
  CheckNumbers(p0, {{1, 320, 320}, {2, 100, 300}, {1, 33, 49}}, {1});
  WinoCase p2{"1", "h", "w", 32, 16, 2, false, "f2x3", true};
  p2.sub = 32;
  CheckNumbers(p2, {{1, 320, 320}, {1, 1, 1}, {1, 150, 40}, {1, 64, 700}}, {1});
}

TEST(WinogradSymbolicTest, TileMajorWhenRowsAreShort) {
  // A symbolic height with a static width of 40 (10 tiles a row, under
  // kWinogradWideTileCols): tile-major. (32 input channels: with fewer, a
  // symbolic height stays direct.)
  WinoCase k{"n", "h", "40", 32, 32, 1, true, "f4x3", true};
  CheckNumbers(k, {{1, 40, 40}, {2, 13, 40}, {1, 3, 40}}, {1});
}

TEST(WinogradSymbolicTest, SymbolicBatch) {
  // Static 13 x 13 with a symbolic batch: decided at batch 1 (49 tiles of
  // 2x2, 16 of 4x4), F(2x2) by the tile rule but F(4x4) by its small
  // transformed weight (kSymbolicBatchF4MaxWeightBytes), tile-major.
  WinoCase tm{"n", "13", "13", 32, 32, 1, true, "f4x3", true};
  CheckNumbers(tm, {{1, 13, 13}, {3, 13, 13}});
  // 20 x 17 with 96 channels (25 tiles of 4x4 at batch 1, 1.27 MiB of
  // F(4x4) weight: F(2x2), 9 a row): tile-major all the same with a
  // symbolic batch; partial last tile column.
  WinoCase wide{"n", "20", "17", 96, 96, 1, true, "f2x3", true};
  CheckNumbers(wide, {{1, 20, 17}, {2, 20, 17}});
  // 48 x 48, 12 x 12 tiles of 4x4 an image: the input transform takes
  // groups of 7 images (winograd_input_tile_major.h); 7 is one whole
  // group, 9 a whole one and a last one of 2.
  WinoCase groups{"n", "48", "48", 16, 32, 1, true, "f4x3", true};
  CheckNumbers(groups, {{1, 48, 48}, {7, 48, 48}, {9, 48, 48}});
  // 24 x 22: F(4x4), partial last tile column.
  WinoCase f4{"n", "24", "22", 16, 32, 1, false, "f4x3", true};
  CheckNumbers(f4, {{1, 24, 22}, {2, 24, 22}});
}

TEST(WinogradSymbolicTest, SymbolicBatchOfSmallImages) {
  // 10 x 10 without padding (8 x 8 outputs, 4 tiles of 4x4 an image, MTCNN
  // ONet's 64 -> 64 layer), F(4x4) over a symbolic batch: the input
  // transform takes groups of 256 images, and a last group of fewer than
  // 16 tiles one image at a time (winograd_input_tile_major.h). Batches 1
  // to 3 one at a time, 4 and 5 one group of run-time count, 258 a whole
  // group and two single images.
  WinoCase k{"n", "10", "10", 32, 32, 0, true, "f4x3", true};
  CheckNumbers(k, {{1, 10, 10}, {2, 10, 10}, {3, 10, 10}, {4, 10, 10}, {5, 10, 10}, {258, 10, 10}}, {1});
  // 7 x 7 with padding 1 (2 x 2 tiles, partial last row and column).
  WinoCase p{"n", "7", "7", 32, 32, 1, false, "f4x3", true};
  CheckNumbers(p, {{1, 7, 7}, {3, 7, 7}, {4, 7, 7}});
}

TEST(WinogradSymbolicTest, BandedWhenTheTilesAreLarge) {
  // Static width 481 (a partial last tile column), symbolic height (decided
  // at the nominal 320: 80 x 121 tiles of 4x4, 45 MB with 32 channels):
  // banded, with a partial last tile row at h = 9 and an image of one
  // output row.
  WinoCase sym{"n", "h", "481", 32, 32, 1, true, "f4x3", false, true};
  CheckNumbers(sym, {{1, 9, 481}, {2, 16, 481}, {1, 1, 481}});
  // No padding, more input than output channels; 122 tiles a row: seven
  // vector blocks of 16, one of 8, two tiles one at a time.
  WinoCase nopad{"n", "h", "490", 32, 16, 0, false, "f4x3", false, true};
  CheckNumbers(nopad, {{1, 7, 490}, {3, 3, 490}});
  // Static (pinned) sizes take it too: 63 x 121 tiles, 35 MB.
  WinoCase pinned{"1", "250", "481", 16, 32, 1, true, "f4x3", false, true};
  CheckNumbers(pinned, {{1, 250, 481}});
}

// The variables of `e` by name.
void VarsByName(const ir::PrimExpr& e, std::map<std::string, const ir::VarNode*>* out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    (*out)[v->name] = v;
    return;
  }
  if (ir::IsBinary(e->kind())) {
    const auto* bin = static_cast<const ir::BinaryNode*>(e.get());
    VarsByName(bin->a, out);
    VarsByName(bin->b, out);
  }
}

// The first If of the lowered main of `mod` (a run-time choice), or null.
const ir::IfExpr* FirstChoice(const ir::IRModule& lowered) {
  const ir::FunctionExpr* main = lowered.FindRelax("main").get();
  const auto* seq = main ? ir::ExprAs<ir::SeqExprNode>(main->body) : nullptr;
  if (seq == nullptr) return nullptr;
  for (const auto& b : seq->blocks)
    for (const auto& bind : b.bindings)
      if (const auto* i = ir::ExprAs<ir::IfExpr>(bind.value)) return i;
  return nullptr;
}

// Whether the choice's condition holds at n, h, w (-1: not a constant).
int ChoiceAt(const ir::IfExpr& choice, int64_t n, int64_t h, int64_t w) {
  const auto* cond = ir::ExprAs<ir::PrimValueExpr>(choice.cond);
  if (cond == nullptr) return -1;
  std::map<std::string, const ir::VarNode*> vars;
  VarsByName(cond->value, &vars);
  std::map<const ir::VarNode*, ir::PrimExpr> at;
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"n", n}, {"h", h}, {"w", w}})
    if (vars.count(name)) at[vars.at(name)] = ir::IntImm(DType::Int64(), v);
  std::optional<int64_t> v = relax::ConstDim(arith::Simplify(arith::Substitute(cond->value, at)));
  return v ? (*v != 0) : -1;
}

TEST(WinogradSymbolicTest, RunTimeChoiceForSixteenInputChannels) {
  // 16 -> 32 + bias + ReLU over a symbolic height and width: the lowered
  // main holds one If on the number of F(4x4) tiles T (winograd_choice.h),
  // its first branch the three Winograd kernels ending in the output
  // transform fused with the epilogue, the other the direct convolution
  // fused with it. The Winograd branch is tile-major (its product the
  // winograd_matmul kernel).
  WinoCase k{"n", "h", "w", 16, 32, 0, true, "f4x3", true};
  k.choice = true;
  std::vector<float> wt = RandomFloats(k.o * k.c * 9, 7, 0.5f);
  driver::CompileOptions options;
  options.params = {{"w", FloatTensor({k.o, k.c, 3, 3}, wt)}};
  Result<ir::IRModule> mod = text::ParseModule(Module(k), "wino.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<ir::IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  const ir::FunctionExpr* main = lowered->FindRelax("main").get();
  ASSERT_NE(main, nullptr);
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(main->body);
  ASSERT_NE(seq, nullptr);
  const ir::IfExpr* choice = nullptr;
  for (const auto& b : seq->blocks)
    for (const auto& bind : b.bindings)
      if (const auto* i = ir::ExprAs<ir::IfExpr>(bind.value)) choice = i;
  ASSERT_NE(choice, nullptr) << text::PrintModule(*lowered);
  auto callees = [](const ir::Expr& branch) {
    std::string names;
    for (const auto& b : ir::ExprAs<ir::SeqExprNode>(branch)->blocks)
      for (const auto& bind : b.bindings) {
        const auto* call = ir::ExprAs<ir::CallExpr>(bind.value);
        if (call && call->args.size() >= 1)
          if (const auto* g = ir::ExprAs<ir::GlobalVarExpr>(call->args[0])) names += g->name + " ";
      }
    return names;
  };
  const std::string wino = callees(choice->then_branch), direct = callees(choice->else_branch);
  EXPECT_NE(wino.find("winograd_input_f4x3 "), std::string::npos) << wino;
  EXPECT_NE(wino.find("fused_winograd_output_f4x3_add_relu "), std::string::npos) << wino;
  EXPECT_EQ(wino.find("conv2d"), std::string::npos) << wino;
  EXPECT_EQ(direct.find("fused_conv2d_add"), 0u) << direct;  // fused_conv2d_add1_relu1: names are unique
  EXPECT_NE(direct.find("relu"), std::string::npos) << direct;
  EXPECT_EQ(direct.find("winograd"), std::string::npos) << direct;
  // The condition at sizes on both sides of each bound: the static rule's
  // T >= 32 (kMinWinogradF4Tiles), T <= 1365 (6 MiB of products at 32
  // output channels) and rows of fewer than 16 tiles
  // (kRunTimeWinogradMaxTileCols) or T <= 682 (3 MiB of products,
  // kRunTimeWinogradLongRowMaxBytes), with T = n * th * tw, th = ceil((h -
  // 2) / 4), tw = ceil((w - 2) / 4).
  const auto* cond = ir::ExprAs<ir::PrimValueExpr>(choice->cond);
  ASSERT_NE(cond, nullptr);
  std::map<std::string, const ir::VarNode*> vars;
  VarsByName(cond->value, &vars);
  ASSERT_EQ(vars.size(), 3u);
  auto winograd_at = [&](int64_t n, int64_t h, int64_t w) {
    std::map<const ir::VarNode*, ir::PrimExpr> at{{vars.at("n"), ir::IntImm(DType::Int64(), n)},
                                                  {vars.at("h"), ir::IntImm(DType::Int64(), h)},
                                                  {vars.at("w"), ir::IntImm(DType::Int64(), w)}};
    std::optional<int64_t> v = relax::ConstDim(arith::Simplify(arith::Substitute(cond->value, at)));
    EXPECT_TRUE(v.has_value());
    return v.value_or(-1) != 0;
  };
  EXPECT_FALSE(winograd_at(1, 22, 22));    // 5 x 5 = 25 tiles: under 32, as a pinned build
  EXPECT_TRUE(winograd_at(1, 26, 26));     // 6 x 6 = 36
  EXPECT_TRUE(winograd_at(2, 46, 28));     // 2 x 11 x 7 = 154 (MTCNN PNet at 2 x 97 x 61)
  EXPECT_TRUE(winograd_at(1, 30, 40));     // 7 x 10 = 70
  EXPECT_TRUE(winograd_at(1, 62, 62));     // 15 x 15 = 225
  EXPECT_TRUE(winograd_at(1, 62, 66));     // 15 x 16 = 240: rows of 16 tiles, under 682
  EXPECT_TRUE(winograd_at(1, 82, 82));     // 20 x 20 = 400, rows of 20
  EXPECT_TRUE(winograd_at(1, 59, 79));     // 15 x 20 = 300 (MTCNN PNet at 120 x 160)
  EXPECT_TRUE(winograd_at(1, 102, 110));   // 25 x 27 = 675
  EXPECT_FALSE(winograd_at(1, 110, 110));  // 27 x 27 = 729 > 682, rows of 27
  EXPECT_FALSE(winograd_at(2, 82, 82));    // 2 x 20 x 20 = 800, rows of 20
  EXPECT_FALSE(winograd_at(1, 117, 157));  // 29 x 39 = 1131 (MTCNN PNet at 240 x 320)
  EXPECT_TRUE(winograd_at(1, 402, 42));    // 100 x 10 = 1000
  EXPECT_TRUE(winograd_at(1, 362, 62));    // 90 x 15 = 1350
  EXPECT_FALSE(winograd_at(1, 602, 42));   // 150 x 10 = 1500 > 1365
  // The numbers, through the VM, at those sizes: both branches.
  CheckNumbers(k, {{1, 22, 22}, {1, 26, 26}, {2, 46, 28}, {1, 62, 66}, {1, 82, 82}, {1, 110, 110}, {1, 402, 42}, {1, 9, 5}},
               {1});
}

TEST(WinogradSymbolicTest, RunTimeChoiceForSixteenOutputChannels) {
  // 16 -> 16 + bias + ReLU, padding 1, symbolic height and width: the same
  // If (NudeNet 320n's layers at 40^2 take Winograd at run time, as its
  // pinned build does; at 80^2, rows of 20 tiles, the direct convolution).
  WinoCase k{"n", "h", "w", 16, 16, 1, true, "f4x3", true};
  k.choice = true;
  // One block of 16 output channels: rows of 16 tiles or more stay direct
  // at any T (kRunTimeWinogradLongRowMaxBytes is for two or more).
  driver::CompileOptions options;
  options.params = {{"w", FloatTensor({k.o, k.c, 3, 3}, RandomFloats(k.o * k.c * 9, 7, 0.5f))}};
  Result<ir::IRModule> mod = text::ParseModule(Module(k), "wino.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<ir::IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  const ir::IfExpr* choice = FirstChoice(*lowered);
  ASSERT_NE(choice, nullptr) << text::PrintModule(*lowered);
  EXPECT_EQ(ChoiceAt(*choice, 2, 40, 40), 1);  // 2 x 10 x 10 = 200, rows of 10
  EXPECT_EQ(ChoiceAt(*choice, 1, 80, 80), 0);  // 20 x 20 = 400, rows of 20
  EXPECT_EQ(ChoiceAt(*choice, 1, 40, 64), 0);  // 10 x 16 = 160, rows of 16
  CheckNumbers(k, {{2, 40, 40}, {1, 80, 80}, {1, 13, 7}}, {1});
}

}  // namespace
}  // namespace tir
}  // namespace kiln
