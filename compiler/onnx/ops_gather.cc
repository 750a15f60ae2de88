// GatherND: R.gather_nd, whose layout is ONNX's (index tuples on the last
// axis of the indices, negative entries counted from the end of their axis).
#include <algorithm>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

Status ConvertGatherND(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ii, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(int64_t batch, ctx.AttrInt("batch_dims", 0));
  if (ii->ndim < 1) return ctx.Invalid("indices must have rank 1 or more");
  auto k = ConstDim(ii->shape.back());
  if (!k) return ctx.Unsupported("indices whose last dimension (the index tuple's length) is symbolic");
  if (batch < 0 || batch >= std::min(xi->ndim, ii->ndim) || *k < 1 || batch + *k > xi->ndim) {
    return ctx.Invalid("batch_dims " + std::to_string(batch) + " and index tuples of length " + std::to_string(*k) +
                       " do not fit data of rank " + std::to_string(xi->ndim) + " and indices of rank " +
                       std::to_string(ii->ndim));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr ind, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("gather_nd", {x, ind}, {{"batch_dims", AttrI(batch)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

}  // namespace

void AddGatherConverters(ConverterTable* t) { (*t)["GatherND"] = ConvertGatherND; }

}  // namespace onnx
}  // namespace kiln
