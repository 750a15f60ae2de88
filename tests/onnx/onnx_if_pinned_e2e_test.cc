// A run-time If one of whose branches the model gets wrong at the shapes an
// input is pinned to (compiler/onnx/ops_control.cc, subgraph_import.cc).
//
// silero-vad picks its 8 kHz or 16 kHz network by the sample rate, an input.
// Pinned to 512 samples (the 16 kHz frame), the 8 kHz branch's shape checks
// fold at import into the path that feeds a rank-5 tensor to LSTM, exactly
// what ONNX Runtime runs into when sr = 8000 comes with 512 samples. The
// model below is the same shape in small: the branch that cannot run at the
// pinned shapes raises when it runs, the other one compiles and runs; a
// branch that fails for a reason that is Kiln's (an unsupported operator)
// remains an import error.
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

// A path of the model that takes x (n, t) as it must be: an If on Shape(x)[1]
// as torch exports its shape checks, then Gemm(z, W (cols, 3)), where z is x
// itself when t == cols and Unsqueeze(x, [1]), rank 3 (Gemm refuses it),
// otherwise. With `squeeze` the check is torch's x.squeeze(1) (cols = 1: z =
// Unsqueeze(If(t == 1, Squeeze(x, [1]), Identity(x)), [1])), silero-vad's
// decoder.
B CheckedPath(const std::string& p, int64_t cols, const std::vector<float>& w, bool squeeze,
              const std::string& tail_op = "Gemm") {
  B g;
  g.Node("Shape", {"x"}, {p + "shape"});
  g.InitializerI64(p + "idx", {}, {1});
  B::AttrInt(g.Node("Gather", {p + "shape", p + "idx"}, {p + "t"}), "axis", 0);
  g.InitializerI64(p + "cols", {}, {cols});
  g.Node("Equal", {p + "t", p + "cols"}, {p + "fits"});
  g.InitializerI64(p + "axes", {1}, {1});
  B then_g, else_g;
  if (squeeze) {
    then_g.Node("Squeeze", {"x", p + "axes"}, {p + "then"});
    else_g.Node("Identity", {"x"}, {p + "else"});
  } else {
    then_g.Node("Identity", {"x"}, {p + "then"});
    else_g.Node("Unsqueeze", {"x", p + "axes"}, {p + "else"});
  }
  then_g.Output(p + "then");
  else_g.Output(p + "else");
  auto* n = g.Node("If", {p + "fits"}, {p + "z"}, p + "check");
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
  std::string z = p + "z";
  if (squeeze) {
    g.Node("Unsqueeze", {z, p + "axes"}, {p + "col"});
    z = p + "col";
  }
  g.Initializer(p + "W", {cols, 3}, w);
  g.Node(tail_op, {z, p + "W"}, {p + "y"});
  g.Output(p + "y");
  return g;
}

B SixteenK() { return CheckedPath("k16_", 2, {1, 0, -1, 2, 1, 0}, false); }
B EightK(const std::string& tail_op = "Gemm") { return CheckedPath("k8_", 1, {1, 2, 3}, true, tail_op); }

// out = If(sr == 16000, the 16 kHz path (x of two columns), the 8 kHz path (one column)).
B SampleRateModel(B eight_k = EightK()) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", "t"});
  m.Input("sr", TensorProto::INT64, {});
  m.InitializerI64("k16", {}, {16000});
  m.Node("Equal", {"sr", "k16"}, {"is16k"});
  auto* n = m.Node("If", {"is16k"}, {"out"}, "by_rate");
  B::AttrGraph(n, "then_branch", SixteenK());
  B::AttrGraph(n, "else_branch", eight_k);
  m.Output("out");
  return m;
}

ImportOptions Pinned(int64_t n, int64_t t) {
  ImportOptions o;
  o.fixed_dims = {{"n", n}, {"t", t}};
  return o;
}

Tensor Rate(int64_t sr) { return I64({}, {sr}); }

TEST(OnnxIfPinnedE2E, ABranchWrongAtThePinnedShapesRaisesWhenItRuns) {
  B m = SampleRateModel();
  std::string err;
  std::string text = ImportText(m, Pinned(2, 2), &err);
  ASSERT_NE(text, "") << err;
  EXPECT_NE(text.find("R.call_packed(\"vm.builtin.raise\""), std::string::npos) << text;
  auto module = CompileOnnx(m, Pinned(2, 2));
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  // x (2, 2) times the 16 kHz W: rows (1, 2) and (-1, 3).
  auto ok = RunMain(*module, {F32({2, 2}, {1, 2, -1, 3}), Rate(16000)});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ((*ok)[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values((*ok)[0]), (std::vector<float>{5, 2, -1, 5, 3, 1}));
  auto bad = RunMain(*module, {F32({2, 2}, {1, 2, -1, 3}), Rate(8000)});
  ASSERT_FALSE(bad.ok());
  const std::string& msg = bad.status().message();
  EXPECT_NE(msg.find("node \"by_rate\" (#1) If (opset 13): its false branch cannot run at these shapes:"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("Gemm (opset 13): A and B must be matrices"), std::string::npos) << msg;
}

TEST(OnnxIfPinnedE2E, TheOtherBranchMayBeTheOneThatRaises) {
  // One column: the 16 kHz path's check folds to the rank-3 Gemm.
  B m = SampleRateModel();
  std::string err;
  std::string text = ImportText(m, Pinned(2, 1), &err);
  ASSERT_NE(text, "") << err;
  auto module = CompileOnnx(m, Pinned(2, 1));
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  auto ok = RunMain(*module, {F32({2, 1}, {2, -1}), Rate(8000)});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Values((*ok)[0]), (std::vector<float>{2, 4, 6, -1, -2, -3}));
  auto bad = RunMain(*module, {F32({2, 1}, {2, -1}), Rate(16000)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node \"by_rate\" (#1) If (opset 13): its true branch cannot run at these shapes:"),
            std::string::npos) << bad.status().message();
}

TEST(OnnxIfPinnedE2E, SymbolicShapesKeepBothBranches) {
  // Unpinned, the squeeze check stays a run-time If (if_tail.cc); both
  // branches of the rate If import.
  B m = SampleRateModel();
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto eight = RunMain(*module, {F32({2, 1}, {2, -1}), Rate(8000)});
  ASSERT_TRUE(eight.ok()) << eight.status().ToString();
  EXPECT_EQ(Values((*eight)[0]), (std::vector<float>{2, 4, 6, -1, -2, -3}));
  auto sixteen = RunMain(*module, {F32({2, 2}, {1, 2, -1, 3}), Rate(16000)});
  ASSERT_TRUE(sixteen.ok()) << sixteen.status().ToString();
  EXPECT_EQ(Values((*sixteen)[0]), (std::vector<float>{5, 2, -1, 5, 3, 1}));
}

TEST(OnnxIfPinnedE2E, ABranchKilnCannotImportRemainsAnImportError) {
  // An unsupported operator is Kiln's gap, not the model's: no raise arm.
  std::string err;
  EXPECT_EQ(ImportText(SampleRateModel(EightK("FancyOp")), Pinned(2, 2), &err), "");
  EXPECT_NE(err.find("FancyOp (opset 13): unsupported operator"), std::string::npos) << err;
  EXPECT_NE(err.find("node \"by_rate\" (#1) If (opset 13): its subgraph"), std::string::npos) << err;
}

TEST(OnnxIfPinnedE2E, BothBranchesWrongIsAnImportError) {
  // Three columns: both checks fold to the rank-3 Gemm.
  std::string err;
  EXPECT_EQ(ImportText(SampleRateModel(), Pinned(2, 3), &err), "");
  EXPECT_NE(err.find("A and B must be matrices"), std::string::npos) << err;
  EXPECT_NE(err.find("node \"by_rate\" (#1) If (opset 13): neither branch can run at these shapes"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
