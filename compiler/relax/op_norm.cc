// Normalizations: relax.nn.layer_norm, rms_norm, group_norm and batch_norm
// (inference form).
//
// layer_norm(x, gamma, beta, axes, epsilon=1e-5, center=True, scale=True):
//   statistics over `axes`; gamma/beta have the shape of those axes.
// rms_norm(x, weight, axes=[-1], epsilon=1e-5): x / sqrt(mean(x^2) + eps) * w.
// group_norm(x, gamma, beta, num_groups, channel_axis=1, axes, epsilon, center,
//   scale): statistics per group of C / num_groups channels and `axes`.
// batch_norm(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon, center,
//   scale): uses the moving statistics and returns TVM's tuple
//   (out, moving_mean, moving_var); training=True is not supported.
//
// Variance is two-pass (mean first, then the mean of squared deviations):
// more accurate than E[x^2] - E[x]^2. float16 computes in float32.
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

PrimExpr Div(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kDiv, std::move(a), std::move(b)); }

// Checks that parameter `i` (gamma, beta, ...) has dtype `dt` and shape `want`.
Status CheckParam(const AttrReader& r, size_t i, const char* what, const ir::TensorSInfo& x,
                  const std::vector<PrimExpr>& want) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* p, TensorArg(r, i, what));
  if (p->has_dtype && x.has_dtype && p->dtype != x.dtype) {
    return r.Error(std::string(what) + " has dtype " + DTypeToString(p->dtype) + " but data has " +
                   DTypeToString(x.dtype));
  }
  if (!p->has_shape || !x.has_shape) return Status::Ok();
  bool ok = p->shape.size() == want.size();
  for (size_t d = 0; ok && d < want.size(); ++d) ok = CompareDims(p->shape[d], want[d]) != DimRelation::kNotEqual;
  if (!ok) return r.Error(std::string(what) + " has shape " + ShapeString(p->shape) + ", expected " + ShapeString(want));
  return Status::Ok();
}

Status CheckFloatData(const AttrReader& r, const ir::TensorSInfo& x) {
  if (x.has_dtype && !x.dtype.is_float()) return r.Error("expects a float tensor, got " + DTypeToString(x.dtype));
  return Status::Ok();
}

// Sorted normalized axes (needs a known rank).
Result<std::vector<int>> SortedAxes(const AttrReader& r, const std::vector<int64_t>& axes, int ndim) {
  KILN_ASSIGN_OR_RETURN(std::vector<int> a, NormalizeAxes(r, axes, ndim));
  std::sort(a.begin(), a.end());
  return a;
}

// ---------------------------------------------------------------- layer_norm

Result<ir::StructInfo> InferLayerNorm(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"axes", "epsilon", "center", "scale"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_RETURN_IF_ERROR(CheckFloatData(r, *x));
  KILN_RETURN_IF_ERROR(r.Float("epsilon", 1e-5).status());
  KILN_RETURN_IF_ERROR(r.Bool("center", true).status());
  KILN_RETURN_IF_ERROR(r.Bool("scale", true).status());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, r.IntList("axes", {-1}));
  if (x->ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> a, SortedAxes(r, axes, x->ndim));
    KILN_RETURN_IF_ERROR(CheckParam(r, 1, "gamma", *x, AxesDims(x->shape, a)));
    KILN_RETURN_IF_ERROR(CheckParam(r, 2, "beta", *x, AxesDims(x->shape, a)));
  }
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeLayerNorm(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* gi, ShapedArg(r, 1, "gamma"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ShapedArg(r, 2, "beta"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes_attr, r.IntList("axes", {-1}));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, SortedAxes(r, axes_attr, xi->ndim));
  KILN_ASSIGN_OR_RETURN(double eps, r.Float("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(bool center, r.Bool("center", true));
  KILN_ASSIGN_OR_RETURN(bool scale, r.Bool("scale", true));
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("A", xi->shape, dt);
  te::Tensor gamma = b.Input("gamma", gi->shape, gi->dtype);
  te::Tensor beta = b.Input("beta", bi->shape, bi->dtype);
  size_t nd = x.ndim();
  auto in = [&](const te::Indices& i) { return CastTo(ct, x(i)); };
  std::vector<PrimExpr> rows = KeptDims(x.shape(), axes), red = AxesDims(x.shape(), axes);
  PrimExpr count = ir::Cast(ct, DimProduct(red));
  te::Tensor sum = b.Reduce("T_sum", rows, ct, te::ReduceKind::kSum, red,
                            [&](const te::Indices& i, const te::Indices& k) { return in(MergeIndex(nd, axes, i, k)); });
  te::Tensor mean = b.Compute("T_mean", rows, ct, [&](const te::Indices& i) { return Div(sum(i), count); });
  te::Tensor var = b.Reduce("T_var", rows, ct, te::ReduceKind::kSum, red, [&](const te::Indices& i, const te::Indices& k) {
    PrimExpr d = in(MergeIndex(nd, axes, i, k)) - mean(i);
    return d * d;
  });
  te::Tensor out = b.Compute("T_layer_norm", x.shape(), dt, [&](const te::Indices& i) {
    te::Indices row = KeptIndex(axes, i);
    te::Indices p;
    for (int a : axes) p.push_back(i[a]);
    PrimExpr v = Div(in(i) - mean(row), Intrin("sqrt", {Div(var(row), count) + Const(ct, eps)}));
    if (scale) v = v * CastTo(ct, gamma(p));
    if (center) v = v + CastTo(ct, beta(p));
    return CastTo(dt, v);
  });
  return b.Build({out});
}

// ---------------------------------------------------------------- rms_norm

Result<ir::StructInfo> InferRmsNorm(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"axes", "epsilon"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_RETURN_IF_ERROR(CheckFloatData(r, *x));
  KILN_RETURN_IF_ERROR(r.Float("epsilon", 1e-5).status());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, r.IntList("axes", {-1}));
  if (x->ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> a, SortedAxes(r, axes, x->ndim));
    KILN_RETURN_IF_ERROR(CheckParam(r, 1, "weight", *x, AxesDims(x->shape, a)));
  }
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeRmsNorm(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* wi, ShapedArg(r, 1, "weight"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes_attr, r.IntList("axes", {-1}));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, SortedAxes(r, axes_attr, xi->ndim));
  KILN_ASSIGN_OR_RETURN(double eps, r.Float("epsilon", 1e-5));
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("A", xi->shape, dt);
  te::Tensor w = b.Input("weight", wi->shape, wi->dtype);
  size_t nd = x.ndim();
  auto in = [&](const te::Indices& i) { return CastTo(ct, x(i)); };
  std::vector<PrimExpr> rows = KeptDims(x.shape(), axes), red = AxesDims(x.shape(), axes);
  PrimExpr count = ir::Cast(ct, DimProduct(red));
  te::Tensor sq = b.Reduce("T_sqsum", rows, ct, te::ReduceKind::kSum, red, [&](const te::Indices& i, const te::Indices& k) {
    PrimExpr v = in(MergeIndex(nd, axes, i, k));
    return v * v;
  });
  te::Tensor out = b.Compute("T_rms_norm", x.shape(), dt, [&](const te::Indices& i) {
    te::Indices p;
    for (int a : axes) p.push_back(i[a]);
    PrimExpr rms = Intrin("sqrt", {Div(sq(KeptIndex(axes, i)), count) + Const(ct, eps)});
    return CastTo(dt, Div(in(i), rms) * CastTo(ct, w(p)));
  });
  return b.Build({out});
}

// ---------------------------------------------------------------- group_norm

struct GroupNormAttrs {
  int64_t groups;
  int channel;
  std::vector<int> axes;
  double eps;
  bool center, scale;
};

Result<GroupNormAttrs> ReadGroupNorm(const AttrReader& r, const ir::TensorSInfo& x) {
  GroupNormAttrs a;
  if (!r.Has("num_groups")) return r.Error("num_groups is required");
  KILN_ASSIGN_OR_RETURN(a.groups, r.Int("num_groups", 1));
  if (a.groups <= 0) return r.Error("num_groups must be positive, got " + std::to_string(a.groups));
  KILN_ASSIGN_OR_RETURN(int64_t ch, r.Int("channel_axis", 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, r.IntList("axes", {}));
  KILN_ASSIGN_OR_RETURN(a.eps, r.Float("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(a.center, r.Bool("center", true));
  KILN_ASSIGN_OR_RETURN(a.scale, r.Bool("scale", true));
  if (x.ndim < 0) return a;
  KILN_ASSIGN_OR_RETURN(a.channel, NormalizeAxis(r, ch, x.ndim));
  if (!r.Has("axes")) {
    for (int d = 2; d < x.ndim; ++d) axes.push_back(d);  // TVM's NCHW default: the spatial axes
  }
  KILN_ASSIGN_OR_RETURN(a.axes, SortedAxes(r, axes, x.ndim));
  if (std::find(a.axes.begin(), a.axes.end(), a.channel) != a.axes.end()) {
    return r.Error("axes must not contain the channel axis " + std::to_string(a.channel));
  }
  if (x.has_shape) {
    auto c = ConstDim(x.shape[a.channel]);
    if (c && *c % a.groups != 0) {
      return r.Error(std::to_string(*c) + " channels do not divide into " + std::to_string(a.groups) + " groups");
    }
  }
  return a;
}

Result<ir::StructInfo> InferGroupNorm(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"num_groups", "channel_axis", "axes", "epsilon", "center", "scale"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_RETURN_IF_ERROR(CheckFloatData(r, *x));
  KILN_ASSIGN_OR_RETURN(GroupNormAttrs a, ReadGroupNorm(r, *x));
  if (x->ndim >= 0) {
    KILN_RETURN_IF_ERROR(CheckParam(r, 1, "gamma", *x, {x->shape[a.channel]}));
    KILN_RETURN_IF_ERROR(CheckParam(r, 2, "beta", *x, {x->shape[a.channel]}));
  }
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeGroupNorm(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* gi, ShapedArg(r, 1, "gamma"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ShapedArg(r, 2, "beta"));
  KILN_ASSIGN_OR_RETURN(GroupNormAttrs a, ReadGroupNorm(r, *xi));
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("A", xi->shape, dt);
  te::Tensor gamma = b.Input("gamma", gi->shape, gi->dtype);
  te::Tensor beta = b.Input("beta", bi->shape, bi->dtype);
  size_t nd = x.ndim();
  auto in = [&](const te::Indices& i) { return CastTo(ct, x(i)); };
  // Statistics are indexed by (dims outside channel and axes..., group); the
  // reduction runs over (channel within the group, axes...).
  std::vector<int> outside_axes = a.axes;
  outside_axes.push_back(a.channel);
  std::sort(outside_axes.begin(), outside_axes.end());
  std::vector<PrimExpr> stat_shape = KeptDims(x.shape(), outside_axes);
  stat_shape.push_back(PrimExpr(a.groups));
  PrimExpr cpg = ir::MakeBinary(ir::TirKind::kFloorDiv, x.shape()[a.channel], PrimExpr(a.groups));
  std::vector<PrimExpr> red{cpg};
  for (int ax : a.axes) red.push_back(x.shape()[ax]);
  PrimExpr count = ir::Cast(ct, DimProduct(red));
  // The data index of statistics index `s` (kept..., g) and reduction `k`.
  auto data_index = [&](const te::Indices& s, const te::Indices& k) {
    te::Indices kept(s.begin(), s.end() - 1);
    te::Indices full_red{s.back() * cpg + k[0]};
    full_red.insert(full_red.end(), k.begin() + 1, k.end());
    // outside_axes are sorted; their order in full_red must follow it.
    std::vector<PrimExpr> ordered;
    size_t ai = 1;
    for (int ax : outside_axes) ordered.push_back(ax == a.channel ? full_red[0] : full_red[ai++]);
    return MergeIndex(nd, outside_axes, kept, ordered);
  };
  auto stat_index = [&](const te::Indices& i) {
    te::Indices s = KeptIndex(outside_axes, i);
    s.push_back(ir::MakeBinary(ir::TirKind::kFloorDiv, i[a.channel], cpg));
    return s;
  };
  te::Tensor sum = b.Reduce("T_sum", stat_shape, ct, te::ReduceKind::kSum, red,
                            [&](const te::Indices& s, const te::Indices& k) { return in(data_index(s, k)); });
  te::Tensor mean = b.Compute("T_mean", stat_shape, ct, [&](const te::Indices& s) { return Div(sum(s), count); });
  te::Tensor var = b.Reduce("T_var", stat_shape, ct, te::ReduceKind::kSum, red, [&](const te::Indices& s, const te::Indices& k) {
    PrimExpr d = in(data_index(s, k)) - mean(s);
    return d * d;
  });
  te::Tensor out = b.Compute("T_group_norm", x.shape(), dt, [&](const te::Indices& i) {
    te::Indices s = stat_index(i);
    PrimExpr v = Div(in(i) - mean(s), Intrin("sqrt", {Div(var(s), count) + Const(ct, a.eps)}));
    if (a.scale) v = v * CastTo(ct, gamma({i[a.channel]}));
    if (a.center) v = v + CastTo(ct, beta({i[a.channel]}));
    return CastTo(dt, v);
  });
  return b.Build({out});
}

// ---------------------------------------------------------------- batch_norm

Result<ir::StructInfo> InferBatchNorm(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"axis", "epsilon", "center", "scale", "momentum", "training"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_RETURN_IF_ERROR(CheckFloatData(r, *x));
  KILN_RETURN_IF_ERROR(r.Float("epsilon", 1e-5).status());
  KILN_RETURN_IF_ERROR(r.Float("momentum", 0.1).status());
  KILN_RETURN_IF_ERROR(r.Bool("center", true).status());
  KILN_RETURN_IF_ERROR(r.Bool("scale", true).status());
  KILN_ASSIGN_OR_RETURN(bool training, r.Bool("training", false));
  if (training) {
    return Unimplemented(Where(call.span) + r.op() + ": training=True is not supported (inference only)");
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, r.Int("axis", 1));
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_var"};
  if (x->ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(r, axis_attr, x->ndim));
    std::vector<PrimExpr> c = x->has_shape ? std::vector<PrimExpr>{x->shape[axis]} : std::vector<PrimExpr>{};
    for (size_t i = 0; i < 4; ++i) KILN_RETURN_IF_ERROR(CheckParam(r, i + 1, names[i], *x, c));
  } else {
    for (size_t i = 0; i < 4; ++i) KILN_RETURN_IF_ERROR(TensorArg(r, i + 1, names[i]).status());
  }
  return ir::StructInfo(std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{
      call.args[0]->struct_info, call.args[3]->struct_info, call.args[4]->struct_info}));
}

Result<ir::PrimFunc> LegalizeBatchNorm(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_var"};
  const ir::TensorSInfo* p[4];
  for (size_t i = 0; i < 4; ++i) {
    KILN_ASSIGN_OR_RETURN(p[i], ShapedArg(r, i + 1, names[i]));
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, r.Int("axis", 1));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(r, axis_attr, xi->ndim));
  KILN_ASSIGN_OR_RETURN(double eps, r.Float("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(bool center, r.Bool("center", true));
  KILN_ASSIGN_OR_RETURN(bool scale, r.Bool("scale", true));
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("A", xi->shape, dt);
  te::Tensor in[4];
  for (size_t i = 0; i < 4; ++i) in[i] = b.Input(names[i], p[i]->shape, p[i]->dtype);
  te::Tensor out = b.Compute("T_batch_norm", x.shape(), dt, [&](const te::Indices& i) {
    te::Indices c{i[axis]};
    PrimExpr v = Div(CastTo(ct, x(i)) - CastTo(ct, in[2](c)), Intrin("sqrt", {CastTo(ct, in[3](c)) + Const(ct, eps)}));
    if (scale) v = v * CastTo(ct, in[0](c));
    if (center) v = v + CastTo(ct, in[1](c));
    return CastTo(dt, v);
  });
  // Inference returns the moving statistics unchanged (as TVM does); outputs
  // are distinct buffers, so they are copied.
  te::Tensor mean = b.Compute("T_moving_mean", in[2].shape(), in[2].dtype(), [&](const te::Indices& i) { return in[2](i); });
  te::Tensor var = b.Compute("T_moving_var", in[3].shape(), in[3].dtype(), [&](const te::Indices& i) { return in[3](i); });
  return b.Build({out, mean, var});
}

}  // namespace
}  // namespace nn

void AddNormOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.layer_norm", "layer_norm", 3, InferLayerNorm, LegalizeLayerNorm, OpPattern::kOpaque});
  t->push_back({"relax.nn.rms_norm", "rms_norm", 2, InferRmsNorm, LegalizeRmsNorm, OpPattern::kOpaque});
  t->push_back({"relax.nn.group_norm", "group_norm", 3, InferGroupNorm, LegalizeGroupNorm, OpPattern::kOpaque});
  t->push_back({"relax.nn.batch_norm", "batch_norm", 5, InferBatchNorm, LegalizeBatchNorm, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
