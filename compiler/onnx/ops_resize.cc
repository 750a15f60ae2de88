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
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> sz,
                          ReadShapeAtRunTime(ctx, st, 4, ctx.node().input(3), {xi->shape[0], xi->shape[1]}));
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
  if (!ih || !iw || !oh || !ow) return ctx.Unsupported("this resize form on symbolic spatial dimensions");
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
