// The ONNX operators issue 7 §1 asks the importer to support, and so the
// operators whose backend node tests the conformance runner selects.
//
// Thread-safe: constant data.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_OPERATOR_LIST_H_
#define KILN_TESTS_ONNX_CONFORMANCE_OPERATOR_LIST_H_

#include <string>
#include <vector>

namespace kiln {
namespace conformance {

// op_type names of the default ONNX domain, in the order issue 7 lists them.
const std::vector<std::string>& Issue7Operators();

bool IsIssue7Operator(const std::string& op_type);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_OPERATOR_LIST_H_
