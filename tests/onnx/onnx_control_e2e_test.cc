// ONNX If end to end: a condition known only at run time (branches lifted
// into functions, values crossing the split dataflow blocks), one known at
// import time (the branch taken inline), branches of different shapes, a
// nested If, and each error.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/text/text.h"
#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

// y = exp(x) before the If and used after it; the branches read x, y and
// their own initializer; two outputs.
B RuntimeIfModel() {
  B m(16);
  m.Input("x", TensorProto::FLOAT, {"n", 3});
  m.Input("c", TensorProto::BOOL, {});
  m.Node("Exp", {"x"}, {"y"});
  B then_g;
  then_g.Node("Relu", {"x"}, {"t0"});
  then_g.Node("Add", {"t0", "y"}, {"t1"});
  then_g.Node("Neg", {"y"}, {"t2"});
  then_g.Output("t1");
  then_g.Output("t2");
  B else_g;
  else_g.Initializer("k", {3}, {1, 2, 3});
  else_g.Node("Mul", {"x", "k"}, {"e0"});
  else_g.Output("e0");
  else_g.Output("y");  // an enclosing value, output as it is
  auto* n = m.Node("If", {"c"}, {"a", "b"}, "choose");
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
  m.Node("Sub", {"a", "y"}, {"out0"});
  m.Output("out0");
  m.Output("b");
  return m;
}

TEST(OnnxControlE2E, RuntimeConditionRunsEitherBranch) {
  B m = RuntimeIfModel();
  std::string text = ImportText(m);
  EXPECT_NE(text.find("def choose_then("), std::string::npos) << text;
  EXPECT_NE(text.find("def choose_else("), std::string::npos) << text;
  EXPECT_NE(text.find("if c:"), std::string::npos) << text;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  // Each lifted branch is inlined into its arm (inline-functions): main
  // runs the branch's kernels itself, and no branch function is left.
  EXPECT_TRUE((*module)->LookupFunction("main").ok());
  EXPECT_FALSE((*module)->LookupFunction("choose_then").ok());
  EXPECT_FALSE((*module)->LookupFunction("choose_else").ok());
  for (int64_t rows : {1, 4}) {
    std::vector<float> x = Ramp(rows * 3, -2, 2, static_cast<uint64_t>(rows));
    for (bool c : {true, false}) {
      auto out = RunMain(*module, {F32({rows, 3}, x), Bool(c)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ASSERT_EQ(out->size(), 2u);
      std::vector<float> o0 = Values((*out)[0]), o1 = Values((*out)[1]);
      ASSERT_EQ(o0.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        float y = std::exp(x[i]);
        float a = c ? std::max(x[i], 0.0f) + y : x[i] * static_cast<float>(i % 3 + 1);
        float b = c ? -y : y;
        EXPECT_NEAR(o0[i], a - y, 1e-5f) << "c=" << c << " i=" << i;
        EXPECT_NEAR(o1[i], b, 1e-5f) << "c=" << c << " i=" << i;
      }
    }
  }
}

TEST(OnnxControlE2E, ConditionKnownAtImportTimeTakesOneBranchInline) {
  for (bool c : {true, false}) {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {3});
    m.Node("Shape", {"x"}, {"s"});
    m.InitializerI64("zero", {1}, {0});
    m.Node(c ? "GreaterOrEqual" : "Less", {"s", "zero"}, {"ge"});  // a shape is never negative
    m.InitializerI64("ax", {1}, {0});
    m.Node("Squeeze", {"ge", "ax"}, {"cond"});
    B then_g;
    then_g.Node("Abs", {"x"}, {"t"});
    then_g.Output("t");
    B else_g;
    else_g.Node("Neg", {"x"}, {"e"});
    else_g.Output("e");
    auto* n = m.Node("If", {"cond"}, {"y"});
    B::AttrGraph(n, "then_branch", then_g);
    B::AttrGraph(n, "else_branch", else_g);
    m.Output("y");
    std::string text = ImportText(m);
    ASSERT_NE(text, "");
    EXPECT_EQ(text.find("if "), std::string::npos) << text;
    EXPECT_NE(text.find(c ? "R.abs" : "R.negative"), std::string::npos) << text;
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto out = RunMain(*module, {F32({3}, {-1, 2, -3})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(Values((*out)[0]), c ? (std::vector<float>{1, 2, 3}) : (std::vector<float>{1, -2, 3}));
  }
}

TEST(OnnxControlE2E, BranchesOfDifferentShapesAndANestedIf) {
  B m(16);
  m.Input("x", TensorProto::FLOAT, {"n", 2});
  m.Input("c", TensorProto::BOOL, {1});
  m.Input("d", TensorProto::BOOL, {});
  B inner_then;
  inner_then.Node("Concat", {"x", "x"}, {"cc"});
  B::AttrInt(inner_then.graph().mutable_node(0), "axis", 0);
  inner_then.Output("cc");
  B inner_else;
  inner_else.Node("Sigmoid", {"x"}, {"sg"});
  inner_else.Output("sg");
  B then_g;
  auto* inner = then_g.Node("If", {"d"}, {"t"}, "inner");
  B::AttrGraph(inner, "then_branch", inner_then);
  B::AttrGraph(inner, "else_branch", inner_else);
  then_g.Output("t");
  B else_g;
  else_g.Node("Identity", {"x"}, {"e"});
  else_g.Output("e");
  auto* n = m.Node("If", {"c"}, {"y"}, "outer");
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
  m.Node("Relu", {"y"}, {"z"});
  m.Output("z");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << ImportText(m);
  std::vector<float> x = {-1, 2, 3, -4};
  Result<Tensor> c1 = Tensor::Empty({1}, DType::Bool());
  ASSERT_TRUE(c1.ok());
  for (int c = 0; c < 2; ++c) {
    c1->data<uint8_t>()[0] = static_cast<uint8_t>(c);
    for (bool d : {true, false}) {
      auto out = RunMain(*module, {F32({2, 2}, x), *c1, Bool(d)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<float> z = Values((*out)[0]);
      if (c && d) {
        ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{4, 2}));
        EXPECT_EQ(z, (std::vector<float>{0, 2, 3, 0, 0, 2, 3, 0}));
      } else if (c) {
        ASSERT_EQ(z.size(), 4u);
        for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(z[i], 1 / (1 + std::exp(-x[i])), 1e-6f);
      } else {
        EXPECT_EQ(z, (std::vector<float>{0, 2, 3, 0}));
      }
    }
  }
}

TEST(OnnxControlE2E, ErrorsNameTheNodeAndTheBranchProblems) {
  auto model = [](int cond_type, bool bad_branch, int else_outputs) {
    B m(16);
    m.Input("x", TensorProto::FLOAT, {2});
    m.Input("c", cond_type, {});
    B then_g;
    then_g.Node(bad_branch ? "FancyOp" : "Relu", {"x"}, {"t"});
    then_g.Output("t");
    B else_g;
    for (int i = 0; i < else_outputs; ++i) else_g.Output("x");
    auto* n = m.Node("If", {"c"}, {"y"}, "pick");
    B::AttrGraph(n, "then_branch", then_g);
    B::AttrGraph(n, "else_branch", else_g);
    m.Output("y");
    return m;
  };
  std::string err;
  ImportText(model(TensorProto::FLOAT, false, 1), {}, &err);
  EXPECT_NE(err.find("node \"pick\" (#0) If (opset 16): a condition of dtype float32 (bool only)"), std::string::npos) << err;
  ImportText(model(TensorProto::BOOL, false, 2), {}, &err);
  EXPECT_NE(err.find("If (opset 16): the branches have 1 and 2 outputs; the node has 1"), std::string::npos) << err;
  ImportText(model(TensorProto::BOOL, true, 1), {}, &err);
  EXPECT_NE(err.find("FancyOp (opset 16): unsupported operator"), std::string::npos) << err;
  EXPECT_NE(err.find("node \"pick\" (#0) If (opset 16): its subgraph \"then_branch\" could not be imported (the problems are listed)"),
            std::string::npos) << err;
  B m(16);
  m.Input("c", TensorProto::BOOL, {});
  auto* n = m.Node("If", {"c"}, {"y"}, "nobranch");
  (void)n;
  m.Output("y");
  ImportText(m, {}, &err);
  EXPECT_NE(err.find("If (opset 16): then_branch and else_branch (graphs) are required"), std::string::npos) << err;
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
