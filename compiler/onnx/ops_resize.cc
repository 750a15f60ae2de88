// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample of
// the H and W axes of NCHW tensors.
//
// Two lowerings:
// - R.image.resize2d for the forms it computes exactly as ONNX does: nearest
//   or linear, half_pixel / align_corners / asymmetric / pytorch_half_pixel
//   (output sizes > 1), given sizes or scales that give whole sizes.
// - Otherwise, with static H and W, interpolation matrices computed here
//   from ONNX's definition: out = Mh · X · Mwᵀ (two matmuls by constants).
//   That covers cubic (cubic_coeff_a, exclude_outside), tf_half_pixel_for_nn,
//   and fractional scales (ONNX maps coordinates with the scale itself and
//   the unrounded output length, which resize2d does not).
#include <algorithm>
#include <cmath>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;

struct Spec {
  std::string mode, coord, nearest;
  double cubic_a = -0.75;
  bool exclude = false;
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize, of the axis at hand
};

// ONNX's x_original of output index o along an axis of `in` elements.
double SourceCoord(const Spec& s, int64_t o, int64_t in, int64_t out, double scale) {
  double x = static_cast<double>(o);
  double out_len = static_cast<double>(in) * scale;  // unrounded, as ONNX's reference
  if (s.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (s.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (s.coord == "align_corners") return out_len == 1 ? 0.0 : x * (in - 1) / (out_len - 1);
  if (s.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (s.coord == "tf_crop_and_resize") {
    double span = (s.roi_end - s.roi_start) * (in - 1);
    return out > 1 ? s.roi_start * (in - 1) + x * span / (out - 1) : 0.5 * (s.roi_start + s.roi_end) * (in - 1);
  }
  return x / scale;  // asymmetric
}

int64_t NearestIndex(const std::string& mode, double x) {
  double f = std::floor(x);
  bool half = x - f == 0.5;
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(half ? f + 1 : std::round(x));
  return static_cast<int64_t>(half ? f : std::round(x));  // round_prefer_floor
}

// The (out x in) interpolation matrix of one axis, row-major. With
// tf_crop_and_resize, rows of coordinates outside the input stay zero and
// are flagged in `outside` (they take the extrapolation value).
std::vector<double> AxisMatrix(const Spec& s, int64_t in, int64_t out, double scale, std::vector<bool>* outside) {
  std::vector<double> m(static_cast<size_t>(in * out), 0.0);
  outside->assign(static_cast<size_t>(out), false);
  auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    double x = SourceCoord(s, o, in, out, scale);
    double* row = &m[static_cast<size_t>(o * in)];
    if (s.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) {
      (*outside)[static_cast<size_t>(o)] = true;
      continue;
    }
    if (s.mode == "nearest") {
      row[clamp(NearestIndex(s.nearest, x))] = 1.0;
      continue;
    }
    int64_t x0 = static_cast<int64_t>(std::floor(x));
    double r = x - static_cast<double>(x0);
    std::vector<int64_t> idx;
    std::vector<double> w;
    if (s.mode == "linear") {
      idx = {x0, x0 + 1};
      w = {1 - r, r};
    } else {
      double a = s.cubic_a;
      auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };   // 1 < |t| < 2
      auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
      idx = {x0 - 1, x0, x0 + 1, x0 + 2};
      w = {far(r + 1), near(r), near(1 - r), far(2 - r)};
    }
    double sum = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      bool outside = idx[k] < 0 || idx[k] >= in;
      if (s.exclude && outside) w[k] = 0;
      sum += w[k];
    }
    for (size_t k = 0; k < idx.size(); ++k) row[clamp(idx[k])] += s.exclude && sum != 0 ? w[k] / sum : w[k];
  }
  return m;
}

bool IsIdentity(const std::vector<double>& m, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (m[static_cast<size_t>(i * n + j)] != (i == j ? 1.0 : 0.0)) return false;
  return true;
}

Result<Tensor> MatrixTensor(const std::vector<double>& m, int64_t rows, int64_t cols, bool transpose, DType dt) {
  std::vector<int64_t> shape = transpose ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dt));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double v = m[static_cast<size_t>(i * cols + j)];
      int64_t at = transpose ? j * rows + i : i * cols + j;
      if (dt == DType::Float64()) t.data<double>()[at] = v;
      else t.data<float>()[at] = static_cast<float>(v);
    }
  }
  return t;
}

// ---------------------------------------------------------------- run-time matrices
//
// The interpolation matrices of the form above, computed when the program
// runs: for a scale that only arrives as a run-time tensor, or for the forms
// resize2d does not compute on symbolic spatial sizes (cubic, pytorch_half_pixel
// with an output that may be 1, tf_half_pixel_for_nn, tf_crop_and_resize).
// The same definition as AxisMatrix, written as elementwise Relax over
// o = arange(out) (a column) and i = arange(in) (a row): each tap adds its
// weight where clamp(tap index) == i. Coordinates in float64, as AxisMatrix;
// the matrix is cast to the data's type. O(out * in) per axis, as the
// constant matrices are.

struct RtAxis {
  PrimExpr in, out;
  ir::Expr scale;                 // float64 tensor of one element
  ir::Expr roi_start, roi_end;    // float64, tf_crop_and_resize only
};

Result<ir::Expr> F64(NodeCtx& ctx, ir::Expr t) { return ctx.Op("astype", {t}, {{"dtype", AttrS("float64")}}); }

// One element of a 1-d tensor, as a 1-element tensor.
Result<ir::Expr> Elem(NodeCtx& ctx, ir::Expr t, int64_t k) {
  return ctx.Op("strided_slice", {t}, {{"axes", AttrInts({0})}, {"begin", AttrInts({k})}, {"end", AttrInts({k + 1})},
                                       {"strides", AttrInts({1})}, {"assume_inbound", AttrB(true)}});
}

// A symbolic size as a float64 tensor of one element.
Result<ir::Expr> SizeF64(NodeCtx& ctx, PrimExpr d) {
  KILN_ASSIGN_OR_RETURN(ir::Expr t, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape({d})}, {})));
  return F64(ctx, t);
}

Result<ir::Expr> Arange(NodeCtx& ctx, PrimExpr n, const char* dtype, std::vector<PrimExpr> shape) {
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(n), PrimValue(PrimExpr(int64_t{1}))},
                                           {{"dtype", AttrS(dtype)}}));
  return ctx.Op("reshape", {r, MakeShape(std::move(shape))});
}

// The (out x in) matrix of one axis, float64; `outside` gets the [out, 1]
// bool column of tf_crop_and_resize's rows outside the input.
Result<ir::Expr> RunTimeAxisMatrix(NodeCtx& ctx, const Spec& s, const RtAxis& ax, ir::Expr* outside) {
  auto c = [](double v) { return ScalarConst(DType::Float64(), v); };
  auto op = [&](const char* name, std::vector<ir::Expr> args) { return ctx.Op(name, std::move(args)); };
  KILN_ASSIGN_OR_RETURN(ir::Expr o, Arange(ctx, ax.out, "float64", {ax.out, PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr i, Arange(ctx, ax.in, "int64", {PrimExpr(int64_t{1}), ax.in}));
  KILN_ASSIGN_OR_RETURN(ir::Expr in_f, SizeF64(ctx, ax.in));
  KILN_ASSIGN_OR_RETURN(ir::Expr out_f, SizeF64(ctx, ax.out));
  KILN_ASSIGN_OR_RETURN(ir::Expr in_m1, op("subtract", {in_f, c(1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr out_gt1, op("greater", {out_f, c(1)}));
  // x: ONNX's x_original of each output index (SourceCoord).
  ir::Expr x;
  KILN_ASSIGN_OR_RETURN(ir::Expr oh, op("add", {o, c(0.5)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr ohs, op("divide", {oh, ax.scale}));
  if (s.coord == "half_pixel" || s.coord == "pytorch_half_pixel") {
    KILN_ASSIGN_OR_RETURN(x, op("subtract", {ohs, c(0.5)}));
    if (s.coord == "pytorch_half_pixel") { KILN_ASSIGN_OR_RETURN(x, op("where", {out_gt1, x, c(0)})); }
  } else if (s.coord == "align_corners") {
    KILN_ASSIGN_OR_RETURN(ir::Expr len, op("multiply", {in_f, ax.scale}));
    KILN_ASSIGN_OR_RETURN(ir::Expr len_m1, op("subtract", {len, c(1)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr one, op("equal", {len, c(1)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr safe, op("where", {one, c(1), len_m1}));
    KILN_ASSIGN_OR_RETURN(ir::Expr num, op("multiply", {o, in_m1}));
    KILN_ASSIGN_OR_RETURN(x, op("divide", {num, safe}));
    KILN_ASSIGN_OR_RETURN(x, op("where", {one, c(0), x}));
  } else if (s.coord == "tf_half_pixel_for_nn") {
    x = ohs;
  } else if (s.coord == "tf_crop_and_resize") {
    KILN_ASSIGN_OR_RETURN(ir::Expr span, op("subtract", {ax.roi_end, ax.roi_start}));
    KILN_ASSIGN_OR_RETURN(span, op("multiply", {span, in_m1}));
    KILN_ASSIGN_OR_RETURN(ir::Expr base, op("multiply", {ax.roi_start, in_m1}));
    KILN_ASSIGN_OR_RETURN(ir::Expr out_m1, op("subtract", {out_f, c(1)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr safe, op("where", {out_gt1, out_m1, c(1)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr step, op("divide", {span, safe}));
    KILN_ASSIGN_OR_RETURN(ir::Expr os, op("multiply", {o, step}));
    KILN_ASSIGN_OR_RETURN(ir::Expr many, op("add", {base, os}));
    KILN_ASSIGN_OR_RETURN(ir::Expr mid, op("add", {ax.roi_start, ax.roi_end}));
    KILN_ASSIGN_OR_RETURN(mid, op("multiply", {mid, c(0.5)}));
    KILN_ASSIGN_OR_RETURN(mid, op("multiply", {mid, in_m1}));
    KILN_ASSIGN_OR_RETURN(x, op("where", {out_gt1, many, mid}));
    KILN_ASSIGN_OR_RETURN(ir::Expr lo, op("less", {x, c(0)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr hi, op("greater", {x, in_m1}));
    KILN_ASSIGN_OR_RETURN(*outside, op("logical_or", {lo, hi}));
  } else {
    KILN_ASSIGN_OR_RETURN(x, op("divide", {o, ax.scale}));  // asymmetric
  }
  // clamp(idx) == i as a float64 one-hot row per output index.
  auto hit = [&](ir::Expr idx_f, ir::Expr w) -> Result<ir::Expr> {
    KILN_ASSIGN_OR_RETURN(ir::Expr lo, op("maximum", {idx_f, c(0)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr cl, op("minimum", {lo, in_m1}));
    KILN_ASSIGN_OR_RETURN(ir::Expr ci, ctx.Op("astype", {cl}, {{"dtype", AttrS("int64")}}));
    KILN_ASSIGN_OR_RETURN(ir::Expr eq, op("equal", {ci, i}));
    return op("where", {eq, w, c(0)});
  };
  ir::Expr m;
  if (s.mode == "nearest") {
    ir::Expr idx;
    if (s.nearest == "floor") {
      KILN_ASSIGN_OR_RETURN(idx, op("floor", {x}));
    } else if (s.nearest == "ceil") {
      KILN_ASSIGN_OR_RETURN(idx, op("ceil", {x}));
    } else if (s.nearest == "round_prefer_ceil") {  // halves up: floor(x + 0.5)
      KILN_ASSIGN_OR_RETURN(idx, op("add", {x, c(0.5)}));
      KILN_ASSIGN_OR_RETURN(idx, op("floor", {idx}));
    } else {  // round_prefer_floor, halves down: ceil(x - 0.5)
      KILN_ASSIGN_OR_RETURN(idx, op("subtract", {x, c(0.5)}));
      KILN_ASSIGN_OR_RETURN(idx, op("ceil", {idx}));
    }
    KILN_ASSIGN_OR_RETURN(m, hit(idx, c(1)));
  } else {
    KILN_ASSIGN_OR_RETURN(ir::Expr x0, op("floor", {x}));
    KILN_ASSIGN_OR_RETURN(ir::Expr r, op("subtract", {x, x0}));
    std::vector<double> offsets;
    std::vector<ir::Expr> w;
    if (s.mode == "linear") {
      offsets = {0, 1};
      KILN_ASSIGN_OR_RETURN(ir::Expr w0, op("subtract", {c(1), r}));
      w = {w0, r};
    } else {
      const double a = s.cubic_a;
      // near(t) = ((a+2)t - (a+3)) t^2 + 1 for |t| <= 1; far(t) = ((a t - 5a) t + 8a) t - 4a for 1 < |t| < 2.
      auto near = [&](ir::Expr t) -> Result<ir::Expr> {
        KILN_ASSIGN_OR_RETURN(ir::Expr p, op("multiply", {t, c(a + 2)}));
        KILN_ASSIGN_OR_RETURN(p, op("subtract", {p, c(a + 3)}));
        KILN_ASSIGN_OR_RETURN(p, op("multiply", {p, t}));
        KILN_ASSIGN_OR_RETURN(p, op("multiply", {p, t}));
        return op("add", {p, c(1)});
      };
      auto far = [&](ir::Expr t) -> Result<ir::Expr> {
        KILN_ASSIGN_OR_RETURN(ir::Expr p, op("multiply", {t, c(a)}));
        KILN_ASSIGN_OR_RETURN(p, op("subtract", {p, c(5 * a)}));
        KILN_ASSIGN_OR_RETURN(p, op("multiply", {p, t}));
        KILN_ASSIGN_OR_RETURN(p, op("add", {p, c(8 * a)}));
        KILN_ASSIGN_OR_RETURN(p, op("multiply", {p, t}));
        return op("subtract", {p, c(4 * a)});
      };
      offsets = {-1, 0, 1, 2};
      KILN_ASSIGN_OR_RETURN(ir::Expr r1, op("add", {r, c(1)}));
      KILN_ASSIGN_OR_RETURN(ir::Expr mr, op("subtract", {c(1), r}));
      KILN_ASSIGN_OR_RETURN(ir::Expr mr2, op("subtract", {c(2), r}));
      KILN_ASSIGN_OR_RETURN(ir::Expr w0, far(r1));
      KILN_ASSIGN_OR_RETURN(ir::Expr w1, near(r));
      KILN_ASSIGN_OR_RETURN(ir::Expr w2, near(mr));
      KILN_ASSIGN_OR_RETURN(ir::Expr w3, far(mr2));
      w = {w0, w1, w2, w3};
    }
    std::vector<ir::Expr> idx;
    for (double off : offsets) {
      KILN_ASSIGN_OR_RETURN(ir::Expr t, op("add", {x0, c(off)}));
      idx.push_back(t);
    }
    if (s.exclude) {
      // Taps outside the input weigh nothing; the rest are renormalized.
      ir::Expr sum;
      for (size_t k = 0; k < w.size(); ++k) {
        KILN_ASSIGN_OR_RETURN(ir::Expr lo, op("less", {idx[k], c(0)}));
        KILN_ASSIGN_OR_RETURN(ir::Expr hi, op("greater", {idx[k], in_m1}));
        KILN_ASSIGN_OR_RETURN(ir::Expr out, op("logical_or", {lo, hi}));
        KILN_ASSIGN_OR_RETURN(w[k], op("where", {out, c(0), w[k]}));
        if (sum) {
          KILN_ASSIGN_OR_RETURN(sum, op("add", {sum, w[k]}));
        } else {
          sum = w[k];
        }
      }
      KILN_ASSIGN_OR_RETURN(ir::Expr zero, op("equal", {sum, c(0)}));
      KILN_ASSIGN_OR_RETURN(ir::Expr den, op("where", {zero, c(1), sum}));
      for (auto& wk : w) { KILN_ASSIGN_OR_RETURN(wk, op("divide", {wk, den})); }
    }
    for (size_t k = 0; k < w.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(ir::Expr h, hit(idx[k], w[k]));
      if (m) {
        KILN_ASSIGN_OR_RETURN(m, op("add", {m, h}));
      } else {
        m = h;
      }
    }
  }
  if (*outside) { KILN_ASSIGN_OR_RETURN(m, op("where", {*outside, c(0), m})); }
  return m;
}

// out = Mh · X · Mwᵀ (+ the extrapolation value outside a crop), with
// matrices computed when the program runs. `scales` holds the 4 scales as a
// float64 tensor; `out` the output sizes.
Status RunTimeMatrixResize(NodeCtx& ctx, const Spec& s, const ir::TensorSInfo& xi, ir::Expr x, ir::Expr scales,
                           const std::vector<PrimExpr>& out) {
  if (xi.dtype != DType::Float32() && xi.dtype != DType::Float64()) {
    return ctx.Unsupported("this resize form on " + DTypeName(xi.dtype) + " data");
  }
  RtAxis h{xi.shape[2], out[2], nullptr, nullptr, nullptr}, w{xi.shape[3], out[3], nullptr, nullptr, nullptr};
  KILN_ASSIGN_OR_RETURN(h.scale, Elem(ctx, scales, 2));
  KILN_ASSIGN_OR_RETURN(w.scale, Elem(ctx, scales, 3));
  double extrapolation = 0;
  if (s.coord == "tf_crop_and_resize") {
    if (!ctx.HasInput(1)) return ctx.Invalid("tf_crop_and_resize needs a roi (input 1)");
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ri, ctx.Info(1));
    std::optional<int64_t> n = ri->ndim == 1 ? ConstDim(ri->shape[0]) : std::nullopt;
    if (!n || *n != 8) return ctx.Unsupported("a roi (input 1) that is not 8 values (all four axes)");
    KILN_ASSIGN_OR_RETURN(ir::Expr roi, ctx.Input(1));
    KILN_ASSIGN_OR_RETURN(roi, F64(ctx, roi));
    KILN_ASSIGN_OR_RETURN(h.roi_start, Elem(ctx, roi, 2));
    KILN_ASSIGN_OR_RETURN(h.roi_end, Elem(ctx, roi, 6));
    KILN_ASSIGN_OR_RETURN(w.roi_start, Elem(ctx, roi, 3));
    KILN_ASSIGN_OR_RETURN(w.roi_end, Elem(ctx, roi, 7));
    KILN_ASSIGN_OR_RETURN(extrapolation, ctx.AttrFloat("extrapolation_value", 0.0));
  }
  ir::Expr out_h, out_w;
  KILN_ASSIGN_OR_RETURN(ir::Expr mh, RunTimeAxisMatrix(ctx, s, h, &out_h));
  KILN_ASSIGN_OR_RETURN(ir::Expr mw, RunTimeAxisMatrix(ctx, s, w, &out_w));
  const std::string dt = DTypeName(xi.dtype);
  KILN_ASSIGN_OR_RETURN(mh, ctx.Op("astype", {mh}, {{"dtype", AttrS(dt)}}));
  KILN_ASSIGN_OR_RETURN(mw, ctx.Op("astype", {mw}, {{"dtype", AttrS(dt)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr mwt, ctx.Op("permute_dims", {mw}, {{"axes", AttrInts({1, 0})}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op("matmul", {x, mwt}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Op("matmul", {mh, y}));
  if (out_h && extrapolation != 0) {
    // Pixels whose row or column lies outside the crop take the value.
    KILN_ASSIGN_OR_RETURN(ir::Expr ow_row, ctx.Op("reshape", {out_w, MakeShape({PrimExpr(int64_t{1}), out[3]})}));
    KILN_ASSIGN_OR_RETURN(ir::Expr any, ctx.Op("logical_or", {out_h, ow_row}));
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("where", {any, ScalarConst(xi.dtype, extrapolation), ScalarConst(xi.dtype, 0)}));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("add", {y, e}));
  }
  ctx.SetOutput(0, y);
  return Status::Ok();
}

// Scales fed as a run-time tensor: the output sizes are floor(in * scale)
// (in float32, as ONNX Runtime computes them), read when the program runs;
// the batch and channel scales must give the input's sizes (checked by the
// match); the matrices are computed from the scales themselves.
Status RunTimeScalesResize(NodeCtx& ctx, const Spec& s, const ir::TensorSInfo& xi, size_t at) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(at));
  std::optional<int64_t> n = si->ndim == 1 && si->has_shape ? ConstDim(si->shape[0]) : std::nullopt;
  if (!si->has_dtype || si->dtype != DType::Float32() || !n || *n != 4) {
    return ctx.Unsupported("scales (input " + std::to_string(at) + ") read at run time must be a float32 tensor of 4 values");
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr scales, ctx.Input(at));
  KILN_ASSIGN_OR_RETURN(ir::Expr in, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(xi.shape)}, {})));
  KILN_ASSIGN_OR_RETURN(in, ctx.Op("astype", {in}, {{"dtype", AttrS("float32")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr len, ctx.Op("multiply", {in, scales}));
  KILN_ASSIGN_OR_RETURN(len, ctx.Op("floor", {len}));
  KILN_ASSIGN_OR_RETURN(len, ctx.Op("astype", {len}, {{"dtype", AttrS("int64")}}));
  std::vector<std::string> messages;
  for (size_t a : {0, 1}) {
    messages.push_back(RunTimeNode(ctx) + ": " + InputText(ctx, static_cast<size_t>(at)) + " scales axis " + std::to_string(a) +
                       " of " + InputText(ctx, 0, true) + " to {got}; only the spatial axes may change size (expected " +
                       ExpectedText(xi.shape[a]) + ")");
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, ReadShapeAtRunTime(ctx, len, 4, ctx.node().output(0) + "_size",
                                                                       {xi.shape[0], xi.shape[1]}, messages));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr sc, F64(ctx, scales));
  return RunTimeMatrixResize(ctx, s, xi, x, sc, out);
}

Status ConvertResize(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  if (xi->ndim != 4) return ctx.Unsupported("a rank-" + std::to_string(xi->ndim) + " input (NCHW images only)");
  Spec s;
  KILN_ASSIGN_OR_RETURN(s.mode, ctx.AttrString("mode", "nearest"));
  bool upsample = ctx.op_type() == "Upsample";
  bool v10 = upsample || ctx.opset() < 11;
  s.coord = "asymmetric";
  s.nearest = "floor";
  if (!v10) {
    KILN_ASSIGN_OR_RETURN(s.coord, ctx.AttrString("coordinate_transformation_mode", "half_pixel"));
    KILN_ASSIGN_OR_RETURN(s.nearest, ctx.AttrString("nearest_mode", "round_prefer_floor"));
    KILN_ASSIGN_OR_RETURN(int64_t exclude, ctx.AttrInt("exclude_outside", 0));
    s.exclude = exclude != 0;
    KILN_ASSIGN_OR_RETURN(s.cubic_a, ctx.AttrFloat("cubic_coeff_a", -0.75));
  }
  // Opset 18's attributes: refused where they change the result, never ignored.
  KILN_ASSIGN_OR_RETURN(int64_t antialias, ctx.AttrInt("antialias", 0));
  if (antialias != 0) return ctx.Unsupported("antialias=" + std::to_string(antialias));
  if (ctx.HasAttr("axes")) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.AttrInts("axes", {}));
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] != static_cast<int64_t>(i) && axes[i] != static_cast<int64_t>(i) - 4) {
        return ctx.Unsupported("axes other than all four in order");
      }
    }
    if (axes.size() != 4) return ctx.Unsupported("axes other than all four in order");
  }
  KILN_ASSIGN_OR_RETURN(std::string policy, ctx.AttrString("keep_aspect_ratio_policy", "stretch"));
  if (policy != "stretch") return ctx.Unsupported("keep_aspect_ratio_policy=\"" + policy + "\"");
  if (s.mode == "bilinear") s.mode = "linear";
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic") return ctx.Unsupported("mode=\"" + s.mode + "\"");
  if (s.nearest != "round_prefer_floor" && s.nearest != "round_prefer_ceil" && s.nearest != "floor" && s.nearest != "ceil") {
    return ctx.Unsupported("nearest_mode=\"" + s.nearest + "\"");
  }
  if (s.coord != "half_pixel" && s.coord != "pytorch_half_pixel" && s.coord != "align_corners" &&
      s.coord != "asymmetric" && s.coord != "tf_half_pixel_for_nn" && s.coord != "tf_crop_and_resize") {
    return ctx.Unsupported("coordinate_transformation_mode=\"" + s.coord + "\"");
  }
  // Output sizes and the scales ONNX maps coordinates with.
  std::vector<PrimExpr> out(4);
  std::vector<double> scales(4, 1.0);
  bool exact = true;  // every scale gives a whole output size
  const KnownInts* known_sizes = !v10 && ctx.HasInput(3) ? ctx.Known(3) : nullptr;
  KnownInts run_time_sizes;
  if (!v10 && ctx.HasInput(3) && !known_sizes && !ctx.In(3).value()->constant.defined()) {
    // Sizes fed as a run-time tensor: read into symbolic H and W; the batch
    // and channel sizes must be the input's, which the match checks when
    // the program runs.
    KILN_ASSIGN_OR_RETURN(int64_t len, RunTimeShapeLength(ctx, 3, "sizes"));
    if (len != 4 || xi->ndim != 4) return ctx.Unsupported("sizes (input 3) read at run time for other than 4-d NCHW data");
    KILN_ASSIGN_OR_RETURN(ir::Expr st, ctx.Input(3));
    std::vector<std::string> messages;
    for (size_t a : {0, 1}) {
      messages.push_back(RunTimeNode(ctx) + ": " + InputText(ctx, 3) + " gives axis " + std::to_string(a) + " of " +
                         InputText(ctx, 0, true) + " size {got}; only the spatial axes may change size (expected " +
                         ExpectedText(xi->shape[a]) + ")");
    }
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> sz, ReadShapeAtRunTime(ctx, st, 4, ctx.node().input(3),
                                                                      {xi->shape[0], xi->shape[1]}, messages));
    run_time_sizes.shape = {4};
    run_time_sizes.elems = sz;
    known_sizes = &run_time_sizes;
  }
  if (known_sizes && !known_sizes->Ints()) {
    // Sizes from shape arithmetic (torch's Upsample: Concat(Shape(x)[:2],
    // Shape(x)[2:] * 2)) stay symbolic; ONNX then maps coordinates by
    // size / input size, as resize2d does (the matrix form below needs
    // static sizes and says so).
    if (known_sizes->elems.size() != 4) return ctx.Invalid("sizes needs 4 values");
    for (size_t i = 0; i < 4; ++i) out[i] = SimplifyDim(known_sizes->elems[i]);
  } else if (!v10 && ctx.HasInput(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ctx.ConstInts(3, "sizes"));
    if (sizes.size() != 4) return ctx.Invalid("sizes needs 4 values");
    for (size_t i = 0; i < 4; ++i) {
      out[i] = PrimExpr(sizes[i]);
      auto d = ConstDim(xi->shape[i]);
      if (d && *d > 0) scales[i] = static_cast<double>(sizes[i]) / static_cast<double>(*d);
    }
  } else {
    std::vector<double> given;
    if (upsample && ctx.opset() < 9) {
      KILN_ASSIGN_OR_RETURN(given, ctx.AttrFloats("scales", {}));
    } else {
      size_t at = v10 ? 1 : 2;
      KILN_ASSIGN_OR_RETURN(const Value* sv, ctx.In(at));
      const Tensor& t = sv->constant;
      if (!t.defined() && !sv->known) return RunTimeScalesResize(ctx, s, *xi, at);
      if (!t.defined() || t.dtype() != DType::Float32()) {
        return ctx.Unsupported("scales (input " + std::to_string(at) + ") must be a float32 constant known at import time");
      }
      for (int64_t i = 0; i < t.NumElements(); ++i) given.push_back(t.data<float>()[i]);
    }
    if (given.size() != 4) return ctx.Invalid("scales needs 4 values, got " + std::to_string(given.size()));
    for (size_t i = 0; i < 4; ++i) {
      scales[i] = given[i];
      if (!(given[i] > 0) || given[i] > 1e6) return ctx.Invalid("scale " + std::to_string(given[i]) + " is not positive or too large");
      auto d = ConstDim(xi->shape[i]);
      if (given[i] == 1.0) {
        out[i] = xi->shape[i];
        continue;
      }
      if (!d) {
        // A whole-number scale k gives exactly d * k, where ONNX's coordinate
        // mapping (by the scale) and resize2d's (by the sizes) agree; any
        // other scale would need the floor of a symbolic product.
        if (given[i] != std::floor(given[i])) {
          return ctx.Unsupported("scale " + std::to_string(given[i]) + " on a symbolic dimension (whole numbers only)");
        }
        out[i] = SimplifyDim(xi->shape[i] * PrimExpr(static_cast<int64_t>(given[i])));
        continue;
      }
      double len = static_cast<double>(*d) * given[i];
      if (len > static_cast<double>(kMaxElements)) return ctx.Invalid("scales give an output size out of range");
      out[i] = PrimExpr(static_cast<int64_t>(std::floor(len)));
      exact = exact && std::fabs(len - std::round(len)) <= 1e-6 * std::max(1.0, len);
    }
  }
  KILN_RETURN_IF_ERROR(CheckShape(out));
  for (size_t i = 0; i < 2; ++i) {
    auto a = ConstDim(out[i]), b = ConstDim(xi->shape[i]);
    auto diff = ConstDim(SimplifyDim(out[i] - xi->shape[i]));
    if (!(a && b && *a == *b) && !out[i].same_as(xi->shape[i]) && !(diff && *diff == 0)) {
      return ctx.Unsupported("resizing the batch or channel axis");
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  auto oh = ConstDim(out[2]), ow = ConstDim(out[3]);
  bool small_out = oh && ow && *oh > 1 && *ow > 1;
  bool resize2d = (s.mode == "nearest" || s.mode == "linear") && !s.exclude && exact &&
                  (s.coord == "half_pixel" || s.coord == "align_corners" || s.coord == "asymmetric" ||
                   (s.coord == "pytorch_half_pixel" && small_out));
  if (resize2d) {
    std::string coord = s.coord == "pytorch_half_pixel" ? "half_pixel" : s.coord;
    ir::AttrMap attrs = {{"layout", AttrS("NCHW")},
                         {"method", AttrS(s.mode == "nearest" ? "nearest_neighbor" : "linear")},
                         {"coordinate_transformation_mode", AttrS(coord)},
                         {"rounding_method", AttrS(s.mode == "nearest" ? s.nearest : "")}};
    KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("image.resize2d", {x, MakeShape({out[2], out[3]})}, attrs));
    ctx.SetOutput(0, r);
    return Status::Ok();
  }
  // Interpolation matrices (static spatial sizes, float data).
  auto ih = ConstDim(xi->shape[2]), iw = ConstDim(xi->shape[3]);
  if (!ih || !iw || !oh || !ow) {
    // Symbolic sizes: the matrices are computed when the program runs, with
    // the scales ONNX maps coordinates by (given, or output / input size).
    ir::Expr sc;
    if (known_sizes) {
      KILN_ASSIGN_OR_RETURN(ir::Expr o, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(out)}, {})));
      KILN_ASSIGN_OR_RETURN(ir::Expr i, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(xi->shape)}, {})));
      KILN_ASSIGN_OR_RETURN(o, F64(ctx, o));
      KILN_ASSIGN_OR_RETURN(i, F64(ctx, i));
      KILN_ASSIGN_OR_RETURN(sc, ctx.Op("divide", {o, i}));
    } else {
      KILN_ASSIGN_OR_RETURN(Tensor st, Tensor::Empty(std::vector<int64_t>{4}, DType::Float64()));
      for (int k = 0; k < 4; ++k) st.data<double>()[k] = scales[static_cast<size_t>(k)];
      sc = MakeConstant(st);
    }
    return RunTimeMatrixResize(ctx, s, *xi, x, sc, out);
  }
  if (xi->dtype != DType::Float32() && xi->dtype != DType::Float64()) {
    return ctx.Unsupported("this resize form on " + DTypeName(xi->dtype) + " data");
  }
  if (*ih * *oh > (1 << 24) || *iw * *ow > (1 << 24)) return ctx.Unsupported("this resize form on images this large");
  std::vector<double> roi;
  double extrapolation = 0;
  if (s.coord == "tf_crop_and_resize") {
    KILN_ASSIGN_OR_RETURN(const Value* rv, ctx.In(1));
    const Tensor& t = rv->constant;
    if (!t.defined() || t.dtype() != DType::Float32() || t.NumElements() != 8) {
      return ctx.Unsupported("a roi (input 1) that is not a constant of 8 float32 values");
    }
    for (int i = 0; i < 8; ++i) roi.push_back(t.data<float>()[i]);
    KILN_ASSIGN_OR_RETURN(extrapolation, ctx.AttrFloat("extrapolation_value", 0.0));
  }
  std::vector<bool> out_h, out_w;
  if (!roi.empty()) s.roi_start = roi[2], s.roi_end = roi[6];
  std::vector<double> mh = AxisMatrix(s, *ih, *oh, scales[2], &out_h);
  if (!roi.empty()) s.roi_start = roi[3], s.roi_end = roi[7];
  std::vector<double> mw = AxisMatrix(s, *iw, *ow, scales[3], &out_w);
  ir::Expr y = x;
  if (!(*iw == *ow && IsIdentity(mw, *iw))) {
    KILN_ASSIGN_OR_RETURN(Tensor mwt, MatrixTensor(mw, *ow, *iw, /*transpose=*/true, xi->dtype));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("matmul", {y, MakeConstant(mwt)}));
  }
  if (!(*ih == *oh && IsIdentity(mh, *ih))) {
    KILN_ASSIGN_OR_RETURN(Tensor mht, MatrixTensor(mh, *oh, *ih, /*transpose=*/false, xi->dtype));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("matmul", {MakeConstant(mht), y}));
  }
  bool any_outside = std::find(out_h.begin(), out_h.end(), true) != out_h.end() ||
                     std::find(out_w.begin(), out_w.end(), true) != out_w.end();
  if (any_outside && extrapolation != 0) {
    // Pixels outside the crop take the extrapolation value: + E (oh, ow).
    std::vector<double> e(static_cast<size_t>(*oh * *ow), 0.0);
    for (int64_t i = 0; i < *oh; ++i)
      for (int64_t j = 0; j < *ow; ++j)
        if (out_h[static_cast<size_t>(i)] || out_w[static_cast<size_t>(j)]) e[static_cast<size_t>(i * *ow + j)] = extrapolation;
    KILN_ASSIGN_OR_RETURN(Tensor et, MatrixTensor(e, *oh, *ow, /*transpose=*/false, xi->dtype));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("add", {y, MakeConstant(et)}));
  }
  ctx.SetOutput(0, y);
  return Status::Ok();
}

}  // namespace

void AddResizeConverters(ConverterTable* t) {
  (*t)["Resize"] = ConvertResize;
  (*t)["Upsample"] = ConvertResize;
}

}  // namespace onnx
}  // namespace kiln
