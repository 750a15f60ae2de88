// Every user-facing error of the LSTM / GRU / RNN converters (ops_rnn.cc),
// made to fire: one small model per message.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/onnx/onnx_importer.h"
#include "compiler/onnx/onnx_model_builder.h"

namespace kiln {
namespace onnx {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

struct ErrorCase {
  const char* name;
  std::function<void(B&)> build;  // adds the node producing "y" and its initializers
  const char* expected;
};

// x [2, 1, 3] is a graph input; LSTM weights for hidden size 2 (4 gates).
void LstmWeights(B& m, int64_t dirs = 1) {
  m.Initializer("w", {dirs, 8, 3}, std::vector<float>(static_cast<size_t>(dirs * 24), 0.1f));
  m.Initializer("r", {dirs, 8, 2}, std::vector<float>(static_cast<size_t>(dirs * 16), 0.1f));
}

::onnx::NodeProto* Lstm(B& m, std::vector<std::string> inputs = {"x", "w", "r"}) { return m.Node("LSTM", inputs, {"y"}); }

void Strings(::onnx::NodeProto* n, const char* name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

TEST(OnnxRnnErrors, EveryMessageFires) {
  const std::vector<ErrorCase> cases = {
      {"rank", [](B& m) {
         m.Initializer("w", {8, 3}, std::vector<float>(24, 0.1f));
         m.Initializer("r", {1, 8, 2}, std::vector<float>(16, 0.1f));
         Lstm(m);
       }, "LSTM (opset 14): X, W and R must have rank 3"},
      {"int X", [](B& m) {
         LstmWeights(m);
         m.InitializerI64("xi", {2, 1, 3}, {1, 2, 3, 4, 5, 6});
         Lstm(m, {"xi", "w", "r"});
       }, "X must be a float tensor, got int64"},
      {"direction", [](B& m) {
         LstmWeights(m);
         B::AttrString(Lstm(m), "direction", "sideways");
       }, "direction \"sideways\""},
      {"layout", [](B& m) {
         LstmWeights(m);
         B::AttrInt(Lstm(m), "layout", 2);
       }, "layout 2"},
      {"symbolic weights", [](B& m) {
         m.Input("ws", TensorProto::FLOAT, {1, 8, "i"});
         m.Initializer("r", {1, 8, 2}, std::vector<float>(16, 0.1f));
         Lstm(m, {"x", "ws", "r"});
       }, "W and R with symbolic dimensions"},
      {"hidden_size", [](B& m) {
         LstmWeights(m);
         B::AttrInt(Lstm(m), "hidden_size", 3);
       }, "hidden_size 3 does not match R's last dimension 2"},
      {"W shape", [](B& m) {
         LstmWeights(m);
         B::AttrString(Lstm(m), "direction", "bidirectional");
       }, "W must have shape [2, 8, input_size]"},
      {"activation count", [](B& m) {
         LstmWeights(m);
         Strings(Lstm(m), "activations", {"Sigmoid", "Tanh"});
       }, "activations: expected 3 functions, got 2"},
      {"unknown activation", [](B& m) {
         LstmWeights(m);
         Strings(Lstm(m), "activations", {"Sigmoid", "Swish", "Tanh"});
       }, "activation \"Swish\""},
      {"clip", [](B& m) {
         LstmWeights(m);
         B::AttrFloat(Lstm(m), "clip", -1.0f);
       }, "clip must be positive, got -1"},
  };
  for (const auto& c : cases) {
    B m(14);
    m.Input("x", TensorProto::FLOAT, {2, 1, 3});
    c.build(m);
    m.Output("y");
    std::string bytes = m.Serialize();
    auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
    ASSERT_FALSE(mod.ok()) << c.name;
    EXPECT_NE(mod.status().message().find(c.expected), std::string::npos) << c.name << ":\n" << mod.status().message();
  }
}

}  // namespace
}  // namespace onnx
}  // namespace kiln
