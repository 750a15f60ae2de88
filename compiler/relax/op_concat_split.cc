// relax.concat (a tuple of tensors joined along one axis, symbolic axes
// included: (n, 4) ++ (m, 4) -> (n + m, 4)) and relax.split (one tensor cut
// into a tuple, by a number of sections or by cut points).
//
// split semantics follow TVM: `indices_or_sections=k` (an integer) gives k
// parts of ceil(d / k) elements, the last one taking what is left (so
// (n * 4) in 2 parts is (n * 2, n * 2)); a list gives cut points, clamped to
// [0, d] like numpy when d is static and trusted when d is symbolic.
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;

// The struct info of each tensor in concat's tuple argument.
Result<std::vector<const ir::TensorSInfo*>> ConcatFields(const ir::CallExpr& call) {
  const auto* tup = call.args.empty() ? nullptr : ir::SInfoAs<ir::TupleSInfo>(call.args[0]->struct_info);
  if (!tup) {
    return InvalidArgument(OpPrefix(call) + "expects a tuple of tensors, as in R.concat((a, b), axis=0), got " +
                           SInfoString(call.args.empty() ? nullptr : call.args[0]->struct_info));
  }
  if (tup->fields.empty()) return InvalidArgument(OpPrefix(call) + "needs at least one tensor");
  std::vector<const ir::TensorSInfo*> out;
  for (size_t i = 0; i < tup->fields.size(); ++i) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(tup->fields[i]);
    if (!t) {
      return InvalidArgument(OpPrefix(call) + "field " + std::to_string(i) + " of the tuple is " +
                             SInfoString(tup->fields[i]) + ", not a tensor");
    }
    out.push_back(t);
  }
  return out;
}

// axis=None concatenates 1-D tensors (TVM's rule), i.e. axis 0.
Result<int64_t> ConcatAxis(const ir::CallExpr& call, int ndim) {
  KILN_ASSIGN_OR_RETURN(auto axis, GetInt(call, "axis", 1));
  if (!axis) {
    if (ndim >= 0 && ndim != 1) {
      return InvalidArgument(OpPrefix(call) + "axis=None concatenates 1-D tensors, got rank " + std::to_string(ndim));
    }
    return 0;
  }
  return *axis;
}

Result<ir::StructInfo> InferConcat(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 2));
  KILN_ASSIGN_OR_RETURN(std::vector<const ir::TensorSInfo*> fields, ConcatFields(call));
  int ndim = -1;
  bool has_dtype = false, all_shapes = true;
  DType dtype;
  for (size_t i = 0; i < fields.size(); ++i) {
    const ir::TensorSInfo* t = fields[i];
    if (t->has_dtype) {
      if (has_dtype && t->dtype != dtype) {
        return InvalidArgument(OpPrefix(call) + "tensors have different dtypes: " + DTypeToString(dtype) + " and " +
                               DTypeToString(t->dtype) + " (field " + std::to_string(i) + ")");
      }
      has_dtype = true;
      dtype = t->dtype;
    }
    if (t->ndim >= 0) {
      if (ndim >= 0 && t->ndim != ndim) {
        return InvalidArgument(OpPrefix(call) + "tensors have different ranks: " + std::to_string(ndim) + " and " +
                               std::to_string(t->ndim) + " (field " + std::to_string(i) + ")");
      }
      ndim = t->ndim;
    }
    all_shapes &= t->has_shape;
  }
  auto unknown = [&](int nd) {
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, nd, dtype, has_dtype));
  };
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, ConcatAxis(call, ndim));
  if (ndim < 0) return unknown(-1);
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, ndim));
  if (!all_shapes) return unknown(ndim);
  std::vector<PrimExpr> out = fields[0]->shape;
  PrimExpr sum = out[axis];
  for (size_t i = 1; i < fields.size(); ++i) {
    for (int d = 0; d < ndim; ++d) {
      if (d == axis) continue;
      if (CompareDims(out[d], fields[i]->shape[d]) == DimRelation::kNotEqual) {
        return InvalidArgument(OpPrefix(call) + "shapes " + ShapeString(fields[0]->shape) + " and " +
                               ShapeString(fields[i]->shape) + " (field " + std::to_string(i) +
                               ") differ in dimension " + std::to_string(d) + ", which is not the concat axis " +
                               std::to_string(axis));
      }
    }
    sum = sum + fields[i]->shape[axis];
  }
  out[axis] = SimplifyDim(sum);
  return ir::MakeTensorSInfo(out, has_dtype ? dtype : fields[0]->dtype);
}

// out[.., i, ..] = A_j[.., i - offset_j, ..] for the j whose range holds i,
// chosen by a chain of lazy if_then_else (no out-of-range load is executed).
Result<ir::PrimFunc> LegalizeConcat(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(std::vector<const ir::TensorSInfo*> fields, ConcatFields(call));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  for (const auto* f : fields)
    if (!f->has_shape || !f->has_dtype) return Unimplemented(OpPrefix(call) + "legalization needs known input shapes");
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, ConcatAxis(call, out->ndim));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, axis_attr, out->ndim));
  te::FuncBuilder b(name);
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < fields.size(); ++i) ins.push_back(b.Input("A" + std::to_string(i), BindableShape(fields[i]->shape, "A" + std::to_string(i)), fields[i]->dtype));
  std::vector<PrimExpr> offsets{PrimExpr(int64_t{0})};
  for (const auto& t : ins) offsets.push_back(SimplifyDim(offsets.back() + t.shape()[axis]));
  te::Tensor r = b.Compute("T_concat", BindableShape(out->shape, "T_concat"), out->dtype, [&](const te::Indices& i) {
    auto load = [&](size_t j) {
      te::Indices idx = i;
      idx[axis] = SimplifyDim(i[axis] - offsets[j]);
      return ins[j](idx);
    };
    PrimExpr v = load(ins.size() - 1);
    for (size_t j = ins.size() - 1; j-- > 0;) v = IfThenElse(ir::MakeBinary(ir::TirKind::kLT, i[axis], offsets[j + 1]), load(j), v);
    return v;
  });
  return b.Build({r});
}

// Where each part starts and how long it is along the split axis.
struct SplitPlan {
  std::vector<PrimExpr> begin, extent;
};

Result<SplitPlan> PlanSplit(const ir::CallExpr& call, const PrimExpr& dim) {
  SplitPlan plan;
  auto it = call.attrs.find("indices_or_sections");
  bool sections = false;
  std::vector<int64_t> values;
  if (it != call.attrs.end()) {
    if (it->second.kind == ir::AttrValue::Kind::kInt) {
      sections = true;
      values = {it->second.i};
    } else if (it->second.kind == ir::AttrValue::Kind::kIntList) {
      values = it->second.ints;
    } else {
      return InvalidArgument(OpPrefix(call) + "indices_or_sections must be an integer or a list of integers");
    }
  } else if (call.args.size() > 1) {
    KILN_ASSIGN_OR_RETURN(auto list, GetIntList(call, "indices_or_sections", 1));
    values = *list;
    sections = ir::ExprAs<ir::PrimValueExpr>(call.args[1]) != nullptr;
  } else {
    return InvalidArgument(OpPrefix(call) + "indices_or_sections is required");
  }
  auto cd = ConstDim(dim);
  if (sections) {
    int64_t k = values[0];
    if (k < 1) return InvalidArgument(OpPrefix(call) + "the number of sections must be >= 1, got " + std::to_string(k));
    PrimExpr part = SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorDiv, dim + PrimExpr(k - 1), PrimExpr(k)));
    if (cd && k > 1 && (*cd + k - 1) / k * (k - 1) > *cd) {
      return InvalidArgument(OpPrefix(call) + "cannot split dimension " + std::to_string(*cd) + " into " +
                             std::to_string(k) + " sections");
    }
    for (int64_t j = 0; j < k; ++j) {
      plan.begin.push_back(SimplifyDim(part * PrimExpr(j)));
      plan.extent.push_back(j + 1 < k ? part : SimplifyDim(dim - part * PrimExpr(k - 1)));
    }
    return plan;
  }
  // Cut points: negative ones count from the end; static dims clamp like numpy.
  std::vector<PrimExpr> cuts{PrimExpr(int64_t{0})};
  int64_t prev = 0;
  for (int64_t c : values) {
    if (cd) {
      int64_t v = c < 0 ? c + *cd : c;
      v = std::min(std::max(v, prev), *cd);
      prev = v;
      cuts.push_back(PrimExpr(v));
    } else {
      cuts.push_back(c < 0 ? SimplifyDim(dim + PrimExpr(c)) : PrimExpr(c));
    }
  }
  cuts.push_back(dim);
  for (size_t j = 0; j + 1 < cuts.size(); ++j) {
    plan.begin.push_back(cuts[j]);
    plan.extent.push_back(SimplifyDim(cuts[j + 1] - cuts[j]));
  }
  return plan;
}

Result<int> SplitAxis(const ir::CallExpr& call, int ndim) {
  KILN_ASSIGN_OR_RETURN(auto axis, GetInt(call, "axis", 2));
  return NormalizeAxis(call, axis ? *axis : 0, ndim);
}

Result<ir::StructInfo> InferSplit(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  if (x->ndim < 0) return InvalidArgument(OpPrefix(call) + "needs a tensor of known rank");
  KILN_ASSIGN_OR_RETURN(int axis, SplitAxis(call, x->ndim));
  PrimExpr dim = x->has_shape ? x->shape[axis] : PrimExpr(int64_t{0});
  KILN_ASSIGN_OR_RETURN(SplitPlan plan, PlanSplit(call, x->has_shape ? dim : PrimExpr(ir::MakeVar("d"))));
  std::vector<ir::StructInfo> fields;
  for (const auto& e : plan.extent) {
    if (!x->has_shape) {
      fields.push_back(ir::StructInfo(
          std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, x->ndim, x->dtype, x->has_dtype)));
      continue;
    }
    std::vector<PrimExpr> s = x->shape;
    s[axis] = e;
    fields.push_back(ir::MakeTensorSInfo(s, x->dtype));
  }
  return ir::StructInfo(std::make_shared<ir::TupleSInfo>(fields));
}

Result<ir::PrimFunc> LegalizeSplit(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  const auto* tup = ir::SInfoAs<ir::TupleSInfo>(call.struct_info);
  if (!tup) return Internal(OpPrefix(call) + "result is not a tuple");
  KILN_ASSIGN_OR_RETURN(int axis, SplitAxis(call, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  KILN_ASSIGN_OR_RETURN(SplitPlan plan, PlanSplit(call, a.shape()[axis]));
  std::vector<te::Tensor> outs;
  for (size_t j = 0; j < tup->fields.size(); ++j) {
    const auto* o = ir::SInfoAs<ir::TensorSInfo>(tup->fields[j]);
    if (!o || !o->has_shape) return Unimplemented(OpPrefix(call) + "legalization needs known result shapes");
    PrimExpr begin = plan.begin[j];
    outs.push_back(b.Compute("T_split_" + std::to_string(j), BindableShape(o->shape, "T_split_" + std::to_string(j)), o->dtype, [&](const te::Indices& i) {
      te::Indices idx = i;
      idx[axis] = SimplifyDim(i[axis] + begin);
      return a(idx);
    }));
  }
  return b.Build(outs);
}

}  // namespace

void AddConcatSplitOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.concat", "concatenate", -1, InferConcat, LegalizeConcat, OpPattern::kInjective});
  t->push_back({"relax.split", "split", -1, InferSplit, LegalizeSplit, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
