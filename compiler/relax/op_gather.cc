// Gathers by an index tensor: relax.take(x, indices, axis=None, mode="fast")
// and relax.gather_elements(x, indices, axis=0).
//
// take: out = x.shape[:axis] + indices.shape + x.shape[axis + 1:], each
// element read at the index found in `indices` (int32 or int64). mode "fast"
// (TVM's default) trusts the indices but, like numpy, counts negative ones
// from the end; "wrap" takes them modulo the dimension; "clip" clamps them
// into [0, d - 1]. axis=None requires a 1-D x, as in TVM.
// gather_elements: out has the shape of `indices` (same rank as x) and
// out[i] = x[i with i[axis] replaced by indices[i]] (negative ones from the end).
// gather_nd(x, indices, batch_dims=0), ONNX's GatherND: the last axis of
// `indices` (static length k) holds index tuples into x's axes b .. b+k-1
// (b = batch_dims; the first b axes of x and indices are shared);
// out = indices.shape[:-1] + x.shape[b + k:], negative indices from the end.
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;

Status CheckIndexDType(const ir::CallExpr& call, const ir::TensorSInfo* ind) {
  if (ind->has_dtype && ind->dtype.code != kDLInt && ind->dtype.code != kDLUInt) {
    return InvalidArgument(OpPrefix(call) + "indices must be an integer tensor, got " + DTypeToString(ind->dtype));
  }
  return Status::Ok();
}

// The index value as int64, negative values counted from the end of `dim`.
PrimExpr NormalizeIndex(const PrimExpr& v, const PrimExpr& dim, const std::string& mode) {
  PrimExpr i = ToInt64(v);
  PrimExpr zero(int64_t{0});
  if (mode == "wrap") return ir::MakeBinary(ir::TirKind::kFloorMod, i, dim);
  if (mode == "clip") {
    return ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, i, zero), dim - PrimExpr(int64_t{1}));
  }
  return PrimExpr(std::make_shared<ir::SelectNode>(ir::MakeBinary(ir::TirKind::kLT, i, zero), i + dim, i));
}

Result<int> TakeAxis(const ir::CallExpr& call, int ndim) {
  KILN_ASSIGN_OR_RETURN(auto axis, GetInt(call, "axis", 2));
  if (!axis) {
    if (ndim != 1) {
      return InvalidArgument(OpPrefix(call) + "axis=None needs a 1-D tensor, got rank " + std::to_string(ndim));
    }
    return 0;
  }
  return NormalizeAxis(call, *axis, ndim);
}

Result<std::string> TakeMode(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(std::string mode, GetString(call, "mode", "fast"));
  if (mode != "fast" && mode != "wrap" && mode != "clip") {
    return InvalidArgument(OpPrefix(call) + "mode must be \"fast\", \"wrap\" or \"clip\", got \"" + mode + "\"");
  }
  return mode;
}

Result<ir::StructInfo> InferTake(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 2, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, TensorArg(call, 1));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, ind));
  KILN_RETURN_IF_ERROR(TakeMode(call).status());
  if (x->ndim < 0 || ind->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  KILN_ASSIGN_OR_RETURN(int axis, TakeAxis(call, x->ndim));
  int out_ndim = x->ndim - 1 + ind->ndim;
  if (!x->has_shape || !ind->has_shape) return ir::MakeTensorSInfoNdim(out_ndim, x->dtype);
  std::vector<PrimExpr> out(x->shape.begin(), x->shape.begin() + axis);
  out.insert(out.end(), ind->shape.begin(), ind->shape.end());
  out.insert(out.end(), x->shape.begin() + axis + 1, x->shape.end());
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizeTake(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, KnownTensorArg(call, 1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(int axis, TakeAxis(call, x->ndim));
  KILN_ASSIGN_OR_RETURN(std::string mode, TakeMode(call));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor indices = b.Input("indices", BindableShape(ind->shape, "indices"), ind->dtype);
  te::Tensor r = b.Compute("T_take", BindableShape(out->shape, "T_take"), out->dtype, [&](const te::Indices& i) {
    te::Indices ii(i.begin() + axis, i.begin() + axis + indices.ndim());
    te::Indices idx(i.begin(), i.begin() + axis);
    idx.push_back(NormalizeIndex(indices(ii), a.shape()[axis], mode));
    idx.insert(idx.end(), i.begin() + axis + indices.ndim(), i.end());
    return a(idx);
  });
  return b.Build({r});
}

Result<ir::StructInfo> InferGatherElements(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 2, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, TensorArg(call, 1));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, ind));
  if (x->ndim >= 0 && ind->ndim >= 0 && x->ndim != ind->ndim) {
    return InvalidArgument(OpPrefix(call) + "x and indices must have the same rank, got " + std::to_string(x->ndim) +
                           " and " + std::to_string(ind->ndim));
  }
  int ndim = x->ndim >= 0 ? x->ndim : ind->ndim;
  if (ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(auto axis, GetInt(call, "axis", 2));
    KILN_RETURN_IF_ERROR(NormalizeAxis(call, axis ? *axis : 0, ndim).status());
  }
  if (!ind->has_shape) return ir::MakeTensorSInfoNdim(ndim, x->dtype);
  return ir::MakeTensorSInfo(ind->shape, x->dtype);
}

Result<ir::PrimFunc> LegalizeGatherElements(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, KnownTensorArg(call, 1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(auto axis_attr, GetInt(call, "axis", 2));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr ? *axis_attr : 0, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor indices = b.Input("indices", BindableShape(ind->shape, "indices"), ind->dtype);
  te::Tensor r = b.Compute("T_gather_elements", BindableShape(out->shape, "T_gather_elements"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx = i;
    idx[axis] = NormalizeIndex(indices(i), a.shape()[axis], "fast");
    return a(idx);
  });
  return b.Build({r});
}

Result<int64_t> GatherNdBatchDims(const ir::CallExpr& call, int x_ndim, int ind_ndim) {
  KILN_ASSIGN_OR_RETURN(auto b, GetInt(call, "batch_dims", 2));
  int64_t batch = b ? *b : 0;
  if (batch < 0 || batch >= std::min(x_ndim, ind_ndim)) {
    return InvalidArgument(OpPrefix(call) + "batch_dims must lie in [0, " + std::to_string(std::min(x_ndim, ind_ndim)) +
                           "), got " + std::to_string(batch));
  }
  return batch;
}

Result<ir::StructInfo> InferGatherNd(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 2, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, TensorArg(call, 1));
  KILN_RETURN_IF_ERROR(CheckIndexDType(call, ind));
  if (x->ndim < 0 || ind->ndim < 0 || !ind->has_shape) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  KILN_ASSIGN_OR_RETURN(int64_t batch, GatherNdBatchDims(call, x->ndim, ind->ndim));
  auto k = ConstDim(ind->shape.back());
  if (!k) return InvalidArgument(OpPrefix(call) + "the last dimension of indices must be static");
  if (*k < 1 || batch + *k > x->ndim) {
    return InvalidArgument(OpPrefix(call) + "index tuples of length " + std::to_string(*k) + " after " +
                           std::to_string(batch) + " batch axes do not fit x of rank " + std::to_string(x->ndim));
  }
  int out_ndim = ind->ndim - 1 + x->ndim - static_cast<int>(batch + *k);
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(out_ndim, x->dtype);
  std::vector<PrimExpr> out(ind->shape.begin(), ind->shape.end() - 1);
  out.insert(out.end(), x->shape.begin() + batch + *k, x->shape.end());
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizeGatherNd(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ind, KnownTensorArg(call, 1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(int64_t batch, GatherNdBatchDims(call, x->ndim, ind->ndim));
  int64_t k = *ConstDim(ind->shape.back());
  int q = ind->ndim - 1;  // index axes of the output
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor indices = b.Input("indices", BindableShape(ind->shape, "indices"), ind->dtype);
  te::Tensor r = b.Compute("T_gather_nd", BindableShape(out->shape, "T_gather_nd"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx(i.begin(), i.begin() + batch);
    te::Indices at(i.begin(), i.begin() + q);
    at.push_back(PrimExpr(int64_t{0}));
    for (int64_t j = 0; j < k; ++j) {
      at.back() = PrimExpr(j);
      idx.push_back(NormalizeIndex(indices(at), a.shape()[batch + j], "fast"));
    }
    idx.insert(idx.end(), i.begin() + q, i.end());
    return a(idx);
  });
  return b.Build({r});
}

}  // namespace

void AddGatherOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.take", "take", -1, InferTake, LegalizeTake, OpPattern::kInjective});
  t->push_back({"relax.gather_elements", "gather_elements", -1, InferGatherElements, LegalizeGatherElements,
                OpPattern::kInjective});
  t->push_back({"relax.gather_nd", "gather_nd", -1, InferGatherNd, LegalizeGatherNd, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
