// Convolutions: relax.nn.conv1d, relax.nn.conv2d and relax.nn.conv2d_transpose.
//
// conv1d/conv2d(data, weight, strides, padding, dilation, groups, data_layout,
//   kernel_layout, out_layout, out_dtype): data layouts NCW / NCHW / NHWC (any
//   order of the letters N, C and the spatial ones), kernel layouts OIW / OIHW
//   / HWIO / OHWI (letters O, I and the spatial ones); the result uses
//   out_layout (default: data_layout). padding has 1, 2 or 4 values for 2-D
//   (all; top/bottom and left/right; top, left, bottom, right) and 1 or 2 for
//   1-D (both; left, right). groups divides the channels; depthwise is groups =
//   C with O = C * multiplier.
//   out[.., o, y, x] = sum_{i, ky, kx} data[.., g*I + i, y*s - pad + ky*d, ..] * w[o, i, ky, kx]
//   where g = o / (O / groups), reading 0 outside the data.
// conv2d_transpose(data, weight, strides, padding, output_padding, dilation,
//   groups, data_layout="NCHW", kernel_layout="IOHW"): the gradient of conv2d;
//   out size = (H - 1) * s - pad_total + d * (K - 1) + output_padding + 1.
//   Only the NCHW / IOHW layouts are supported.
// conv2d also takes kernel_layout "OIHW<b>o" (b >= 1): the weight is
//   [O/b, I, KH, KW, b], weight[o/b, i, ky, kx, o%b] = OIHW weight[o, i, ky, kx]
//   (output channels in blocks of b innermost; what pack-constant-weights
//   makes for the conv schedule, whose tap then reads b contiguous weights).
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
PrimExpr FloorMod(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kFloorMod, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kAnd, std::move(a), std::move(b)); }
PrimExpr Cmp(ir::TirKind k, PrimExpr a, PrimExpr b) { return ir::MakeBinary(k, std::move(a), std::move(b)); }

struct ConvAttrs {
  int nsp = 2;                    // spatial dims
  std::vector<int64_t> strides, dilation, output_padding;
  std::vector<int64_t> pad_lo, pad_hi;  // per spatial dim
  int64_t groups = 1;
  std::string data_layout, kernel_layout, out_layout;
  std::optional<DType> out_dtype;
  // Positions of N, C and spatial dims in data/out; O, I, spatial in kernel.
  int dn, dc, on, oc, ko, ki;
  int64_t oblock = 0;  // b of kernel_layout "OIHW<b>o"; 0: no output-channel block
  std::vector<int> dsp, osp, ksp;
};

// Position of each of `letters` in `layout`; fails unless the layout is a
// permutation of them.
Result<std::vector<int>> LayoutAxes(const AttrReader& r, const char* key, const std::string& layout,
                                    const std::string& letters) {
  std::vector<int> pos;
  bool ok = layout.size() == letters.size();
  for (char c : letters) {
    size_t p = layout.find(c);
    ok &= p != std::string::npos;
    pos.push_back(static_cast<int>(p));
  }
  if (!ok) return r.Error(std::string(key) + " \"" + layout + "\" is not supported (expected a permutation of " + letters + ")");
  return pos;
}

// b of a blocked kernel layout "OIHW<b>o"; 0 for a layout without a digit
// (checked as a permutation later). Other layouts with digits fail.
Result<int64_t> OutputBlock(const AttrReader& r, const std::string& layout) {
  size_t digits = layout.find_first_of("0123456789");
  if (digits == std::string::npos) return int64_t{0};
  std::string count = layout.substr(digits, layout.size() - 1 - digits);
  bool ok = layout.compare(0, digits, "OIHW") == 0 && layout.back() == 'o' && !count.empty() && count.size() <= 6 &&
            count.find_first_not_of("0123456789") == std::string::npos;
  int64_t b = ok ? std::stoll(count) : 0;
  if (b <= 0) {
    return r.Error("kernel_layout \"" + layout + "\" is not supported (a blocked layout is OIHW<b>o with b >= 1, e.g. OIHW8o)");
  }
  return b;
}

Result<ConvAttrs> ReadConvAttrs(const AttrReader& r, int nsp, bool transpose) {
  ConvAttrs a;
  a.nsp = nsp;
  std::string sp = nsp == 1 ? "W" : "HW";
  KILN_ASSIGN_OR_RETURN(a.strides, r.IntListN("strides", {1}, nsp));
  KILN_ASSIGN_OR_RETURN(a.dilation, r.IntListN("dilation", {1}, nsp));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pad, r.IntList("padding", {0}));
  if (pad.size() == 1) {
    a.pad_lo.assign(nsp, pad[0]);
    a.pad_hi.assign(nsp, pad[0]);
  } else if (pad.size() == static_cast<size_t>(nsp)) {
    a.pad_lo = pad;
    a.pad_hi = pad;
  } else if (pad.size() == static_cast<size_t>(2 * nsp)) {
    a.pad_lo.assign(pad.begin(), pad.begin() + nsp);
    a.pad_hi.assign(pad.begin() + nsp, pad.end());
  } else {
    return r.Error(std::string(nsp == 1 ? "padding takes 1 or 2 values" : "padding takes 1, 2 or 4 values") +
                   ", got " + std::to_string(pad.size()));
  }
  if (transpose) {
    KILN_ASSIGN_OR_RETURN(a.output_padding, r.IntListN("output_padding", {0}, nsp));
  }
  KILN_ASSIGN_OR_RETURN(a.groups, r.Int("groups", 1));
  for (size_t i = 0; i < static_cast<size_t>(nsp); ++i) {
    if (a.strides[i] <= 0) return r.Error("strides must be positive");
    if (a.dilation[i] <= 0) return r.Error("dilation must be positive");
    if (a.pad_lo[i] < 0 || a.pad_hi[i] < 0) return r.Error("padding must not be negative");
    if (transpose && a.output_padding[i] >= std::max(a.strides[i], a.dilation[i])) {
      return r.Error("output_padding must be smaller than the stride or the dilation");
    }
  }
  if (a.groups <= 0) return r.Error("groups must be positive, got " + std::to_string(a.groups));
  std::string dl = nsp == 1 ? "NCW" : "NCHW";
  std::string kl = transpose ? "IOHW" : nsp == 1 ? "OIW" : "OIHW";
  KILN_ASSIGN_OR_RETURN(a.data_layout, r.String("data_layout", dl));
  KILN_ASSIGN_OR_RETURN(a.kernel_layout, r.String("kernel_layout", kl));
  KILN_ASSIGN_OR_RETURN(a.out_layout, r.String("out_layout", a.data_layout));
  KILN_ASSIGN_OR_RETURN(a.out_dtype, r.OptionalDType("out_dtype"));
  if (transpose && (a.data_layout != "NCHW" || a.kernel_layout != "IOHW" || a.out_layout != "NCHW")) {
    return Unimplemented(Where(r.call().span) + r.op() + ": only data_layout=\"NCHW\", kernel_layout=\"IOHW\" are supported");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> d, LayoutAxes(r, "data_layout", a.data_layout, "NC" + sp));
  KILN_ASSIGN_OR_RETURN(std::vector<int> o, LayoutAxes(r, "out_layout", a.out_layout, "NC" + sp));
  std::string kl_axes = a.kernel_layout;
  if (!transpose && nsp == 2) {
    KILN_ASSIGN_OR_RETURN(a.oblock, OutputBlock(r, a.kernel_layout));
    if (a.oblock > 0) kl_axes = "OIHW";
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> k, LayoutAxes(r, "kernel_layout", kl_axes, "OI" + sp));
  a.dn = d[0];
  a.dc = d[1];
  a.dsp.assign(d.begin() + 2, d.end());
  a.on = o[0];
  a.oc = o[1];
  a.osp.assign(o.begin() + 2, o.end());
  a.ko = k[0];
  a.ki = k[1];
  a.ksp.assign(k.begin() + 2, k.end());
  return a;
}

// Shapes in canonical form: constants folded, n * 2 + 0 - 1 ... simplified.
PrimExpr Simple(const PrimExpr& e) { return arith::Simplify(e); }

// Output shape (in out_layout) from data and kernel shapes.
Result<std::vector<PrimExpr>> ConvShape(const AttrReader& r, const ConvAttrs& a, const std::vector<PrimExpr>& ds,
                                        const std::vector<PrimExpr>& ks, bool transpose) {
  PrimExpr C = ds[a.dc], KI = ks[a.ki], KO = ks[a.ko];
  if (a.oblock > 0) {
    auto inner = ConstDim(ks[4]);
    if (inner && *inner != a.oblock) {
      return r.Error("kernel_layout \"" + a.kernel_layout + "\" needs a weight whose last dimension is " +
                     std::to_string(a.oblock) + ", got " + ShapeString(ks));
    }
    KO = Simple(KO * PrimExpr(a.oblock));
  }
  auto c = ConstDim(C), ki = ConstDim(KI), ko = ConstDim(KO);
  PrimExpr out_c;
  if (!transpose) {
    if (c && *c % a.groups != 0) {
      return r.Error(std::to_string(*c) + " input channels do not divide into " + std::to_string(a.groups) + " groups");
    }
    if (ko && *ko % a.groups != 0) {
      return r.Error(std::to_string(*ko) + " output channels do not divide into " + std::to_string(a.groups) + " groups");
    }
    if (c && ki && *c / a.groups != *ki) {
      return r.Error("data has " + std::to_string(*c) + " channels in " + std::to_string(a.groups) +
                     " groups but the kernel expects " + std::to_string(*ki) + " per group");
    }
    out_c = KO;
  } else {
    // IOHW: I is the data's channels, O the output channels per group.
    if (c && ki && *c != *ki) {
      return r.Error("data has " + std::to_string(*c) + " channels but the kernel expects " + std::to_string(*ki));
    }
    if (ki && *ki % a.groups != 0) {
      return r.Error(std::to_string(*ki) + " input channels do not divide into " + std::to_string(a.groups) + " groups");
    }
    out_c = Simple(KO * PrimExpr(a.groups));
  }
  std::vector<PrimExpr> out(2 + a.nsp);
  out[a.on] = ds[a.dn];
  out[a.oc] = out_c;
  for (int i = 0; i < a.nsp; ++i) {
    PrimExpr in = ds[a.dsp[i]], k = ks[a.ksp[i]];
    PrimExpr size;
    if (!transpose) {
      // (in + pads - d * (k - 1) - 1) / s + 1
      PrimExpr span = in + PrimExpr(a.pad_lo[i] + a.pad_hi[i]) - PrimExpr(a.dilation[i]) * (k - PrimExpr(1)) - PrimExpr(1);
      size = FloorDiv(span, PrimExpr(a.strides[i])) + PrimExpr(1);
    } else {
      size = (in - PrimExpr(1)) * PrimExpr(a.strides[i]) - PrimExpr(a.pad_lo[i] + a.pad_hi[i]) +
             PrimExpr(a.dilation[i]) * (k - PrimExpr(1)) + PrimExpr(a.output_padding[i] + 1);
    }
    size = Simple(size);
    if (auto v = ConstDim(size); v && *v <= 0) {
      return r.Error("the kernel " + ShapeString(ks) + " does not fit in the padded input " + ShapeString(ds) +
                     " (output size " + std::to_string(*v) + ")");
    }
    out[a.osp[i]] = size;
  }
  return out;
}

Result<ir::StructInfo> InferConvImpl(const ir::CallExpr& call, int nsp, bool transpose) {
  AttrReader r(call);
  if (transpose) {
    KILN_RETURN_IF_ERROR(r.CheckKnown({"strides", "padding", "output_padding", "dilation", "groups", "data_layout",
                                       "kernel_layout", "out_layout", "out_dtype"}));
  } else {
    KILN_RETURN_IF_ERROR(r.CheckKnown(
        {"strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout", "out_dtype"}));
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* w, TensorArg(r, 1, "weight"));
  KILN_ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(r, nsp, transpose));
  int rank = 2 + nsp;
  if (x->ndim >= 0 && x->ndim != rank) return r.Error("data must have rank " + std::to_string(rank) + ", got " + std::to_string(x->ndim));
  int wrank = rank + (a.oblock > 0 ? 1 : 0);
  if (w->ndim >= 0 && w->ndim != wrank) return r.Error("weight must have rank " + std::to_string(wrank) + ", got " + std::to_string(w->ndim));
  if (!a.out_dtype && x->has_dtype && w->has_dtype && x->dtype != w->dtype) {
    return r.Error("data and weight dtypes differ: " + DTypeToString(x->dtype) + " and " + DTypeToString(w->dtype));
  }
  DType dtype = a.out_dtype ? *a.out_dtype : x->dtype;
  if (!x->has_shape || !w->has_shape) return ir::MakeTensorSInfoNdim(rank, dtype);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, ConvShape(r, a, x->shape, w->shape, transpose));
  return ir::MakeTensorSInfo(out, dtype);
}

Result<ir::StructInfo> InferConv1d(const ir::CallExpr& c) { return InferConvImpl(c, 1, false); }
Result<ir::StructInfo> InferConv2d(const ir::CallExpr& c) { return InferConvImpl(c, 2, false); }
Result<ir::StructInfo> InferConv2dTranspose(const ir::CallExpr& c) { return InferConvImpl(c, 2, true); }

Result<ir::PrimFunc> LegalizeConvImpl(const ir::CallExpr& call, const std::string& name, int nsp, bool transpose) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* wi, ShapedArg(r, 1, "weight"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* oi, ShapedResult(r));
  KILN_ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(r, nsp, transpose));
  DType odt = oi->dtype;
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, xi->dtype);
  te::Tensor w = b.Input("weight", wi->shape, wi->dtype);
  std::vector<PrimExpr> out_shape = b.Local(oi->shape);
  PrimExpr KI = w.shape()[a.ki];  // input channels per group (conv); data channels (transpose)
  PrimExpr O = out_shape[a.oc];
  std::vector<PrimExpr> red;
  if (!transpose) {
    red.push_back(KI);
  } else {
    red.push_back(FloorDiv(KI, PrimExpr(a.groups)));
  }
  for (int i = 0; i < nsp; ++i) red.push_back(w.shape()[a.ksp[i]]);
  bool padded = false;
  for (int i = 0; i < nsp; ++i) padded |= a.pad_lo[i] != 0 || a.pad_hi[i] != 0;
  te::Tensor out = b.Reduce(transpose ? "conv2d_transpose" : nsp == 1 ? "conv1d" : "conv2d", out_shape, odt,
                            te::ReduceKind::kSum, red, [&](const te::Indices& i, const te::Indices& k) {
    PrimExpr oc = i[a.oc];
    te::Indices di(2 + nsp), wi(2 + nsp + (a.oblock > 0 ? 1 : 0));
    di[a.dn] = i[a.on];
    PrimExpr cond;
    auto add_cond = [&](PrimExpr c) { cond = cond.defined() ? And(cond, c) : c; };
    if (!transpose) {
      PrimExpr opg = FloorDiv(O, PrimExpr(a.groups));  // output channels per group
      di[a.dc] = a.groups == 1 ? k[0] : FloorDiv(oc, opg) * KI + k[0];
      wi[a.ko] = a.oblock > 0 ? FloorDiv(oc, PrimExpr(a.oblock)) : oc;
      if (a.oblock > 0) wi[4] = FloorMod(oc, PrimExpr(a.oblock));
      wi[a.ki] = k[0];
      for (int s = 0; s < nsp; ++s) {
        PrimExpr pos = i[a.osp[s]] * PrimExpr(a.strides[s]) + k[1 + s] * PrimExpr(a.dilation[s]) - PrimExpr(a.pad_lo[s]);
        di[a.dsp[s]] = pos;
        wi[a.ksp[s]] = k[1 + s];
        if (padded) {
          add_cond(Cmp(ir::TirKind::kGE, pos, PrimExpr(0)));
          add_cond(Cmp(ir::TirKind::kLT, pos, x.shape()[a.dsp[s]]));
        }
      }
    } else {
      PrimExpr opg = w.shape()[a.ko];                    // output channels per group
      PrimExpr ipg = FloorDiv(KI, PrimExpr(a.groups));  // input channels per group
      PrimExpr ic = a.groups == 1 ? k[0] : FloorDiv(oc, opg) * ipg + k[0];
      di[a.dc] = ic;
      wi[a.ki] = ic;
      wi[a.ko] = a.groups == 1 ? oc : FloorMod(oc, opg);
      for (int s = 0; s < nsp; ++s) {
        // out y receives data iy where iy * s = y + pad - ky * d.
        PrimExpr t = i[a.osp[s]] + PrimExpr(a.pad_lo[s]) - k[1 + s] * PrimExpr(a.dilation[s]);
        PrimExpr st(a.strides[s]);
        di[a.dsp[s]] = a.strides[s] == 1 ? t : FloorDiv(t, st);
        wi[a.ksp[s]] = k[1 + s];
        add_cond(Cmp(ir::TirKind::kGE, t, PrimExpr(0)));
        if (a.strides[s] != 1) add_cond(Cmp(ir::TirKind::kEQ, FloorMod(t, st), PrimExpr(0)));
        add_cond(Cmp(ir::TirKind::kLT, di[a.dsp[s]], x.shape()[a.dsp[s]]));
      }
    }
    PrimExpr prod = CastTo(odt, x(di)) * CastTo(odt, w(wi));
    // The guard is lazy: out-of-range data is never read.
    return cond.defined() ? IfThenElse(cond, prod, Const(odt, 0.0)) : prod;
  }, Const(odt, 0.0));
  return b.Build({out});
}

Result<ir::PrimFunc> LegalizeConv1d(const ir::CallExpr& c, const std::string& n) { return LegalizeConvImpl(c, n, 1, false); }
Result<ir::PrimFunc> LegalizeConv2d(const ir::CallExpr& c, const std::string& n) { return LegalizeConvImpl(c, n, 2, false); }
Result<ir::PrimFunc> LegalizeConv2dTranspose(const ir::CallExpr& c, const std::string& n) {
  return LegalizeConvImpl(c, n, 2, true);
}

}  // namespace
}  // namespace nn

void AddConvOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.nn.conv1d", "conv1d", 2, InferConv1d, LegalizeConv1d, OpPattern::kOutEWiseFusable});
  t->push_back({"relax.nn.conv2d", "conv2d", 2, InferConv2d, LegalizeConv2d, OpPattern::kOutEWiseFusable});
  t->push_back({"relax.nn.conv2d_transpose", "conv2d_transpose", 2, InferConv2dTranspose, LegalizeConv2dTranspose,
                OpPattern::kOutEWiseFusable});
}

}  // namespace relax
}  // namespace kiln
