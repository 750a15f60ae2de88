// The declared shapes of a lifted subgraph's outputs (an If branch's, a Loop
// body's), held to when the program runs.
//
// A branch may compute its output from values whose dimensions are only
// known at run time while its graph declares the output's shape: without a
// check, a branch that gives another shape hands later operators (compiled
// for the declared one, or for the other branch's) a tensor they misread.
// Each constant dimension the graph declares is matched (R.match_cast with a
// message naming the node, the output, the axis, the declared and the given
// value); one the import already knows to differ is reported then.
#include "compiler/onnx/subgraph_outputs.h"

namespace kiln {
namespace onnx {

std::string SubgraphOwnerText(const ::onnx::GraphProto* outer, int index, const ::onnx::GraphProto& graph) {
  if (outer == nullptr || index < 0 || index >= outer->node_size()) return "";
  const ::onnx::NodeProto& node = outer->node(index);
  for (const auto& a : node.attribute()) {
    if (!a.has_g() || &a.g() != &graph) continue;
    std::string name = !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : std::string();
    return "ONNX " + node.op_type() + " node \"" + name + "\": " + a.name();
  }
  return "";  // a graph the importer made itself (if_tail.cc): nothing declared by the model
}

Result<ir::Expr> MatchDeclaredOutput(builder::BlockBuilder& bb, const std::string& owner, size_t index,
                                     const ::onnx::ValueInfoProto& declared, ir::Expr value) {
  if (owner.empty() || !declared.has_type() || !declared.type().has_tensor_type() ||
      !declared.type().tensor_type().has_shape()) {
    return value;
  }
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(value->struct_info);
  if (t == nullptr || t->ndim < 0 || !t->has_dtype) return value;
  const ::onnx::TensorShapeProto& shape = declared.type().tensor_type().shape();
  std::string what = owner + " output " + std::to_string(index) + " \"" + declared.name() + "\"";
  if (shape.dim_size() != t->ndim) {
    return InvalidArgument(what + " has rank " + std::to_string(t->ndim) + "; the graph declares rank " +
                           std::to_string(shape.dim_size()));
  }
  std::vector<ir::PrimExpr> dims;
  std::vector<std::string> messages(static_cast<size_t>(t->ndim));
  bool changed = !t->has_shape;
  for (int k = 0; k < t->ndim; ++k) {
    ir::PrimExpr have = t->has_shape ? t->shape[static_cast<size_t>(k)]
                                     : ir::PrimExpr(ir::MakeVar(IdentifierText(declared.name()) + "_dim" + std::to_string(k)));
    const ::onnx::TensorShapeProto::Dimension& d = shape.dim(k);
    if (!d.has_dim_value() || d.dim_value() < 0) {
      dims.push_back(have);
      continue;
    }
    std::optional<int64_t> c = ConstDim(have);
    if (c && *c != d.dim_value()) {
      return InvalidArgument(what + " has " + std::to_string(*c) + " at axis " + std::to_string(k) +
                             "; the graph declares " + std::to_string(d.dim_value()));
    }
    if (!c) {
      messages[static_cast<size_t>(k)] = what + " has {got} at axis " + std::to_string(k) + "; the graph declares {expected}";
      changed = true;
    }
    dims.push_back(ir::PrimExpr(d.dim_value()));
  }
  if (!changed) return value;
  KILN_ASSIGN_OR_RETURN(ir::RVar cast, bb.EmitMatchCast(value, ir::MakeTensorSInfo(dims, t->dtype),
                                                        IdentifierText(declared.name()) + "_declared", messages));
  return ir::Expr(cast);
}

}  // namespace onnx
}  // namespace kiln
