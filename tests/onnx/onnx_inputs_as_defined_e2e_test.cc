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

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
