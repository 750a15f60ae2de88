// Run-time matches of dimensions an operator needs equal (equal_dims.h).
#include "compiler/onnx/equal_dims.h"

#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace onnx {

Result<ir::Expr> MatchEqualDims(NodeCtx& ctx, ir::Expr value, size_t input, const std::vector<EqualDim>& dims) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(value->struct_info);
  if (!t || !t->has_shape || !t->has_dtype) return value;
  std::vector<ir::PrimExpr> shape = t->shape;
  std::vector<std::string> messages(shape.size());
  bool changed = false;
  for (const EqualDim& d : dims) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* w, ctx.Info(d.want_input));
    if (d.axis >= shape.size() || !w->has_shape || d.want_axis >= w->shape.size()) continue;
    const ir::PrimExpr& want = w->shape[d.want_axis];
    ir::PrimExpr& have = shape[d.axis];
    if (relax::CompareDims(have, want) != relax::DimRelation::kUnknown) continue;
    messages[d.axis] = RunTimeNode(ctx) + ": " + InputText(ctx, input, true) + " has " + relax::DimString(have) +
                       " = {got} at axis " + std::to_string(d.axis) + "; it must equal axis " + std::to_string(d.want_axis) +
                       " of " + InputText(ctx, d.want_input, true) + ": " + ExpectedText(want);
    have = want;
    changed = true;
  }
  if (!changed) return value;
  KILN_ASSIGN_OR_RETURN(ir::RVar cast, ctx.importer()->bb().EmitMatchCast(
                                           value, ir::MakeTensorSInfo(shape, t->dtype),
                                           IdentifierText(ctx.node().input(static_cast<int>(input))) + "_matched", messages));
  return ir::Expr(cast);
}

}  // namespace onnx
}  // namespace kiln
