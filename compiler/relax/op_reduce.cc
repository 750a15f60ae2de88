// Reductions: sum, mean, prod, max, min, variance, std over any axes
// (axis=None: all) with keepdims, and argmax / argmin (one axis or all,
// int64 result, first occurrence).
//
// Attributes as TVM: R.sum(x, axis=[1], keepdims=False); R.argmax(x, axis=-1,
// keepdims=False). The result keeps the operand's dtype (argmax/argmin:
// int64); reduced dimensions are dropped, or kept as 1 with keepdims.
//
// Kernels:
// - sum/prod/max/min: one reduction stage. float16 sums and products
//   accumulate in float32 (a stage converts back), so long rows keep their
//   precision.
// - mean: sum, then a division by the element count (symbolic counts too).
// - variance (population, divides by N as TVM): mean, then the sum of squared
//   deviations (two passes: no cancellation), then the division; std adds a
//   square root.
// - argmax/argmin: the extreme value, then the smallest flat index whose value
//   equals it (so ties give the first occurrence). NaN counts as the extreme,
//   as numpy (a NaN and an infinity of the same sign tie: the first wins).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/relax/op_defs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

enum class RKind { kSum, kMean, kProd, kMax, kMin, kVariance, kStd, kArgMax, kArgMin };

struct ReduceDef {
  const char* name;
  const char* short_name;
  RKind kind;
};

const ReduceDef kReduce[] = {
    {"relax.sum", "sum", RKind::kSum},          {"relax.mean", "mean", RKind::kMean},
    {"relax.prod", "prod", RKind::kProd},       {"relax.max", "max", RKind::kMax},
    {"relax.min", "min", RKind::kMin},          {"relax.variance", "variance", RKind::kVariance},
    {"relax.std", "std", RKind::kStd},          {"relax.argmax", "argmax", RKind::kArgMax},
    {"relax.argmin", "argmin", RKind::kArgMin},
};

const ReduceDef* FindDef(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (!op) return nullptr;
  for (const ReduceDef& d : kReduce)
    if (op->name == d.name) return &d;
  return nullptr;
}

bool IsArg(RKind k) { return k == RKind::kArgMax || k == RKind::kArgMin; }

// The reduction as read from the call: which axes (sorted; all when the
// attribute is None), keepdims.
struct Plan {
  std::vector<int64_t> axes;
  bool all = false;  // axis=None
  bool keepdims = false;
};

// `ndim` < 0: unknown rank; axes are then not checked.
Result<Plan> ReadPlan(const ir::CallExpr& call, RKind kind, int64_t ndim) {
  Plan p;
  KILN_ASSIGN_OR_RETURN(p.keepdims, BoolAttr(call, "keepdims", false));
  std::optional<std::vector<int64_t>> axes;
  if (IsArg(kind)) {
    KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis, AxisAttr(call, "axis"));
    if (axis) axes = std::vector<int64_t>{*axis};
  } else {
    KILN_ASSIGN_OR_RETURN(axes, AxesAttr(call, "axis"));
  }
  p.all = !axes.has_value();
  if (ndim < 0) return p;
  if (p.all) {
    for (int64_t i = 0; i < ndim; ++i) p.axes.push_back(i);
  } else {
    KILN_ASSIGN_OR_RETURN(p.axes, NormalizeAxes(call, *axes, ndim));
  }
  return p;
}

bool Reduced(const Plan& p, int64_t d) { return std::find(p.axes.begin(), p.axes.end(), d) != p.axes.end(); }

std::vector<PrimExpr> OutShape(const Plan& p, const std::vector<PrimExpr>& in) {
  std::vector<PrimExpr> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!Reduced(p, static_cast<int64_t>(d))) {
      out.push_back(in[d]);
    } else if (p.keepdims) {
      out.push_back(PrimExpr(int64_t{1}));
    }
  }
  return out;
}

Result<ir::StructInfo> InferReduce(const ir::CallExpr& call) {
  const ReduceDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "the operand"));
  if (x->has_dtype) {
    if (IsBool(x->dtype) || x->dtype.lanes != 1) return Error(call, "does not accept " + Str(x->dtype) + " tensors");
    bool stats = def->kind == RKind::kVariance || def->kind == RKind::kStd;
    if (stats && !x->dtype.is_float()) return Error(call, "requires a float tensor, got " + Str(x->dtype));
  }
  KILN_ASSIGN_OR_RETURN(Plan p, ReadPlan(call, def->kind, x->ndim));
  DType dtype = IsArg(def->kind) ? DType::Int64() : x->dtype;
  bool known_dtype = IsArg(def->kind) || x->has_dtype;
  if (x->has_shape) {
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(true, OutShape(p, x->shape), -1, dtype, known_dtype));
  }
  // Reducing everything without keepdims gives a scalar whatever the rank.
  if (p.all && !p.keepdims) {
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(true, std::vector<PrimExpr>{}, 0, dtype, known_dtype));
  }
  int ndim = -1;
  if (p.keepdims) {
    ndim = x->ndim;
  } else if (x->ndim >= 0) {
    ndim = x->ndim - static_cast<int>(p.axes.size());
  }
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, ndim, dtype, known_dtype));
}

// The operand's index for output index `i` and reduction index `r`.
te::Indices InputIndex(const Plan& p, size_t ndim, const te::Indices& i, const te::Indices& r) {
  te::Indices idx;
  size_t oi = 0, ri = 0;
  for (size_t d = 0; d < ndim; ++d) {
    if (Reduced(p, static_cast<int64_t>(d))) {
      idx.push_back(r[ri++]);
      if (p.keepdims) ++oi;
    } else {
      idx.push_back(i[oi++]);
    }
  }
  return idx;
}

PrimExpr Product(const std::vector<PrimExpr>& dims) {
  PrimExpr n(int64_t{1});
  for (const auto& d : dims) n = n * d;
  return n;
}

Result<ir::PrimFunc> LegalizeReduce(const ir::CallExpr& call, const std::string& name) {
  const ReduceDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(Plan p, ReadPlan(call, def->kind, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor in = b.Input("A", x->shape, x->dtype);
  const std::vector<PrimExpr>& shape = in.shape();
  std::vector<PrimExpr> out_shape = OutShape(p, shape);
  std::vector<PrimExpr> extents;
  for (int64_t a : p.axes) extents.push_back(shape[a]);
  size_t nd = shape.size();
  DType dt = x->dtype;
  auto load = [&](const te::Indices& i, const te::Indices& r) { return in(InputIndex(p, nd, i, r)); };
  std::string block = std::string("T_") + def->short_name;

  if (def->kind == RKind::kMax || def->kind == RKind::kMin) {
    te::ReduceKind k = def->kind == RKind::kMax ? te::ReduceKind::kMax : te::ReduceKind::kMin;
    return b.Build({b.Reduce(block, out_shape, dt, k, extents, load)});
  }

  if (IsArg(def->kind)) {
    bool is_max = def->kind == RKind::kArgMax;
    // NaN is the extreme: map it to +-inf for the value stage and the match.
    auto key = [&](const PrimExpr& v) {
      if (!dt.is_float()) return v;
      return Select(Bin(TirKind::kNE, v, v), Const(dt, is_max ? HUGE_VAL : -HUGE_VAL), v);
    };
    te::Tensor best = b.Reduce(block + "_value", out_shape, dt, is_max ? te::ReduceKind::kMax : te::ReduceKind::kMin,
                               extents, [&](const te::Indices& i, const te::Indices& r) { return key(load(i, r)); });
    te::Tensor index = b.Reduce(block, out_shape, DType::Int64(), te::ReduceKind::kMin, extents,
                                [&](const te::Indices& i, const te::Indices& r) {
                                  // Row-major flat index over the reduced axes.
                                  PrimExpr flat(int64_t{0});
                                  for (size_t k = 0; k < r.size(); ++k) flat = flat * extents[k] + r[k];
                                  return Select(Bin(TirKind::kEQ, key(load(i, r)), best(i)), flat,
                                                ir::IntImm(DType::Int64(), std::numeric_limits<int64_t>::max()));
                                });
    return b.Build({index});
  }

  // Sums and products accumulate in float32 for float16 operands.
  DType acc = dt == DType::Float16() ? DType::Float32() : dt;
  auto widened = [&](const te::Indices& i, const te::Indices& r) { return CastTo(acc, load(i, r)); };
  auto narrow = [&](const te::Tensor& t, const std::string& stage) {
    if (acc == dt) return t;
    return b.Compute(stage, out_shape, dt, [&](const te::Indices& i) { return ir::Cast(dt, t(i)); });
  };
  if (def->kind == RKind::kSum || def->kind == RKind::kProd) {
    te::ReduceKind k = def->kind == RKind::kSum ? te::ReduceKind::kSum : te::ReduceKind::kProd;
    if (acc == dt) return b.Build({b.Reduce(block, out_shape, dt, k, extents, load)});
    te::Tensor s = b.Reduce(block + "_acc", out_shape, acc, k, extents, widened);
    return b.Build({narrow(s, block)});
  }

  // mean / variance / std: divide by the element count, in the accumulator's dtype.
  PrimExpr count = CastTo(acc, b.Local(Product(extents)));
  te::Tensor sum = b.Reduce(block + "_sum", out_shape, acc, te::ReduceKind::kSum, extents, widened);
  te::Tensor mean = b.Compute(def->kind == RKind::kMean && acc == dt ? block : block + "_mean", out_shape, acc,
                              [&](const te::Indices& i) { return Bin(TirKind::kDiv, sum(i), count); });
  if (def->kind == RKind::kMean) return b.Build({narrow(mean, block)});

  // Deviations are taken from the mean broadcast back over the reduced axes.
  te::Tensor sq = b.Reduce(block + "_sqsum", out_shape, acc, te::ReduceKind::kSum, extents,
                           [&](const te::Indices& i, const te::Indices& r) {
                             PrimExpr d = Bin(TirKind::kSub, widened(i, r), mean(i));
                             return Bin(TirKind::kMul, d, d);
                           });
  bool is_std = def->kind == RKind::kStd;
  te::Tensor var = b.Compute(acc == dt && !is_std ? block : block + "_var", out_shape, acc, [&](const te::Indices& i) {
    return Bin(TirKind::kDiv, sq(i), count);
  });
  if (is_std) {
    te::Tensor sd = b.Compute(acc == dt ? block : block + "_sqrt", out_shape, acc,
                              [&](const te::Indices& i) { return Intrin(acc, "sqrt", {var(i)}); });
    return b.Build({narrow(sd, block)});
  }
  return b.Build({narrow(var, block)});
}

}  // namespace

void AddReduceOps(std::vector<OpInfo>* t) {
  for (const ReduceDef& d : kReduce) t->push_back({d.name, d.short_name, 1, InferReduce, LegalizeReduce, OpPattern::kCommReduce});
}

}  // namespace relax
}  // namespace kiln
