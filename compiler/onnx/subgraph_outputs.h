// A lifted subgraph's declared output shapes, held to (subgraph_outputs.cc).
#ifndef KILN_COMPILER_ONNX_SUBGRAPH_OUTPUTS_H_
#define KILN_COMPILER_ONNX_SUBGRAPH_OUTPUTS_H_

#include <string>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {

// `ONNX If node "n": then_branch` when `graph` is an attribute of node
// `index` of `outer`, else "" (a graph the importer made: nothing checked).
std::string SubgraphOwnerText(const ::onnx::GraphProto* outer, int index, const ::onnx::GraphProto& graph);

// `value`, output `index` of the subgraph `owner` names, declared as
// `declared`: matched to the constant dimensions declared (R.match_cast
// whose message names the owner, the output, the axis, the declared and the
// given value). A dimension known to differ, or another rank, is an error.
Result<ir::Expr> MatchDeclaredOutput(builder::BlockBuilder& bb, const std::string& owner, size_t index,
                                     const ::onnx::ValueInfoProto& declared, ir::Expr value);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_SUBGRAPH_OUTPUTS_H_
