// Attribute-like operands fed as run-time graph inputs, as the ONNX node
// tests define them (issue 20 §1): Resize's scales, reduction and
// Squeeze/Unsqueeze axes, Slice's starts/ends/axes/steps, CumSum's axis,
// Tile's repeats, Pad's constant_value. Each program is compiled once and run
// with different operand values.
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxInputsAsDefinedE2E, ResizeWithRunTimeScalesSizesTheOutputByFloorOfInTimesScale) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 1, 1, 2});
  m.Input("scales", TensorProto::FLOAT, {4});
  B::AttrString(m.Node("Resize", {"x", "", "scales"}, {"y"}), "mode", "linear");
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({1, 1, 1, 2}, {0, 4});
  // half_pixel: x_original = (o + 0.5) / scale - 0.5, clamped at the borders.
  auto r = RunMain(module.value(), {x, F32({4}, {1, 1, 1, 2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 1, 1, 4}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{0, 1, 3, 4}));
  r = RunMain(module.value(), {x, F32({4}, {1, 1, 1, 0.5f})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{2}));
  // 2 * 0.7 = 1.4: one column, mapped by the scale itself, not by 1/2.
  r = RunMain(module.value(), {x, F32({4}, {1, 1, 1, 0.7f})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_NEAR(Values(r.value()[0])[0], 4 * ((0.5 / 0.7f) - 0.5), 1e-5);
  // A batch or channel scale other than 1 is refused when the program runs.
  r = RunMain(module.value(), {x, F32({4}, {2, 1, 1, 2})});
  EXPECT_FALSE(r.ok());
}

TEST(OnnxInputsAsDefinedE2E, CubicResizeOnSymbolicSpatialSizes) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 1, "h", "w"});
  m.Input("sizes", TensorProto::INT64, {4});
  B::AttrString(m.Node("Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "cubic");
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  // Cubic weights sum to one: a constant image stays constant; a ramp along
  // W keeps its mirror symmetry around the centre.
  auto r = RunMain(module.value(), {F32({1, 1, 2, 3}, std::vector<float>(6, 2.5f)), I64({4}, {1, 1, 3, 5})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 1, 3, 5}));
  for (float v : Values(r.value()[0])) EXPECT_NEAR(v, 2.5f, 1e-5);
  r = RunMain(module.value(), {F32({1, 1, 1, 4}, {0, 1, 2, 3}), I64({4}, {1, 1, 1, 8})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> y = Values(r.value()[0]);
  ASSERT_EQ(y.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(y[i] + y[7 - i], 3.0f, 1e-5) << i;
  EXPECT_LT(y[0], y[1]);
}

TEST(OnnxInputsAsDefinedE2E, ReduceSumOverRunTimeAxes) {
  for (int64_t keepdims : {0, 1}) {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("axes", TensorProto::INT64, {1});
    B::AttrInt(m.Node("ReduceSum", {"x", "axes"}, {"y"}), "keepdims", keepdims);
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
    auto r = RunMain(module.value(), {x, I64({1}, {1})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), (keepdims ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{2}));
    EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{6, 15}));
    r = RunMain(module.value(), {x, I64({1}, {-2})});  // the other axis, negative
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), (keepdims ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{3}));
    EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{5, 7, 9}));
    // An axis out of range is an error when the program runs, not ignored.
    r = RunMain(module.value(), {x, I64({1}, {2})});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(),
              "main: ONNX ReduceSum node \"y\": 1 of the values of input 1 \"axes\" lie outside [-2, 1], the axes of a "
              "rank-2 tensor");
  }
}

TEST(OnnxInputsAsDefinedE2E, ReduceSumOverRunTimeAxesOfSymbolicCount) {
  for (int64_t noop : {0, 1}) {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {2, 2});
    m.Input("axes", TensorProto::INT64, {"k"});
    B::AttrInt(m.Node("ReduceSum", {"x", "axes"}, {"y"}), "noop_with_empty_axes", noop);
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    Tensor x = F32({2, 2}, {1, 2, 3, 4});
    auto r = RunMain(module.value(), {x, I64({0}, {})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Values(r.value()[0]), (noop ? std::vector<float>{1, 2, 3, 4} : std::vector<float>{10}));
    r = RunMain(module.value(), {x, I64({2}, {0, 1})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{10}));
  }
}

TEST(OnnxInputsAsDefinedE2E, SqueezeAndUnsqueezeWithRunTimeAxes) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 3, 1});
  m.Input("axes", TensorProto::INT64, {1});
  m.Node("Squeeze", {"x", "axes"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({1, 3, 1}, {1, 2, 3});
  auto r = RunMain(module.value(), {x, I64({1}, {0})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3, 1}));
  r = RunMain(module.value(), {x, I64({1}, {-1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 2, 3}));
  r = RunMain(module.value(), {x, I64({1}, {1})});  // an axis of 3 cannot be squeezed
  EXPECT_FALSE(r.ok());

  // An empty axes tensor squeezes as no axes do: every axis that is 1.
  B e(13);
  e.Input("x", TensorProto::FLOAT, {1, 3, 1});
  e.Input("axes", TensorProto::INT64, {0});  // a 0 in a model is an unknown size: pinned to 0 below
  e.Node("Squeeze", {"x", "axes"}, {"y"});
  e.Output("y");
  ImportOptions pinned;
  pinned.fixed_dims["axes:0"] = 0;
  module = CompileOnnx(e, pinned);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  r = RunMain(module.value(), {x, I64({0}, {})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3}));

  B u(13);
  u.Input("x", TensorProto::FLOAT, {2, 3});
  u.Input("axes", TensorProto::INT64, {2});
  u.Node("Unsqueeze", {"x", "axes"}, {"y"});
  u.Output("y");
  module = CompileOnnx(u);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x2 = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const auto& [axes, shape] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, 3}, {1, 2, 3, 1}}, {{-1, 1}, {2, 1, 3, 1}}, {{2, 1}, {2, 1, 1, 3}}}) {
    r = RunMain(module.value(), {x2, I64({2}, axes)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), shape);
    EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST(OnnxInputsAsDefinedE2E, SliceWithRunTimeStartsEndsAxesAndSteps) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {3, 4});
  m.Input("starts", TensorProto::INT64, {1});
  m.Input("ends", TensorProto::INT64, {1});
  m.Input("axes", TensorProto::INT64, {1});
  m.Input("steps", TensorProto::INT64, {1});
  m.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  // Columns 1 to the end, clamped from 1000.
  auto r = RunMain(module.value(), {x, I64({1}, {1}), I64({1}, {1000}), I64({1}, {1}), I64({1}, {1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  // Rows backward from the last, step -2: rows 2 and 0.
  r = RunMain(module.value(), {x, I64({1}, {-1}), I64({1}, {-1000}), I64({1}, {0}), I64({1}, {-2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  // An empty range.
  r = RunMain(module.value(), {x, I64({1}, {3}), I64({1}, {1}), I64({1}, {1}), I64({1}, {1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3, 0}));
  r = RunMain(module.value(), {x, I64({1}, {0}), I64({1}, {1}), I64({1}, {2}), I64({1}, {1})});  // no axis 2
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "main: ONNX Slice node \"y\": 1 of the values of input 3 \"axes\" lie outside [-2, 1], the axes of a rank-2 "
            "tensor");
}

TEST(OnnxInputsAsDefinedE2E, CumSumAlongARunTimeAxis) {
  for (int64_t reverse : {0, 1}) {
    B m(14);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("axis", TensorProto::INT64, {});
    B::AttrInt(m.Node("CumSum", {"x", "axis"}, {"y"}), "reverse", reverse);
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
    auto r = RunMain(module.value(), {x, I64({}, {1})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Values(r.value()[0]),
              (reverse ? std::vector<float>{6, 5, 3, 15, 11, 6} : std::vector<float>{1, 3, 6, 4, 9, 15}));
    r = RunMain(module.value(), {x, I64({}, {-2})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(Values(r.value()[0]),
              (reverse ? std::vector<float>{5, 7, 9, 4, 5, 6} : std::vector<float>{1, 2, 3, 5, 7, 9}));
    EXPECT_FALSE(RunMain(module.value(), {x, I64({}, {-3})}).ok());
  }
}

TEST(OnnxInputsAsDefinedE2E, TileWithRunTimeRepeats) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 2});
  m.Input("repeats", TensorProto::INT64, {2});
  m.Node("Tile", {"x", "repeats"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({1, 2}, {1, 2});
  auto r = RunMain(module.value(), {x, I64({2}, {2, 2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  r = RunMain(module.value(), {x, I64({2}, {1, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST(OnnxInputsAsDefinedE2E, PadWithRunTimeConstantValue) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2});
  m.Input("pads", TensorProto::INT64, {2});
  m.Input("value", TensorProto::FLOAT, {});
  m.Node("Pad", {"x", "pads", "value"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({2}, {0, 5});  // a zero inside stays zero
  auto r = RunMain(module.value(), {x, I64({2}, {1, 2}), F32({}, {7})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{7, 0, 5, 7, 7}));
  r = RunMain(module.value(), {x, I64({2}, {0, 1}), F32({}, {-1.5f})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{0, 5, -1.5f}));
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
