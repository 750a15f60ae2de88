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
  NodeTestCase c;
  c.name = "test_add_here";
  c.dir = dir;
  c.op = "Add";
  c.op_types = {"Add"};
  c.data_sets = {dir + "/test_data_set_0"};
  return c;
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
