// Repetition: relax.tile(x, repeats) (numpy.tile: the whole tensor repeated
// along each axis; a shorter `repeats` is padded with leading 1s, a longer one
// gives x leading size-1 axes) and relax.repeat(x, repeats, axis=None)
// (numpy.repeat: each element repeated; axis=None repeats the flattened x).
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;

Result<std::vector<int64_t>> TileRepeats(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(auto reps, GetIntList(call, "repeats", 1));
  if (!reps) return InvalidArgument(OpPrefix(call) + "repeats is required");
  for (int64_t r : *reps)
    if (r < 0) return InvalidArgument(OpPrefix(call) + "repeats must be >= 0, got " + std::to_string(r));
  return *reps;
}

Result<ir::StructInfo> InferTile(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 2));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reps, TileRepeats(call));
  if (x->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  int out_ndim = std::max<int>(x->ndim, static_cast<int>(reps.size()));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(out_ndim, x->dtype);
  std::vector<PrimExpr> out;
  for (int d = 0; d < out_ndim; ++d) {
    int xd = d - (out_ndim - x->ndim), rd = d - (out_ndim - static_cast<int>(reps.size()));
    PrimExpr dim = xd >= 0 ? x->shape[xd] : PrimExpr(int64_t{1});
    int64_t r = rd >= 0 ? reps[rd] : 1;
    out.push_back(SimplifyDim(dim * PrimExpr(r)));
  }
  return ir::MakeTensorSInfo(out, x->dtype);
}

// out[i] = x[i % dim] on the trailing axes x has.
Result<ir::PrimFunc> LegalizeTile(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  te::Tensor r = b.Compute("T_tile", BindableShape(out->shape, "T_tile"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx;
    size_t off = i.size() - a.ndim();
    for (size_t d = 0; d < a.ndim(); ++d) {
      const PrimExpr& dim = a.shape()[d];
      idx.push_back(ConstDim(dim) == std::optional<int64_t>(1)
                        ? PrimExpr(int64_t{0})
                        : SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorMod, i[off + d], dim)));
    }
    return a(idx);
  });
  return b.Build({r});
}

struct RepeatParams {
  int64_t repeats;
  std::optional<int64_t> axis;
};

Result<RepeatParams> ReadRepeat(const ir::CallExpr& call) {
  RepeatParams p;
  KILN_ASSIGN_OR_RETURN(auto reps, GetInt(call, "repeats", 1));
  if (!reps) return InvalidArgument(OpPrefix(call) + "repeats (one integer) is required");
  if (*reps < 0) return InvalidArgument(OpPrefix(call) + "repeats must be >= 0, got " + std::to_string(*reps));
  p.repeats = *reps;
  KILN_ASSIGN_OR_RETURN(p.axis, GetInt(call, "axis", 2));
  return p;
}

Result<ir::StructInfo> InferRepeat(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 3));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(RepeatParams p, ReadRepeat(call));
  PrimExpr r(p.repeats);
  if (!p.axis) {
    if (!x->has_shape) return ir::MakeTensorSInfoNdim(1, x->dtype);
    return ir::MakeTensorSInfo({SimplifyDim(ShapeProduct(x->shape) * r)}, x->dtype);
  }
  if (x->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(call, *p.axis, x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim, x->dtype);
  std::vector<PrimExpr> out = x->shape;
  out[axis] = SimplifyDim(out[axis] * r);
  return ir::MakeTensorSInfo(out, x->dtype);
}

// out[i] = x[i // repeats] along the axis (of the flattened x for axis=None).
Result<ir::PrimFunc> LegalizeRepeat(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(RepeatParams p, ReadRepeat(call));
  int axis = -1;
  if (p.axis) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(call, *p.axis, x->ndim));
  }
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  PrimExpr r(p.repeats);
  te::Tensor res = b.Compute("T_repeat", BindableShape(out->shape, "T_repeat"), out->dtype, [&](const te::Indices& i) {
    if (axis < 0) return a(UnflattenIndex(a.shape(), SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorDiv, i[0], r))));
    te::Indices idx = i;
    idx[axis] = SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorDiv, i[axis], r));
    return a(idx);
  });
  return b.Build({res});
}

}  // namespace

void AddTileOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.tile", "tile", -1, InferTile, LegalizeTile, OpPattern::kInjective});
  t->push_back({"relax.repeat", "repeat", -1, InferRepeat, LegalizeRepeat, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
