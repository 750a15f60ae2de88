// Elementwise ONNX operators end to end (import, compile, run) against
// std:: math: one model with many outputs keeps the compile count low.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

struct Case {
  std::string name;
  std::function<float(float, float)> ref;  // (x[i, j], y[j])
};

TEST(OnnxElementwiseE2E, ArithmeticActivationsAndBroadcasting) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Input("y", TensorProto::FLOAT, {3});
  std::vector<Case> cases;
  auto unary = [&](const std::string& op, std::function<float(float)> f, std::function<void(::onnx::NodeProto*)> attrs = nullptr) {
    std::string out = op + std::to_string(cases.size());
    auto* n = m.Node(op, {"x"}, {out});
    if (attrs) attrs(n);
    m.Output(out);
    cases.push_back({out, [f](float x, float) { return f(x); }});
  };
  auto binary = [&](const std::string& op, std::function<float(float, float)> f) {
    std::string out = op + std::to_string(cases.size());
    m.Node(op, {"x", "y"}, {out});
    m.Output(out);
    cases.push_back({out, f});
  };
  binary("Add", [](float a, float b) { return a + b; });
  binary("Sub", [](float a, float b) { return a - b; });
  binary("Mul", [](float a, float b) { return a * b; });
  binary("Div", [](float a, float b) { return a / b; });
  binary("Max", [](float a, float b) { return std::max(a, b); });
  binary("Min", [](float a, float b) { return std::min(a, b); });
  binary("Sum", [](float a, float b) { return a + b; });
  binary("Mean", [](float a, float b) { return (a + b) / 2; });
  unary("Exp", [](float a) { return std::exp(a); });
  unary("Erf", [](float a) { return std::erf(a); });
  unary("Tanh", [](float a) { return std::tanh(a); });
  unary("Sigmoid", [](float a) { return 1 / (1 + std::exp(-a)); });
  unary("Relu", [](float a) { return std::max(a, 0.f); });
  unary("Neg", [](float a) { return -a; });
  unary("Abs", [](float a) { return std::fabs(a); });
  unary("Floor", [](float a) { return std::floor(a); });
  unary("Ceil", [](float a) { return std::ceil(a); });
  unary("Reciprocal", [](float a) { return 1 / a; });
  unary("LeakyRelu", [](float a) { return a > 0 ? a : 0.1f * a; }, [](auto* n) { B::AttrFloat(n, "alpha", 0.1f); });
  unary("Elu", [](float a) { return a > 0 ? a : 0.5f * (std::exp(a) - 1); }, [](auto* n) { B::AttrFloat(n, "alpha", 0.5f); });
  unary("Gelu", [](float a) { return 0.5f * a * (1 + std::erf(a / std::sqrt(2.f))); });
  unary("HardSigmoid", [](float a) { return std::max(0.f, std::min(1.f, 0.2f * a + 0.5f)); });
  unary("HardSwish", [](float a) { return a * std::max(0.f, std::min(1.f, a / 6 + 0.5f)); });
  // Clip: opset 13 takes min/max as (constant) inputs.
  m.InitializerI64("unused", {1}, {0});
  m.Initializer("lo", {}, {-0.5f});
  m.Initializer("hi", {}, {0.75f});
  m.Node("Clip", {"x", "lo", "hi"}, {"clip"});
  m.Output("clip");
  cases.push_back({"clip", [](float a, float) { return std::min(0.75f, std::max(-0.5f, a)); }});
  m.Node("Clip", {"x", "", "hi"}, {"clip_hi"});
  m.Output("clip_hi");
  cases.push_back({"clip_hi", [](float a, float) { return std::min(0.75f, a); }});
  // Pow with a float exponent tensor, Sqrt/Log of |x| + 1, Where(x > y, x, y).
  m.Node("Abs", {"x"}, {"ax"});
  m.Initializer("one", {}, {1.0f});
  m.Node("Add", {"ax", "one"}, {"ax1"});
  m.Node("Sqrt", {"ax1"}, {"sqrt"});
  m.Output("sqrt");
  cases.push_back({"sqrt", [](float a, float) { return std::sqrt(std::fabs(a) + 1); }});
  m.Node("Log", {"ax1"}, {"log"});
  m.Output("log");
  cases.push_back({"log", [](float a, float) { return std::log(std::fabs(a) + 1); }});
  m.Initializer("two", {}, {2.0f});
  m.Node("Pow", {"ax1", "two"}, {"pow"});
  m.Output("pow");
  cases.push_back({"pow", [](float a, float) { return (std::fabs(a) + 1) * (std::fabs(a) + 1); }});
  m.Node("Greater", {"x", "y"}, {"gt"});
  m.Node("Where", {"gt", "x", "y"}, {"where"});
  m.Output("where");
  cases.push_back({"where", [](float a, float b) { return a > b ? a : b; }});

  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {-1.7f, -0.3f, 0.1f, 0.4f, 1.2f, 2.5f};
  std::vector<float> yv = {0.5f, -1.5f, 2.0f};
  auto out = RunMain(*module, {F32({2, 3}, xv), F32({3}, yv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<float> got = Values((*out)[c]);
    ASSERT_EQ(got.size(), 6u) << cases[c].name;
    for (size_t i = 0; i < 6; ++i) {
      float want = cases[c].ref(xv[i], yv[i % 3]);
      EXPECT_NEAR(got[i], want, 1e-5f + 1e-5f * std::fabs(want)) << cases[c].name << " element " << i;
    }
  }
}

TEST(OnnxElementwiseE2E, ComparisonsLogicAndCast) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {4});
  m.Input("y", TensorProto::FLOAT, {4});
  m.Node("Equal", {"x", "y"}, {"eq"});
  m.Node("Less", {"x", "y"}, {"lt"});
  m.Node("Greater", {"x", "y"}, {"gt"});
  m.Node("Not", {"eq"}, {"ne"});
  m.Node("And", {"lt", "ne"}, {"and"});
  m.Node("Or", {"gt", "eq"}, {"or"});
  for (const char* o : {"eq", "lt", "gt", "ne", "and", "or"}) {
    std::string f = std::string(o) + "_f";
    auto* n = m.Node("Cast", {o}, {f});
    B::AttrInt(n, "to", TensorProto::FLOAT);
    m.Output(f);
  }
  m.Node("Cast", {"x"}, {"xi"});
  B::AttrInt(m.graph().mutable_node(m.graph().node_size() - 1), "to", TensorProto::INT64);
  m.Output("xi", TensorProto::INT64);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({4}, {1, 2, 3, 4.5f}), F32({4}, {1, 3, 2, 4})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{1, 0, 0, 0}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<float>{0, 0, 1, 1}));
  EXPECT_EQ(Values((*out)[3]), (std::vector<float>{0, 1, 1, 1}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(Values((*out)[5]), (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ((*out)[6].dtype(), DType::Int64());
  EXPECT_EQ(Values((*out)[6]), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
