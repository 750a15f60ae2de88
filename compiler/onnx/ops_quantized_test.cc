// The quantized operators' user errors, each made to fire, and their import
// with symbolic dimensions (the numbers are checked by the ONNX node tests:
// test_matmulinteger, test_dynamicquantizelinear*, test_qlinearmatmul_*).
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

struct Case {
  const char* name;
  std::function<void(B&)> build;  // inputs, nodes producing "y"
  const char* expected;
};

TEST(OnnxQuantizedOps, EveryMessageFires) {
  const std::vector<Case> cases = {
      {"matmulinteger float input", [](B& m) {
         m.Input("a", TensorProto::FLOAT, {2, 3});
         m.Input("b", TensorProto::INT8, {3, 4});
         m.Node("MatMulInteger", {"a", "b"}, {"y"});
       }, "MatMulInteger (opset 13): input 0 must be int8 or uint8, not float32"},
      {"matmulinteger zero point type", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Input("b", TensorProto::INT8, {3, 4});
         m.Input("bz", TensorProto::UINT8, {});
         m.Node("MatMulInteger", {"a", "b", "", "bz"}, {"y"});
       }, "b_zero_point must have its input's type int8, not uint8"},
      {"matmulinteger zero point rank", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Input("b", TensorProto::INT8, {3, 4});
         m.Input("az", TensorProto::UINT8, {2, 1});
         m.Node("MatMulInteger", {"a", "b", "az"}, {"y"});
       }, "a_zero_point of rank 2 (scalar or 1-D)"},
      {"dynamicquantizelinear int input", [](B& m) {
         m.Input("a", TensorProto::INT32, {2, 3});
         m.Node("DynamicQuantizeLinear", {"a"}, {"y", "s", "z"});
       }, "x of type int32 (float32 only)"},
      {"qlinearmatmul inputs", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Node("QLinearMatMul", {"a", "a"}, {"y"});
       }, "needs 8 inputs, not 2"},
      {"qlinearmatmul float input", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Input("f", TensorProto::FLOAT, {3, 4});
         m.Input("s", TensorProto::FLOAT, {});
         m.Input("z", TensorProto::UINT8, {});
         m.Node("QLinearMatMul", {"a", "s", "z", "f", "s", "z", "s", "z"}, {"y"});
       }, "QLinearMatMul (opset 13): input 3 must be int8 or uint8, not float32"},
      {"qlinearmatmul y zero point", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Input("b", TensorProto::UINT8, {3, 4});
         m.Input("s", TensorProto::FLOAT, {});
         m.Input("z", TensorProto::UINT8, {});
         m.Input("yz", TensorProto::INT32, {});
         m.Node("QLinearMatMul", {"a", "s", "z", "b", "s", "z", "s", "yz"}, {"y"});
       }, "y_zero_point must be int8 or uint8, not int32"},
      {"qlinearmatmul scale type", [](B& m) {
         m.Input("a", TensorProto::UINT8, {2, 3});
         m.Input("b", TensorProto::UINT8, {3, 4});
         m.Input("s", TensorProto::FLOAT, {});
         m.Input("h", TensorProto::FLOAT16, {});
         m.Input("z", TensorProto::UINT8, {});
         m.Node("QLinearMatMul", {"a", "s", "z", "b", "h", "z", "s", "z"}, {"y"});
       }, "scales of type float16 (float32 only)"},
  };
  for (const auto& c : cases) {
    B m(13);
    c.build(m);
    m.Output("y");
    std::string bytes = m.Serialize();
    auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
    ASSERT_FALSE(mod.ok()) << c.name;
    EXPECT_NE(mod.status().message().find(c.expected), std::string::npos) << c.name << ":\n" << mod.status().message();
  }
}

::onnx::TensorProto Int8Tensor(const std::string& name, std::vector<int64_t> dims, const std::vector<int8_t>& v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(TensorProto::INT8);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
  return t;
}

// quantize_dynamic's weights are initializers: the product is one
// R.matmul_integer of the 8-bit operands (no int32 copy of the weight), which
// the CPU pipeline packs for the 8-bit kernel (dispatch_int8_matmul_test).
TEST(OnnxQuantizedOps, ConstantWeightsStayEightBit) {
  B m(13);
  m.Input("q", TensorProto::UINT8, {"rows", 8});
  m.Input("qz", TensorProto::UINT8, {});
  m.Initializer(Int8Tensor("w", {8, 4}, std::vector<int8_t>(32, -7)));
  m.Initializer(Int8Tensor("wz", {4}, {1, 2, 3, 4}));
  m.Node("MatMulInteger", {"q", "w", "qz", "wz"}, {"y"});
  m.Output("y");
  std::string bytes = m.Serialize();
  auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  std::vector<ir::Expr> constants;
  std::string text = text::PrintModule(*mod, &constants);
  EXPECT_NE(text.find("R.matmul_integer(q, metadata[\"relax.expr.Constant\"][0], qz, "
                      "metadata[\"relax.expr.Constant\"][1])"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("R.astype"), std::string::npos) << text;
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_EQ(ir::ExprAs<ir::ConstantExpr>(constants[0])->data.dtype(), DType::Int8());
  EXPECT_EQ(ir::ExprAs<ir::ConstantExpr>(constants[0])->data.shape(), (std::vector<int64_t>{8, 4}));
}

// A 1-D A (a vector times a matrix) keeps the widened int32 R.matmul.
TEST(OnnxQuantizedOps, VectorTimesMatrixKeepsTheWidenedMatmul) {
  B m(13);
  m.Input("a", TensorProto::UINT8, {8});
  m.Input("b", TensorProto::INT8, {8, 4});
  m.Node("MatMulInteger", {"a", "b"}, {"y"});
  m.Output("y");
  std::string bytes = m.Serialize();
  auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  std::string text = text::PrintModule(*mod);
  EXPECT_NE(text.find("R.matmul("), std::string::npos) << text;
  EXPECT_EQ(text.find("kiln.int8"), std::string::npos) << text;
}

// ORT's quantize_dynamic form of a linear layer, tokens symbolic:
// DynamicQuantizeLinear -> MatMulInteger (per-column weight zero points) ->
// Cast -> Mul by the scales. It imports with the dimension kept symbolic and
// the product in int32, one R.matmul_integer.
TEST(OnnxQuantizedOps, DynamicLinearKeepsSymbolicRows) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"batch", "seq", 8});
  m.Input("w", TensorProto::INT8, {8, 4});
  m.Input("wz", TensorProto::INT8, {4});
  m.Node("DynamicQuantizeLinear", {"x"}, {"q", "qs", "qz"});
  m.Node("MatMulInteger", {"q", "w", "qz", "wz"}, {"acc"});
  B::AttrInt(m.Node("Cast", {"acc"}, {"accf"}), "to", TensorProto::FLOAT);
  m.Node("Mul", {"accf", "qs"}, {"y"});
  m.Output("y");
  std::string bytes = m.Serialize();
  auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  std::string text = text::PrintModule(*mod);
  EXPECT_NE(text.find("R.matmul_integer(lv16, w, lv17, wz)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("R.Tensor((batch, seq, 4), dtype=\"float32\")"), std::string::npos) << text;
}

}  // namespace
}  // namespace onnx
}  // namespace kiln
