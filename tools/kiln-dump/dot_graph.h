// kiln-dump --dot: the dataflow graph of one Relax function as Graphviz text.
//
// Nodes: the function's parameters (ellipses), one box per binding ("lv1 =
// matmul" with its struct info, e.g. R.Tensor((n, 128), dtype="float32")),
// constants used by a binding (small grey boxes, one per use) and the
// function's result. Edges: from each variable or constant to every binding
// whose value uses it. Bindings inside an If branch are not drawn; the If is
// one node that uses what its condition and branches use.
//
// From a .relax file (or an .onnx model, imported by driver::LoadModuleFile):
// parsed, struct info inferred (so shapes show), and with
// `lower` run through the compiler's IR passes first (driver::LowerModule:
// after fusion the nodes are fused kernels called with call_tir). Errors:
// those of the parser / passes, and kNotFound naming the Relax functions the
// module has when `function` is not one of them.
//
// Thread-safe: no state.
#ifndef KILN_TOOLS_KILN_DUMP_DOT_GRAPH_H_
#define KILN_TOOLS_KILN_DUMP_DOT_GRAPH_H_

#include <string>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace tools {

// The graph of `function` in an already prepared module.
Result<std::string> FunctionToDot(const ir::IRModule& module, const std::string& function);

// Reads `path` (.relax or .onnx), infers struct info (or lowers, with
// `lower`) and draws `function`.
Result<std::string> RelaxFileToDot(const std::string& path, const std::string& function, bool lower);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_DUMP_DOT_GRAPH_H_
