// Unit tests of the conformance runner's data side: TensorProto reading,
// output comparison, the expectation file, and test discovery and
// classification on node tests written here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx/onnx_pb.h"
#include "tests/onnx_conformance/compare.h"
#include "tests/onnx_conformance/expected_failures.h"
#include "tests/onnx_conformance/node_tests.h"
#include "tests/onnx_conformance/report.h"
#include "tests/onnx_conformance/tensor_proto.h"

namespace kiln {
namespace conformance {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

Tensor Floats(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor Ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Tensor t = Tensor::Empty(shape, DType::Int64()).value();
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

// A fresh directory under the test temp dir.
std::string TempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kiln_conformance_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void WriteString(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

TEST(TensorProtoTest, TypedFloatField) {
  TensorProto p;
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(2);
  p.add_float_data(1.5f);
  p.add_float_data(-2.0f);
  Tensor t = TensorFromProto(p, "x").value();
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(t.data<float>()[1], -2.0f);
}

TEST(TensorProtoTest, RawInt64AndBoolAndScalar) {
  TensorProto p;
  p.set_data_type(TensorProto::INT64);
  int64_t v[3] = {7, -1, 1LL << 40};
  p.add_dims(3);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v), sizeof v));
  Tensor t = TensorFromProto(p, "x").value();
  EXPECT_EQ(t.data<int64_t>()[2], 1LL << 40);

  TensorProto b;
  b.set_data_type(TensorProto::BOOL);
  b.add_dims(2);
  b.add_int32_data(5);
  b.add_int32_data(0);
  Tensor tb = TensorFromProto(b, "b").value();
  EXPECT_EQ(tb.dtype(), DType::Bool());
  EXPECT_EQ(tb.data<uint8_t>()[0], 1);
  EXPECT_EQ(tb.data<uint8_t>()[1], 0);

  TensorProto s;  // no dims: a scalar with one value
  s.set_data_type(TensorProto::DOUBLE);
  s.add_double_data(3.25);
  Tensor ts = TensorFromProto(s, "s").value();
  EXPECT_EQ(ts.ndim(), 0);
  EXPECT_EQ(ts.data<double>()[0], 3.25);
}

TEST(TensorProtoTest, ErrorsNameTheTensor) {
  TensorProto p;
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(3);
  p.set_raw_data(std::string(8, '\0'));
  Status st = TensorFromProto(p, "in0").status();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("in0: raw_data holds 8 bytes, dims need 12"), std::string::npos) << st.message();

  p.clear_raw_data();
  p.add_float_data(1);
  st = TensorFromProto(p, "in1").status();
  EXPECT_NE(st.message().find("in1: TensorProto has 1 values, dims need 3"), std::string::npos) << st.message();

  TensorProto u;
  u.set_data_type(TensorProto::UINT16);
  st = TensorFromProto(u, "in2").status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("element type UINT16 has no Kiln runtime dtype"), std::string::npos) << st.message();

  TensorProto neg;
  neg.set_data_type(TensorProto::FLOAT);
  neg.add_dims(-1);
  st = TensorFromProto(neg, "in3").status();
  EXPECT_NE(st.message().find("in3: bad dims"), std::string::npos) << st.message();

  TensorProto ext;
  ext.set_data_type(TensorProto::FLOAT);
  ext.set_data_location(TensorProto::EXTERNAL);
  st = TensorFromProto(ext, "in4").status();
  EXPECT_NE(st.message().find("in4: external data"), std::string::npos) << st.message();
}

TEST(TensorProtoTest, Files) {
  std::string dir = TempDir("tp");
  EXPECT_EQ(ReadTensorProtoFile(dir + "/none.pb").status().code(), StatusCode::kNotFound);
  WriteString(dir + "/bad.pb", "\xff\xff\xff\xff garbage");
  Status st = ReadTensorProtoFile(dir + "/bad.pb").status();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("not a serialized TensorProto"), std::string::npos) << st.message();
  TensorProto p;
  p.set_data_type(TensorProto::INT32);
  p.add_dims(1);
  p.add_int32_data(42);
  WriteString(dir + "/ok.pb", p.SerializeAsString());
  EXPECT_EQ(ReadTensorProtoFile(dir + "/ok.pb").value().data<int32_t>()[0], 42);
  fs::remove_all(dir);
}

TEST(CompareTest, FloatTolerance) {
  Tolerance tol;  // rtol 1e-3, atol 1e-5
  Tensor e = Floats({3}, {1000.0f, 0.0f, -1.0f});
  EXPECT_TRUE(CompareTensors(Floats({3}, {1000.9f, 0.000009f, -1.0009f}), e, tol, "y").ok());
  Status st = CompareTensors(Floats({3}, {1001.5f, 0.0f, -1.0f}), e, tol, "output 0");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("output 0: 1 of 3 elements differ"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("first at flat index 0: got 1001.5, expected 1000"), std::string::npos) << st.message();
  EXPECT_FALSE(CompareTensors(Floats({3}, {1000.0f, 2e-5f, -1.0f}), e, tol, "y").ok());
}

TEST(CompareTest, NanAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tolerance tol;
  EXPECT_TRUE(CompareTensors(Floats({2}, {nan, inf}), Floats({2}, {nan, inf}), tol, "y").ok());
  EXPECT_FALSE(CompareTensors(Floats({2}, {0.0f, inf}), Floats({2}, {nan, inf}), tol, "y").ok());
  EXPECT_FALSE(CompareTensors(Floats({2}, {nan, -inf}), Floats({2}, {nan, inf}), tol, "y").ok());
}

TEST(CompareTest, ShapeDtypeAndIntegers) {
  Tolerance tol;
  Status st = CompareTensors(Floats({2, 1}, {1, 2}), Floats({1, 2}, {1, 2}), tol, "output 1");
  EXPECT_NE(st.message().find("output 1: shape [2,1], expected [1,2]"), std::string::npos) << st.message();
  st = CompareTensors(Ints({2}, {1, 2}), Floats({2}, {1, 2}), tol, "output 0");
  EXPECT_NE(st.message().find("output 0: dtype"), std::string::npos) << st.message();
  EXPECT_TRUE(CompareTensors(Ints({2}, {1, 2}), Ints({2}, {1, 2}), tol, "y").ok());
  st = CompareTensors(Ints({2}, {1, 3}), Ints({2}, {1, 2}), tol, "y");
  EXPECT_NE(st.message().find("exact for integers"), std::string::npos) << st.message();
  EXPECT_FALSE(CompareTensors(Tensor(), Ints({2}, {1, 2}), tol, "y").ok());
}

TEST(CompareTest, HalfToFloat) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
}

TEST(ExpectedFailuresTest, ParsesAndRejects) {
  auto ok = ParseExpectedFailures("# comment\n\ntest_a  reason one\n  test_b\twhy b  \n", "f.txt");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok.value().size(), 2u);
  EXPECT_EQ(ok.value().at("test_b"), "why b");
  Status st = ParseExpectedFailures("test_a\n", "f.txt").status();
  EXPECT_NE(st.message().find("f.txt:1: test_a has no reason"), std::string::npos) << st.message();
  st = ParseExpectedFailures("# x\nadd broken\n", "f.txt").status();
  EXPECT_NE(st.message().find("f.txt:2: 'add' is not a node test name"), std::string::npos) << st.message();
  st = ParseExpectedFailures("test_a r\ntest_a r2\n", "f.txt").status();
  EXPECT_NE(st.message().find("f.txt:2: test_a is listed twice"), std::string::npos) << st.message();
  EXPECT_EQ(ReadExpectedFailures("/nonexistent/expected.txt").status().code(), StatusCode::kNotFound);
}

// Writes root/name/model.onnx with one node and the given input/output types.
void WriteNodeTest(const std::string& root, const std::string& name, const std::string& op_type,
                   int32_t elem_type, bool sequence_input = false, int num_nodes = 1) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_version(13);
  auto* graph = model.mutable_graph();
  for (int i = 0; i < num_nodes; ++i) {
    auto* node = graph->add_node();
    node->set_op_type(op_type);
    node->add_input(i == 0 ? "x" : "t" + std::to_string(i));
    node->add_output(i + 1 == num_nodes ? "y" : "t" + std::to_string(i + 1));
  }
  auto* in = graph->add_input();
  in->set_name("x");
  if (sequence_input) {
    in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem_type);
  } else {
    in->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  }
  auto* out = graph->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  fs::create_directories(fs::path(root) / name / "test_data_set_0");
  WriteString((fs::path(root) / name / "model.onnx").string(), model.SerializeAsString());
}

TEST(NodeTestsTest, SelectsAndClassifies) {
  std::string root = TempDir("discover");
  WriteNodeTest(root, "test_relu", "Relu", TensorProto::FLOAT);
  WriteNodeTest(root, "test_det", "Det", TensorProto::FLOAT);  // not an issue-7 operator
  WriteNodeTest(root, "test_abs_u16", "Abs", TensorProto::UINT16);
  WriteNodeTest(root, "test_identity_str", "Identity", TensorProto::STRING);
  WriteNodeTest(root, "test_identity_seq", "Identity", TensorProto::FLOAT, /*sequence_input=*/true);
  WriteNodeTest(root, "test_neg_twice", "Neg", TensorProto::FLOAT, false, /*num_nodes=*/2);
  Result<std::vector<NodeTestCase>> cases = DiscoverNodeTests(root);
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases.value().size(), 5u);  // sorted by name; test_det left out
  const auto& c = cases.value();
  EXPECT_EQ(c[0].name, "test_abs_u16");
  EXPECT_NE(c[0].out_of_scope.find("element type UINT16 of x: the Kiln runtime has no such dtype"), std::string::npos)
      << c[0].out_of_scope;
  EXPECT_EQ(c[1].name, "test_identity_seq");
  EXPECT_NE(c[1].out_of_scope.find("sequence values"), std::string::npos) << c[1].out_of_scope;
  EXPECT_NE(c[2].out_of_scope.find("string tensors"), std::string::npos) << c[2].out_of_scope;
  EXPECT_EQ(c[3].name, "test_neg_twice");
  EXPECT_EQ(c[3].op, kSeveralOperators);
  EXPECT_EQ(c[4].name, "test_relu");
  EXPECT_EQ(c[4].op, "Relu");
  EXPECT_EQ(c[4].opset, 13);
  EXPECT_TRUE(c[4].out_of_scope.empty());
  EXPECT_EQ(c[4].data_sets.size(), 1u);
  EXPECT_EQ(c[4].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(c[4].bind_as_constant, (std::vector<bool>{false}));
  fs::remove_all(root);
}

TEST(NodeTestsTest, TrainingModeIsOutOfScope) {
  std::string root = TempDir("training");
  WriteNodeTest(root, "test_dropout_train", "Dropout", TensorProto::FLOAT);
  ::onnx::ModelProto model;
  std::string path = root + "/test_dropout_train/model.onnx";
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&f));
  }
  auto* node = model.mutable_graph()->mutable_node(0);
  node->add_input("ratio");
  node->add_input("training_mode");
  WriteString(path, model.SerializeAsString());
  bool selected = false;
  Result<NodeTestCase> c = DescribeNodeTest(root + "/test_dropout_train", &selected);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(selected);
  EXPECT_NE(c.value().out_of_scope.find("training mode (Dropout's training_mode input)"), std::string::npos);

  WriteNodeTest(root, "test_bn_train", "BatchNormalization", TensorProto::FLOAT);
  path = root + "/test_bn_train/model.onnx";
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&f));
  }
  auto* attr = model.mutable_graph()->mutable_node(0)->add_attribute();
  attr->set_name("training_mode");
  attr->set_type(::onnx::AttributeProto::INT);
  attr->set_i(1);
  WriteString(path, model.SerializeAsString());
  c = DescribeNodeTest(root + "/test_bn_train", &selected);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c.value().out_of_scope.find("BatchNormalization training_mode=1"), std::string::npos);
  fs::remove_all(root);
}

// Opsets 1 to 21 of the default domain are in scope (issue 20 §1), as ONNX
// Runtime accepts them; a later one is not.
TEST(NodeTestsTest, OpsetOutsideOneTo21IsOutOfScope) {
  std::string root = TempDir("opset");
  WriteNodeTest(root, "test_elu_old", "Elu", TensorProto::FLOAT);
  ::onnx::ModelProto model;
  std::string path = root + "/test_elu_old/model.onnx";
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&f));
  }
  model.mutable_opset_import(0)->set_version(1);
  WriteString(path, model.SerializeAsString());
  bool selected = false;
  Result<NodeTestCase> c = DescribeNodeTest(root + "/test_elu_old", &selected);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(selected);
  EXPECT_EQ(c.value().out_of_scope, "");
  model.mutable_opset_import(0)->set_version(22);
  WriteString(path, model.SerializeAsString());
  c = DescribeNodeTest(root + "/test_elu_old", &selected);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(selected);
  EXPECT_EQ(c.value().out_of_scope, "opset 22 (Kiln imports opsets 1 to 21)");
  fs::remove_all(root);
}

TEST(NodeTestsTest, AttributeLikeOperands) {
  EXPECT_TRUE(IsAttributeLikeOperand("Reshape", 1));
  EXPECT_FALSE(IsAttributeLikeOperand("Reshape", 0));
  EXPECT_TRUE(IsAttributeLikeOperand("Slice", 4));
  EXPECT_TRUE(IsAttributeLikeOperand("Range", 0));
  EXPECT_FALSE(IsAttributeLikeOperand("Clip", 1));  // min/max stay run-time values
  EXPECT_FALSE(IsAttributeLikeOperand("Add", 1));
}

TEST(NodeTestsTest, Errors) {
  Status st = DiscoverNodeTests("/nonexistent/kiln/node").status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("install libonnx-testdata or set KILN_ONNX_TESTDATA"), std::string::npos);
  std::string root = TempDir("bad");
  fs::create_directories(root + "/test_bad");
  WriteString(root + "/test_bad/model.onnx", "\xff\xff\xff not a model");
  st = DiscoverNodeTests(root).status();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("model.onnx: not a serialized ModelProto"), std::string::npos) << st.message();
  bool selected = true;
  EXPECT_EQ(DescribeNodeTest(root + "/missing", &selected).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(selected);
  fs::remove_all(root);
}

TEST(ReportTest, TableAndExpectedFailures) {
  NodeTestCase relu;
  relu.name = "test_relu";
  relu.op = "Relu";
  NodeTestCase abs = relu;
  abs.name = "test_abs";
  abs.op = "Abs";
  NodeTestCase seq = relu;
  seq.name = "test_seq";
  seq.op = "Identity";
  CaseResult pass{Outcome::kPass, "", 0.1};
  CaseResult fail{Outcome::kFail, "compile: a | b\nmore", 0.1};
  CaseResult out{Outcome::kOutOfScope, "sequence values", 0};
  std::string md = MarkdownReport({{relu, pass}, {abs, fail}, {seq, out}}, "# title\n");
  EXPECT_EQ(md.rfind("# title\n", 0), 0u);
  EXPECT_NE(md.find("| Relu | 1 | 1 | 0 | 0 | all pass |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Abs | 1 | 0 | 1 | 0 | failing |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Identity | 1 | 0 | 0 | 1 | out of scope |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Gelu | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| test_abs | Abs | compile: a \\| b more |"), std::string::npos) << md;
  const std::string expected = ExpectedFailuresText({{relu, pass}, {abs, fail}});
  EXPECT_EQ(expected.rfind("# ONNX backend node tests", 0), 0u) << expected;
  EXPECT_NE(expected.find("\ntest_abs  compile: a | b more\n"), std::string::npos) << expected;
  EXPECT_EQ(expected.find("test_relu"), std::string::npos) << expected;
  Result<ExpectedFailures> parsed = ParseExpectedFailures(expected, "generated");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value().size(), 1u);
  EXPECT_EQ(OneLine("import failed:\n  node 0:  bad\n", 100), "import failed: node 0: bad");
  EXPECT_EQ(OneLine("abcdefghij", 8), "abcde...");
}

}  // namespace
}  // namespace conformance
}  // namespace kiln
