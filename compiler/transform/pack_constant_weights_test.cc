// pack-constant-weights: which conv2d calls it rewrites, the packed constant
// fold-constant computes from it, and the conv2d errors of the blocked
// kernel layout it introduces (one per message). The numbers of convolutions
// with packed weights are checked in compiler/tir/conv_schedule_test.cc.
#include "compiler/transform/pack_constant_weights.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/transform/bind_params.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/fold_constant.h"

namespace kiln {
namespace {

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x, w) -> R.nn.conv2d(x, w<attrs>).
std::string ConvModule(const std::string& x, const std::string& w, const std::string& attrs) {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(x) + ", w: " + T(w) +
         "):\n        with R.dataflow():\n            gv = R.nn.conv2d(x, w" + attrs +
         ")\n            R.output(gv)\n        return gv\n";
}

ir::IRModule Parse(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "conv.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return ir::IRModule();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? *n : ir::IRModule();
}

Tensor Counting(const std::vector<int64_t>& shape) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// The module with `w` bound to a counting tensor, then packed.
ir::IRModule BindAndPack(const std::string& source, const std::vector<int64_t>& w_shape) {
  Result<ir::IRModule> bound = transform::BindParams(Parse(source), {{"w", Counting(w_shape)}});
  EXPECT_TRUE(bound.ok()) << bound.status().message();
  if (!bound.ok()) return ir::IRModule();
  Result<ir::IRModule> packed = transform::PackConstantWeights(*bound);
  EXPECT_TRUE(packed.ok()) << packed.status().message();
  return packed.ok() ? *packed : ir::IRModule();
}

std::string Print(const ir::IRModule& m) { return text::PrintModule(m); }

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Convs the channel-lane kernel takes by its rule (tir::ChannelLanesRuleTakes:
// small static planes) get blocks of 16, the kernel's lanes; others keep 8.
TEST(PackConstantWeights, SmallPlanesTakeBlocksOf16) {
  std::string text = Print(BindAndPack(ConvModule("1, 8, 4, 4", "32, 8, 3, 3", ", padding=1"), {32, 8, 3, 3}));
  EXPECT_TRUE(Contains(text, "R.call_tir(cls.pack_weight_oihw16o, (metadata[")) << text;
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW16o\"")) << text;
  EXPECT_TRUE(Contains(text, "R.Tensor((2, 8, 3, 3, 16), dtype=\"float32\")")) << text;
  // A 14 x 14 plane, and 40 output channels (not whole blocks of 16): 8.
  text = Print(BindAndPack(ConvModule("1, 8, 14, 14", "32, 8, 3, 3", ", padding=1"), {32, 8, 3, 3}));
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW8o\"")) << text;
  text = Print(BindAndPack(ConvModule("1, 8, 4, 4", "40, 8, 3, 3", ", padding=1"), {40, 8, 3, 3}));
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW8o\"")) << text;
  // A 1 x 1 kernel over a 4 x 4 plane: 16; over 8 x 8: 8.
  text = Print(BindAndPack(ConvModule("1, 8, 4, 4", "32, 8, 1, 1", ""), {32, 8, 1, 1}));
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW16o\"")) << text;
  text = Print(BindAndPack(ConvModule("1, 8, 8, 8", "32, 8, 1, 1", ""), {32, 8, 1, 1}));
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW8o\"")) << text;
}

TEST(PackConstantWeights, ConstantWeightBecomesBlockedAndFolds) {
  ir::IRModule packed = BindAndPack(ConvModule("1, 4, 6, 6", "16, 4, 3, 2", ", padding=1"), {16, 4, 3, 2});
  std::string text = Print(packed);
  EXPECT_TRUE(Contains(text, "R.call_tir(cls.pack_weight_oihw8o, (metadata[")) << text;
  EXPECT_TRUE(Contains(text, "kernel_layout=\"OIHW8o\"")) << text;
  EXPECT_TRUE(Contains(text, "R.Tensor((2, 4, 3, 2, 8), dtype=\"float32\")")) << text;
  EXPECT_TRUE(Contains(text, "R.Tensor((1, 16, 6, 7), dtype=\"float32\")")) << text;  // the result type is kept

  // fold-constant computes the packed weight: W'[ob, i, ky, kx, l] = W[ob * 8 + l, i, ky, kx].
  Result<ir::IRModule> folded = transform::FoldConstant(packed);
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  folded = transform::EliminateDeadCode(*folded);
  ASSERT_TRUE(folded.ok());
  const ir::ConstantExpr* weight = nullptr;
  for (const auto& e : folded->entries) {
    if (!e.relax) continue;
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e.relax->body);
    ASSERT_NE(seq, nullptr);
    for (const auto& block : seq->blocks) {
      for (const auto& b : block.bindings) {
        const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
        if (call && call->args.size() == 2) weight = ir::ExprAs<ir::ConstantExpr>(call->args[1]);
      }
    }
  }
  ASSERT_NE(weight, nullptr) << Print(*folded);
  ASSERT_EQ(weight->data.shape(), (std::vector<int64_t>{2, 4, 3, 2, 8}));
  const float* p = weight->data.data<float>();
  int bad = 0;
  for (int64_t ob = 0; ob < 2; ++ob)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t t = 0; t < 6; ++t)
        for (int64_t l = 0; l < 8; ++l) {
          float want = static_cast<float>(((ob * 8 + l) * 4 + i) * 6 + t);
          bad += p[((ob * 4 + i) * 6 + t) * 8 + l] != want;
        }
  EXPECT_EQ(bad, 0);
}

TEST(PackConstantWeights, SubnormalWeightsAreFlushedToZero) {
  // Weight i: subnormal (flushed) for i % 4 == 1 or 2, FLT_MIN (kept) for
  // i % 4 == 3, i itself otherwise.
  Tensor w = Counting({8, 2, 1, 1});
  float* wd = w.data<float>();
  for (int i = 0; i < 16; ++i) {
    if (i % 4 == 1) wd[i] = 1e-40f;
    if (i % 4 == 2) wd[i] = -1e-44f;
    if (i % 4 == 3) wd[i] = -std::numeric_limits<float>::min();
  }
  Result<ir::IRModule> bound = transform::BindParams(Parse(ConvModule("1, 2, 3, 3", "8, 2, 1, 1", "")), {{"w", w}});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  Result<ir::IRModule> packed = transform::PackConstantWeights(*bound);
  ASSERT_TRUE(packed.ok());
  Result<ir::IRModule> folded = transform::FoldConstant(*packed);
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  const ir::ConstantExpr* weight = nullptr;
  for (const auto& e : folded->entries) {
    if (!e.relax) continue;
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e.relax->body);
    ASSERT_NE(seq, nullptr);
    for (const auto& block : seq->blocks)
      for (const auto& b : block.bindings) {
        const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
        if (call && call->args.size() == 2) weight = ir::ExprAs<ir::ConstantExpr>(call->args[1]);
      }
  }
  ASSERT_NE(weight, nullptr) << Print(*folded);
  ASSERT_EQ(weight->data.shape(), (std::vector<int64_t>{1, 2, 1, 1, 8}));
  const float* p = weight->data.data<float>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t l = 0; l < 8; ++l) {
      int src = static_cast<int>(l * 2 + i);
      float want = src % 4 == 3 ? -std::numeric_limits<float>::min() : src % 4 == 0 ? float(src) : 0.0f;
      EXPECT_EQ(p[i * 8 + l], want) << "weight " << src;
    }
}

TEST(PackConstantWeights, GroupsWithWholeBlocksArePacked) {
  ir::IRModule packed = BindAndPack(ConvModule("1, 8, 5, 5", "16, 4, 3, 3", ", groups=2"), {16, 4, 3, 3});
  EXPECT_TRUE(Contains(Print(packed), "kernel_layout=\"OIHW8o\"")) << Print(packed);
}

TEST(PackConstantWeights, SymbolicImageSizeIsPacked) {
  // A symbolic height and width: the symbolic conv schedule reads the
  // blocked weight (tir::ScheduleSymbolicConvs). Before:
  //   gv = R.nn.conv2d(x, metadata["relax.expr.Constant"][0])
  // after: the weight through the packing kernel, the conv reading OIHW8o.
  const std::string source = ConvModule("\"n\", 16, \"h\", \"w\"", "32, 16, 1, 1", "");
  Result<ir::IRModule> bound = transform::BindParams(Parse(source), {{"w", Counting({32, 16, 1, 1})}});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  const std::string before = Print(*bound);
  EXPECT_FALSE(Contains(before, "8o")) << before;
  EXPECT_FALSE(Contains(before, "call_tir")) << before;
  ir::IRModule packed = BindAndPack(source, {32, 16, 1, 1});
  const std::string after = Print(packed);
  EXPECT_TRUE(Contains(after, "R.call_tir(cls.pack_weight_oihw8o, (metadata[")) << after;
  EXPECT_TRUE(Contains(after, "R.Tensor((4, 16, 1, 1, 8), dtype=\"float32\")")) << after;
  EXPECT_TRUE(Contains(after, "kernel_layout=\"OIHW8o\"")) << after;
  EXPECT_TRUE(Contains(after, "R.Tensor((n, 32, h, w), dtype=\"float32\")")) << after;  // the result type is kept
  // A padded 3 x 3 of symbolic height only, grouped in whole blocks.
  ir::IRModule height = BindAndPack(ConvModule("\"n\", 8, \"h\", 6", "16, 4, 3, 3", ", padding=1, groups=2"), {16, 4, 3, 3});
  EXPECT_TRUE(Contains(Print(height), "kernel_layout=\"OIHW8o\"")) << Print(height);
  // One output row of a symbolic width: the 1-D dot schedule
  // (conv_dot_schedule.h) takes it, reading OIHW only.
  ir::IRModule row = BindAndPack(ConvModule("\"n\", 4, 3, \"w\"", "16, 4, 3, 3", ""), {16, 4, 3, 3});
  EXPECT_FALSE(Contains(Print(row), "8o")) << Print(row);
  // One block of output channels (O == 8): the packed nest's W[0, .., o]
  // is not one the symbolic schedule matches; left OIHW.
  ir::IRModule one_block = BindAndPack(ConvModule("\"n\", 3, \"h\", \"w\"", "8, 3, 3, 3", ""), {8, 3, 3, 3});
  EXPECT_FALSE(Contains(Print(one_block), "8o")) << Print(one_block);
  // Several rows of a symbolic width are packed.
  ir::IRModule rows = BindAndPack(ConvModule("\"n\", 4, 4, \"w\"", "16, 4, 3, 3", ""), {16, 4, 3, 3});
  EXPECT_TRUE(Contains(Print(rows), "kernel_layout=\"OIHW8o\"")) << Print(rows);
}

TEST(PackConstantWeights, SymbolicBatchIsPacked) {
  // A symbolic batch: the static kernel runs image by image
  // (tir::ScheduleConvsPeelingBatch) and reads the blocked weight.
  ir::IRModule batch = BindAndPack(ConvModule("\"n\", 4, 6, 6", "16, 4, 3, 3", ""), {16, 4, 3, 3});
  EXPECT_TRUE(Contains(Print(batch), "kernel_layout=\"OIHW8o\"")) << Print(batch);
  // A symbolic batch and a window of more than tir::kMaxPeeledTaps taps
  // (basic_pitch's 3 x 39): the peel leaves it to the symbolic schedule,
  // which reads OIHW; a packed weight made it a naive loop nest (3 GFLOP/s).
  ir::IRModule wide = BindAndPack(ConvModule("\"n\", 8, 12, 48", "16, 8, 3, 39", ""), {16, 8, 3, 39});
  EXPECT_FALSE(Contains(Print(wide), "8o")) << Print(wide);
  // One input channel a group (a 1-D filter bank, basic_pitch's 1 x 256):
  // the peel takes any window of it (tir::LargeWindowKeepsSymbolic), so
  // its weight is packed for the static kernel.
  ir::IRModule bank = BindAndPack(ConvModule("\"n\", 1, 1, 600", "16, 1, 1, 256", ", strides=[1, 2]"), {16, 1, 1, 256});
  EXPECT_TRUE(Contains(Print(bank), "kernel_layout=\"OIHW8o\"")) << Print(bank);
  // The same window with a static batch is packed.
  ir::IRModule wide1 = BindAndPack(ConvModule("1, 8, 12, 48", "16, 8, 3, 39", ""), {16, 8, 3, 39});
  EXPECT_TRUE(Contains(Print(wide1), "kernel_layout=\"OIHW8o\"")) << Print(wide1);
}

TEST(PackConstantWeights, OtherConvolutionsAreLeftAlone) {
  // A weight that is an input.
  ir::IRModule input = Parse(ConvModule("1, 4, 6, 6", "16, 4, 3, 3", ""));
  Result<ir::IRModule> same = transform::PackConstantWeights(input);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->entries[0].relax, input.entries[0].relax);
  // Constant weights the kernel cannot read in blocks of 8 or layouts it does not handle.
  struct Case {
    std::string x, w, attrs;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"1, 4, 6, 6", "12, 4, 3, 3", "", {12, 4, 3, 3}},                   // 12 channels: not whole blocks
      {"1, 16, 6, 6", "16, 1, 3, 3", ", groups=16", {16, 1, 3, 3}},       // depthwise: 1 channel per group
      {"1, 8, 6, 6", "16, 2, 3, 3", ", groups=4", {16, 2, 3, 3}},         // 4 channels per group
      {"1, 6, 6, 4", "16, 4, 3, 3", ", data_layout=\"NHWC\"", {16, 4, 3, 3}},  // NHWC data
      {"1, 4, 6, 6", "3, 3, 4, 16", ", kernel_layout=\"HWIO\"", {3, 3, 4, 16}},  // HWIO weight
  };
  for (const Case& c : cases) {
    ir::IRModule packed = BindAndPack(ConvModule(c.x, c.w, c.attrs), c.shape);
    std::string text = Print(packed);
    EXPECT_FALSE(Contains(text, "call_tir")) << text;
    EXPECT_FALSE(Contains(text, "8o")) << text;
  }
}

// The message of normalizing a conv2d with a blocked kernel layout.
std::string ConvError(const std::string& w, const std::string& layout) {
  Result<ir::IRModule> m = text::ParseModule(
      ConvModule("1, 4, 6, 6", w, ", kernel_layout=\"" + layout + "\""), "conv.relax");
  if (!m.ok()) return m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_FALSE(n.ok()) << layout;
  if (n.ok()) return "";
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  return n.status().message();
}

TEST(PackConstantWeights, BlockedKernelLayoutErrors) {
  EXPECT_EQ(ConvError("2, 4, 3, 3, 8", "OIHW0o"),
            "conv.relax:6:18: R.nn.conv2d: kernel_layout \"OIHW0o\" is not supported (a blocked layout is OIHW<b>o "
            "with b >= 1, e.g. OIHW8o)");
  EXPECT_EQ(ConvError("2, 4, 3, 3, 8", "OIHW8i"),
            "conv.relax:6:18: R.nn.conv2d: kernel_layout \"OIHW8i\" is not supported (a blocked layout is OIHW<b>o "
            "with b >= 1, e.g. OIHW8o)");
  EXPECT_EQ(ConvError("2, 3, 3, 4, 8", "OHWI8o"),
            "conv.relax:6:18: R.nn.conv2d: kernel_layout \"OHWI8o\" is not supported (a blocked layout is OIHW<b>o "
            "with b >= 1, e.g. OIHW8o)");
  EXPECT_EQ(ConvError("16, 4, 3, 3", "OIHW8o"), "conv.relax:6:18: R.nn.conv2d: weight must have rank 5, got 4");
  EXPECT_EQ(ConvError("2, 4, 3, 3, 4", "OIHW8o"),
            "conv.relax:6:18: R.nn.conv2d: kernel_layout \"OIHW8o\" needs a weight whose last dimension is 8, got "
            "(2, 4, 3, 3, 4)");
}

TEST(PackConstantWeights, BlockedKernelLayoutInfersTheOutput) {
  ir::IRModule m = Parse(ConvModule("1, 4, 6, 6", "3, 4, 3, 3, 4", ", padding=1, kernel_layout=\"OIHW4o\""));
  EXPECT_TRUE(Contains(Print(m), "R.Tensor((1, 12, 6, 6), dtype=\"float32\")")) << Print(m);
}

}  // namespace
}  // namespace kiln
