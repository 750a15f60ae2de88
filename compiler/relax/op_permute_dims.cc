// relax.permute_dims: struct info and legalization. axes=None reverses them.
#include "compiler/relax/op_defs.h"

#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

// The permutation for a tensor of `ndim` dimensions.
Result<std::vector<int64_t>> Axes(const ir::CallExpr& call, int ndim) {
  auto it = call.attrs.find("axes");
  std::vector<int64_t> axes;
  if (it == call.attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) {
    for (int i = ndim - 1; i >= 0; --i) axes.push_back(i);
    return axes;
  }
  if (it->second.kind != ir::AttrValue::Kind::kIntList) {
    return InvalidArgument(Where(call.span) + "R.permute_dims: axes must be a list of integers or None");
  }
  axes = it->second.ints;
  if (static_cast<int>(axes.size()) != ndim) {
    return InvalidArgument(Where(call.span) + "R.permute_dims: " + std::to_string(axes.size()) +
                           " axes given for a tensor of rank " + std::to_string(ndim));
  }
  std::vector<bool> seen(ndim, false);
  for (int64_t& a : axes) {
    if (a < 0) a += ndim;
    if (a < 0 || a >= ndim || seen[a]) {
      return InvalidArgument(Where(call.span) + "R.permute_dims: axes are not a permutation of 0.." +
                             std::to_string(ndim - 1));
    }
    seen[a] = true;
  }
  return axes;
}

Result<ir::StructInfo> InferPermuteDims(const ir::CallExpr& call) {
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  if (!x) return InvalidArgument(Where(call.span) + "R.permute_dims expects a tensor");
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim, x->dtype);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(call, x->ndim));
  std::vector<ir::PrimExpr> shape;
  for (int64_t a : axes) shape.push_back(x->shape[a]);
  return ir::MakeTensorSInfo(shape, x->dtype);
}

Result<ir::PrimFunc> LegalizePermuteDims(const ir::CallExpr& call, const std::string& name) {
  const ir::TensorSInfo* x = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* out = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
  if (!x || !out || !x->has_shape || !out->has_shape) {
    return Unimplemented(Where(call.span) + "R.permute_dims: legalization needs known shapes");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(call, x->ndim));
  // Composite dimensions (n * 4) get their own variables so that the kernel
  // binds every dimension from its arguments (op_shape_util.h).
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor r = b.Compute("T_transpose", BindableShape(out->shape, "T_transpose"), out->dtype,
                           [&](const te::Indices& i) {
                             te::Indices idx(i.size());
                             for (size_t k = 0; k < axes.size(); ++k) idx[axes[k]] = i[k];
                             return a(idx);
                           });
  return b.Build({r});
}

}  // namespace

void AddPermuteDimsOps(std::vector<OpInfo>* t) { t->push_back({"relax.permute_dims", "transpose", 1, InferPermuteDims, LegalizePermuteDims, OpPattern::kInjective}); }

}  // namespace relax
}  // namespace kiln
