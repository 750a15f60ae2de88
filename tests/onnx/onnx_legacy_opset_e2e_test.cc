// Opsets 1 to 6 of the default domain end to end, against references written
// from the operators' old definitions: binary operators' broadcast/axis
// attributes, Cast's type name, Concat's optional axis, Tile(input, tiles,
// axis), Split's sizes as an input (opset 1), Reshape's shape attribute,
// BatchNormalization's is_test, and consumed_inputs left alone; Selu,
// Softplus and Softsign.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxLegacyOpsetE2E, BinaryBroadcastAttributeAlignsBFromAxis) {
  B m(6);
  m.Input("a", TensorProto::FLOAT, {2, 3, 4});
  m.Input("c", TensorProto::FLOAT, {3});
  m.Input("d", TensorProto::FLOAT, {4});
  m.Input("e", TensorProto::FLOAT, {2, 3, 4});
  auto* add = m.Node("Add", {"a", "c"}, {"y"});  // c along axis 1: (3,) -> (3, 1)
  B::AttrInt(add, "broadcast", 1);
  B::AttrInt(add, "axis", 1);
  B::AttrInt(m.Node("Mul", {"a", "d"}, {"z"}), "broadcast", 1);  // no axis: A's last dimensions
  auto* sub = m.Node("Sub", {"a", "e"}, {"w"});  // broadcast=0: same shapes
  B::AttrInts(sub, "consumed_inputs", {0, 0});    // an in-place hint of opset 1 to 5, no effect
  m.Output("y");
  m.Output("z");
  m.Output("w");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> av = Ramp(24, -1, 1, 1), cv = {10, 20, 30}, dv = {1, 2, 3, 4}, ev = Ramp(24, -1, 1, 2);
  auto out = RunMain(*module, {F32({2, 3, 4}, av), F32({3}, cv), F32({4}, dv), F32({2, 3, 4}, ev)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> y, z, w;
  for (size_t i = 0; i < 24; ++i) {
    y.push_back(av[i] + cv[(i / 4) % 3]);
    z.push_back(av[i] * dv[i % 4]);
    w.push_back(av[i] - ev[i]);
  }
  EXPECT_EQ(Values((*out)[0]), y);
  EXPECT_EQ(Values((*out)[1]), z);
  EXPECT_EQ(Values((*out)[2]), w);
}

TEST(OnnxLegacyOpsetE2E, CastConcatTileSplitReshape) {
  B m(1);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  B::AttrString(m.Node("Cast", {"x"}, {"i"}), "to", "INT32");  // a type name before opset 6
  m.Node("Concat", {"x", "x"}, {"cc"});                          // axis optional before opset 4: 1
  m.InitializerI64("tiles", {}, {2});
  m.InitializerI64("axis", {}, {0});
  m.Node("Tile", {"x", "tiles", "axis"}, {"t"});  // two copies along axis 0
  m.InitializerI64("sizes", {2}, {1, 2});
  B::AttrInt(m.Node("Split", {"x", "sizes"}, {"s0", "s1"}), "axis", 1);  // sizes as an input (opset 1)
  B::AttrInts(m.Node("Reshape", {"x"}, {"r"}), "shape", {3, -1});       // shape as an attribute (opset < 5)
  m.Output("i", TensorProto::INT32);
  m.Output("cc");
  m.Output("t");
  m.Output("s0");
  m.Output("s1");
  m.Output("r");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {-1.5f, 2.7f, 0.2f, 3.0f, -0.6f, 8.9f};
  auto out = RunMain(*module, {F32({2, 3}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{-1, 2, 0, 3, 0, 8}));  // toward zero
  EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<float>{-1.5f, 2.7f, 0.2f, -1.5f, 2.7f, 0.2f, 3.0f, -0.6f, 8.9f, 3.0f, -0.6f, 8.9f}));
  EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{4, 3}));
  std::vector<float> tiled = xv;
  tiled.insert(tiled.end(), xv.begin(), xv.end());
  EXPECT_EQ(Values((*out)[2]), tiled);
  EXPECT_EQ(Values((*out)[3]), (std::vector<float>{-1.5f, 3.0f}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<float>{2.7f, 0.2f, -0.6f, 8.9f}));
  EXPECT_EQ((*out)[5].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values((*out)[5]), xv);
}

TEST(OnnxLegacyOpsetE2E, BatchNormalizationIsTestAndOldActivations) {
  B m(6);
  m.Input("x", TensorProto::FLOAT, {1, 2, 1, 2});
  m.Initializer("g", {2}, {2.0f, 0.5f});
  m.Initializer("b", {2}, {1.0f, -1.0f});
  m.Initializer("mean", {2}, {0.5f, -0.5f});
  m.Initializer("var", {2}, {4.0f, 0.25f});
  auto* bn = m.Node("BatchNormalization", {"x", "g", "b", "mean", "var"}, {"y"});
  B::AttrInt(bn, "is_test", 1);
  B::AttrFloat(bn, "epsilon", 0.0f);
  B::AttrInt(m.Node("HardSigmoid", {"x"}, {"h"}), "consumed_inputs", 0);
  m.Node("Elu", {"x"}, {"e"});
  m.Node("GlobalAveragePool", {"x"}, {"p"});
  m.Output("y");
  m.Output("h");
  m.Output("e");
  m.Output("p");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {1.0f, -3.0f, 0.5f, 2.5f};
  auto out = RunMain(*module, {F32({1, 2, 1, 2}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // (x - mean) / sqrt(var) * g + b per channel.
  std::vector<float> y = {(1.0f - 0.5f) / 2 * 2 + 1, (-3.0f - 0.5f) / 2 * 2 + 1, (0.5f + 0.5f) / 0.5f * 0.5f - 1,
                          (2.5f + 0.5f) / 0.5f * 0.5f - 1};
  std::vector<float> got = Values((*out)[0]);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], y[i], 1e-6) << i;
  std::vector<float> h, e;
  for (float v : xv) {
    h.push_back(std::max(0.0f, std::min(1.0f, 0.2f * v + 0.5f)));
    e.push_back(v > 0 ? v : std::exp(v) - 1);
  }
  got = Values((*out)[1]);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], h[i], 1e-6) << i;
  got = Values((*out)[2]);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], e[i], 1e-6) << i;
  got = Values((*out)[3]);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], -1.0f, 1e-6);
  EXPECT_NEAR(got[1], 1.5f, 1e-6);
}

// Activations the old node tests use (and later opsets keep unchanged).
TEST(OnnxLegacyOpsetE2E, SeluSoftplusSoftsign) {
  B m(6);
  m.Input("x", TensorProto::FLOAT, {6});
  auto* se = m.Node("Selu", {"x"}, {"se"});
  B::AttrFloat(se, "alpha", 2.0f);
  B::AttrFloat(se, "gamma", 3.0f);
  m.Node("Selu", {"x"}, {"sd"});  // ONNX's default alpha and gamma
  m.Node("Softplus", {"x"}, {"sp"});
  m.Node("Softsign", {"x"}, {"ss"});
  for (const char* o : {"se", "sd", "sp", "ss"}) m.Output(o);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {-100.0f, -2.0f, -0.5f, 0.0f, 1.5f, 100.0f};  // softplus must not overflow at 100
  auto out = RunMain(*module, {F32({6}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const double a0 = 1.67326319217681884765625, g0 = 1.05070102214813232421875;
  for (size_t i = 0; i < xv.size(); ++i) {
    double x = xv[i];
    EXPECT_NEAR(Values((*out)[0])[i], 3.0 * (x > 0 ? x : 2.0 * (std::exp(x) - 1)), 1e-5) << x;
    EXPECT_NEAR(Values((*out)[1])[i], g0 * (x > 0 ? x : a0 * (std::exp(x) - 1)), 1e-5) << x;
    EXPECT_NEAR(Values((*out)[2])[i], std::log1p(std::exp(x)), 1e-5 * std::max(1.0, x)) << x;
    EXPECT_NEAR(Values((*out)[3])[i], x / (1 + std::fabs(x)), 1e-6) << x;
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
