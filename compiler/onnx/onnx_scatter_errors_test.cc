// ScatterElements / Scatter / ScatterND / GridSample (ops_scatter.cc): every
// user-facing error made to fire, and what each opset's forms import as.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/onnx/onnx_importer.h"
#include "compiler/onnx/onnx_model_builder.h"
#include "compiler/text/text.h"

namespace kiln {
namespace onnx {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;
using Node = ::onnx::NodeProto;

struct Case {
  const char* name;
  int64_t opset;
  std::vector<OnnxDim> x_shape;  // input "x" (float32)
  std::function<void(B&)> build;  // adds the node producing "y" (and initializers)
  const char* expected;           // in the error, or in the imported text
};

Result<ir::IRModule> Import(const Case& c) {
  B m(c.opset);
  m.Input("x", TensorProto::FLOAT, c.x_shape);
  c.build(m);
  m.Output("y");
  std::string bytes = m.Serialize();
  return ImportBuffer(bytes.data(), bytes.size(), ".", {});
}

Node* Scatter(B& m, const char* op, std::vector<std::string> in) { return m.Node(op, in, {"y"}); }

TEST(OnnxScatterErrors, EveryMessageFires) {
  const std::vector<Case> cases = {
      {"reduction before 16", 13, {2, 3}, [](B& m) {
         m.InitializerI64("i", {1, 3}, {0, 1, 0});
         m.Initializer("u", {1, 3}, {1, 2, 3});
         B::AttrString(Scatter(m, "ScatterElements", {"x", "i", "u"}), "reduction", "add");
       }, "ScatterElements (opset 13): reduction \"add\" is not defined in opset 13 (none; add, mul from 16; max, min from 18)"},
      {"max before 18", 16, {2, 3}, [](B& m) {
         m.InitializerI64("i", {1, 1}, {1});
         m.Initializer("u", {1, 3}, {1, 2, 3});
         B::AttrString(Scatter(m, "ScatterND", {"x", "i", "u"}), "reduction", "max");
       }, "ScatterND (opset 16): reduction \"max\" is not defined in opset 16"},
      {"elements ranks", 13, {2, 3}, [](B& m) {
         m.InitializerI64("i", {3}, {0, 1, 0});
         m.Initializer("u", {3}, {1, 2, 3});
         Scatter(m, "ScatterElements", {"x", "i", "u"});
       }, "data, indices and updates must have one rank, got 2, 1 and 1"},
      {"elements axis", 11, {2, 3}, [](B& m) {
         m.InitializerI64("i", {1, 3}, {0, 1, 0});
         m.Initializer("u", {1, 3}, {1, 2, 3});
         B::AttrInt(Scatter(m, "ScatterElements", {"x", "i", "u"}), "axis", -3);
       }, "ScatterElements (opset 11): axis -3 is out of range for rank 2"},
      {"updates dtype", 10, {2, 3}, [](B& m) {
         m.InitializerI64("i", {1, 3}, {0, 1, 0});
         m.InitializerI64("u", {1, 3}, {1, 2, 3});
         Scatter(m, "Scatter", {"x", "i", "u"});
       }, "Scatter (opset 10): updates have element type int64, data float32"},
      {"nd scalar indices", 13, {2, 3}, [](B& m) {
         m.InitializerI64("i", {}, {0});
         m.Initializer("u", {3}, {1, 2, 3});
         Scatter(m, "ScatterND", {"x", "i", "u"});
       }, "ScatterND (opset 13): indices must have rank 1 or more"},
      {"nd symbolic tuple", 13, {2, 3}, [](B& m) {
         m.Input("i", TensorProto::INT64, {1, "k"});
         m.Initializer("u", {1, 3}, {1, 2, 3});
         Scatter(m, "ScatterND", {"x", "i", "u"});
       }, "indices whose last dimension (the index tuple's length) is symbolic"},
      {"nd long tuple", 13, {2, 3}, [](B& m) {
         m.InitializerI64("i", {1, 3}, {0, 1, 0});
         m.Initializer("u", {1}, {1});
         Scatter(m, "ScatterND", {"x", "i", "u"});
       }, "index tuples of length 3 do not fit data of rank 2"},
      {"nd updates rank", 18, {2, 3}, [](B& m) {
         m.InitializerI64("i", {2, 1}, {0, 1});
         m.Initializer("u", {2}, {1, 2});
         Scatter(m, "ScatterND", {"x", "i", "u"});
       }, "updates must have rank 2 (indices' rank - 1 + data's rank - 1), got 1"},
      {"grid rank", 20, {1, 1, 2, 2, 2}, [](B& m) {
         m.Initializer("g", {1, 1, 1, 1, 3}, {0, 0, 0});
         Scatter(m, "GridSample", {"x", "g"});
       }, "GridSample (opset 20): X of rank 5 and grid of rank 5 (only 4-D, (N, C, H, W) with (N, H_out, W_out, 2))"},
      {"grid mode 20", 20, {1, 1, 2, 2}, [](B& m) {
         m.Initializer("g", {1, 1, 1, 2}, {0, 0});
         B::AttrString(Scatter(m, "GridSample", {"x", "g"}), "mode", "bilinear");
       }, "mode \"bilinear\" is not defined in opset 20 (linear, nearest, cubic)"},
      {"grid mode 16", 16, {1, 1, 2, 2}, [](B& m) {
         m.Initializer("g", {1, 1, 1, 2}, {0, 0});
         B::AttrString(Scatter(m, "GridSample", {"x", "g"}), "mode", "cubic");
       }, "mode \"cubic\" is not defined in opset 16 (bilinear, nearest, bicubic)"},
      {"grid padding", 16, {1, 1, 2, 2}, [](B& m) {
         m.Initializer("g", {1, 1, 1, 2}, {0, 0});
         B::AttrString(Scatter(m, "GridSample", {"x", "g"}), "padding_mode", "wrap");
       }, "padding_mode \"wrap\" is not one of zeros, border, reflection"},
  };
  for (const auto& c : cases) {
    auto mod = Import(c);
    ASSERT_FALSE(mod.ok()) << c.name;
    EXPECT_NE(mod.status().message().find(c.expected), std::string::npos) << c.name << ":\n" << mod.status().message();
  }
}

// Each opset's spelling becomes TVM's: "none" is "update", Scatter (9-10) is
// scatter_elements, opset 20's linear / cubic are bilinear / bicubic, and
// GridSample's default align_corners is 0 (TVM's is True).
TEST(OnnxScatterImport, OpsetFormsBecomeTvmNames) {
  const std::vector<Case> cases = {
      {"scatter 9", 9, {2, 3}, [](B& m) {
         m.Input("i", TensorProto::INT64, {1, 3});
         m.Input("u", TensorProto::FLOAT, {1, 3});
         B::AttrInt(Scatter(m, "Scatter", {"x", "i", "u"}), "axis", -1);
       }, "R.scatter_elements(x, i, u, axis=1, reduction=\"update\")"},
      {"elements 18 min", 18, {2, 3}, [](B& m) {
         m.Input("i", TensorProto::INT64, {1, 3});
         m.Input("u", TensorProto::FLOAT, {1, 3});
         B::AttrString(Scatter(m, "ScatterElements", {"x", "i", "u"}), "reduction", "min");
       }, "reduction=\"min\""},
      {"nd 16 mul", 16, {2, 3}, [](B& m) {
         m.Input("i", TensorProto::INT64, {1, 1});
         m.Input("u", TensorProto::FLOAT, {1, 3});
         B::AttrString(Scatter(m, "ScatterND", {"x", "i", "u"}), "reduction", "mul");
       }, "R.scatter_nd(x, i, u, reduction=\"mul\")"},
      {"grid 20 cubic", 20, {1, 1, 2, 2}, [](B& m) {
         m.Input("g", TensorProto::FLOAT, {1, 1, 1, 2});
         B::AttrString(Scatter(m, "GridSample", {"x", "g"}), "mode", "cubic");
       }, "R.image.grid_sample(x, g, align_corners=False, layout=\"NCHW\", method=\"bicubic\", padding_mode=\"zeros\")"},
      {"grid 16 defaults", 16, {1, 1, 2, 2}, [](B& m) {
         m.Input("g", TensorProto::FLOAT, {1, 1, 1, 2});
         Scatter(m, "GridSample", {"x", "g"});
       }, "method=\"bilinear\""},
  };
  for (const auto& c : cases) {
    auto mod = Import(c);
    ASSERT_TRUE(mod.ok()) << c.name << ": " << mod.status().ToString();
    std::string text = text::PrintModule(*mod);
    EXPECT_NE(text.find(c.expected), std::string::npos) << c.name << ":\n" << text;
  }
}

}  // namespace
}  // namespace onnx
}  // namespace kiln
