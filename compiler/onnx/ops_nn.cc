// Neural-network ONNX operators: MatMul, Gemm, Conv, ConvTranspose, the
// normalizations, pooling, Softmax/LogSoftmax, Dropout, Einsum, Pad.
// 1-D convolutions/pools that Relax has only in 2-D go through a unit H axis.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "compiler/arith/simplify.h"
#include "compiler/onnx/equal_dims.h"
#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/run_time_axes.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;

Status Set(NodeCtx& ctx, Result<ir::Expr> r) {
  if (!r.ok()) return r.status();
  ctx.SetOutput(0, *r);
  return Status::Ok();
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// ---------------------------------------------------------------- MatMul, Gemm

// B's reduction axis (its second last, or its only one) against A's last.
Result<ir::Expr> MatchReductionDim(NodeCtx& ctx, ir::Expr b, size_t a_axis, size_t b_axis) {
  return MatchEqualDims(ctx, b, 1, {{b_axis, 0, a_axis}});
}

Status ConvertMatMul(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(1));
  if (ai->ndim >= 1 && bi->ndim >= 1) {
    KILN_ASSIGN_OR_RETURN(b, MatchReductionDim(ctx, b, static_cast<size_t>(ai->ndim - 1),
                                               static_cast<size_t>(bi->ndim >= 2 ? bi->ndim - 2 : 0)));
  }
  return Set(ctx, ctx.Op("matmul", {a, b}));
}

// Y = alpha * A' B' + beta * C (C broadcast to the result, unidirectionally).
Status ConvertGemm(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double alpha, ctx.AttrFloat("alpha", 1.0));
  KILN_ASSIGN_OR_RETURN(double beta, ctx.AttrFloat("beta", 1.0));
  KILN_ASSIGN_OR_RETURN(int64_t trans_a, ctx.AttrInt("transA", 0));
  KILN_ASSIGN_OR_RETURN(int64_t trans_b, ctx.AttrInt("transB", 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ctx.Info(1));
  if (ai->ndim != 2 || bi->ndim != 2) return ctx.Invalid("A and B must be matrices");
  DType t = ai->dtype;
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(b, MatchReductionDim(ctx, b, trans_a ? 0 : 1, trans_b ? 1 : 0));
  // Transposes of constant weights fold at compile time; R.matmul is the form
  // the matmul schedule and library dispatch recognize.
  if (trans_a) { KILN_ASSIGN_OR_RETURN(a, ctx.Op("permute_dims", {a}, {{"axes", AttrInts({1, 0})}})); }
  if (trans_b) { KILN_ASSIGN_OR_RETURN(b, ctx.Op("permute_dims", {b}, {{"axes", AttrInts({1, 0})}})); }
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op("matmul", {a, b}));
  if (alpha != 1.0) { KILN_ASSIGN_OR_RETURN(y, ctx.Op("multiply", {y, ScalarConst(t, alpha)})); }
  if (ctx.HasInput(2) && beta != 0.0) {
    KILN_ASSIGN_OR_RETURN(ir::Expr c, ctx.Input(2));
    if (beta != 1.0) { KILN_ASSIGN_OR_RETURN(c, ctx.Op("multiply", {c, ScalarConst(t, beta)})); }
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("add", {y, c}));
  }
  ctx.SetOutput(0, y);
  return Status::Ok();
}

// ---------------------------------------------------------------- conv / pool attrs

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_lo, pad_hi;
};

// Reads kernel_shape/strides/dilations/pads/auto_pad for `nsp` spatial dims
// of input `x` (static spatial dims needed for SAME padding).
Result<Window> ReadWindow(NodeCtx& ctx, const ir::TensorSInfo& x, size_t nsp, const std::vector<int64_t>& kernel) {
  Window w;
  w.kernel = kernel;
  KILN_ASSIGN_OR_RETURN(w.strides, ctx.AttrInts("strides", std::vector<int64_t>(nsp, 1)));
  KILN_ASSIGN_OR_RETURN(w.dilations, ctx.AttrInts("dilations", std::vector<int64_t>(nsp, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx.AttrInts("pads", std::vector<int64_t>(2 * nsp, 0)));
  KILN_ASSIGN_OR_RETURN(std::string auto_pad, ctx.AttrString("auto_pad", "NOTSET"));
  if (w.strides.size() != nsp || w.dilations.size() != nsp || pads.size() != 2 * nsp || w.kernel.size() != nsp) {
    return ctx.Invalid("strides, dilations, kernel_shape need " + std::to_string(nsp) + " values and pads " +
                       std::to_string(2 * nsp));
  }
  const int64_t big = int64_t{1} << 31;
  for (const auto* list : {&w.strides, &w.dilations, &w.kernel, &pads}) {
    for (int64_t v : *list)
      if (v < 0 || v > big) return ctx.Invalid("strides, dilations, kernel_shape and pads must lie in [0, 2^31]");
  }
  for (size_t i = 0; i < nsp; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1) return ctx.Invalid("strides, dilations and kernel_shape must be positive");
  w.pad_lo.assign(pads.begin(), pads.begin() + nsp);
  w.pad_hi.assign(pads.begin() + nsp, pads.end());
  if (auto_pad == "VALID") {
    std::fill(w.pad_lo.begin(), w.pad_lo.end(), 0);
    std::fill(w.pad_hi.begin(), w.pad_hi.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < nsp; ++i) {
      auto in = ConstDim(x.shape[2 + i]);
      if (!in) {
        // The total padding is k_eff - s + ((-in) mod s), clamped at 0: it
        // depends on `in`, but when its lower part is the same for every
        // remainder, padding the upper end by the most it can be (k_eff - 1
        // in all) gives the same windows and ceil(in / s) outputs — floor
        // ((in - 1) / s) + 1 — whatever `in` is. (ceil_mode would count one
        // more window.)
        KILN_ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.AttrInt("ceil_mode", 0));
        int64_t k_eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
        int64_t lo_total = std::max<int64_t>(0, k_eff - w.strides[i]), hi_total = k_eff - 1;
        auto lower = [&](int64_t total) { return auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2; };
        if (lower(lo_total) != lower(hi_total) || ceil_mode != 0) {
          return ctx.Unsupported("auto_pad=" + auto_pad + " with a symbolic spatial dimension whose padding depends on it");
        }
        w.pad_lo[i] = lower(hi_total);
        w.pad_hi[i] = hi_total - w.pad_lo[i];
        continue;
      }
      int64_t out = (*in + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - *in);
      int64_t small = total / 2, big = total - small;
      w.pad_lo[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_hi[i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    return ctx.Unsupported("auto_pad=\"" + auto_pad + "\"");
  }
  return w;
}

std::vector<int64_t> Padding(const Window& w) {
  std::vector<int64_t> p = w.pad_lo;
  p.insert(p.end(), w.pad_hi.begin(), w.pad_hi.end());
  return p;
}

// x (N, C, L) -> (N, C, 1, L).
Result<ir::Expr> To2d(NodeCtx& ctx, ir::Expr x) { return ctx.Op("expand_dims", {x}, {{"axis", AttrInts({2})}}); }
Result<ir::Expr> From2d(NodeCtx& ctx, ir::Expr x) { return ctx.Op("squeeze", {x}, {{"axis", AttrInts({2})}}); }
Window Lift1d(const Window& w) {
  Window o;
  o.kernel = {1, w.kernel[0]};
  o.strides = {1, w.strides[0]};
  o.dilations = {1, w.dilations[0]};
  o.pad_lo = {0, w.pad_lo[0]};
  o.pad_hi = {0, w.pad_hi[0]};
  return o;
}

// Adds a per-channel bias (C,) to an (N, C, ...) result of rank `rank`.
Result<ir::Expr> AddChannelBias(NodeCtx& ctx, ir::Expr y, size_t bias_input, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(bias_input));
  std::vector<int64_t> axes;
  for (int64_t i = 1; i < rank - 1; ++i) axes.push_back(i);
  if (!axes.empty()) { KILN_ASSIGN_OR_RETURN(b, ctx.Op("expand_dims", {b}, {{"axis", AttrInts(axes)}})); }
  return ctx.Op("add", {y, b});
}

// 3-D convolution from 2-D ones: the input padded in depth, then for each
// depth tap kd the depth slices kd * dilation + od * stride of every output
// depth od, convolved in (H, W) with w[:, :, kd]; the taps are summed.
Result<ir::Expr> Conv3d(NodeCtx& ctx, ir::Expr x, const ir::TensorSInfo& xi, ir::Expr wt, const Window& w, int64_t group) {
  const auto& s = xi.shape;
  auto dd = ConstDim(s[2]);
  if (!dd) return Unimplemented("3-D convolution with a symbolic depth");
  int64_t sd = w.strides[0], dil = w.dilations[0], KD = w.kernel[0];
  int64_t padded = *dd + w.pad_lo[0] + w.pad_hi[0];
  int64_t od = (padded - dil * (KD - 1) - 1) / sd + 1;
  if (od <= 0) return InvalidArgument("the depth is smaller than the kernel");
  if (w.pad_lo[0] || w.pad_hi[0]) {
    KILN_ASSIGN_OR_RETURN(x, ctx.Op("nn.pad", {x}, {{"pad_width", AttrInts({0, 0, 0, 0, w.pad_lo[0], w.pad_hi[0], 0, 0, 0, 0})},
                                                    {"pad_mode", AttrS("constant")}, {"pad_value", AttrF(0.0)}}));
  }
  ir::Expr acc;
  PrimExpr h, wd;
  for (int64_t kd = 0; kd < KD; ++kd) {
    KILN_ASSIGN_OR_RETURN(ir::Expr xs, ctx.Op("strided_slice", {x}, {{"axes", AttrInts({2})}, {"begin", AttrInts({kd * dil})},
                                                                    {"end", AttrInts({kd * dil + (od - 1) * sd + 1})},
                                                                    {"strides", AttrInts({sd})}}));
    KILN_ASSIGN_OR_RETURN(xs, ctx.Op("permute_dims", {xs}, {{"axes", AttrInts({0, 2, 1, 3, 4})}}));
    KILN_ASSIGN_OR_RETURN(xs, ctx.Op("reshape", {xs, MakeShape({SimplifyDim(s[0] * PrimExpr(od)), s[1], s[3], s[4]})}));
    KILN_ASSIGN_OR_RETURN(ir::Expr wk, ctx.Op("strided_slice", {wt}, {{"axes", AttrInts({2})}, {"begin", AttrInts({kd})},
                                                                    {"end", AttrInts({kd + 1})}, {"strides", AttrInts({1})}}));
    KILN_ASSIGN_OR_RETURN(wk, ctx.Op("squeeze", {wk}, {{"axis", AttrInts({2})}}));
    ir::AttrMap attrs = {{"strides", AttrInts({w.strides[1], w.strides[2]})},
                         {"padding", AttrInts({w.pad_lo[1], w.pad_lo[2], w.pad_hi[1], w.pad_hi[2]})},
                         {"dilation", AttrInts({w.dilations[1], w.dilations[2]})},
                         {"groups", AttrI(group)}};
    KILN_ASSIGN_OR_RETURN(ir::Expr z, ctx.Op("nn.conv2d", {xs, wk}, attrs));
    if (acc) {
      KILN_ASSIGN_OR_RETURN(acc, ctx.Op("add", {acc, z}));
    } else {
      acc = z;
    }
  }
  const auto* zi = ir::SInfoAs<ir::TensorSInfo>(acc->struct_info);
  if (!zi || !zi->has_shape) return Internal("convolution result without a shape");
  KILN_ASSIGN_OR_RETURN(acc, ctx.Op("reshape", {acc, MakeShape({s[0], PrimExpr(od), zi->shape[1], zi->shape[2], zi->shape[3]})}));
  return ctx.Op("permute_dims", {acc}, {{"axes", AttrInts({0, 2, 1, 3, 4})}});
}

Status ConvertConv(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* wi, ctx.Info(1));
  size_t nsp = static_cast<size_t>(xi->ndim) - 2;
  if (xi->ndim < 3 || xi->ndim > 5) return ctx.Unsupported(std::to_string(xi->ndim - 2) + "-D convolution (1-D to 3-D are supported)");
  if (wi->ndim != xi->ndim) {
    return ctx.Invalid("the weight has rank " + std::to_string(wi->ndim) + ", the input rank " + std::to_string(xi->ndim));
  }
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < nsp; ++i) {
    auto k = ConstDim(wi->shape[2 + i]);
    if (!k) return ctx.Unsupported("a weight with symbolic kernel size");
    kernel.push_back(*k);
  }
  KILN_ASSIGN_OR_RETURN(kernel, ctx.AttrInts("kernel_shape", kernel));
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, *xi, nsp, kernel));
  KILN_ASSIGN_OR_RETURN(int64_t group, ctx.AttrInt("group", 1));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr wt, ctx.Input(1));
  ir::Expr y;
  if (nsp == 3) {
    KILN_ASSIGN_OR_RETURN(y, Conv3d(ctx, x, *xi, wt, w, group));
  } else {
    ir::AttrMap attrs = {{"strides", AttrInts(w.strides)}, {"padding", AttrInts(Padding(w))},
                         {"dilation", AttrInts(w.dilations)}, {"groups", AttrI(group)}};
    KILN_ASSIGN_OR_RETURN(y, ctx.Op(nsp == 1 ? "nn.conv1d" : "nn.conv2d", {x, wt}, attrs));
  }
  if (ctx.HasInput(2)) { KILN_ASSIGN_OR_RETURN(y, AddChannelBias(ctx, y, 2, xi->ndim)); }
  ctx.SetOutput(0, y);
  return Status::Ok();
}

// 3-D transposed convolution from 2-D ones: for each depth tap kd, the
// (H, W) transposed convolution of every depth slice by w[:, :, kd]; its
// depth slices go to d * stride + kd * dilation (zeros inserted between
// them by stacking and reshaping, then a shift by padding); the taps are
// summed and the depth padding cropped.
Result<ir::Expr> ConvTranspose3d(NodeCtx& ctx, ir::Expr x, const ir::TensorSInfo& xi, ir::Expr wt, const Window& w,
                                 const std::vector<int64_t>& out_pad, int64_t group) {
  const auto& s = xi.shape;
  auto dd = ConstDim(s[2]);
  if (!dd) return Unimplemented("3-D transposed convolution with a symbolic depth");
  int64_t D = *dd, sd = w.strides[0], dil = w.dilations[0], KD = w.kernel[0];
  KILN_ASSIGN_OR_RETURN(ir::Expr xt, ctx.Op("permute_dims", {x}, {{"axes", AttrInts({0, 2, 1, 3, 4})}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr x2, ctx.Op("reshape", {xt, MakeShape({SimplifyDim(s[0] * s[2]), s[1], s[3], s[4]})}));
  int64_t full = (D - 1) * sd + (KD - 1) * dil + 1 + out_pad[0];
  ir::Expr acc;
  for (int64_t kd = 0; kd < KD; ++kd) {
    KILN_ASSIGN_OR_RETURN(ir::Expr wk, ctx.Op("strided_slice", {wt}, {{"axes", AttrInts({2})}, {"begin", AttrInts({kd})},
                                                                    {"end", AttrInts({kd + 1})}, {"strides", AttrInts({1})}}));
    KILN_ASSIGN_OR_RETURN(wk, ctx.Op("squeeze", {wk}, {{"axis", AttrInts({2})}}));
    ir::AttrMap attrs = {{"strides", AttrInts({w.strides[1], w.strides[2]})},
                         {"padding", AttrInts({w.pad_lo[1], w.pad_lo[2], w.pad_hi[1], w.pad_hi[2]})},
                         {"output_padding", AttrInts({out_pad[1], out_pad[2]})},
                         {"dilation", AttrInts({w.dilations[1], w.dilations[2]})},
                         {"groups", AttrI(group)}};
    KILN_ASSIGN_OR_RETURN(ir::Expr z, ctx.Op("nn.conv2d_transpose", {x2, wk}, attrs));
    const auto* zi = ir::SInfoAs<ir::TensorSInfo>(z->struct_info);
    if (!zi || !zi->has_shape) return Internal("transposed convolution result without a shape");
    PrimExpr o = zi->shape[1], h = zi->shape[2], wd = zi->shape[3];
    KILN_ASSIGN_OR_RETURN(z, ctx.Op("reshape", {z, MakeShape({s[0], s[2], o, h, wd})}));  // (N, D, O, H', W')
    if (sd > 1) {
      KILN_ASSIGN_OR_RETURN(ir::Expr z1, ctx.Op("expand_dims", {z}, {{"axis", AttrInts({2})}}));
      KILN_ASSIGN_OR_RETURN(ir::Expr zeros, ctx.Op("zeros", {MakeShape({s[0], s[2], PrimExpr(sd - 1), o, h, wd})},
                                                   {{"dtype", AttrS(DTypeName(xi.dtype))}}));
      KILN_ASSIGN_OR_RETURN(ir::Expr st, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{z1, zeros})},
                                                {{"axis", AttrI(2)}}));
      KILN_ASSIGN_OR_RETURN(z, ctx.Op("reshape", {st, MakeShape({s[0], PrimExpr(D * sd), o, h, wd})}));
      KILN_ASSIGN_OR_RETURN(z, ctx.Op("strided_slice", {z}, {{"axes", AttrInts({1})}, {"begin", AttrInts({0})},
                                                             {"end", AttrInts({(D - 1) * sd + 1})}, {"strides", AttrInts({1})}}));
    }
    int64_t before = kd * dil, after = full - ((D - 1) * sd + 1) - before;
    KILN_ASSIGN_OR_RETURN(z, ctx.Op("nn.pad", {z}, {{"pad_width", AttrInts({0, 0, before, after, 0, 0, 0, 0, 0, 0})},
                                                    {"pad_mode", AttrS("constant")}, {"pad_value", AttrF(0.0)}}));
    if (acc) {
      KILN_ASSIGN_OR_RETURN(acc, ctx.Op("add", {acc, z}));
    } else {
      acc = z;
    }
  }
  KILN_ASSIGN_OR_RETURN(acc, ctx.Op("strided_slice", {acc}, {{"axes", AttrInts({1})}, {"begin", AttrInts({w.pad_lo[0]})},
                                                             {"end", AttrInts({full - w.pad_hi[0]})}, {"strides", AttrInts({1})}}));
  return ctx.Op("permute_dims", {acc}, {{"axes", AttrInts({0, 2, 1, 3, 4})}});
}

Status ConvertConvTranspose(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* wi, ctx.Info(1));
  if (xi->ndim < 3 || xi->ndim > 5) return ctx.Unsupported(std::to_string(xi->ndim - 2) + "-D transposed convolution (1-D to 3-D are supported)");
  size_t nsp = static_cast<size_t>(xi->ndim) - 2;
  KILN_ASSIGN_OR_RETURN(std::string auto_pad, ctx.AttrString("auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return ctx.Unsupported("auto_pad=\"" + auto_pad + "\"");
  }
  if (wi->ndim != xi->ndim) {
    return ctx.Invalid("the weight has rank " + std::to_string(wi->ndim) + ", the input rank " + std::to_string(xi->ndim));
  }
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < nsp; ++i) {
    auto k = ConstDim(wi->shape[2 + i]);
    if (!k) return ctx.Unsupported("a weight with symbolic kernel size");
    kernel.push_back(*k);
  }
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  Window w;
  if (same) {
    // ReadWindow's SAME padding is the forward convolution's; derive it below.
    KILN_ASSIGN_OR_RETURN(w.strides, ctx.AttrInts("strides", std::vector<int64_t>(nsp, 1)));
    KILN_ASSIGN_OR_RETURN(w.dilations, ctx.AttrInts("dilations", std::vector<int64_t>(nsp, 1)));
    w.kernel = kernel;
    w.pad_lo.assign(nsp, 0);
    w.pad_hi.assign(nsp, 0);
    if (w.strides.size() != nsp || w.dilations.size() != nsp) return ctx.Invalid("strides and dilations need " + std::to_string(nsp) + " values");
    for (size_t i = 0; i < nsp; ++i) {
      if (w.strides[i] < 1 || w.strides[i] > (int64_t{1} << 31) || w.dilations[i] < 1 || w.dilations[i] > (int64_t{1} << 31)) {
        return ctx.Invalid("strides and dilations must lie in [1, 2^31]");
      }
    }
  } else {
    KILN_ASSIGN_OR_RETURN(w, ReadWindow(ctx, *xi, nsp, kernel));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_pad, ctx.AttrInts("output_padding", std::vector<int64_t>(nsp, 0)));
  if (out_pad.size() != nsp) return ctx.Invalid("output_padding needs " + std::to_string(nsp) + " values");
  // output_shape (or SAME: input * stride) fixes the total padding; a
  // negative total becomes extra output_padding.
  std::vector<int64_t> out_shape;
  if (ctx.HasAttr("output_shape")) {
    KILN_ASSIGN_OR_RETURN(out_shape, ctx.AttrInts("output_shape", {}));
    if (out_shape.size() == nsp + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != nsp) return ctx.Invalid("output_shape needs " + std::to_string(nsp) + " values");
  } else if (same) {
    for (size_t i = 0; i < nsp; ++i) {
      auto in = ConstDim(xi->shape[2 + i]);
      if (!in) return ctx.Unsupported("auto_pad=" + auto_pad + " with a symbolic spatial dimension");
      out_shape.push_back(*in * w.strides[i]);
    }
  }
  if (!out_shape.empty()) {
    for (size_t i = 0; i < nsp; ++i) {
      auto in = ConstDim(xi->shape[2 + i]);
      if (!in) return ctx.Unsupported("output_shape with a symbolic spatial dimension");
      __int128 wide = static_cast<__int128>(w.strides[i]) * (*in - 1) + out_pad[i] +
                      static_cast<__int128>(kernel[i] - 1) * w.dilations[i] + 1 - out_shape[i];
      if (wide > kMaxElements || wide < -kMaxElements || out_pad[i] < 0 || out_pad[i] > kMaxElements) {
        return ctx.Invalid("output_shape, strides and kernel give a padding out of range");
      }
      int64_t total = static_cast<int64_t>(wide);
      if (total < 0) {
        out_pad[i] += -total;
        total = 0;
      }
      int64_t half = total / 2;
      w.pad_lo[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.pad_hi[i] = total - w.pad_lo[i];
    }
  }
  KILN_ASSIGN_OR_RETURN(int64_t group, ctx.AttrInt("group", 1));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr wt, ctx.Input(1));
  if (nsp == 3) {
    KILN_ASSIGN_OR_RETURN(ir::Expr y, ConvTranspose3d(ctx, x, *xi, wt, w, out_pad, group));
    if (ctx.HasInput(2)) { KILN_ASSIGN_OR_RETURN(y, AddChannelBias(ctx, y, 2, xi->ndim)); }
    ctx.SetOutput(0, y);
    return Status::Ok();
  }
  if (nsp == 1) {
    KILN_ASSIGN_OR_RETURN(x, To2d(ctx, x));
    KILN_ASSIGN_OR_RETURN(wt, To2d(ctx, wt));
    w = Lift1d(w);
    out_pad = {0, out_pad[0]};
  }
  ir::AttrMap attrs = {{"strides", AttrInts(w.strides)}, {"padding", AttrInts(Padding(w))},
                       {"output_padding", AttrInts(out_pad)}, {"dilation", AttrInts(w.dilations)},
                       {"groups", AttrI(group)}};
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op("nn.conv2d_transpose", {x, wt}, attrs));
  if (nsp == 1) { KILN_ASSIGN_OR_RETURN(y, From2d(ctx, y)); }
  if (ctx.HasInput(2)) { KILN_ASSIGN_OR_RETURN(y, AddChannelBias(ctx, y, 2, xi->ndim)); }
  ctx.SetOutput(0, y);
  return Status::Ok();
}

// 3-D pooling as two 2-D poolings: (H, W) on (N, C*D, H, W), then D on
// (N, C, D, H'*W'). Exact for max and average alike: a window is a product of
// per-axis ranges, so its maximum, sum and (valid or full) count factor.
Status Pool3d(NodeCtx& ctx, ir::Expr x, const ir::TensorSInfo& xi, const Window& w, bool is_max, bool ceil_mode,
              bool count_pad) {
  const auto& s = xi.shape;
  const char* op = is_max ? "nn.max_pool2d" : "nn.avg_pool2d";
  auto attrs = [&](std::vector<int64_t> k, std::vector<int64_t> st, std::vector<int64_t> pad, std::vector<int64_t> dil) {
    ir::AttrMap a = {{"pool_size", AttrInts(k)}, {"strides", AttrInts(st)}, {"padding", AttrInts(pad)},
                     {"dilation", AttrInts(dil)}, {"ceil_mode", AttrB(ceil_mode)}, {"layout", AttrS("NCHW")}};
    if (!is_max) a["count_include_pad"] = AttrB(count_pad);
    return a;
  };
  KILN_ASSIGN_OR_RETURN(ir::Expr x1, ctx.Op("reshape", {x, MakeShape({s[0], SimplifyDim(s[1] * s[2]), s[3], s[4]})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr y1, ctx.Op(op, {x1}, attrs({w.kernel[1], w.kernel[2]}, {w.strides[1], w.strides[2]},
                                                           {w.pad_lo[1], w.pad_lo[2], w.pad_hi[1], w.pad_hi[2]},
                                                           {w.dilations[1], w.dilations[2]})));
  const auto* t1 = ir::SInfoAs<ir::TensorSInfo>(y1->struct_info);
  if (!t1 || !t1->has_shape) return Internal("pooling result without a shape");
  PrimExpr h = t1->shape[2], wd = t1->shape[3];
  KILN_ASSIGN_OR_RETURN(ir::Expr x2, ctx.Op("reshape", {y1, MakeShape({s[0], s[1], s[2], SimplifyDim(h * wd)})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr y2, ctx.Op(op, {x2}, attrs({w.kernel[0], 1}, {w.strides[0], 1}, {w.pad_lo[0], 0, w.pad_hi[0], 0},
                                                           {w.dilations[0], 1})));
  const auto* t2 = ir::SInfoAs<ir::TensorSInfo>(y2->struct_info);
  if (!t2 || !t2->has_shape) return Internal("pooling result without a shape");
  return Set(ctx, ctx.Op("reshape", {y2, MakeShape({s[0], s[1], t2->shape[2], h, wd})}));
}

// MaxPool's Indices output (2-D, static shapes): the window's K = kh * kw
// taps as strided slices of the input padded with the lowest value, stacked
// on a last axis; argmax picks the first maximum (row-major in the window)
// and integer arithmetic turns it into the flat index ONNX defines:
// (n * C + c) * H * W + h * W + w (storage_order 0) or ... + w * H + h (1).
Result<ir::Expr> MaxPoolIndices(NodeCtx& ctx, ir::Expr x, const ir::TensorSInfo& xi, const Window& w, const ir::Expr& pooled,
                                int64_t storage) {
  std::vector<int64_t> d(4);
  for (int i = 0; i < 4; ++i) {
    auto c = ConstDim(xi.shape[i]);
    if (!c) return Unimplemented("the Indices output of an input with symbolic dimensions");
    d[i] = *c;
  }
  const auto* pi = ir::SInfoAs<ir::TensorSInfo>(pooled->struct_info);
  if (!pi || !pi->has_shape) return Internal("pooling result without a shape");
  auto oh = ConstDim(pi->shape[2]), ow = ConstDim(pi->shape[3]);
  if (!oh || !ow) return Internal("pooling result without static dims");
  int64_t H = d[2], W = d[3], KH = w.kernel[0], KW = w.kernel[1];
  // Padding that covers every window (ceil_mode windows may pass the given pads).
  int64_t hi_h = std::max(w.pad_hi[0], (*oh - 1) * w.strides[0] + (KH - 1) * w.dilations[0] + 1 - H - w.pad_lo[0]);
  int64_t hi_w = std::max(w.pad_hi[1], (*ow - 1) * w.strides[1] + (KW - 1) * w.dilations[1] + 1 - W - w.pad_lo[1]);
  KILN_ASSIGN_OR_RETURN(ir::Expr xp, ctx.Op("nn.pad", {x}, {{"pad_width", AttrInts({0, 0, 0, 0, w.pad_lo[0], hi_h, w.pad_lo[1], hi_w})},
                                                           {"pad_mode", AttrS("constant")},
                                                           {"pad_value", AttrF(-std::numeric_limits<double>::max())}}));
  std::vector<ir::Expr> taps;
  for (int64_t kh = 0; kh < KH; ++kh) {
    for (int64_t kw = 0; kw < KW; ++kw) {
      int64_t bh = kh * w.dilations[0], bw = kw * w.dilations[1];
      KILN_ASSIGN_OR_RETURN(ir::Expr t, ctx.Op("strided_slice", {xp}, {{"axes", AttrInts({2, 3})}, {"begin", AttrInts({bh, bw})},
                                                                       {"end", AttrInts({bh + (*oh - 1) * w.strides[0] + 1, bw + (*ow - 1) * w.strides[1] + 1})},
                                                                       {"strides", AttrInts({w.strides[0], w.strides[1]})}}));
      KILN_ASSIGN_OR_RETURN(t, ctx.Op("expand_dims", {t}, {{"axis", AttrInts({4})}}));
      taps.push_back(t);
    }
  }
  ir::Expr stack = taps[0];
  if (taps.size() > 1) {
    KILN_ASSIGN_OR_RETURN(stack, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(taps)}, {{"axis", AttrI(4)}}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr k, ctx.Op("argmax", {stack}, {{"axis", AttrI(4)}, {"keepdims", AttrB(false)}}));
  Tensor hrow = Tensor::Empty(std::vector<int64_t>{*oh, 1}, DType::Int64()).value();
  Tensor wcol = Tensor::Empty(std::vector<int64_t>{*ow}, DType::Int64()).value();
  for (int64_t i = 0; i < *oh; ++i) hrow.data<int64_t>()[i] = i * w.strides[0] - w.pad_lo[0];
  for (int64_t i = 0; i < *ow; ++i) wcol.data<int64_t>()[i] = i * w.strides[1] - w.pad_lo[1];
  Tensor base = Tensor::Empty(std::vector<int64_t>{d[0], d[1], 1, 1}, DType::Int64()).value();
  for (int64_t i = 0; i < d[0] * d[1]; ++i) base.data<int64_t>()[i] = i * H * W;
  KILN_ASSIGN_OR_RETURN(ir::Expr kh, ctx.Op("floor_divide", {k, ScalarConst(DType::Int64(), static_cast<double>(KW))}));
  KILN_ASSIGN_OR_RETURN(ir::Expr kw, ctx.Op("floor_mod", {k, ScalarConst(DType::Int64(), static_cast<double>(KW))}));
  KILN_ASSIGN_OR_RETURN(kh, ctx.Op("multiply", {kh, ScalarConst(DType::Int64(), static_cast<double>(w.dilations[0]))}));
  KILN_ASSIGN_OR_RETURN(kw, ctx.Op("multiply", {kw, ScalarConst(DType::Int64(), static_cast<double>(w.dilations[1]))}));
  KILN_ASSIGN_OR_RETURN(ir::Expr h, ctx.Op("add", {kh, MakeConstant(hrow)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr ww, ctx.Op("add", {kw, MakeConstant(wcol)}));
  ir::Expr major = storage ? ww : h, minor = storage ? h : ww;
  KILN_ASSIGN_OR_RETURN(ir::Expr flat, ctx.Op("multiply", {major, ScalarConst(DType::Int64(), static_cast<double>(storage ? H : W))}));
  KILN_ASSIGN_OR_RETURN(flat, ctx.Op("add", {flat, minor}));
  return ctx.Op("add", {flat, MakeConstant(base)});
}

// ONNX Runtime sizes a MaxPool output (ceil_mode 0) as
// trunc((in + pads - k_eff) / s) + 1, truncating toward zero: an input
// shorter than the window by less than the stride still gives one output,
// the maximum of what the window covers (PaddleOCR's classifier pools a
// height of 1 by 2x2 windows). ONNX's floor gives 0 there. For a symbolic
// dimension that may be that short, the input's upper end is padded with the
// lowest value by max(0, k_eff - pads - in) when the program runs, which
// changes nothing for longer inputs. A static dimension that short is padded
// by that many at compile time, so that a build with the dimension pinned
// (--dim) runs the shapes the symbolic build runs, with the same results.
Result<ir::Expr> PadShortMaxPoolInput(NodeCtx& ctx, ir::Expr x, const Window& w) {
  const auto* xi = ir::SInfoAs<ir::TensorSInfo>(x->struct_info);
  if (!xi || !xi->has_shape || xi->shape.size() != 4) return x;
  std::vector<PrimExpr> width(8, PrimExpr(int64_t{0}));
  bool any = false;
  for (size_t i = 0; i < 2; ++i) {
    const PrimExpr& in = xi->shape[2 + i];
    int64_t k_eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t need = k_eff - w.pad_lo[i] - w.pad_hi[i];  // the shortest input with a whole window
    if (need <= 1) continue;
    if (auto n = ConstDim(in)) {
      if (*n >= need) continue;
      width[4 + 2 * i + 1] = PrimExpr(need - *n);
    } else {
      width[4 + 2 * i + 1] = SimplifyDim(ir::MakeBinary(ir::TirKind::kMax, PrimExpr(need) - in, PrimExpr(int64_t{0})));
    }
    any = true;
  }
  if (!any) return x;
  return ctx.Op("nn.pad", {x, MakeShape(width)},
                {{"pad_mode", AttrS("constant")}, {"pad_value", AttrF(-std::numeric_limits<double>::max())}});
}

Status ConvertPool(NodeCtx& ctx) {
  bool is_max = ctx.op_type() == "MaxPool";
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  if (xi->ndim < 3 || xi->ndim > 5) return ctx.Unsupported(std::to_string(xi->ndim - 2) + "-D pooling (1-D to 3-D are supported)");
  size_t nsp = static_cast<size_t>(xi->ndim) - 2;
  if (!ctx.HasAttr("kernel_shape")) return ctx.Invalid("kernel_shape is required");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.AttrInts("kernel_shape", {}));
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, *xi, nsp, kernel));
  KILN_ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.AttrInt("ceil_mode", 0));
  KILN_ASSIGN_OR_RETURN(int64_t count_pad, ctx.AttrInt("count_include_pad", 0));
  KILN_ASSIGN_OR_RETURN(int64_t storage, ctx.AttrInt("storage_order", 0));
  bool indices = is_max && ctx.HasOutput(1);
  if (indices && nsp != 2) return ctx.Unsupported("the Indices output of " + std::to_string(nsp) + "-D pooling");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (nsp == 3) return Pool3d(ctx, x, *xi, w, is_max, ceil_mode != 0, count_pad != 0);
  if (nsp == 1) {
    KILN_ASSIGN_OR_RETURN(x, To2d(ctx, x));
    w = Lift1d(w);
  }
  if (is_max && ceil_mode == 0 && !indices) {
    KILN_ASSIGN_OR_RETURN(x, PadShortMaxPoolInput(ctx, x, w));
  }
  ir::AttrMap attrs = {{"pool_size", AttrInts(w.kernel)},     {"strides", AttrInts(w.strides)},
                       {"padding", AttrInts(Padding(w))},     {"dilation", AttrInts(w.dilations)},
                       {"ceil_mode", AttrB(ceil_mode != 0)}, {"layout", AttrS("NCHW")}};
  if (!is_max) attrs["count_include_pad"] = AttrB(count_pad != 0);
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op(is_max ? "nn.max_pool2d" : "nn.avg_pool2d", {x}, attrs));
  if (nsp == 1) { KILN_ASSIGN_OR_RETURN(y, From2d(ctx, y)); }
  ctx.SetOutput(0, y);
  if (indices) {
    KILN_ASSIGN_OR_RETURN(ir::Expr idx, MaxPoolIndices(ctx, x, *xi, w, y, storage));
    ctx.SetOutput(1, idx);
  }
  return Status::Ok();
}

Status ConvertGlobalPool(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < xi->ndim; ++i) axes.push_back(i);
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  const char* op = ctx.op_type() == "GlobalMaxPool" ? "max" : "mean";
  return Set(ctx, ctx.Op(op, {x}, {{"axis", AttrInts(axes)}, {"keepdims", AttrB(true)}}));
}

// ---------------------------------------------------------------- normalizations

Status ConvertBatchNorm(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t training, ctx.AttrInt("training_mode", 0));
  if (ctx.opset() < 7) {  // is_test=0, the default then, meant training mode
    KILN_ASSIGN_OR_RETURN(int64_t is_test, ctx.AttrInt("is_test", 0));
    if (is_test == 0) return ctx.Unsupported("training mode (is_test=0, the default before opset 7)");
  }
  if (training || ctx.HasOutput(1) || ctx.HasOutput(2)) return ctx.Unsupported("training mode (running mean/var outputs)");
  KILN_ASSIGN_OR_RETURN(int64_t spatial, ctx.AttrInt("spatial", 1));
  if (spatial != 1) return ctx.Unsupported("spatial=0 (per-element statistics)");
  KILN_ASSIGN_OR_RETURN(double eps, ctx.AttrFloat("epsilon", 1e-5));
  std::vector<ir::Expr> args;
  for (size_t i = 0; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
    args.push_back(e);
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr bn, ctx.Op("nn.batch_norm", args, {{"axis", AttrI(1)}, {"epsilon", AttrF(eps)}}));
  return Set(ctx, ctx.Emit(std::make_shared<ir::TupleGetItemExpr>(bn, 0)));
}

Status ConvertInstanceNorm(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double eps, ctx.AttrFloat("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  if (xi->ndim < 3) return ctx.Invalid("the input needs rank 3 or more");
  auto c = ConstDim(xi->shape[1]);
  if (!c) return ctx.Unsupported("a symbolic channel count");
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < xi->ndim; ++i) axes.push_back(i);
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr g, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(2));
  return Set(ctx, ctx.Op("nn.group_norm", {x, g, b},
                         {{"num_groups", AttrI(*c)}, {"channel_axis", AttrI(1)}, {"axes", AttrInts(axes)},
                          {"epsilon", AttrF(eps)}}));
}

Status ConvertLayerNorm(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t stash, ctx.AttrInt("stash_type", 1));
  if (stash != 1) return ctx.Unsupported("stash_type=" + std::to_string(stash) + " (statistics in float32 only)");
  KILN_ASSIGN_OR_RETURN(double eps, ctx.AttrFloat("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", -1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < xi->ndim; ++i) axes.push_back(i);
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr g, ctx.Input(1));
  ir::Expr b;
  if (ctx.HasInput(2)) {
    KILN_ASSIGN_OR_RETURN(b, ctx.Input(2));
  } else {
    KILN_ASSIGN_OR_RETURN(b, ctx.Op("zeros_like", {g}));
  }
  KILN_RETURN_IF_ERROR(Set(ctx, ctx.Op("nn.layer_norm", {x, g, b}, {{"axes", AttrInts(axes)}, {"epsilon", AttrF(eps)}})));
  // The optional statistics outputs (kept dims): mean and 1 / sqrt(var + eps).
  if (ctx.HasOutput(1) || ctx.HasOutput(2)) {
    ir::AttrMap red = {{"axis", AttrInts(axes)}, {"keepdims", AttrB(true)}};
    KILN_ASSIGN_OR_RETURN(ir::Expr mean, ctx.Op("mean", {x}, red));
    ctx.SetOutput(1, mean);
    if (ctx.HasOutput(2)) {
      KILN_ASSIGN_OR_RETURN(ir::Expr var, ctx.Op("variance", {x}, red));
      KILN_ASSIGN_OR_RETURN(ir::Expr ve, ctx.Op("add", {var, ScalarConst(xi->dtype, eps)}));
      KILN_ASSIGN_OR_RETURN(ir::Expr inv, ctx.Op("rsqrt", {ve}));
      ctx.SetOutput(2, inv);
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- softmax

Status ConvertSoftmax(NodeCtx& ctx) {
  const char* op = ctx.op_type() == "LogSoftmax" ? "nn.log_softmax" : "nn.softmax";
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", ctx.opset() >= 13 ? -1 : 1));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (ctx.opset() >= 13 || axis == xi->ndim - 1) return Set(ctx, ctx.Op(op, {x}, {{"axis", AttrI(axis)}}));
  // Before opset 13 the input is seen as 2-D: [prod(dims < axis), prod(dims >= axis)].
  PrimExpr rows = PrimExpr(int64_t{1}), cols = PrimExpr(int64_t{1});
  for (int64_t i = 0; i < xi->ndim; ++i) (i < axis ? rows : cols) = SimplifyDim(i < axis ? rows * xi->shape[i] : cols * xi->shape[i]);
  KILN_ASSIGN_OR_RETURN(ir::Expr x2, ctx.Op("reshape", {x, MakeShape({rows, cols})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr s, ctx.Op(op, {x2}, {{"axis", AttrI(1)}}));
  return Set(ctx, ctx.Op("reshape", {s, MakeShape(xi->shape)}));
}

Status ConvertDropout(NodeCtx& ctx) {
  if (ctx.opset() >= 12 && ctx.HasInput(2)) {
    auto training = ctx.ConstScalar(2, "training_mode");
    if (!training.ok() || *training != 0) return ctx.Unsupported("training_mode other than a constant false");
  }
  KILN_ASSIGN_OR_RETURN(const Value* v, ctx.In(0));
  ctx.SetOutputValue(0, *v);
  if (ctx.HasOutput(1)) {  // inference keeps every element: an all-true mask
    KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
    KILN_ASSIGN_OR_RETURN(ir::Expr mask, ctx.Op("ones_like", {x}, {{"dtype", AttrS("bool")}}));
    ctx.SetOutput(1, mask);
  }
  return Status::Ok();
}

// A two-operand float einsum that is one batched matrix product ("bhqd,bhkd->bhqk",
// "bij,bjk->bik"): each letter in both operands and the output a batch axis, one
// letter only in A and the output (M), one only in B and the output (N), one in
// both operands only (K). Emitted as permute_dims of the operands to [batch, M, K]
// and [batch, K, N], matmul, and a permute_dims to the output's order, so the
// matmul schedule runs it; einsum's own kernel is a plain reduction, and with B's
// K axis innermost ("bhkd") its default schedule ran 64 times slower than the
// peers. Returns false (nothing emitted) for any other equation.
Result<bool> EinsumAsMatmul(NodeCtx& ctx, const std::string& eq) {
  if (ctx.NumInputs() != 2) return false;
  size_t comma = eq.find(','), arrow = eq.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) return false;
  std::string ta = eq.substr(0, comma), tb = eq.substr(comma + 1, arrow - comma - 1), to = eq.substr(arrow + 2);
  auto letters_unique = [](const std::string& t) {
    std::set<char> seen;
    for (char c : t)
      if (!std::isalpha(static_cast<unsigned char>(c)) || !seen.insert(c).second) return false;
    return true;
  };
  if (!letters_unique(ta) || !letters_unique(tb) || !letters_unique(to)) return false;
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ctx.Info(1));
  if (!ai->has_dtype || !ai->dtype.is_float() || !bi->has_dtype || ai->dtype != bi->dtype) return false;
  if (!ai->has_shape || !bi->has_shape) return false;
  if (ai->ndim != static_cast<int64_t>(ta.size()) || bi->ndim != static_cast<int64_t>(tb.size())) return false;
  auto in = [](const std::string& t, char c) { return t.find(c) != std::string::npos; };
  std::string batch, m, n, k;
  for (char c : to) {
    if (in(ta, c) && in(tb, c)) batch += c;
    else if (in(ta, c)) m += c;
    else if (in(tb, c)) n += c;
    else return false;
  }
  for (char c : ta)
    if (!in(to, c)) {
      if (!in(tb, c)) return false;  // summed over A alone
      k += c;
    }
  for (char c : tb)
    if (!in(to, c) && !in(ta, c)) return false;  // summed over B alone
  if (m.size() != 1 || n.size() != 1 || k.size() != 1) return false;
  // Batch axes must agree in size (matmul would broadcast a 1; einsum does not).
  for (char c : batch)
    if (!arith::CanProveEqual(ai->shape[ta.find(c)], bi->shape[tb.find(c)])) return false;
  auto permute = [&](ir::Expr x, const std::string& from, const std::string& to_order) -> Result<ir::Expr> {
    std::vector<int64_t> perm;
    bool identity = true;
    for (size_t i = 0; i < to_order.size(); ++i) {
      perm.push_back(static_cast<int64_t>(from.find(to_order[i])));
      identity = identity && perm.back() == static_cast<int64_t>(i);
    }
    if (identity) return x;
    return ctx.Op("permute_dims", {x}, {{"axes", AttrInts(perm)}});
  };
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(a, permute(a, ta, batch + m + k));
  KILN_ASSIGN_OR_RETURN(b, permute(b, tb, batch + k + n));
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op("matmul", {a, b}));
  KILN_ASSIGN_OR_RETURN(y, permute(y, batch + m + n, to));
  KILN_RETURN_IF_ERROR(Set(ctx, y));
  return true;
}

Status ConvertEinsum(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string eq, ctx.AttrString("equation", ""));
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) {
    // Expand "..." into letters the equation does not use, from the operands' ranks.
    std::string lhs = eq.substr(0, eq.find("->"));
    std::string unused;
    for (char c = 'a'; c <= 'z'; ++c)
      if (eq.find(c) == std::string::npos) unused += c;
    std::vector<std::string> terms;
    size_t start = 0;
    while (true) {
      size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (terms.size() != ctx.NumInputs()) return ctx.Invalid("the equation has " + std::to_string(terms.size()) + " operands, the node " + std::to_string(ctx.NumInputs()));
    size_t most = 0;
    std::vector<size_t> counts;
    for (size_t i = 0; i < terms.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ti, ctx.Info(i));
      size_t letters = 0;
      for (char c : terms[i]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
      size_t n = terms[i].find("...") == std::string::npos ? 0 : static_cast<size_t>(ti->ndim) - letters;
      if (n > unused.size() || letters > static_cast<size_t>(ti->ndim)) return ctx.Invalid("the equation does not match operand " + std::to_string(i) + "'s rank");
      counts.push_back(n);
      most = std::max(most, n);
    }
    std::string ell = unused.substr(0, most);
    std::string rebuilt;
    for (size_t i = 0; i < terms.size(); ++i) {
      std::string t = terms[i];
      size_t pos = t.find("...");
      if (pos != std::string::npos) t.replace(pos, 3, ell.substr(most - counts[i]));
      rebuilt += (i ? "," : "") + t;
    }
    if (eq.find("->") != std::string::npos) {
      std::string rhs = eq.substr(eq.find("->") + 2);
      size_t pos = rhs.find("...");
      if (pos != std::string::npos) rhs.replace(pos, 3, ell);
      eq = rebuilt + "->" + rhs;
    } else {
      std::map<char, int> count;
      for (char c : rebuilt)
        if (std::isalpha(static_cast<unsigned char>(c)) && ell.find(c) == std::string::npos) ++count[c];
      std::string out = ell;
      for (const auto& kv : count)
        if (kv.second == 1) out += kv.first;
      eq = rebuilt + "->" + out;
    }
  }
  if (eq.find("->") == std::string::npos) {
    // Implicit output: the letters used exactly once, in alphabetical order.
    std::map<char, int> count;
    for (char c : eq)
      if (std::isalpha(static_cast<unsigned char>(c))) ++count[c];
    std::string out;
    for (const auto& kv : count)
      if (kv.second == 1) out += kv.first;
    eq += "->" + out;
  }
  KILN_ASSIGN_OR_RETURN(bool as_matmul, EinsumAsMatmul(ctx, eq));
  if (as_matmul) return Status::Ok();
  std::vector<ir::Expr> ops;
  for (size_t i = 0; i < ctx.NumInputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
    ops.push_back(e);
  }
  auto tuple = std::make_shared<ir::TupleExpr>(ops);
  return Set(ctx, ctx.Op("einsum", {tuple}, {{"subscripts", AttrS(eq)}}));
}

// ---------------------------------------------------------------- Pad

Status ConvertPad(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(std::string mode, ctx.AttrString("mode", "constant"));
  if (mode != "constant" && mode != "reflect" && mode != "edge") return ctx.Unsupported("mode=\"" + mode + "\"");
  // Pads may come from shape arithmetic ((h + 31) // 32 * 32 - h): symbolic.
  std::vector<PrimExpr> pads, crop;  // crop: negative pads read at run time, negated
  double value = 0;
  bool run_time_value = false;  // constant_value fed as a run-time tensor
  if (ctx.opset() < 11) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> p, ctx.AttrInts(ctx.HasAttr("pads") ? "pads" : "paddings", {}));
    for (int64_t v : p) pads.push_back(PrimExpr(v));
    KILN_ASSIGN_OR_RETURN(value, ctx.AttrFloat("value", 0.0));
  } else {
    if (const KnownInts* k = ctx.Known(1)) {
      pads = k->elems;
    } else {
      // Pads fed as a run-time tensor: read when the program runs, the
      // positive and negative parts apart, since the compiler takes symbolic
      // values as sizes (>= 0). Padding by max(p, 0), then slicing off
      // max(-p, 0) at each end, is ONNX's crop for negative pads.
      KILN_ASSIGN_OR_RETURN(int64_t len, RunTimeShapeLength(ctx, 1, "pads"));
      KILN_ASSIGN_OR_RETURN(ir::Expr pt, ctx.Input(1));
      KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* pi, ctx.Info(1));
      if (pi->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(pt, ctx.Op("astype", {pt}, {{"dtype", AttrS("int64")}})); }
      ir::Expr zero = ScalarConst(DType::Int64(), 0);
      KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("maximum", {pt, zero}));
      KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("negative", {pt}));
      KILN_ASSIGN_OR_RETURN(neg, ctx.Op("maximum", {neg, zero}));
      KILN_ASSIGN_OR_RETURN(pads, ReadShapeAtRunTime(ctx, pos, len, ctx.node().input(1) + "_grow"));
      KILN_ASSIGN_OR_RETURN(crop, ReadShapeAtRunTime(ctx, neg, len, ctx.node().input(1) + "_crop"));
      if (len == 2 * xi->ndim && xi->ndim > 0) {
        // Crops larger than an axis (with its padding) leave a negative size:
        // counted per axis and matched against 0.
        const int64_t r = xi->ndim;
        KILN_ASSIGN_OR_RETURN(ir::Expr both, ctx.Op("reshape", {pt, MakeShape({PrimExpr(int64_t{2}), PrimExpr(r)})}));
        KILN_ASSIGN_OR_RETURN(ir::Expr net, ctx.Op("sum", {both}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(false)}}));
        KILN_ASSIGN_OR_RETURN(ir::Expr dims, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(xi->shape)}, {})));
        KILN_ASSIGN_OR_RETURN(ir::Expr size, ctx.Op("add", {dims, net}));
        KILN_ASSIGN_OR_RETURN(ir::Expr below, ctx.Op("less", {size, zero}));
        KILN_ASSIGN_OR_RETURN(below, ctx.Op("astype", {below}, {{"dtype", AttrS("int64")}}));
        KILN_ASSIGN_OR_RETURN(below, ctx.Op("sum", {below}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
        const std::string message = RunTimeNode(ctx) + ": input 1 \"" + ctx.node().input(1) + "\" crops {got} of the axes of " +
                                    InputText(ctx, 0, true) + " to a negative size";
        KILN_RETURN_IF_ERROR(
            ReadShapeAtRunTime(ctx, below, 1, ctx.node().input(1) + "_negative_sizes", {PrimExpr(int64_t{0})}, {message})
                .status());
      }
    }
    if (IsRunTimeOperand(ctx, 2) && mode == "constant") {
      run_time_value = true;
    } else if (ctx.HasInput(2)) {
      KILN_ASSIGN_OR_RETURN(value, ctx.ConstScalar(2, "constant_value"));
    }
  }
  size_t n = static_cast<size_t>(xi->ndim);
  // Opset 18's axes: pads name only these axes (begins, then ends); the others
  // get none.
  if (ctx.opset() < 18 && ctx.HasInput(3)) return ctx.Invalid("the axes input needs opset 18 or later");
  if (ctx.HasInput(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(3, "axes"));
    if (pads.size() != 2 * axes.size()) {
      return ctx.Invalid("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
    }
    std::vector<PrimExpr> full(2 * n, PrimExpr(int64_t{0})), full_crop(2 * n, PrimExpr(int64_t{0}));
    std::vector<bool> seen(n, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], xi->ndim));
      if (seen[static_cast<size_t>(a)]) return ctx.Invalid("axes " + Join(axes) + " repeat an axis");
      seen[static_cast<size_t>(a)] = true;
      full[static_cast<size_t>(a)] = pads[i];
      full[static_cast<size_t>(a) + n] = pads[i + axes.size()];
      if (!crop.empty()) {
        full_crop[static_cast<size_t>(a)] = crop[i];
        full_crop[static_cast<size_t>(a) + n] = crop[i + axes.size()];
      }
    }
    pads = full;
    if (!crop.empty()) crop = full_crop;
  }
  if (pads.size() != 2 * n) return ctx.Invalid("pads has " + std::to_string(pads.size()) + " values, rank " + std::to_string(n) + " needs " + std::to_string(2 * n));
  std::vector<int64_t> consts;
  for (const auto& p : pads) {
    if (auto c = ConstDim(p)) consts.push_back(*c);
  }
  for (int64_t c : consts) {
    if (c < 0) return ctx.Unsupported("negative pads " + Join(consts));
    if (c > kMaxElements) return ctx.Invalid("pads too large " + Join(consts));
  }
  std::vector<PrimExpr> width;
  for (size_t i = 0; i < n; ++i) {
    width.push_back(pads[i]);
    width.push_back(pads[i + n]);
  }
  ir::AttrMap attrs = {{"pad_mode", AttrS(mode)}, {"pad_value", AttrF(value)}};
  auto pad = [&](ir::Expr x) -> Result<ir::Expr> {
    if (consts.size() == pads.size()) {
      std::vector<int64_t> w;
      for (const auto& p : width) w.push_back(*ConstDim(p));
      ir::AttrMap a = attrs;
      a["pad_width"] = AttrInts(w);
      return ctx.Op("nn.pad", {x}, a);
    }
    if (crop.empty()) return ctx.Op("nn.pad", {x, MakeShape(width)}, attrs);
    KILN_ASSIGN_OR_RETURN(ir::Expr padded, ctx.Op("nn.pad", {x, MakeShape(width)}, attrs));
    std::vector<PrimExpr> axes_e, begin, end, steps;
    for (size_t i = 0; i < n; ++i) {
      axes_e.push_back(PrimExpr(static_cast<int64_t>(i)));
      begin.push_back(crop[i]);
      end.push_back(SimplifyDim(xi->shape[i] + pads[i] + pads[i + n] - crop[i + n]));
      steps.push_back(PrimExpr(int64_t{1}));
    }
    return ctx.Op("strided_slice", {padded, MakeShape(axes_e), MakeShape(begin), MakeShape(end), MakeShape(steps)});
  };
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (!run_time_value) return Set(ctx, pad(x));
  // constant_value known only when the program runs: pad with zeros, and
  // put the value where a zero-padded tensor of ones is 0 (a select, so any
  // value, NaN and infinities included, lands unchanged).
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* vi, ctx.Info(2));
  if (vi->ndim > 1 || (vi->ndim == 1 && !(vi->has_shape && ConstDim(vi->shape[0]) == std::optional<int64_t>(1)))) {
    return ctx.Invalid("constant_value (input 2) must be a scalar or hold one value");
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Input(2));
  if (vi->ndim == 1) { KILN_ASSIGN_OR_RETURN(v, ctx.Op("reshape", {v, MakeShape({})})); }
  if (vi->dtype != xi->dtype) { KILN_ASSIGN_OR_RETURN(v, ctx.Op("astype", {v}, {{"dtype", AttrS(DTypeName(xi->dtype))}})); }
  KILN_ASSIGN_OR_RETURN(ir::Expr padded, pad(x));
  KILN_ASSIGN_OR_RETURN(ir::Expr ones, ctx.Op("ones_like", {x}));
  KILN_ASSIGN_OR_RETURN(ir::Expr inside, pad(ones));
  KILN_ASSIGN_OR_RETURN(ir::Expr outside, ctx.Op("equal", {inside, ScalarConst(xi->dtype, 0)}));
  return Set(ctx, ctx.Op("where", {outside, v, padded}));
}

}  // namespace

void AddNnConverters(ConverterTable* t) {
  (*t)["MatMul"] = ConvertMatMul;
  (*t)["Gemm"] = ConvertGemm;
  (*t)["Conv"] = ConvertConv;
  (*t)["ConvTranspose"] = ConvertConvTranspose;
  (*t)["MaxPool"] = ConvertPool;
  (*t)["AveragePool"] = ConvertPool;
  (*t)["GlobalAveragePool"] = ConvertGlobalPool;
  (*t)["GlobalMaxPool"] = ConvertGlobalPool;
  (*t)["BatchNormalization"] = ConvertBatchNorm;
  (*t)["InstanceNormalization"] = ConvertInstanceNorm;
  (*t)["LayerNormalization"] = ConvertLayerNorm;
  (*t)["Softmax"] = ConvertSoftmax;
  (*t)["LogSoftmax"] = ConvertSoftmax;
  (*t)["Dropout"] = ConvertDropout;
  (*t)["Einsum"] = ConvertEinsum;
  (*t)["Pad"] = ConvertPad;
}

}  // namespace onnx
}  // namespace kiln
