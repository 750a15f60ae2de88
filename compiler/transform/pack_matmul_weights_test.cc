// pack-matmul-weights: which matmul calls it rewrites, the packed constant
// it folds, and the errors of R.matmul's blocked weight_layout (one per
// message). The numbers of matmuls with blocked weights are checked in
// compiler/tir/matmul_schedule_test.cc (BlockedWeights).
#include "compiler/transform/pack_matmul_weights.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/transform/bind_params.h"

namespace kiln {
namespace {

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x, w) -> R.matmul(x, w<attrs>), with the symbolic dimensions `syms`.
std::string MatmulModule(const std::string& x, const std::string& w, const std::string& attrs,
                         const std::vector<std::string>& syms = {}) {
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T(x) + ", w: " + T(w) + "):\n";
  for (const auto& s : syms) src += "        " + s + " = T.int64()\n";
  return src + "        with R.dataflow():\n            gv = R.matmul(x, w" + attrs +
         ")\n            R.output(gv)\n        return gv\n";
}

ir::IRModule Parse(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "mm.relax");
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
  Result<ir::IRModule> packed = transform::PackMatmulWeights(*bound);
  EXPECT_TRUE(packed.ok()) << packed.status().message();
  return packed.ok() ? *packed : ir::IRModule();
}

std::string Print(const ir::IRModule& m) { return text::PrintModule(m); }

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The constant second operand of the module's two-operand call, or null.
const ir::ConstantExpr* MatmulWeight(const ir::IRModule& m) {
  const ir::ConstantExpr* weight = nullptr;
  for (const auto& e : m.entries) {
    if (!e.relax) continue;
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e.relax->body);
    if (seq == nullptr) continue;
    for (const auto& block : seq->blocks)
      for (const auto& b : block.bindings) {
        const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
        if (call && call->args.size() == 2) weight = ir::ExprAs<ir::ConstantExpr>(call->args[1]);
      }
  }
  return weight;
}

TEST(PackMatmulWeights, ConstantWeightIsBlockedAndFolded) {
  // Symbolic rows and batch, as a transformer's projections.
  ir::IRModule packed = BindAndPack(MatmulModule("\"b\", \"s\", 5", "5, 128", "", {"b", "s"}), {5, 128});
  std::string text = Print(packed);
  EXPECT_TRUE(Contains(text, "weight_layout=\"KN64n\"")) << text;
  EXPECT_FALSE(Contains(text, "R.call_tir")) << text;  // folded at compile time
  EXPECT_TRUE(Contains(text, "R.Tensor((b, s, 128), dtype=\"float32\")")) << text;  // the result type is kept
  // W'[c, k, l] = W[k, c * 64 + l].
  const ir::ConstantExpr* weight = MatmulWeight(packed);
  ASSERT_NE(weight, nullptr) << text;
  ASSERT_EQ(weight->data.shape(), (std::vector<int64_t>{2, 5, 64}));
  const float* p = weight->data.data<float>();
  int bad = 0;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t k = 0; k < 5; ++k)
      for (int64_t l = 0; l < 64; ++l) bad += p[(c * 5 + k) * 64 + l] != static_cast<float>(k * 128 + c * 64 + l);
  EXPECT_EQ(bad, 0);
}

TEST(PackMatmulWeights, LastBlockIsPaddedWithZeros) {
  // 100 columns (a CTC head's 6625 is the same case): two blocks of 64, the
  // second holding columns 64..99 and 28 columns of zeros; the call keeps
  // the result's 100 columns with weight_columns.
  std::string src = MatmulModule("\"s\", 5", "5, 100", "", {"s"});
  EXPECT_FALSE(Contains(Print(Parse(src)), "weight_columns")) << src;  // before: a plain matmul
  ir::IRModule packed = BindAndPack(src, {5, 100});
  std::string text = Print(packed);
  EXPECT_TRUE(Contains(text, "weight_layout=\"KN64n\"")) << text;
  EXPECT_TRUE(Contains(text, "weight_columns=100")) << text;
  EXPECT_FALSE(Contains(text, "R.call_tir")) << text;
  EXPECT_TRUE(Contains(text, "R.Tensor((s, 100), dtype=\"float32\")")) << text;
  const ir::ConstantExpr* weight = MatmulWeight(packed);
  ASSERT_NE(weight, nullptr) << text;
  ASSERT_EQ(weight->data.shape(), (std::vector<int64_t>{2, 5, 64}));
  const float* p = weight->data.data<float>();
  int bad = 0;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t k = 0; k < 5; ++k)
      for (int64_t l = 0; l < 64; ++l) {
        int64_t col = c * 64 + l;
        float want = col < 100 ? static_cast<float>(k * 100 + col) : 0.0f;
        bad += p[(c * 5 + k) * 64 + l] != want;
      }
  EXPECT_EQ(bad, 0);
}

TEST(PackMatmulWeights, OtherMatmulsAreLeftAlone) {
  // A weight that is an input.
  ir::IRModule input = Parse(MatmulModule("8, 5", "5, 128", ""));
  Result<ir::IRModule> same = transform::PackMatmulWeights(input);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->entries[0].relax, input.entries[0].relax);
  struct Case {
    std::string x, w, attrs;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"8, 5", "5, 40", "", {5, 40}},                            // 40 columns: less than a block of 64
      {"2, 8, 5", "2, 5, 128", "", {2, 5, 128}},                 // a batched weight
      {"5,", "5, 128", "", {5, 128}},                            // a vector times the weight
      {"8, 5", "5, 128", ", out_dtype=\"float16\"", {5, 128}},  // another result type
  };
  for (const Case& c : cases) {
    ir::IRModule packed = BindAndPack(MatmulModule(c.x, c.w, c.attrs), c.shape);
    std::string text = Print(packed);
    EXPECT_FALSE(Contains(text, "KN64n")) << text;
  }
}

// The message of normalizing a matmul with a blocked weight layout.
std::string LayoutError(const std::string& w, const std::string& layout) {
  Result<ir::IRModule> m = text::ParseModule(MatmulModule("8, 5", w, ", weight_layout=\"" + layout + "\""), "mm.relax");
  if (!m.ok()) return m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_FALSE(n.ok()) << layout;
  if (n.ok()) return "";
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  return n.status().message();
}

TEST(PackMatmulWeights, BlockedWeightLayoutErrors) {
  for (const char* bad : {"KN0n", "NK64n", "KN64k", "KNn"}) {
    EXPECT_EQ(LayoutError("2, 5, 64", bad), std::string("mm.relax:6:18: R.matmul: weight_layout \"") + bad +
                                                "\" is not supported (a blocked weight is KN<b>n with b >= 1, e.g. KN64n)");
  }
  EXPECT_EQ(LayoutError("5, 128", "KN64n"),
            "mm.relax:6:18: R.matmul: weight_layout KN64n needs a weight [N/64, K, 64], got (5, 128)");
  EXPECT_EQ(LayoutError("2, 5, 32", "KN64n"),
            "mm.relax:6:18: R.matmul: weight_layout KN64n needs a weight [N/64, K, 64], got (2, 5, 32)");
}

// The message of normalizing `R.matmul(x, w, <attrs>)`, x (8, 5).
std::string AttrError(const std::string& w, const std::string& attrs) {
  Result<ir::IRModule> m = text::ParseModule(MatmulModule("8, 5", w, attrs), "mm.relax");
  if (!m.ok()) return m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_FALSE(n.ok()) << attrs;
  return n.ok() ? "" : n.status().message();
}

TEST(PackMatmulWeights, WeightColumnsErrors) {
  EXPECT_EQ(AttrError("5, 100", ", weight_columns=100"),
            "mm.relax:6:18: R.matmul: weight_columns needs a blocked weight_layout (KN<b>n)");
  for (int64_t bad : {64, 129, -3}) {
    EXPECT_EQ(AttrError("2, 5, 64", ", weight_layout=\"KN64n\", weight_columns=" + std::to_string(bad)),
              "mm.relax:6:18: R.matmul: weight_columns " + std::to_string(bad) +
                  " does not end in the last of the weight's 2 blocks of 64 columns");
  }
  // In the last block: the result has that many columns.
  Result<ir::IRModule> m =
      text::ParseModule(MatmulModule("8, 5", "2, 5, 64", ", weight_layout=\"KN64n\", weight_columns=65"), "mm.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_TRUE(Contains(Print(*n), "R.Tensor((8, 65), dtype=\"float32\")")) << Print(*n);
}

TEST(PackMatmulWeights, BlockedWeightOfUnknownShapeIsAnError) {
  std::string src =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("8, 5") +
      ", w: R.Tensor(dtype=\"float32\", ndim=3)):\n        with R.dataflow():\n"
      "            gv = R.matmul(x, w, weight_layout=\"KN64n\")\n            R.output(gv)\n        return gv\n";
  Result<ir::IRModule> m = text::ParseModule(src, "mm.relax");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "mm.relax:6:18: R.matmul: weight_layout KN64n needs a weight of known shape");
}

TEST(PackMatmulWeights, BlockedWeightInfersTheOutput) {
  ir::IRModule m = Parse(MatmulModule("3, 8, 5", "2, 5, 64", ", weight_layout=\"KN64n\""));
  EXPECT_TRUE(Contains(Print(m), "R.Tensor((3, 8, 128), dtype=\"float32\")")) << Print(m);
}

}  // namespace
}  // namespace kiln
