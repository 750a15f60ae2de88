// ScatterElements / Scatter / ScatterND / GridSample imported, compiled and
// run: each opset's spelling on small tensors whose results are worked out
// by hand (the ONNX node tests and ORT cover the rest: docs/onnx_conformance.md).
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

std::vector<float> RunModel(const B& m, std::vector<Tensor> args) {
  auto mod = CompileOnnx(m);
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return {};
  auto r = RunMain(*mod, std::move(args));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return Values(r->at(0));
}

TEST(OnnxScatterE2E, ScatterFamilyEachOpset) {
  {  // Scatter (opset 9): ScatterElements without reduction, along axis 1; the later duplicate wins.
    B m(9);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("i", TensorProto::INT64, {2, 2});
    m.Input("u", TensorProto::FLOAT, {2, 2});
    B::AttrInt(m.Node("Scatter", {"x", "i", "u"}, {"y"}), "axis", 1);
    m.Output("y");
    EXPECT_EQ(RunModel(m, {F32({2, 3}, {0, 0, 0, 0, 0, 0}), I64({2, 2}, {2, 0, 1, 1}), F32({2, 2}, {5, 6, 7, 8})}),
              (std::vector<float>{6, 0, 5, 0, 8, 0}));
  }
  {  // ScatterElements (opset 16) add along axis 0, negative index.
    B m(16);
    m.Input("x", TensorProto::FLOAT, {2, 2});
    m.Input("i", TensorProto::INT64, {2, 2});
    m.Input("u", TensorProto::FLOAT, {2, 2});
    B::AttrString(m.Node("ScatterElements", {"x", "i", "u"}, {"y"}), "reduction", "add");
    m.Output("y");
    EXPECT_EQ(RunModel(m, {F32({2, 2}, {1, 1, 1, 1}), I64({2, 2}, {-1, 0, -1, 1}), F32({2, 2}, {2, 3, 4, 5})}),
              (std::vector<float>{1, 4, 7, 6}));
  }
  {  // ScatterND (opset 18) max over whole rows, a duplicate row.
    B m(18);
    m.Input("x", TensorProto::FLOAT, {3, 2});
    m.Input("i", TensorProto::INT64, {3, 1});
    m.Input("u", TensorProto::FLOAT, {3, 2});
    B::AttrString(m.Node("ScatterND", {"x", "i", "u"}, {"y"}), "reduction", "max");
    m.Output("y");
    EXPECT_EQ(RunModel(m, {F32({3, 2}, {1, 1, 1, 1, 1, 1}), I64({3, 1}, {2, -1, 0}), F32({3, 2}, {0, 5, 3, -2, 9, 0})}),
              (std::vector<float>{9, 1, 1, 1, 3, 5}));
  }
}

TEST(OnnxScatterE2E, GridSampleEachOpset) {
  // A 2x2 image [[1, 2], [3, 4]] sampled at (x, y) = (0, 0), (-1, -1), (1, -1).
  Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor g = F32({1, 1, 3, 2}, {0, 0, -1, -1, 1, -1});
  auto model = [](int64_t opset, const char* mode, int64_t align) {
    B m(opset);
    m.Input("x", TensorProto::FLOAT, {1, 1, 2, 2});
    m.Input("g", TensorProto::FLOAT, {1, 1, 3, 2});
    auto* n = m.Node("GridSample", {"x", "g"}, {"y"});
    if (mode) B::AttrString(n, "mode", mode);
    B::AttrInt(n, "align_corners", align);
    m.Output("y");
    return m;
  };
  // Corners on the pixel centres: the centre is the mean, the corners are pixels.
  auto y = RunModel(model(16, nullptr, 1), {x, g});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_NEAR(y[0], 2.5f, 1e-6);
  EXPECT_NEAR(y[1], 1.0f, 1e-6);
  EXPECT_NEAR(y[2], 2.0f, 1e-6);
  // Opset 20's "cubic" is exact at pixel centres.
  y = RunModel(model(20, "cubic", 1), {x, g});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_NEAR(y[1], 1.0f, 1e-6);
  EXPECT_NEAR(y[2], 2.0f, 1e-6);
  // Corners on the pixel edges (align_corners=0, zeros padding): (-1, -1) is
  // the outer corner of pixel 1, a quarter of it.
  y = RunModel(model(20, "linear", 0), {x, g});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_NEAR(y[0], 2.5f, 1e-6);
  EXPECT_NEAR(y[1], 0.25f, 1e-6);
  EXPECT_NEAR(y[2], 0.5f, 1e-6);
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
