// The shapes an If branch or a Loop body declares for its outputs, held to:
// a constant dimension the subgraph computes only at run time is checked
// when it runs (the message names the node, the subgraph, the output, the
// axis, the declared and the given value); one known at import time to
// differ, or another rank, is an import error with the same names.
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

// Declares the shape `dims` for output `i` of `g`.
void DeclareOutputShape(B* g, int i, const std::vector<int64_t>& dims) {
  auto* shape = g->graph().mutable_output(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// x: float[n]; the then branch gives relu(x), declared float[3]; the else
// branch gives -x with no declared shape.
B IfWithDeclaredThenShape() {
  B m(16);
  m.Input("x", TensorProto::FLOAT, {"n"});
  m.Input("c", TensorProto::BOOL, {});
  B then_g;
  then_g.Node("Relu", {"x"}, {"t"});
  then_g.Output("t");
  DeclareOutputShape(&then_g, 0, {3});
  B else_g;
  else_g.Node("Neg", {"x"}, {"e"});
  else_g.Output("e");
  auto* n = m.Node("If", {"c"}, {"y"}, "choose");
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
  m.Output("y");
  return m;
}

TEST(OnnxSubgraphOutputChecksE2E, IfBranchGivesAnotherShapeThanItDeclares) {
  B m = IfWithDeclaredThenShape();
  EXPECT_EQ(RunError(m, {F32({3}, Zeros(3)), Bool(true)}), "");
  EXPECT_EQ(RunError(m, {F32({4}, Zeros(4)), Bool(false)}), "");  // the else branch declares nothing
  std::string error = RunError(m, {F32({4}, Zeros(4)), Bool(true)});
  EXPECT_NE(error.find("ONNX If node \"choose\": then_branch output 0 \"t\" has 4 at axis 0; the graph declares 3"),
            std::string::npos)
      << error;
}

TEST(OnnxSubgraphOutputChecksE2E, IfBranchKnownToDisagreeIsAnImportError) {
  B m(16);
  m.Input("c", TensorProto::BOOL, {});
  B then_g;
  then_g.Initializer("k", {2, 4}, std::vector<float>(8, 1.0f));
  then_g.Node("Relu", {"k"}, {"t"});
  then_g.Output("t");
  DeclareOutputShape(&then_g, 0, {2, 3});
  B else_g;
  else_g.Initializer("j", {2, 3}, std::vector<float>(6, 1.0f));
  else_g.Node("Neg", {"j"}, {"e"});
  else_g.Output("e");
  auto* n = m.Node("If", {"c"}, {"y"}, "choose");
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
  m.Output("y");
  std::string error = ImportError(m);
  EXPECT_NE(error.find("ONNX If node \"choose\": then_branch output 0 \"t\" has 4 at axis 1; the graph declares 3"),
            std::string::npos)
      << error;
  DeclareOutputShape(&then_g, 0, {8});
  B::AttrGraph(m.graph().mutable_node(0), "then_branch", then_g);
  m.graph().mutable_node(0)->mutable_attribute()->DeleteSubrange(0, 1);  // the first then_branch
  error = ImportError(m);
  EXPECT_NE(error.find("ONNX If node \"choose\": then_branch output 0 \"t\" has rank 2; the graph declares rank 1"),
            std::string::npos)
      << error;
}

// A loop of M iterations over a float[3] state (s + 1) whose body also scans
// out relu(v) of the enclosing v: float[k], declared float[2].
TEST(OnnxSubgraphOutputChecksE2E, LoopBodyGivesAnotherShapeThanItDeclares) {
  B m(16);
  m.Input("M", TensorProto::INT64, {});
  m.Input("x", TensorProto::FLOAT, {3});
  m.Input("v", TensorProto::FLOAT, {"k"});
  B body;
  body.Input("i", TensorProto::INT64, {});
  body.Input("c_in", TensorProto::BOOL, {});
  body.Input("s", TensorProto::FLOAT, {3});
  body.Initializer("one", {1}, {1});
  body.Node("Add", {"s", "one"}, {"s_out"});
  body.Node("Identity", {"c_in"}, {"c_out"});
  body.Node("Relu", {"v"}, {"r"});
  body.Output("c_out", TensorProto::BOOL);
  body.Output("s_out");
  body.Output("r");
  DeclareOutputShape(&body, 2, {2});
  auto* n = m.Node("Loop", {"M", "", "x"}, {"final", "trace"}, "count");
  B::AttrGraph(n, "body", body);
  m.Output("final");
  m.Output("trace");
  Tensor trips = I64({}, {2});
  EXPECT_EQ(RunError(m, {trips, F32({3}, Zeros(3)), F32({2}, Zeros(2))}), "");
  std::string error = RunError(m, {trips, F32({3}, Zeros(3)), F32({5}, Zeros(5))});
  EXPECT_NE(error.find("ONNX Loop node \"count\": body output 2 \"r\" has 5 at axis 0; the graph declares 2"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
