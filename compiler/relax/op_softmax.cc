// relax.nn.softmax and relax.nn.log_softmax over one axis (default -1).
//
// Numerically stable: the row maximum is subtracted before exponentiating, so
// large inputs do not overflow. One PrimFunc of four stages (max, exp, sum,
// normalize); float16 inputs are computed in float32 and cast back.
//
// nan_to=c (optional, a float): every NaN of the result becomes c, as
// R.where(R.isnan(s), c, s) would make it; fold-softmax-nan-guard
// (compiler/transform) writes it for that pattern (torch's masked-attention
// export guards fully masked rows so), sparing a pass over the result.
#include "compiler/relax/op_defs.h"

#include <optional>

#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

Result<ir::StructInfo> InferSoftmax(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"axis", "nan_to"}));
  KILN_RETURN_IF_ERROR(r.Float("nan_to", 0.0).status());
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  if (x->has_dtype && !x->dtype.is_float()) {
    return r.Error("expects a float tensor, got " + DTypeToString(x->dtype));
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", -1));
  if (x->ndim >= 0) KILN_RETURN_IF_ERROR(NormalizeAxis(r, axis, x->ndim).status());
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeSoftmaxImpl(const ir::CallExpr& call, const std::string& name, bool log) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, r.Int("axis", -1));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(r, axis_attr, xi->ndim));
  std::optional<double> nan_to;
  if (r.Has("nan_to")) {
    KILN_ASSIGN_OR_RETURN(double c, r.Float("nan_to", 0.0));
    nan_to = c;
  }
  std::vector<int> axes{axis};
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("A", xi->shape, dt);
  size_t nd = x.ndim();
  auto in = [&](const te::Indices& i) { return CastTo(ct, x(i)); };
  std::vector<PrimExpr> rows = KeptDims(x.shape(), axes);
  te::Tensor mx = b.Reduce("T_max", rows, ct, te::ReduceKind::kMax, {x.shape()[axis]},
                           [&](const te::Indices& i, const te::Indices& k) { return in(MergeIndex(nd, axes, i, k)); });
  // x - max <= 0 (NaN aside); saying so with min(., 0), which changes no
  // value, lets the kernel emitter scale the exponential in one step
  // (vector_math.h ExpNonPositive: five operations fewer per vector; 512
  // rows of 128, one thread: 23.5 -> 21.6 us).
  te::Tensor ex = b.Compute("T_exp", x.shape(), ct, [&](const te::Indices& i) {
    PrimExpr d = in(i) - mx(KeptIndex(axes, i));
    return Intrin("exp", {ir::MakeBinary(ir::TirKind::kMin, d, ir::FloatImm(ct, 0.0))});
  });
  te::Tensor sum = b.Reduce("T_sum", rows, ct, te::ReduceKind::kSum, {x.shape()[axis]},
                            [&](const te::Indices& i, const te::Indices& k) { return ex(MergeIndex(nd, axes, i, k)); });
  te::Tensor out = b.Compute(log ? "T_log_softmax" : "T_softmax", x.shape(), dt, [&](const te::Indices& i) {
    te::Indices row = KeptIndex(axes, i);
    PrimExpr v = log ? in(i) - mx(row) - Intrin("log", {sum(row)})
                     : ir::MakeBinary(ir::TirKind::kDiv, ex(i), sum(row));
    // v != v exactly for NaN (one compare).
    if (nan_to) v = elem::Select(ir::MakeBinary(ir::TirKind::kNE, v, v), ir::FloatImm(ct, *nan_to), v);
    return CastTo(dt, v);
  });
  return b.Build({out});
}

Result<ir::PrimFunc> LegalizeSoftmax(const ir::CallExpr& c, const std::string& n) { return LegalizeSoftmaxImpl(c, n, false); }
Result<ir::PrimFunc> LegalizeLogSoftmax(const ir::CallExpr& c, const std::string& n) { return LegalizeSoftmaxImpl(c, n, true); }

}  // namespace
}  // namespace nn

void AddSoftmaxOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.softmax", "softmax", 1, InferSoftmax, LegalizeSoftmax, OpPattern::kOpaque});
  t->push_back({"relax.nn.log_softmax", "log_softmax", 1, InferSoftmax, LegalizeLogSoftmax, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
