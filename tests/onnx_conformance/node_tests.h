// Finding and classifying the ONNX backend node tests (Debian's libonnx-testdata:
// <root>/test_*/model.onnx and test_data_set_N/{input,output}_K.pb).
//
// A test is selected when every node of its graph is an operator of issue 7
// §1 (operator_list.h) in the default domain. The operator a test counts
// under comes from the graph, never from the directory name: the op_type of
// its only node, or kSeveralOperators for graphs of several nodes (the
// "_expanded" function bodies and a few others).
//
// A selected test is out of scope, with a reason, when it needs what issue 7
// leaves out: a default-domain opset outside 1..21 (kMinOpset, kMaxOpset, the
// opsets issue 20 asks for), training mode (Dropout's training_mode input, BatchNormalization
// training_mode=1), sequence/optional/map or string values, or element types
// the Kiln runtime has no dtype for.
//
// Attribute-like operands: inputs that ONNX moved from attributes to inputs
// in later opsets (Reshape's shape, Slice's starts/ends/axes/steps, Squeeze's
// axes, TopK's K, Pad's pads, Resize's scales/sizes, Range's bounds, ...).
// Issue 7 computes shapes at compile time, so the importer needs them as
// constants, as exported models hold them. A node test feeds them as graph
// inputs; the runner binds those inputs as constants from the data set
// (ImportOptions::input_values) and passes the others as arguments.
//
// Failures: kNotFound for a missing root or model; kDataLoss for a model that
// does not parse. Thread-safe: no state.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_NODE_TESTS_H_
#define KILN_TESTS_ONNX_CONFORMANCE_NODE_TESTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace conformance {

// The operator name under which graphs of several nodes are counted.
extern const char kSeveralOperators[];
// The opsets of the default domain the importer reads (issue 20 §1: 1 to 21).
extern const int kMinOpset;
extern const int kMaxOpset;

struct NodeTestCase {
  std::string name;                    // directory name: "test_add_bcast"
  std::string dir;                     // path of that directory
  std::vector<std::string> op_types;   // the graph's nodes, in order
  std::string op;                      // what the test counts under (see above)
  int64_t opset = 0;                   // the default domain's opset_import version
  std::vector<std::string> data_sets;  // paths of test_data_set_N, in order
  std::vector<std::string> inputs;     // graph inputs that are not initializers, in order
  std::vector<bool> bind_as_constant;  // per input: an attribute-like operand (see above)
  std::string out_of_scope;            // empty when in scope; otherwise why not
};

// Whether input `index` of an `op_type` node is an attribute-like operand.
bool IsAttributeLikeOperand(const std::string& op_type, int index);

// $KILN_ONNX_TESTDATA when set, else /usr/share/libonnx-testdata/data/node.
std::string DefaultTestDataRoot();

// Reads dir/model.onnx and classifies it. `selected` is false (and the rest
// partly filled) when the graph uses an operator outside issue 7's list.
Result<NodeTestCase> DescribeNodeTest(const std::string& dir, bool* selected);

// Every selected test under `root`, sorted by name.
Result<std::vector<NodeTestCase>> DiscoverNodeTests(const std::string& root);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_NODE_TESTS_H_
