// Shape operands that arrive as run-time tensors (R.tensor_to_shape), shape
// values used as data (R.shape_to_tensor) and data-dependent sizes (Range of
// run-time bounds), end to end: one compiled program run with different
// operand values.
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxShapeValuesE2E, PadWithRunTimePadsIncludingNegativeOnes) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Input("pads", TensorProto::INT64, {4});
  m.Node("Pad", {"x", "pads"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  // pads = [x0_begin, x1_begin, x0_end, x1_end].
  auto r = RunMain(module.value(), {x, I64({4}, {1, 0, 0, 2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0}));
  // The same program crops with negative pads, as ONNX Runtime does.
  r = RunMain(module.value(), {x, I64({4}, {0, -1, -1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{2, 3, 0}));
}

TEST(OnnxShapeValuesE2E, ConstantOfShapeWithRunTimeShape) {
  B m(13);
  m.Input("shape", TensorProto::INT64, {2});
  m.Node("ConstantOfShape", {"shape"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t rows : {1, 4}) {
    auto r = RunMain(module.value(), {I64({2}, {rows, 3})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{rows, 3}));
    EXPECT_EQ(Values(r.value()[0]), std::vector<float>(static_cast<size_t>(rows * 3), 0.0f));
  }
}

TEST(OnnxShapeValuesE2E, RangeOfRunTimeBoundsHasADataDependentLength) {
  B m(13);
  m.Input("start", TensorProto::FLOAT, {});
  m.Input("limit", TensorProto::FLOAT, {});
  m.Input("delta", TensorProto::FLOAT, {});
  m.Node("Range", {"start", "limit", "delta"}, {"r"});
  m.Node("Neg", {"r"}, {"y"});  // a later operator over the symbolic length
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto r = RunMain(module.value(), {F32({}, {1}), F32({}, {3}), F32({}, {0.5f})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{-1, -1.5f, -2, -2.5f}));
  r = RunMain(module.value(), {F32({}, {5}), F32({}, {1}), F32({}, {-2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{-5, -3}));
  r = RunMain(module.value(), {F32({}, {5}), F32({}, {1}), F32({}, {2})});  // empty
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{0}));
}

TEST(OnnxShapeValuesE2E, ReshapeWithRunTimeShapeResolvesZeroAndMinusOne) {
  B m(14);
  m.Input("x", TensorProto::FLOAT, {2, 3, 4});
  m.Input("shape", TensorProto::INT64, {2});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  m.Node("Neg", {"r"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  Tensor x = F32({2, 3, 4}, v);
  for (const auto& c : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, -1}, {2, 12}}, {{-1, 4}, {6, 4}}, {{4, 6}, {4, 6}}}) {
    auto r = RunMain(module.value(), {x, I64({2}, c.first)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()[0].shape(), c.second);
    EXPECT_EQ(Values(r.value()[0])[5], -5.0f);
  }
  // A shape whose product is not the element count fails when the program
  // runs, naming the node and the shape operand; no kernel reads outside the
  // input.
  auto r = RunMain(module.value(), {x, I64({2}, {5, 5})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "main: ONNX Reshape node \"r\": input 1 \"shape\" asks for 25 elements; input 0 \"x\" (shape [2, 3, 4]) "
            "holds 24");
}

TEST(OnnxShapeValuesE2E, NonZeroAllocatesItsOutputAfterCountingAndLaterOpsUseTheCount) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Node("NonZero", {"x"}, {"nz"});
  auto* t = m.Node("Transpose", {"nz"}, {"y"});  // (n, 2): a later operator over the count
  B::AttrInts(t, "perm", {1, 0});
  m.Output("y", TensorProto::INT64);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto r = RunMain(module.value(), {F32({2, 3}, {0, 5, 0, 7, 0, 1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{0, 1, 1, 0, 1, 2}));
  r = RunMain(module.value(), {F32({2, 3}, {0, 0, 0, 0, 0, 0})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{0, 2}));
  r = RunMain(module.value(), {F32({2, 3}, {1, 1, 1, 1, 1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2}));
}

TEST(OnnxShapeValuesE2E, TopKWithRunTimeK) {
  B m(11);
  m.Input("x", TensorProto::FLOAT, {2, 4});
  m.Input("k", TensorProto::INT64, {1});
  m.Node("TopK", {"x", "k"}, {"v", "i"});
  m.Node("Neg", {"v"}, {"nv"});  // a later operator over the symbolic K
  m.Output("nv");
  m.Output("i", TensorProto::INT64);
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor x = F32({2, 4}, {3, 1, 4, 1, 5, 9, 2, 6});
  auto r = RunMain(module.value(), {x, I64({1}, {2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{-4, -3, -9, -6}));
  EXPECT_EQ(Values(r.value()[1]), (std::vector<float>{2, 0, 1, 3}));
  r = RunMain(module.value(), {x, I64({1}, {1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{-4, -9}));
  // K beyond the axis is cut to it, never read outside the input.
  r = RunMain(module.value(), {x, I64({1}, {7})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()[0].shape(), (std::vector<int64_t>{2, 4}));
}

TEST(OnnxShapeValuesE2E, SymbolicDimensionUsedAsDataBecomesATensor) {
  // nudenet's anchors: Cast(Gather(Shape(x), 2)) to float, used as data.
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, "n"});
  m.Node("Shape", {"x"}, {"s"});
  m.Output("s", TensorProto::INT64);
  m.InitializerI64("i1", {}, {1});
  m.Node("Gather", {"s", "i1"}, {"n"});
  auto* c = m.Node("Cast", {"n"}, {"nf"});
  B::AttrInt(c, "to", TensorProto::FLOAT);
  m.Node("Mul", {"x", "nf"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto r = RunMain(module.value(), {F32({1, 3}, {1, 2, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{1, 3}));
  EXPECT_EQ(Values(r.value()[1]), (std::vector<float>{3, 6, 9}));
}

TEST(OnnxShapeValuesE2E, RunTimeShapeOperandErrorsNameTheInput) {
  {
    B m(13);  // a float tensor is no shape
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("pads", TensorProto::FLOAT, {4});
    m.Node("Pad", {"x", "pads"}, {"y"});
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_FALSE(module.ok());
    EXPECT_NE(module.status().message().find("pads (input 1) must be an int64 tensor to be read as a shape, got float32"),
              std::string::npos)
        << module.status().message();
  }
  {
    B m(13);  // the rank of the shape must be known when compiling
    m.Input("shape", TensorProto::INT64, {"k"});
    m.Node("ConstantOfShape", {"shape"}, {"y"});
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_FALSE(module.ok());
    EXPECT_NE(module.status().message().find(
                  "shape (input 0) is read as a shape when the program runs, so its length must be static"),
              std::string::npos)
        << module.status().message();
  }
  {
    B m(13);
    m.Input("shape", TensorProto::INT64, {2, 2});
    m.Node("ConstantOfShape", {"shape"}, {"y"});
    m.Output("y");
    auto module = CompileOnnx(m);
    ASSERT_FALSE(module.ok());
    EXPECT_NE(module.status().message().find("shape (input 0) must be a 1-d tensor (or a scalar) to be read as a shape, got 2"),
              std::string::npos)
        << module.status().message();
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
