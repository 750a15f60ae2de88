// Pooling: relax.nn.max_pool2d, relax.nn.avg_pool2d, relax.nn.adaptive_avg_pool2d.
//
// max/avg_pool2d(data, pool_size, strides, padding, dilation, ceil_mode,
//   count_include_pad, layout, out_layout): layout NCHW or NHWC (out_layout
//   must match). Output size (in + pads - d * (k - 1) - 1) / s + 1, rounded
//   up with ceil_mode (TVM's rule: stride - 1 is added to the numerator).
//   Padding never wins a max; avg divides by the taps inside the data
//   (count_include_pad=False) or inside the padded data (True); taps past the
//   bottom/right padding (ceil_mode) never count.
// adaptive_avg_pool2d(data, output_size, layout): output cell (y, x) averages
//   rows [floor(y * H / OH), ceil((y + 1) * H / OH)) and likewise columns;
//   output_size None keeps the input size, one value is used for both.
#include "compiler/relax/op_defs.h"

#include "compiler/arith/simplify.h"
#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kAnd, std::move(a), std::move(b)); }
PrimExpr InRange(const PrimExpr& v, const PrimExpr& lo, const PrimExpr& hi) {
  return And(ir::MakeBinary(ir::TirKind::kGE, v, lo), ir::MakeBinary(ir::TirKind::kLT, v, hi));
}

struct PoolAttrs {
  std::vector<int64_t> size, strides, dilation, pad_lo, pad_hi;
  bool ceil_mode = false, count_include_pad = false;
  int hpos = 2, wpos = 3;  // positions of H and W in the layout
};

Result<int> LayoutHW(const AttrReader& r, std::string* layout) {
  KILN_ASSIGN_OR_RETURN(*layout, r.String("layout", "NCHW", {"NCHW", "NHWC"}));
  KILN_ASSIGN_OR_RETURN(std::string out, r.String("out_layout", *layout));
  if (out != *layout) {
    return Unimplemented(Where(r.call().span) + r.op() + ": out_layout \"" + out + "\" differs from layout \"" + *layout + "\"");
  }
  return *layout == "NCHW" ? 2 : 1;
}

Result<PoolAttrs> ReadPoolAttrs(const AttrReader& r) {
  PoolAttrs a;
  KILN_ASSIGN_OR_RETURN(a.size, r.IntListN("pool_size", {1}, 2));
  KILN_ASSIGN_OR_RETURN(a.strides, r.IntListN("strides", {1}, 2));
  KILN_ASSIGN_OR_RETURN(a.dilation, r.IntListN("dilation", {1}, 2));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pad, r.IntList("padding", {0}));
  if (pad.size() == 1) pad = {pad[0], pad[0], pad[0], pad[0]};
  if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
  if (pad.size() != 4) return r.Error("padding takes 1, 2 or 4 values, got " + std::to_string(pad.size()));
  a.pad_lo = {pad[0], pad[1]};
  a.pad_hi = {pad[2], pad[3]};
  KILN_ASSIGN_OR_RETURN(a.ceil_mode, r.Bool("ceil_mode", false));
  KILN_ASSIGN_OR_RETURN(a.count_include_pad, r.Bool("count_include_pad", false));
  for (int i = 0; i < 2; ++i) {
    if (a.size[i] <= 0) return r.Error("pool_size must be positive");
    if (a.strides[i] <= 0) return r.Error("strides must be positive");
    if (a.dilation[i] <= 0) return r.Error("dilation must be positive");
    if (a.pad_lo[i] < 0 || a.pad_hi[i] < 0) return r.Error("padding must not be negative");
  }
  std::string layout;
  KILN_ASSIGN_OR_RETURN(a.hpos, LayoutHW(r, &layout));
  a.wpos = a.hpos + 1;
  return a;
}

Result<ir::StructInfo> InferPool(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown(
      {"pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad", "layout", "out_layout"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(r));
  if (x->ndim >= 0 && x->ndim != 4) return r.Error("data must have rank 4, got " + std::to_string(x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(4, x->dtype);
  std::vector<PrimExpr> out = x->shape;
  int pos[2] = {a.hpos, a.wpos};
  for (int i = 0; i < 2; ++i) {
    int64_t dk = a.dilation[i] * (a.size[i] - 1) + 1;
    PrimExpr num = x->shape[pos[i]] + PrimExpr(a.pad_lo[i] + a.pad_hi[i] - dk + (a.ceil_mode ? a.strides[i] - 1 : 0));
    PrimExpr size = arith::Simplify(FloorDiv(num, PrimExpr(a.strides[i])) + PrimExpr(1));
    if (auto v = ConstDim(size); v && *v <= 0) {
      return r.Error("the window " + std::to_string(a.size[0]) + "x" + std::to_string(a.size[1]) +
                     " does not fit in the padded input " + ShapeString(x->shape));
    }
    out[pos[i]] = size;
  }
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizePoolImpl(const ir::CallExpr& call, const std::string& name, bool is_max) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* oi, ShapedResult(r));
  KILN_ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(r));
  DType dt = xi->dtype;
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, dt);
  std::vector<PrimExpr> out_shape = b.Local(oi->shape);
  int pos[2] = {a.hpos, a.wpos};
  std::vector<PrimExpr> window{PrimExpr(a.size[0]), PrimExpr(a.size[1])};
  // Data position of tap k of output index i along spatial dim s.
  auto tap = [&](const te::Indices& i, const te::Indices& k, int s) {
    return i[pos[s]] * PrimExpr(a.strides[s]) + k[s] * PrimExpr(a.dilation[s]) - PrimExpr(a.pad_lo[s]);
  };
  auto inside = [&](const te::Indices& i, const te::Indices& k) {
    return And(InRange(tap(i, k, 0), PrimExpr(0), x.shape()[pos[0]]), InRange(tap(i, k, 1), PrimExpr(0), x.shape()[pos[1]]));
  };
  auto load = [&](const te::Indices& i, const te::Indices& k, PrimExpr outside) {
    te::Indices idx = i;
    idx[pos[0]] = tap(i, k, 0);
    idx[pos[1]] = tap(i, k, 1);
    return IfThenElse(inside(i, k), x(idx), outside);
  };
  if (is_max) {
    PrimExpr lowest = te::ReduceIdentity(te::ReduceKind::kMax, dt);
    te::Tensor out = b.Reduce("pool_max", out_shape, dt, te::ReduceKind::kMax, window,
                              [&](const te::Indices& i, const te::Indices& k) { return load(i, k, lowest); });
    return b.Build({out});
  }
  DType ct = ComputeType(dt);
  te::Tensor sum = b.Reduce("pool_sum", out_shape, ct, te::ReduceKind::kSum, window, [&](const te::Indices& i, const te::Indices& k) {
    return CastTo(ct, load(i, k, Const(dt, 0.0)));
  });
  // Taps that count: whether a tap counts is a test on its row times one on
  // its column, so the count at output (y, x) is count_h[y] * count_w[x],
  // kh + kw tests per output position where counting the whole window took
  // kh * kw (a 13 x 13 window's 169 scalar tests per position: about as
  // long as its separable sum over 256 channels).
  auto axis_count = [&](int s, const std::string& cname) {
    return b.Reduce(cname, {out_shape[pos[s]]}, DType::Int64(), te::ReduceKind::kSum, {window[s]},
                    [&, s](const te::Indices& o, const te::Indices& k) {
      te::Indices i(4, PrimExpr(0)), kk(2, PrimExpr(0));
      i[pos[s]] = o[0];
      kk[s] = k[0];
      const PrimExpr& n = x.shape()[pos[s]];
      PrimExpr cond = a.count_include_pad ? InRange(tap(i, kk, s), PrimExpr(-a.pad_lo[s]), n + PrimExpr(a.pad_hi[s]))
                                          : InRange(tap(i, kk, s), PrimExpr(0), n);
      return PrimExpr(std::make_shared<ir::SelectNode>(cond, PrimExpr(int64_t{1}), PrimExpr(int64_t{0})));
    });
  };
  te::Tensor count_h = axis_count(0, "pool_count_h"), count_w = axis_count(1, "pool_count_w");
  te::Tensor out = b.Compute("pool_avg", out_shape, dt, [&](const te::Indices& i) {
    PrimExpr n = ir::MakeBinary(ir::TirKind::kMul, count_h({i[pos[0]]}), count_w({i[pos[1]]}));
    PrimExpr c = ir::MakeBinary(ir::TirKind::kMax, n, PrimExpr(int64_t{1}));
    return CastTo(dt, ir::MakeBinary(ir::TirKind::kDiv, sum(i), ir::Cast(ct, c)));
  });
  return b.Build({out});
}

Result<ir::PrimFunc> LegalizeMaxPool(const ir::CallExpr& c, const std::string& n) { return LegalizePoolImpl(c, n, true); }
Result<ir::PrimFunc> LegalizeAvgPool(const ir::CallExpr& c, const std::string& n) { return LegalizePoolImpl(c, n, false); }

// ---------------------------------------------------------------- adaptive

Result<std::vector<PrimExpr>> AdaptiveOutSize(const AttrReader& r, const ir::TensorSInfo& x, int hpos) {
  std::vector<PrimExpr> hw{x.shape[hpos], x.shape[hpos + 1]};
  if (!r.Has("output_size")) return hw;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> os, r.IntListN("output_size", {1}, 2));
  for (int64_t v : os)
    if (v <= 0) return r.Error("output_size must be positive");
  return std::vector<PrimExpr>{PrimExpr(os[0]), PrimExpr(os[1])};
}

Result<ir::StructInfo> InferAdaptiveAvgPool(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"output_size", "layout", "out_layout"}));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  std::string layout;
  KILN_ASSIGN_OR_RETURN(int hpos, LayoutHW(r, &layout));
  if (x->ndim >= 0 && x->ndim != 4) return r.Error("data must have rank 4, got " + std::to_string(x->ndim));
  if (!x->has_shape) {
    KILN_RETURN_IF_ERROR(r.IntListN("output_size", {1}, 2).status());
    return ir::MakeTensorSInfoNdim(4, x->dtype);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> hw, AdaptiveOutSize(r, *x, hpos));
  std::vector<PrimExpr> out = x->shape;
  out[hpos] = hw[0];
  out[hpos + 1] = hw[1];
  return ir::MakeTensorSInfo(out, x->dtype);
}

Result<ir::PrimFunc> LegalizeAdaptiveAvgPool(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* oi, ShapedResult(r));
  std::string layout;
  KILN_ASSIGN_OR_RETURN(int hpos, LayoutHW(r, &layout));
  int pos[2] = {hpos, hpos + 1};
  DType dt = xi->dtype, ct = ComputeType(dt);
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, dt);
  std::vector<PrimExpr> out_shape = b.Local(oi->shape);
  PrimExpr in[2] = {x.shape()[pos[0]], x.shape()[pos[1]]};
  PrimExpr on[2] = {out_shape[pos[0]], out_shape[pos[1]]};
  auto start = [&](const PrimExpr& o, int s) { return FloorDiv(o * in[s], on[s]); };
  auto end = [&](const PrimExpr& o, int s) { return FloorDiv((o + PrimExpr(1)) * in[s] + on[s] - PrimExpr(1), on[s]); };
  // The widest window: ceil(in / out) + 1 when both are known, else the input.
  std::vector<PrimExpr> window;
  for (int s = 0; s < 2; ++s) {
    auto iv = ConstDim(in[s]), ov = ConstDim(on[s]);
    if (iv && ov) {
      int64_t w = (*iv + *ov - 1) / *ov + (*iv % *ov != 0 ? 1 : 0);
      window.push_back(PrimExpr(std::min(w, *iv)));
    } else {
      window.push_back(in[s]);
    }
  }
  te::Tensor sum = b.Reduce("adaptive_pool_sum", out_shape, ct, te::ReduceKind::kSum, window,
                            [&](const te::Indices& i, const te::Indices& k) {
    te::Indices idx = i;
    PrimExpr cond;
    for (int s = 0; s < 2; ++s) {
      idx[pos[s]] = start(i[pos[s]], s) + k[s];
      PrimExpr c = ir::MakeBinary(ir::TirKind::kLT, idx[pos[s]], end(i[pos[s]], s));
      cond = cond.defined() ? And(cond, c) : c;
    }
    return IfThenElse(cond, CastTo(ct, x(idx)), Const(ct, 0.0));
  });
  te::Tensor out = b.Compute("adaptive_pool_avg", out_shape, dt, [&](const te::Indices& i) {
    PrimExpr n = (end(i[pos[0]], 0) - start(i[pos[0]], 0)) * (end(i[pos[1]], 1) - start(i[pos[1]], 1));
    return CastTo(dt, ir::MakeBinary(ir::TirKind::kDiv, sum(i), ir::Cast(ct, n)));
  });
  return b.Build({out});
}

}  // namespace
}  // namespace nn

void AddPoolOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.max_pool2d", "max_pool2d", 1, InferPool, LegalizeMaxPool, OpPattern::kOutEWiseFusable});
  t->push_back({"relax.nn.avg_pool2d", "avg_pool2d", 1, InferPool, LegalizeAvgPool, OpPattern::kOutEWiseFusable});
  t->push_back({"relax.nn.adaptive_avg_pool2d", "adaptive_avg_pool2d", 1, InferAdaptiveAvgPool, LegalizeAdaptiveAvgPool,
                OpPattern::kOutEWiseFusable});
}

}  // namespace relax
}  // namespace kiln
