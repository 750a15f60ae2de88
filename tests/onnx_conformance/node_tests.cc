#include "tests/onnx_conformance/node_tests.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "tests/onnx_conformance/operator_list.h"
#include "tests/onnx_conformance/tensor_proto.h"

namespace kiln {
namespace conformance {

namespace fs = std::filesystem;

const char kSeveralOperators[] = "(several operators)";
const int kMinOpset = 1;
const int kMaxOpset = 21;

namespace {

// Why a graph input or output cannot be fed to or read from Kiln; empty if it can.
std::string ValueOutOfScope(const ::onnx::ValueInfoProto& value) {
  const ::onnx::TypeProto& type = value.type();
  if (type.has_sequence_type()) return "sequence values (out of scope: " + value.name() + ")";
  if (type.has_optional_type()) return "optional values (out of scope: " + value.name() + ")";
  if (type.has_map_type()) return "map values (out of scope: " + value.name() + ")";
  if (!type.has_tensor_type()) return "non-tensor value " + value.name() + " (out of scope)";
  int32_t elem = type.tensor_type().elem_type();
  if (elem == ::onnx::TensorProto::STRING) return "string tensors (out of scope: " + value.name() + ")";
  if (!DTypeFromOnnx(elem).ok()) {
    return "element type " + OnnxDataTypeName(elem) + " of " + value.name() + ": the Kiln runtime has no such dtype";
  }
  return "";
}

// Why a node needs training mode; empty if it does not.
std::string TrainingMode(const ::onnx::NodeProto& node) {
  if (node.op_type() == "Dropout" && node.input_size() >= 3 && !node.input(2).empty()) {
    return "training mode (Dropout's training_mode input)";
  }
  if (node.op_type() == "BatchNormalization") {
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "training_mode" && attr.i() != 0) return "training mode (BatchNormalization training_mode=1)";
    }
    if (node.output_size() > 1) return "training mode (BatchNormalization running statistics outputs)";
  }
  return "";
}

}  // namespace

bool IsAttributeLikeOperand(const std::string& op_type, int index) {
  static const std::map<std::string, std::set<int>> kOperands = {
      {"Reshape", {1}},       {"Expand", {1}},    {"ConstantOfShape", {0}}, {"Tile", {1}},
      {"Pad", {1, 2, 3}},     {"Slice", {1, 2, 3, 4}},  {"Split", {1}},     {"Squeeze", {1}},
      {"Unsqueeze", {1}},     {"ReduceSum", {1}}, {"ReduceMean", {1}},   {"ReduceMax", {1}},
      {"ReduceMin", {1}},     {"ReduceProd", {1}}, {"TopK", {1}},        {"Trilu", {1}},
      {"CumSum", {1}},        {"Range", {0, 1, 2}}, {"Resize", {1, 2, 3}},
  };
  auto it = kOperands.find(op_type);
  return it != kOperands.end() && it->second.count(index) > 0;
}

std::string DefaultTestDataRoot() {
  const char* env = std::getenv("KILN_ONNX_TESTDATA");
  return env && *env ? env : "/usr/share/libonnx-testdata/data/node";
}

Result<NodeTestCase> DescribeNodeTest(const std::string& dir, bool* selected) {
  *selected = false;
  NodeTestCase c;
  c.dir = dir;
  c.name = fs::path(dir).filename().string();
  const std::string model_path = (fs::path(dir) / "model.onnx").string();
  std::ifstream f(model_path, std::ios::binary);
  if (!f) return NotFound(model_path + ": cannot open");
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&f)) return DataLoss(model_path + ": not a serialized ModelProto");
  for (const auto& imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") c.opset = imp.version();
  }
  const ::onnx::GraphProto& graph = model.graph();
  bool all_known = graph.node_size() > 0;
  for (const auto& node : graph.node()) {
    c.op_types.push_back(node.op_type());
    bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!default_domain || !IsIssue7Operator(node.op_type())) all_known = false;
  }
  if (!all_known) return c;
  *selected = true;
  c.op = graph.node_size() == 1 ? c.op_types[0] : kSeveralOperators;

  if (c.opset < kMinOpset || c.opset > kMaxOpset) {
    c.out_of_scope = StrFormat("opset %lld (Kiln imports opsets %d to %d)", static_cast<long long>(c.opset),
                               kMinOpset, kMaxOpset);
  }
  for (const auto& node : graph.node()) {
    if (c.out_of_scope.empty()) c.out_of_scope = TrainingMode(node);
  }
  for (const auto& v : graph.input()) {
    if (c.out_of_scope.empty()) c.out_of_scope = ValueOutOfScope(v);
  }
  for (const auto& v : graph.output()) {
    if (c.out_of_scope.empty()) c.out_of_scope = ValueOutOfScope(v);
  }

  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& v : graph.input()) {
    if (initializers.count(v.name())) continue;
    bool operand = false;
    for (const auto& node : graph.node()) {
      for (int i = 0; i < node.input_size(); ++i) {
        if (node.input(i) == v.name() && IsAttributeLikeOperand(node.op_type(), i)) operand = true;
      }
    }
    c.inputs.push_back(v.name());
    c.bind_as_constant.push_back(operand);
  }

  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string n = entry.path().filename().string();
    if (entry.is_directory() && n.rfind("test_data_set_", 0) == 0) c.data_sets.push_back(entry.path().string());
  }
  std::sort(c.data_sets.begin(), c.data_sets.end());
  return c;
}

Result<std::vector<NodeTestCase>> DiscoverNodeTests(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return NotFound(root + ": no ONNX node tests here (install libonnx-testdata or set KILN_ONNX_TESTDATA)");
  }
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<NodeTestCase> cases;
  for (const std::string& d : dirs) {
    bool selected = false;
    KILN_ASSIGN_OR_RETURN(NodeTestCase c, DescribeNodeTest(d, &selected));
    if (selected) cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace conformance
}  // namespace kiln
