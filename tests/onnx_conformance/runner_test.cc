// The runner on node tests written here (an Add of two float vectors): a
// matching output passes, in process and in a forked child; a wrong one, a
// missing data set and a wrong output count fail with messages that say so.
//
// Every RunNodeTest here is isolated (forked), as in the suite: a process that
// has compiled in process may hold locks of threads that a later fork does not
// copy (runner.h), so in-process runs happen only inside a child of their own.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "onnx/onnx_pb.h"
#include "tests/onnx_conformance/runner.h"

namespace kiln {
namespace conformance {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

void WriteProto(const std::string& path, const google::protobuf::Message& m) {
  std::ofstream f(path, std::ios::binary);
  f << m.SerializeAsString();
}

TensorProto Vector(std::vector<float> values) {
  TensorProto t;
  t.set_data_type(TensorProto::FLOAT);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (float v : values) t.add_float_data(v);
  return t;
}

// root/test_add_here: y = a + b on float[3], one data set with `expected` as output_0.
NodeTestCase WriteAddTest(const std::string& root, std::vector<float> expected, int outputs = 1) {
  const std::string dir = root + "/test_add_here";
  fs::create_directories(dir + "/test_data_set_0");
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_op_type("Add");
  node->add_input("a");
  node->add_input("b");
  node->add_output("y");
  for (const char* name : {"a", "b", "y"}) {
    auto* v = std::string(name) == "y" ? g->add_output() : g->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  }
  WriteProto(dir + "/model.onnx", model);
  WriteProto(dir + "/test_data_set_0/input_0.pb", Vector({1, 2, 3}));
  WriteProto(dir + "/test_data_set_0/input_1.pb", Vector({10, 20, 30}));
  for (int i = 0; i < outputs; ++i) {
    WriteProto(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb", Vector(expected));
  }
  bool selected = false;
  Result<NodeTestCase> c = DescribeNodeTest(dir, &selected);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(selected);
  return c.ok() ? c.value() : NodeTestCase();
}

TensorProto Int64s(std::vector<int64_t> values) {
  TensorProto t;
  t.set_data_type(TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// root/test_reshape_here: y = Reshape(x: float[2, 3], shape: int64[2]) with
// shape = [3, 2] as input_1, an attribute-like operand.
NodeTestCase WriteReshapeTest(const std::string& root) {
  const std::string dir = root + "/test_reshape_here";
  fs::create_directories(dir + "/test_data_set_0");
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(14);
  auto* g = model.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_op_type("Reshape");
  node->add_input("x");
  node->add_input("shape");
  node->add_output("y");
  auto add_value = [](::onnx::ValueInfoProto* v, const char* name, int32_t type, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_value(g->add_input(), "x", TensorProto::FLOAT, {2, 3});
  add_value(g->add_input(), "shape", TensorProto::INT64, {2});
  add_value(g->add_output(), "y", TensorProto::FLOAT, {3, 2});
  WriteProto(dir + "/model.onnx", model);
  TensorProto x = Vector({1, 2, 3, 4, 5, 6});
  x.set_dims(0, 2);
  x.add_dims(3);
  WriteProto(dir + "/test_data_set_0/input_0.pb", x);
  WriteProto(dir + "/test_data_set_0/input_1.pb", Int64s({3, 2}));
  TensorProto y = Vector({1, 2, 3, 4, 5, 6});
  y.set_dims(0, 3);
  y.add_dims(2);
  WriteProto(dir + "/test_data_set_0/output_0.pb", y);
  bool selected = false;
  Result<NodeTestCase> c = DescribeNodeTest(dir, &selected);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(selected);
  return c.ok() ? c.value() : NodeTestCase();
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("kiln_runner_" + std::to_string(getpid()))).string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(RunnerTest, PassesInProcessAndIsolated) {
  NodeTestCase c = WriteAddTest(root_, {11, 22, 33});
  CaseResult r = RunNodeTest(c, RunOptions());
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.detail;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RunOptions options;
    options.isolate = false;
    _exit(RunNodeTest(c, options).outcome == Outcome::kPass ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "the in-process run did not pass";
}

TEST_F(RunnerTest, WrongOutputFailsNamingTheElement) {
  NodeTestCase c = WriteAddTest(root_, {11, 22, 34});
  CaseResult r = RunNodeTest(c, RunOptions());  // isolated: the message crosses the pipe
  EXPECT_EQ(r.outcome, Outcome::kFail);
  EXPECT_NE(r.detail.find("output 0: 1 of 3 elements differ"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("got 33, expected 34"), std::string::npos) << r.detail;
}

TEST_F(RunnerTest, OutputCountAndMissingDataFail) {
  NodeTestCase c = WriteAddTest(root_, {11, 22, 33}, /*outputs=*/2);
  RunOptions options;
  CaseResult r = RunNodeTest(c, options);
  EXPECT_EQ(r.outcome, Outcome::kFail);
  EXPECT_NE(r.detail.find("run: 1 results, the test expects 2"), std::string::npos) << r.detail;

  c.data_sets.clear();
  r = RunNodeTest(c, options);
  EXPECT_NE(r.detail.find("no test_data_set_N folder"), std::string::npos) << r.detail;

  c.out_of_scope = "sequence values";
  r = RunNodeTest(c, options);
  EXPECT_EQ(r.outcome, Outcome::kOutOfScope);
  EXPECT_EQ(r.detail, "sequence values");
}

TEST_F(RunnerTest, AttributeLikeOperandsAreBoundAsConstants) {
  NodeTestCase c = WriteReshapeTest(root_);
  ASSERT_EQ(c.inputs, (std::vector<std::string>{"x", "shape"}));
  ASSERT_EQ(c.bind_as_constant, (std::vector<bool>{false, true}));
  CaseResult r = RunNodeTest(c, RunOptions());
  EXPECT_EQ(r.outcome, Outcome::kPass) << r.detail;
}

TEST_F(RunnerTest, InputFileCountMustMatchTheGraph) {
  NodeTestCase c = WriteAddTest(root_, {11, 22, 33});
  fs::remove(c.dir + "/test_data_set_0/input_1.pb");
  CaseResult r = RunNodeTest(c, RunOptions());
  EXPECT_EQ(r.outcome, Outcome::kFail);
  EXPECT_NE(r.detail.find("test_data_set_0: 1 input files, the graph has 2 inputs"), std::string::npos) << r.detail;
}

TEST_F(RunnerTest, ImportErrorsDropTheModelPath) {
  NodeTestCase c = WriteAddTest(root_, {11, 22, 33});
  ::onnx::ModelProto model;
  {
    std::ifstream f(c.dir + "/model.onnx", std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&f));
  }
  model.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOperator");
  WriteProto(c.dir + "/model.onnx", model);
  CaseResult r = RunNodeTest(c, RunOptions());
  EXPECT_EQ(r.outcome, Outcome::kFail);
  EXPECT_EQ(r.detail.rfind("import: ", 0), 0u) << r.detail;
  EXPECT_EQ(r.detail.find(c.dir), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("NoSuchOperator"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace conformance
}  // namespace kiln
