// relax.strided_slice(x, axes, begin, end, strides=None, assume_inbound=True):
// numpy basic slicing along the listed axes.
//
// For a static dimension the indices behave exactly like numpy's: negative
// ones count from the end, then they are clamped into range, and an empty
// range gives extent 0. For a symbolic dimension n the result must stay a
// formula of n, so (TVM's assume_inbound=True, the default) negative indices
// become n + i, an end at or beyond 2^31 - 1 means "to the end" (and a
// negative stride's end at or below -2^31 "to the start"), and the
// indices are otherwise trusted to lie inside [0, n]. With assume_inbound=False
// they are clamped by min/max expressions instead. begin and end may also be
// arguments holding symbolic values, R.shape([...]) or a tuple of
// R.prim_value (an ONNX slice x[:seq] whose end comes from shape arithmetic):
// a symbolic index is trusted to lie inside the axis, its kernel taking the
// variables it needs as scalars (te_builder.h).
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/op_shape_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;

constexpr int64_t kToEnd = (int64_t{1} << 31) - 1;

struct SliceParams {
  std::vector<int> axes;
  std::vector<PrimExpr> begin, end;  // constants, or symbolic (taken as inbound)
  std::vector<int64_t> strides;
  bool assume_inbound = true;
};

Result<SliceParams> ReadParams(const ir::CallExpr& call, int ndim) {
  SliceParams p;
  KILN_ASSIGN_OR_RETURN(auto axes, GetIntList(call, "axes", 1));
  KILN_ASSIGN_OR_RETURN(auto begin, GetPrimList(call, "begin", 2));
  KILN_ASSIGN_OR_RETURN(auto end, GetPrimList(call, "end", 3));
  KILN_ASSIGN_OR_RETURN(auto strides, GetIntList(call, "strides", 4));
  KILN_ASSIGN_OR_RETURN(p.assume_inbound, GetBool(call, "assume_inbound", true));
  if (!axes || !begin || !end) return InvalidArgument(OpPrefix(call) + "axes, begin and end are required");
  size_t n = axes->size();
  if (begin->size() != n || end->size() != n || (strides && strides->size() != n)) {
    return InvalidArgument(OpPrefix(call) + "axes, begin, end and strides must have the same length, got " +
                           std::to_string(n) + ", " + std::to_string(begin->size()) + ", " +
                           std::to_string(end->size()) + ", " + std::to_string(strides ? strides->size() : n));
  }
  KILN_ASSIGN_OR_RETURN(p.axes, NormalizeAxes(call, *axes, ndim));
  p.begin = *begin;
  p.end = *end;
  p.strides = strides ? *strides : std::vector<int64_t>(n, 1);
  for (int64_t s : p.strides)
    if (s == 0) return InvalidArgument(OpPrefix(call) + "strides must not be 0");
  return p;
}

// The first index read and the extent along one axis of dimension `dim`.
struct AxisSlice {
  PrimExpr begin, extent;
};

AxisSlice SliceAxisConst(const PrimExpr& dim, int64_t b, int64_t e, int64_t s, bool assume_inbound) {
  if (auto d = ConstDim(dim)) {
    // numpy's rule.
    int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? *d : *d - 1;
    auto norm = [&](int64_t v) { return std::min(std::max(v < 0 ? v + *d : v, lo), hi); };
    int64_t nb = norm(b), ne = norm(e);
    int64_t span = s > 0 ? ne - nb : nb - ne;
    int64_t step = s > 0 ? s : -s;
    int64_t ext = span <= 0 ? 0 : (span + step - 1) / step;
    return {PrimExpr(nb), PrimExpr(ext)};
  }
  PrimExpr nb, ne;
  if (s > 0) {
    nb = b < 0 ? dim + PrimExpr(b) : PrimExpr(b);
    ne = e >= kToEnd ? dim : (e < 0 ? dim + PrimExpr(e) : PrimExpr(e));
  } else {
    nb = b >= kToEnd ? dim - PrimExpr(int64_t{1}) : (b < 0 ? dim + PrimExpr(b) : PrimExpr(b));
    ne = e <= -kToEnd - 1 ? PrimExpr(int64_t{-1}) : (e < 0 ? dim + PrimExpr(e) : PrimExpr(e));
  }
  auto clamp = [&](PrimExpr v, PrimExpr lo, PrimExpr hi) {
    return ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, v, lo), hi);
  };
  if (!assume_inbound) {
    PrimExpr lo = s > 0 ? PrimExpr(int64_t{0}) : PrimExpr(int64_t{-1});
    PrimExpr hi = s > 0 ? dim : dim - PrimExpr(int64_t{1});
    nb = clamp(nb, lo, hi);
    ne = clamp(ne, lo, hi);
  }
  int64_t step = s > 0 ? s : -s;
  PrimExpr span = s > 0 ? ne - nb : nb - ne;
  PrimExpr ext = ir::MakeBinary(ir::TirKind::kFloorDiv, span + PrimExpr(step - 1), PrimExpr(step));
  if (!assume_inbound) ext = ir::MakeBinary(ir::TirKind::kMax, ext, PrimExpr(int64_t{0}));
  return {SimplifyDim(nb), SimplifyDim(ext)};
}

// A symbolic index (ONNX Slice's end from shape arithmetic: x[:seq]) is taken
// as lying inside the axis, after a negative one counts from the end; a
// constant one beside it keeps its meaning (clamped on a static dimension,
// kToEnd "to the end").
AxisSlice SliceAxis(const PrimExpr& dim, const PrimExpr& b, const PrimExpr& e, int64_t s, bool assume_inbound) {
  auto cb = ConstDim(b), ce = ConstDim(e), cd = ConstDim(dim);
  if (cb && ce) return SliceAxisConst(dim, *cb, *ce, s, assume_inbound);
  auto side = [&](const PrimExpr& v, std::optional<int64_t> c, bool is_end) -> PrimExpr {
    if (!c) return v;
    int64_t x = *c;
    if (cd) {
      int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? *cd : *cd - 1;
      return PrimExpr(std::min(std::max(x < 0 ? x + *cd : x, lo), hi));
    }
    if (s > 0) {
      if (is_end && x >= kToEnd) return dim;
    } else {
      if (!is_end && x >= kToEnd) return dim - PrimExpr(int64_t{1});
      if (is_end && x <= -kToEnd - 1) return PrimExpr(int64_t{-1});
    }
    return x < 0 ? dim + PrimExpr(x) : PrimExpr(x);
  };
  PrimExpr nb = side(b, cb, false), ne = side(e, ce, true);
  if (!assume_inbound) {
    PrimExpr lo = s > 0 ? PrimExpr(int64_t{0}) : PrimExpr(int64_t{-1});
    PrimExpr hi = s > 0 ? dim : dim - PrimExpr(int64_t{1});
    nb = ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, nb, lo), hi);
    ne = ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, ne, lo), hi);
  }
  int64_t step = s > 0 ? s : -s;
  PrimExpr span = s > 0 ? ne - nb : nb - ne;
  PrimExpr ext = ir::MakeBinary(ir::TirKind::kFloorDiv, span + PrimExpr(step - 1), PrimExpr(step));
  if (!assume_inbound) ext = ir::MakeBinary(ir::TirKind::kMax, ext, PrimExpr(int64_t{0}));
  return {SimplifyDim(nb), SimplifyDim(ext)};
}

Result<ir::StructInfo> InferStridedSlice(const ir::CallExpr& call) {
  KILN_RETURN_IF_ERROR(CheckArgCount(call, 1, 5));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0));
  if (x->ndim < 0) return ir::MakeTensorSInfoNdim(-1, x->dtype);
  KILN_ASSIGN_OR_RETURN(SliceParams p, ReadParams(call, x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim, x->dtype);
  std::vector<PrimExpr> out = x->shape;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    out[p.axes[k]] = SliceAxis(x->shape[p.axes[k]], p.begin[k], p.end[k], p.strides[k], p.assume_inbound).extent;
  }
  return ir::MakeTensorSInfo(out, x->dtype);
}

// out[i] = x[begin + i * stride] along the sliced axes.
Result<ir::PrimFunc> LegalizeStridedSlice(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, KnownTensorArg(call, 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, KnownTensorResult(call));
  KILN_ASSIGN_OR_RETURN(SliceParams p, ReadParams(call, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor a = b.Input("A", BindableShape(x->shape, "A"), x->dtype);
  std::vector<PrimExpr> begin(x->ndim, PrimExpr(int64_t{0}));
  std::vector<int64_t> stride(x->ndim, 1);
  for (size_t k = 0; k < p.axes.size(); ++k) {
    int ax = p.axes[k];
    begin[ax] = SliceAxis(a.shape()[ax], b.Local(p.begin[k]), b.Local(p.end[k]), p.strides[k], p.assume_inbound).begin;
    stride[ax] = p.strides[k];
  }
  te::Tensor r = b.Compute("T_strided_slice", BindableShape(out->shape, "T_strided_slice"), out->dtype, [&](const te::Indices& i) {
    te::Indices idx;
    for (int d = 0; d < x->ndim; ++d) idx.push_back(SimplifyDim(begin[d] + i[d] * PrimExpr(stride[d])));
    return a(idx);
  });
  return b.Build({r});
}

}  // namespace

void AddSliceOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.strided_slice", "strided_slice", -1, InferStridedSlice, LegalizeStridedSlice,
                OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
