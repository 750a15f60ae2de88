// The forms opsets 18 to 21 gave the operators Kiln converts (graph_importer.h
// kMaxOpset lists them): each one's numbers against a reference, and each
// refused form's message.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxOpset18E2E, ReduceAxesInputSplitNumOutputsAndPadAxes) {
  B m(18);
  m.Input("x", TensorProto::FLOAT, {2, 7});
  m.InitializerI64("ax1", {1}, {1});
  m.Node("ReduceMax", {"x", "ax1"}, {"mx"});  // keepdims: (2, 1)
  m.Output("mx");
  auto* rm = m.Node("ReduceMean", {"x", "ax1"}, {"mean"});
  B::AttrInt(rm, "keepdims", 0);  // (2,)
  m.Output("mean");
  auto* sp = m.Node("Split", {"x"}, {"s0", "s1", "s2"});
  B::AttrInt(sp, "axis", 1);
  B::AttrInt(sp, "num_outputs", 3);  // 7 = 3 + 3 + 1
  m.Output("s0");
  m.Output("s1");
  m.Output("s2");
  m.InitializerI64("pads", {2}, {1, 2});  // axis 1 only: 1 before, 2 after
  m.Initializer("pv", {}, {9.0f});
  m.Node("Pad", {"x", "pads", "pv", "ax1"}, {"pd"});
  m.Output("pd");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> x = Ramp(14, -3, 3, 7);
  auto out = RunMain(*module, {F32({2, 7}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 6u);
  for (int r = 0; r < 2; ++r) {
    const float* row = x.data() + r * 7;
    float sum = 0;
    for (int c = 0; c < 7; ++c) sum += row[c];
    EXPECT_EQ(Values((*out)[0])[r], *std::max_element(row, row + 7));
    EXPECT_NEAR(Values((*out)[1])[r], sum / 7, 1e-5);
  }
  EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*out)[3].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*out)[4].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<float>{x[6], x[13]}));
  EXPECT_EQ(Values((*out)[3])[0], x[3]);
  ASSERT_EQ((*out)[5].shape(), (std::vector<int64_t>{2, 10}));
  std::vector<float> pd = Values((*out)[5]);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(pd[r * 10], 9.0f);
    for (int c = 0; c < 7; ++c) EXPECT_EQ(pd[r * 10 + 1 + c], x[r * 7 + c]);
    EXPECT_EQ(pd[r * 10 + 8], 9.0f);
    EXPECT_EQ(pd[r * 10 + 9], 9.0f);
  }
}

TEST(OnnxOpset18E2E, NewestOpsetImportsAndNewerIsRefused) {
  B ok(21);
  ok.Input("x", TensorProto::FLOAT, {3});
  ok.Node("Relu", {"x"}, {"y"});
  ok.Output("y");
  auto module = CompileOnnx(ok);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({3}, {-1, 0, 2})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{0, 0, 2}));

  B newer(22);
  newer.Input("x", TensorProto::FLOAT, {3});
  newer.Node("Relu", {"x"}, {"y"});
  newer.Output("y");
  EXPECT_NE(ImportError(newer).find("ONNX model uses opset 22 of the default domain; Kiln supports opsets 1 to 21"),
            std::string::npos)
      << ImportError(newer);
}

TEST(OnnxOpset18E2E, FormsThatWouldChangeTheResultAreRefusedByName) {
  struct Case {
    const char* what;
    std::function<void(B&)> build;
    const char* message;
  };
  const Case cases[] = {
      {"antialias",
       [](B& m) {
         m.Initializer("sc", {4}, {1, 1, 0.5f, 0.5f});
         auto* n = m.Node("Resize", {"x", "", "sc"}, {"y"});
         B::AttrInt(n, "antialias", 1);
         B::AttrString(n, "mode", "linear");
       },
       "Resize (opset 18): antialias=1"},
      {"keep_aspect_ratio_policy",
       [](B& m) {
         m.InitializerI64("sz", {4}, {1, 1, 2, 3});
         auto* n = m.Node("Resize", {"x", "", "", "sz"}, {"y"});
         B::AttrString(n, "keep_aspect_ratio_policy", "not_larger");
       },
       "Resize (opset 18): keep_aspect_ratio_policy=\"not_larger\""},
      {"resize axes",
       [](B& m) {
         m.Initializer("sc", {2}, {0.5f, 0.5f});
         auto* n = m.Node("Resize", {"x", "", "sc"}, {"y"});
         B::AttrInts(n, "axes", {2, 3});
       },
       "Resize (opset 18): axes other than all four in order"},
      {"num_outputs",
       [](B& m) {
         auto* n = m.Node("Split", {"x"}, {"y", "z"});
         B::AttrInt(n, "num_outputs", 3);
       },
       "Split (opset 18): num_outputs=3 but the node has 2 outputs"},
      {"pad axes repeated",
       [](B& m) {
         m.InitializerI64("pads", {4}, {1, 1, 1, 1});
         m.InitializerI64("axes", {2}, {2, -2});
         m.Node("Pad", {"x", "pads", "", "axes"}, {"y"});
       },
       "Pad (opset 18): axes [2, -2] repeat an axis"},
      {"pad wrap",
       [](B& m) {
         m.InitializerI64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
         auto* n = m.Node("Pad", {"x", "pads"}, {"y"});
         B::AttrString(n, "mode", "wrap");
       },
       "Pad (opset 18): mode=\"wrap\""},
  };
  for (const Case& c : cases) {
    B m(18);
    m.Input("x", TensorProto::FLOAT, {1, 1, 4, 4});
    c.build(m);
    m.Output("y");
    std::string err = ImportError(m);
    EXPECT_NE(err.find(c.message), std::string::npos) << c.what << ": " << err;
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
