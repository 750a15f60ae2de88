// Operators that change a tensor's shape but not its elements' order:
// relax.reshape (with -1 and 0), relax.flatten, relax.squeeze,
// relax.expand_dims, and relax.broadcast_to (which repeats elements).
//
// Symbolic shapes stay symbolic: reshape of (n, 2, 2) to (-1,) infers
// (n * 4,) through arith::Simplify, and element counts are compared with the
// prover (a provable mismatch is an error, an unprovable one is trusted, as in
// TVM).
#include "compiler/relax/op_defs.h"

#include "compiler/arith/simplify.h"
#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;

// A target shape argument: R.shape([...]), a shape-typed value, or a tuple of
// integers. `values` is empty with has_values=false when only the rank is
// known (a shape value of unknown dimensions).
struct TargetShape {
  bool has_values = false;
  std::vector<PrimExpr> values;
  int ndim = -1;
};

Result<TargetShape> ReadTargetShape(const ir::CallExpr& call, size_t pos) {
  TargetShape t;
  if (pos >= call.args.size()) return InvalidArgument(OpPrefix(call) + "the target shape is missing");
  const ir::Expr& a = call.args[pos];
  if (const auto* s = ir::ExprAs<ir::ShapeExpr>(a)) {
    t.has_values = true;
    t.values = s->values;
  } else if (const auto* tup = ir::ExprAs<ir::TupleExpr>(a)) {
    t.has_values = true;
    for (const auto& f : tup->fields) {
      const auto* p = ir::ExprAs<ir::PrimValueExpr>(f);
      if (!p) return InvalidArgument(OpPrefix(call) + "the target shape must hold integers, as in R.shape([2, n])");
      t.values.push_back(p->value);
    }
  } else if (const auto* p = ir::ExprAs<ir::PrimValueExpr>(a)) {
    t.has_values = true;
    t.values.push_back(p->value);
  } else if (const auto* s = ir::SInfoAs<ir::ShapeSInfo>(a->struct_info)) {
    t.has_values = s->has_values;
    t.values = s->values;
    t.ndim = s->ndim;
  } else {
    return InvalidArgument(OpPrefix(call) + "the target shape must be R.shape([...]) or a tuple of integers, got " +
                           SInfoString(a->struct_info));
  }
  if (t.has_values) {
    t.ndim = static_cast<int>(t.values.size());
    for (auto& v : t.values)
      if (v.dtype() != DType::Int64()) v = ir::Cast(DType::Int64(), v);
  }
  return t;
}

// Fails when two element counts are provably different.
Status CheckSameCount(const ir::CallExpr& call, const std::vector<PrimExpr>& from, const std::vector<PrimExpr>& to) {
  PrimExpr a = ShapeProduct(from), b = ShapeProduct(to);
  if (CompareDims(a, b) == DimRelation::kNotEqual) {
    return InvalidArgument(OpPrefix(call) + "cannot reshape " + ShapeString(from) + " (" + DimString(a) +
                           " elements) to " + ShapeString(to) + " (" + DimString(b) + " elements)");
  }
  return Status::Ok();
}

Result<ir::StructInfo> InferReshape(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 2, 2));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(TargetShape target, ReadTargetShape(call, 1));
  if (!target.has_values) return ir::MakeTensorSInfoNdim(target.ndim, x->dtype);
  std::vector<PrimExpr> out = target.values;
  int infer_at = -1;
  bool needs_input = false;
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = ConstDim(out[i]);
    if (!c) continue;
    if (*c == -1) {
      if (infer_at >= 0) return InvalidArgument(OpPrefix(call) + "at most one dimension of the new shape may be -1");
      infer_at = static_cast<int>(i);
      needs_input = true;
    } else if (*c == 0) {
      needs_input = true;
    } else if (*c < -1) {
      return InvalidArgument(OpPrefix(call) + "dimension " + std::to_string(i) + " of the new shape is " +
                             std::to_string(*c) + "; dimensions are >= 1, or -1 (inferred) or 0 (copied)");
    }
  }
  if (!x->has_shape) {
    if (needs_input) return ir::MakeTensorSInfoNdim(static_cast<int>(out.size()), x->dtype);
    return ir::MakeTensorSInfo(out, x->dtype);
  }
  // 0 copies the input's dimension at the same position.
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = ConstDim(out[i]);
    if (!c || *c != 0) continue;
    if (i >= x->shape.size()) {
      return InvalidArgument(OpPrefix(call) + "dimension " + std::to_string(i) +
                             " of the new shape is 0 (copy) but the input " + ShapeString(x->shape) + " has rank " +
                             std::to_string(x->shape.size()));
    }
    out[i] = x->shape[i];
  }
  if (infer_at >= 0) {
    std::vector<PrimExpr> known;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer_at) known.push_back(out[i]);
    PrimExpr total = ShapeProduct(x->shape), part = ShapeProduct(known);
    auto cp = ConstDim(part);
    if (cp && *cp == 0) {
      return InvalidArgument(OpPrefix(call) + "cannot infer the -1 dimension: the other dimensions hold 0 elements");
    }
    PrimExpr d = SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorDiv, total, part));
    auto ct = ConstDim(total);
    if (ct && cp && *ct % *cp != 0) {
      return InvalidArgument(OpPrefix(call) + "cannot reshape " + ShapeString(x->shape) + " (" + std::to_string(*ct) +
                             " elements) to " + ShapeString(target.values) + ": " + std::to_string(*ct) +
                             " is not a multiple of " + std::to_string(*cp));
    }
    out[infer_at] = d;
  }
  for (auto& d : out) d = SimplifyDim(d);
  KILN_RETURN_IF_ERROR(CheckSameCount(call, x->shape, out));
  return ir::MakeTensorSInfo(out, x->dtype);
}

// out[i] = x[unflatten(flatten(i))]: any reshape, flatten included.
Result<ir::PrimFunc> LegalizeReshape(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  std::vector<PrimExpr> out_shape = b.Local(BindableShape(out->shape, "T_reshape"));
  te::Tensor r = b.Compute("T_reshape", out_shape, out->dtype, [&](const te::Indices& i) {
    arith::VarBounds bounds = IndexBounds(i, out_shape);
    PrimExpr flat = FlatIndex(out_shape, i, bounds);
    return a(UnflattenIndex(a.shape(), flat, bounds));
  });
  return b.Build({r});
}

Result<ir::StructInfo> InferFlatten(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(1, x->dtype);
  return ir::MakeTensorSInfo({ShapeProduct(x->shape)}, x->dtype);
}

Result<ir::StructInfo> InferSqueeze(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 2));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(auto axes, GetIntList(call, "axis", 1));
  if (x->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  if (!axes) {
    // Every dimension that is 1; a symbolic one might be, so the rank is unknown.
    if (!x->has_shape) return ir::MakeTensorSInfoNdim(-1, x->dtype);
    std::vector<PrimExpr> out;
    for (const auto& d : x->shape) {
      auto c = ConstDim(d);
      if (!c) return ir::MakeTensorSInfoNdim(-1, x->dtype);
      if (*c != 1) out.push_back(d);
    }
    return ir::MakeTensorSInfo(out, x->dtype);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> ax, NormalizeAxes(call, *axes, x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim - static_cast<int>(ax.size()), x->dtype);
  std::vector<bool> drop(x->ndim, false);
  for (int a : ax) {
    auto c = ConstDim(x->shape[a]);
    if (c && *c != 1) {
      return InvalidArgument(OpPrefix(call) + "dimension " + std::to_string(a) + " of " + ShapeString(x->shape) +
                             " is " + std::to_string(*c) + ", not 1");
    }
    drop[a] = true;  // a symbolic dimension is taken to be 1, as TVM does
  }
  std::vector<PrimExpr> out;
  for (int i = 0; i < x->ndim; ++i)
    if (!drop[i]) out.push_back(x->shape[i]);
  return ir::MakeTensorSInfo(out, x->dtype);
}

// The input's dims that survive are matched in order; removed ones read 0.
Result<ir::PrimFunc> LegalizeSqueeze(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(auto axes, GetIntList(call, "axis", 1));
  std::vector<bool> drop(x->ndim, false);
  if (axes) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> ax, NormalizeAxes(call, *axes, x->ndim));
    for (int a : ax) drop[a] = true;
  } else {
    for (int i = 0; i < x->ndim; ++i) drop[i] = ConstDim(x->shape[i]) == std::optional<int64_t>(1);
  }
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor r = b.Compute("T_squeeze", BindableShape(out->shape, "T_squeeze"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx;
    size_t k = 0;
    for (int d = 0; d < x->ndim; ++d) idx.push_back(drop[d] ? PrimExpr(int64_t{0}) : i[k++]);
    return a(idx);
  });
  return b.Build({r});
}

// The output positions of the new axes (sorted flags over the output rank).
Result<std::vector<bool>> ExpandedAxes(const ir::CallExpr& call, int in_ndim) {
  KILN_ASSIGN_OR_RETURN(auto axes, GetIntList(call, "axis", 1));
  if (!axes) return InvalidArgument(OpPrefix(call) + "axis is required, as in axis=[0]");
  int out_ndim = in_ndim + static_cast<int>(axes->size());
  KILN_ASSIGN_OR_RETURN(std::vector<int> ax, NormalizeAxes(call, *axes, out_ndim));
  std::vector<bool> is_new(out_ndim, false);
  for (int a : ax) is_new[a] = true;
  return is_new;
}

Result<ir::StructInfo> InferExpandDims(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 2));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  if (x->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  KILN_ASSIGN_OR_RETURN(std::vector<bool> is_new, ExpandedAxes(call, x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(static_cast<int>(is_new.size()), x->dtype);
  std::vector<PrimExpr> out;
  size_t k = 0;
  for (bool n : is_new) out.push_back(n ? PrimExpr(int64_t{1}) : x->shape[k++]);
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizeExpandDims(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(std::vector<bool> is_new, ExpandedAxes(call, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor r = b.Compute("T_expand_dims", BindableShape(out->shape, "T_expand_dims"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx;
    for (size_t d = 0; d < is_new.size(); ++d)
      if (!is_new[d]) idx.push_back(i[d]);
    return a(idx);
  });
  return b.Build({r});
}

Result<ir::StructInfo> InferBroadcastTo(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 2, 2));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(TargetShape target, ReadTargetShape(call, 1));
  if (!target.has_values) return ir::MakeTensorSInfoNdim(target.ndim, x->dtype);
  if (x->ndim > target.ndim) {
    return InvalidArgument(OpPrefix(call) + "cannot broadcast rank " + std::to_string(x->ndim) + " to the lower rank " +
                           std::to_string(target.ndim) + " of " + ShapeString(target.values));
  }
  if (x->has_shape) {
    size_t off = target.values.size() - x->shape.size();
    for (size_t i = 0; i < x->shape.size(); ++i) {
      const PrimExpr& d = x->shape[i];
      const PrimExpr& t = target.values[off + i];
      if (ConstDim(d) == std::optional<int64_t>(1)) continue;
      if (CompareDims(d, t) == DimRelation::kNotEqual) {
        return InvalidArgument(OpPrefix(call) + "cannot broadcast " + ShapeString(x->shape) + " to " +
                               ShapeString(target.values) + ": dimension " + std::to_string(i) + " is " +
                               DimString(d) + ", not 1 or " + DimString(t));
      }
    }
  }
  return ir::MakeTensorSInfo(target.values, x->dtype);
}

// Right-aligned: size-1 input dims read index 0.
Result<ir::PrimFunc> LegalizeBroadcastTo(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor r = b.Compute("T_broadcast_to", BindableShape(out->shape, "T_broadcast_to"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx;
    size_t off = i.size() - a.ndim();
    for (size_t d = 0; d < a.ndim(); ++d)
      idx.push_back(ConstDim(a.shape()[d]) == std::optional<int64_t>(1) ? PrimExpr(int64_t{0}) : i[off + d]);
    return a(idx);
  });
  return b.Build({r});
}

}  // namespace

void AddReshapeOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.reshape", "reshape", -1, InferReshape, LegalizeReshape, OpPattern::kInjective});
  t->push_back({"relax.flatten", "flatten", -1, InferFlatten, LegalizeReshape, OpPattern::kInjective});
  t->push_back({"relax.squeeze", "squeeze", -1, InferSqueeze, LegalizeSqueeze, OpPattern::kInjective});
  t->push_back({"relax.expand_dims", "expand_dims", -1, InferExpandDims, LegalizeExpandDims, OpPattern::kInjective});
  t->push_back({"relax.broadcast_to", "broadcast_to", -1, InferBroadcastTo, LegalizeBroadcastTo, OpPattern::kBroadcast});
}

}  // namespace relax
}  // namespace kiln
