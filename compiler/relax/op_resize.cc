// relax.image.resize2d(data, size, layout="NCHW", method="linear",
//   coordinate_transformation_mode="half_pixel", rounding_method="round", ...)
//
// size is the (H, W) of the result: R.shape([h, w]) as the second argument (as
// TVM prints it) or a size=[h, w] attribute; it may be symbolic. layout NCHW or
// NHWC. The source coordinate of output o along an axis of input size n and
// output size m is
//   half_pixel:    (o + 0.5) * n / m - 0.5
//   align_corners: o * (n - 1) / (m - 1)   (0 when m = 1)
//   asymmetric:    o * n / m
// computed in float32. nearest_neighbor rounds it with rounding_method
// ("round": to nearest, ties to even, like TVM's tir.round; "floor", "ceil",
// "round_prefer_floor", "round_prefer_ceil"; "" picks "round" for
// align_corners and "floor" otherwise, as TVM). linear interpolates the two
// neighbours of every axis. Indices are clamped into the input. cubic,
// roi and extrapolation are not supported.
#include "compiler/relax/op_defs.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

struct ResizeAttrs {
  int hpos = 2;
  std::string method, mode, rounding;
};

Result<ResizeAttrs> ReadResize(const AttrReader& r) {
  ResizeAttrs a;
  KILN_ASSIGN_OR_RETURN(std::string layout, r.String("layout", "NCHW", {"NCHW", "NHWC"}));
  a.hpos = layout == "NCHW" ? 2 : 1;
  KILN_ASSIGN_OR_RETURN(a.method, r.String("method", "linear", {"nearest_neighbor", "linear", "cubic"}));
  if (a.method == "cubic") return Unimplemented(Where(r.call().span) + r.op() + ": method \"cubic\" is not supported");
  KILN_ASSIGN_OR_RETURN(a.mode, r.String("coordinate_transformation_mode", "half_pixel",
                                         {"half_pixel", "align_corners", "asymmetric"}));
  KILN_ASSIGN_OR_RETURN(a.rounding, r.String("rounding_method", "round",
                                             {"", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}));
  if (a.rounding.empty()) a.rounding = a.mode == "align_corners" ? "round" : "floor";
  KILN_ASSIGN_OR_RETURN(std::optional<DType> out_dtype, r.OptionalDType("out_dtype"));
  if (out_dtype) return Unimplemented(Where(r.call().span) + r.op() + ": out_dtype is not supported");
  return a;
}

// The (H, W) of the result, from R.shape([h, w]) or size=[h, w].
Result<std::vector<PrimExpr>> ResizeSize(const AttrReader& r) {
  const ir::CallExpr& call = r.call();
  if (call.args.size() >= 2) {
    const auto* s = ir::SInfoAs<ir::ShapeSInfo>(call.args[1]->struct_info);
    if (!s) return r.Error("size (argument 2) must be a shape, as in R.shape([8, 8])");
    if (!s->has_values) return Unimplemented(Where(call.span) + r.op() + ": size must have known values");
    if (s->values.size() != 2 && s->values.size() != 1) {
      return r.Error("size takes 1 or 2 values, got " + std::to_string(s->values.size()));
    }
    if (s->values.size() == 1) return std::vector<PrimExpr>{s->values[0], s->values[0]};
    return s->values;
  }
  if (!r.Has("size")) return r.Error("size is required");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, r.IntListN("size", {1}, 2));
  return std::vector<PrimExpr>{PrimExpr(v[0]), PrimExpr(v[1])};
}

Result<ir::StructInfo> InferResize2d(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"size", "roi", "layout", "method", "coordinate_transformation_mode",
                                     "rounding_method", "cubic_alpha", "cubic_exclude", "extrapolation_value",
                                     "out_dtype"}));
  if (call.args.empty() || call.args.size() > 2) {
    return r.Error("takes 1 or 2 arguments (data, size), got " + std::to_string(call.args.size()));
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, ReadResize(r));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> size, ResizeSize(r));
  for (const auto& d : size)
    if (auto c = ConstDim(d); c && *c <= 0) return r.Error("size must be positive");
  if (x->ndim >= 0 && x->ndim != 4) return r.Error("data must have rank 4, got " + std::to_string(x->ndim));
  if (x->has_dtype && !x->dtype.is_float()) return r.Error("expects a float tensor, got " + DTypeToString(x->dtype));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(4, x->dtype);
  std::vector<PrimExpr> out = x->shape;
  out[a.hpos] = size[0];
  out[a.hpos + 1] = size[1];
  return ir::MakeTensorSInfo(out, x->dtype);
}

// Linear NCHW resizes whose output width is a whole multiple s (2..8) of a
// static input width (>= 2), half_pixel or asymmetric: output column s*j + r
// reads input columns j + d_r and j + d_r + 1 (clamped) with weight f_r, both
// fixed per phase r. One custom stage: per output row the two source rows and
// their weight (as the Compute form computes them), then a loop over input
// columns j storing the s phases of each; at the interior j (no clamp) every
// load is X[.., j + constant] and the s stores are one interleaved group.
// The Compute form computed four clamped float coordinates and gathered four
// values for every output: 10.6 ms for 64 x 80^2 -> 160^2, where ONNX Runtime
// takes 1.8 ms; now 0.26 ms asymmetric (LLVM vectorizes the interior with
// whole-vector loads and shuffles) and 0.98 ms half_pixel (its interior,
// reading columns j - 1, j and j + 1, is left scalar by LLVM).
// Returns an undefined tensor when the resize is not of this form.
te::Tensor LinearPhases(te::FuncBuilder& b, const te::Tensor& x, const std::vector<PrimExpr>& out_shape,
                        const ResizeAttrs& a, DType dt) {
  DType f = DType::Float32();
  if (a.method != "linear" || a.hpos != 2 || dt != f || (a.mode != "half_pixel" && a.mode != "asymmetric")) return {};
  auto in_w = ConstDim(x.shape()[3]), out_w = ConstDim(out_shape[3]);
  if (!in_w || !out_w || *in_w < 2 || *out_w % *in_w != 0) return {};
  const int64_t s = *out_w / *in_w;
  if (s < 2 || s > 8) return {};
  // Per phase r: the offset d_r of the left source column and its weight.
  std::vector<int64_t> d(static_cast<size_t>(s));
  std::vector<double> w(static_cast<size_t>(s));
  for (int64_t r = 0; r < s; ++r) {
    double c = a.mode == "half_pixel" ? (r + 0.5) / static_cast<double>(s) - 0.5 : r / static_cast<double>(s);
    double fl = std::floor(c);
    d[r] = static_cast<int64_t>(fl);
    w[r] = c - fl;
  }
  const int64_t d_min = *std::min_element(d.begin(), d.end()), d_max = *std::max_element(d.begin(), d.end());
  // Interior columns: j + d_min >= 0 and j + d_max + 1 <= in_w - 1.
  const int64_t j0 = std::max<int64_t>(0, -d_min), j1 = std::min<int64_t>(*in_w, *in_w - 1 - d_max);
  if (j1 <= j0) return {};
  auto fdiv = [](PrimExpr p, PrimExpr q) { return ir::MakeBinary(ir::TirKind::kDiv, std::move(p), std::move(q)); };
  return b.Custom("resize", out_shape, dt, [&](const ir::Buffer& o) {
    ir::Var n = ir::MakeVar("n"), c = ir::MakeVar("c"), y = ir::MakeVar("y"), j = ir::MakeVar("j");
    PrimExpr nn(n), cc(c), yy(y), jj(j);
    // The row coordinate as the Compute form has it (float32).
    PrimExpr hn = ir::Cast(f, x.shape()[2]), hm = ir::Cast(f, out_shape[2]), yf = ir::Cast(f, yy);
    PrimExpr cy = a.mode == "half_pixel" ? (yf + Const(f, 0.5)) * fdiv(hn, hm) - Const(f, 0.5) : yf * fdiv(hn, hm);
    PrimExpr fly = Intrin("floor", {cy});
    PrimExpr fy = cy - fly;
    auto clamp = [](const PrimExpr& i, const PrimExpr& ext) {
      return ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, i, PrimExpr(int64_t{0})),
                            ext - PrimExpr(int64_t{1}));
    };
    PrimExpr ylo = clamp(ir::Cast(DType::Int64(), fly), x.shape()[2]);
    PrimExpr yhi = clamp(ir::Cast(DType::Int64(), fly) + PrimExpr(int64_t{1}), x.shape()[2]);
    PrimExpr one = Const(f, 1.0), wide(*in_w);
    auto phases = [&](bool clamped) {
      std::vector<ir::Stmt> st;
      for (int64_t r = 0; r < s; ++r) {
        PrimExpr xl = jj + PrimExpr(d[r]), xh = jj + PrimExpr(d[r] + 1);
        if (clamped) xl = clamp(xl, wide), xh = clamp(xh, wide);
        PrimExpr fx = Const(f, w[r]);
        PrimExpr top = x({nn, cc, ylo, xl}) * (one - fx) + x({nn, cc, ylo, xh}) * fx;
        PrimExpr bottom = x({nn, cc, yhi, xl}) * (one - fx) + x({nn, cc, yhi, xh}) * fx;
        st.push_back(ir::Store(o, top * (one - fy) + bottom * fy, {nn, cc, yy, jj * PrimExpr(s) + PrimExpr(r)}));
      }
      return ir::Seq(st);
    };
    auto loop = [](const ir::Var& v, PrimExpr lo, PrimExpr ext, ir::Stmt body) {
      return std::make_shared<ir::ForNode>(v, std::move(lo), std::move(ext), ir::ForKind::kSerial, std::move(body));
    };
    std::vector<ir::Stmt> row;
    if (j0 > 0) row.push_back(loop(j, PrimExpr(int64_t{0}), PrimExpr(j0), phases(true)));
    row.push_back(loop(j, PrimExpr(j0), PrimExpr(j1 - j0), phases(false)));
    if (j1 < *in_w) row.push_back(loop(j, PrimExpr(j1), PrimExpr(*in_w - j1), phases(true)));
    ir::Stmt body = loop(y, PrimExpr(int64_t{0}), out_shape[2], ir::Seq(row));
    body = loop(c, PrimExpr(int64_t{0}), out_shape[1], body);
    return loop(n, PrimExpr(int64_t{0}), out_shape[0], body);
  });
}

// The factor k of a nearest resize along one axis whose source index is
// exactly o // k for every output index o: extents n and m = k * n, k a
// power of two (2..64). Then n / m is exactly 1 / k in float32 and every
// coordinate ((o + 0.5) / k - 0.5, o / k, o * (n - 1) / (m - 1) aside) is
// exact while o and m stay below 2^22. Static extents: the float form's
// index is checked here for each o. Symbolic ones (m proven n * k): the
// coordinate of o = q * k + r is q plus that of r, and floor, ceil and the
// two half-way roundings commute with adding the integer q, so the k
// phases r are checked (ties to even do not commute: "round" is left to
// the float form). The float form left the index as floor(float32(o) * 0.5)
// per lane: on static shapes the vectorized loop gathered (PP-OCRv4's
// detector at 640^2: a 2x resize fused with its adds, 96 x 80^2 -> 160^2,
// took 6 ms, 5x its symbolic build, which had the same o // k from a
// pattern match in SimplifySymbolicDivisions, now this rewrite). 0: no such k.
int64_t NearestFactor(const ResizeAttrs& a, const PrimExpr& in, const PrimExpr& out) {
  if (a.method != "nearest_neighbor" || a.mode == "align_corners") return 0;
  auto n = ConstDim(in), m = ConstDim(out);
  int64_t k = 0, checked = 0;
  if (n && m) {
    if (*n <= 0 || *m % *n != 0 || *m > (int64_t{1} << 22)) return 0;
    k = *m / *n;
    checked = *m;
  } else {
    if (a.rounding == "round") return 0;
    for (int64_t f = 2; f <= 64 && k == 0; f *= 2)
      if (arith::CanProveEqual(out, in * PrimExpr(f))) k = f;
    checked = k;
  }
  if (k < 2 || k > 64 || (k & (k - 1)) != 0) return 0;
  for (int64_t o = 0; o < checked; ++o) {
    // Exact in double as in float32 (a power-of-two scale of small values).
    double c = a.mode == "half_pixel" ? (o + 0.5) / static_cast<double>(k) - 0.5 : o / static_cast<double>(k);
    double r;
    if (a.rounding == "round") r = std::nearbyint(c);  // ties to even (default rounding mode)
    else if (a.rounding == "floor") r = std::floor(c);
    else if (a.rounding == "ceil") r = std::ceil(c);
    else if (a.rounding == "round_prefer_floor") r = std::ceil(c - 0.5);
    else r = std::floor(c + 0.5);
    // Static: clamped into [0, n - 1]; symbolic: r in [0, k) must map to 0
    // itself, so that no o needs the clamp.
    int64_t i = static_cast<int64_t>(r);
    if (n && m) i = std::min<int64_t>(std::max<int64_t>(i, 0), *n - 1);
    if (i != o / k) return 0;
  }
  return k;
}

// ---------------------------------------------------------------- separable kernel
//
// The float32 coordinate of the Compute form below, and its rounding: one
// definition for the per-output form, the row index of the separable kernel
// and its column tables.
PrimExpr SourceCoord(const ResizeAttrs& a, const PrimExpr& o, const PrimExpr& in, const PrimExpr& out) {
  DType f = DType::Float32();
  auto fdiv = [](PrimExpr p, PrimExpr q) { return ir::MakeBinary(ir::TirKind::kDiv, std::move(p), std::move(q)); };
  PrimExpr n = ir::Cast(f, in), m = ir::Cast(f, out), of = ir::Cast(f, o);
  if (a.mode == "half_pixel") return (of + Const(f, 0.5)) * fdiv(n, m) - Const(f, 0.5);
  if (a.mode == "asymmetric") return of * fdiv(n, m);
  PrimExpr one = Const(f, 1.0);
  PrimExpr ratio = fdiv(n - one, ir::MakeBinary(ir::TirKind::kMax, m - one, one));
  return PrimExpr(std::make_shared<ir::SelectNode>(ir::MakeBinary(ir::TirKind::kGT, m, one), of * ratio, Const(f, 0.0)));
}

PrimExpr RoundCoord(const ResizeAttrs& a, const PrimExpr& c) {
  DType f = DType::Float32();
  if (a.rounding == "round") return Intrin("round", {c});
  if (a.rounding == "floor") return Intrin("floor", {c});
  if (a.rounding == "ceil") return Intrin("ceil", {c});
  if (a.rounding == "round_prefer_floor") return Intrin("ceil", {c - Const(f, 0.5)});
  return Intrin("floor", {c + Const(f, 0.5)});
}

PrimExpr ClampIndex(const PrimExpr& i, const PrimExpr& ext) {
  return ir::MakeBinary(ir::TirKind::kMin, ir::MakeBinary(ir::TirKind::kMax, i, PrimExpr(int64_t{0})), ext - PrimExpr(int64_t{1}));
}

// SourceCoord and RoundCoord on the host, operation by operation as the
// kernel computes them in float32: each one exact or rounded once in double,
// then rounded to float (53 >= 2 * 24 + 2 bits: the double rounding of +, -,
// *, / gives the correctly rounded float), so no fused multiply-add either.
float F32(double v) { return static_cast<float>(v); }

float HostCoord(const ResizeAttrs& a, int64_t o, int64_t n, int64_t m) {
  const float of = static_cast<float>(o), nf = static_cast<float>(n), mf = static_cast<float>(m);
  if (a.mode == "half_pixel") {
    float ratio = F32(static_cast<double>(nf) / mf);
    return F32(static_cast<double>(F32(static_cast<double>(F32(of + 0.5)) * ratio)) - 0.5);
  }
  if (a.mode == "asymmetric") return F32(static_cast<double>(of) * F32(static_cast<double>(nf) / mf));
  if (m <= 1) return 0.0f;
  return F32(static_cast<double>(of) * F32(static_cast<double>(F32(nf - 1.0)) / F32(mf - 1.0)));
}

int64_t HostNearest(const ResizeAttrs& a, float c) {
  double r;
  if (a.rounding == "round") r = std::nearbyint(c);  // ties to even (default rounding mode), as tir.round
  else if (a.rounding == "floor") r = std::floor(c);
  else if (a.rounding == "ceil") r = std::ceil(c);
  else if (a.rounding == "round_prefer_floor") r = std::ceil(F32(static_cast<double>(c) - 0.5));
  else r = std::floor(F32(static_cast<double>(c) + 0.5));
  return static_cast<int64_t>(r);
}

// Output widths m of input widths n in the ratio p : q (lowest terms, p
// small): output column p * j + r reads input column q * j + d[r] (linear:
// and the next one), the same offsets for every j. Holds when the float
// form's index (nearest: rounded, linear: floor) is that at every column,
// checked here (a coordinate that float32 puts just below a whole number
// breaks it). Linear weights stay the float form's, from a table: exact
// rational ones differed from ONNX Runtime's by 2.6e-5 at 1.5x (its
// coordinates carry the same float32 error as the float form's).
// Empty when no such p <= 16 exists.
struct ColumnPhases {
  int64_t p = 0, q = 0;
  std::vector<int64_t> d;
};

std::optional<ColumnPhases> PeriodicColumns(const ResizeAttrs& a, int64_t n, int64_t m) {
  if (a.mode == "align_corners" || n <= 0 || m <= 0) return std::nullopt;
  int64_t g = n, h = m;
  while (h != 0) g = std::exchange(h, g % h);  // gcd(n, m)
  ColumnPhases ph;
  ph.p = m / g;
  ph.q = n / g;
  if (ph.p > 16) return std::nullopt;
  auto index = [&](int64_t o) {
    float c = HostCoord(a, o, n, m);
    return a.method == "linear" ? static_cast<int64_t>(std::floor(c)) : HostNearest(a, c);
  };
  for (int64_t r = 0; r < ph.p; ++r) ph.d.push_back(index(r));
  for (int64_t o = 0; o < m; ++o) {
    if (index(o) != ph.q * (o / ph.p) + ph.d[static_cast<size_t>(o % ph.p)]) return std::nullopt;
  }
  return ph;
}

ir::Buffer LocalBuffer(const std::string& name, int64_t n, DType dt) {
  auto node = std::make_shared<ir::BufferNode>(*ir::MakeBuffer(name, {PrimExpr(n)}, dt));
  node->scope = "local";
  return ir::Buffer(node);
}

ir::Stmt Loop(const ir::Var& v, PrimExpr lo, PrimExpr ext, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, std::move(lo), std::move(ext), ir::ForKind::kSerial, std::move(body));
}

// Float32 NCHW resizes of a static input and output width that neither
// LinearPhases nor the o // k nearest form covers (non-whole scales,
// align_corners, nearest by other factors), as one custom stage that
// separates the axes. Per output row: the source row(s) and weight, once;
// linear blends the two source rows into a row buffer of the input width
// (contiguous, vectorized). Then the output columns read that row (nearest:
// the source row itself): when the widths are in a small ratio p : q
// (PeriodicColumns), at offsets fixed per phase (q * j + d[r], weights
// constant: loads and FMAs LLVM vectorizes), otherwise at per-column
// indices and weights computed once per plane into tables by the Compute
// form's own float expressions. The Compute form computed the float
// coordinates, clamps and (linear) four gathers per output: 1.5x nearest
// 64 x 80^2 took 1.02 ms where ONNX Runtime takes 0.27, 1.5x linear 1.68
// (ORT 1.05), align_corners 2x 10.6 (ORT 1.9 wall).
// Returns an undefined tensor when the resize is not of this form.
te::Tensor SeparableResize(te::FuncBuilder& b, const te::Tensor& x, const std::vector<PrimExpr>& out_shape,
                           const ResizeAttrs& a, DType dt) {
  const DType f = DType::Float32(), i32 = DType::Int32(), i64 = DType::Int64();
  if (a.hpos != 2 || dt != f || (a.method != "linear" && a.method != "nearest_neighbor")) return {};
  const auto in_w = ConstDim(x.shape()[3]), out_w = ConstDim(out_shape[3]);
  if (!in_w || !out_w || *in_w < 1 || *out_w < 1 || *out_w > (int64_t{1} << 22)) return {};
  const bool linear = a.method == "linear";
  const PrimExpr in_h = x.shape()[2], out_h = out_shape[2];
  const int64_t row_k = linear ? 0 : NearestFactor(a, in_h, out_h);
  // Nearest by a power of two keeps the Compute form's x[o // k]: alone, 2x
  // of 64 x 80^2 took 69 us in this kernel against 113, but a concatenate
  // reading three such resizes (PP-OCRv4's detector pinned at 640^2) took
  // 2.3 ms against 1.56: it inlines Compute stages, not this custom one.
  if (!linear && NearestFactor(a, x.shape()[3], out_shape[3]) != 0) return {};
  const std::optional<ColumnPhases> ph = PeriodicColumns(a, *in_w, *out_w);
  return b.Custom("resize", out_shape, dt, [&](const ir::Buffer& o) {
    // One Var per loop: loops fused later must not capture each other's.
    ir::Var n = ir::MakeVar("n"), c = ir::MakeVar("c"), y = ir::MakeVar("y"), j = ir::MakeVar("j"), i = ir::MakeVar("i");
    ir::Var t = ir::MakeVar("t");
    ir::Var ylo = ir::MakeVar("ylo"), yhi = ir::MakeVar("yhi"), fy = ir::MakeVar("fy", f);
    const PrimExpr nn(n), cc(c), yy(y), jj(j), ii(i), tt(t), one = Const(f, 1.0), wide(*in_w);
    ir::Buffer row = LocalBuffer("resize_row", *in_w, f);
    // The source row's element at column `col`.
    auto src = [&](const PrimExpr& col) { return linear ? ir::Load(row, {col}) : x({nn, cc, PrimExpr(ylo), col}); };
    auto blend = [&](const PrimExpr& lo, const PrimExpr& hi, const PrimExpr& w) { return src(lo) * (one - w) + src(hi) * w; };
    auto out_at = [&](const PrimExpr& col) { return std::vector<PrimExpr>{nn, cc, yy, col}; };
    ir::Stmt columns;
    ir::Buffer lo_t, hi_t, w_t;
    // Per output column, computed once per plane by the Compute form's
    // expressions: linear weights (cx - floor(cx)), and without phases the
    // clamped source column(s).
    std::vector<ir::Stmt> fill;
    const PrimExpr cx = SourceCoord(a, tt, x.shape()[3], out_shape[3]);
    if (linear) {
      w_t = LocalBuffer("resize_col_w", *out_w, f);
      fill.push_back(ir::Store(w_t, cx - Intrin("floor", {cx}), {tt}));
    }
    if (ph) {
      // Phases: interior j (no clamp) at constant offsets, clamped edges.
      const int64_t g = *out_w / ph->p, reach = linear ? 1 : 0;
      auto inside = [&](int64_t jv) {
        for (int64_t d : ph->d)
          if (ph->q * jv + d < 0 || ph->q * jv + d + reach > *in_w - 1) return false;
        return true;
      };
      int64_t j0 = 0;
      while (j0 < g && !inside(j0)) ++j0;
      int64_t j1 = j0;
      while (j1 < g && inside(j1)) ++j1;
      auto phases = [&](bool clamped) {
        std::vector<ir::Stmt> st;
        for (int64_t r = 0; r < ph->p; ++r) {
          PrimExpr l = jj * PrimExpr(ph->q) + PrimExpr(ph->d[r]), h = l + PrimExpr(int64_t{1});
          if (clamped) l = ClampIndex(l, wide), h = ClampIndex(h, wide);
          PrimExpr col = jj * PrimExpr(ph->p) + PrimExpr(r);
          PrimExpr v = linear ? blend(l, h, ir::Load(w_t, {col})) : src(l);
          st.push_back(ir::Store(o, v, out_at(col)));
        }
        return ir::Seq(st);
      };
      std::vector<ir::Stmt> parts;
      if (j0 == g) {
        parts.push_back(Loop(j, PrimExpr(int64_t{0}), PrimExpr(g), phases(true)));
      } else {
        if (j0 > 0) parts.push_back(Loop(j, PrimExpr(int64_t{0}), PrimExpr(j0), phases(true)));
        parts.push_back(Loop(j, PrimExpr(j0), PrimExpr(j1 - j0), phases(false)));
        if (j1 < g) parts.push_back(Loop(j, PrimExpr(j1), PrimExpr(g - j1), phases(true)));
      }
      columns = ir::Seq(parts);
    } else {
      lo_t = LocalBuffer("resize_col_lo", *out_w, i32);
      if (linear) {
        hi_t = LocalBuffer("resize_col_hi", *out_w, i32);
        PrimExpr il = ir::Cast(i64, Intrin("floor", {cx}));
        fill.push_back(ir::Store(lo_t, ir::Cast(i32, ClampIndex(il, wide)), {tt}));
        fill.push_back(ir::Store(hi_t, ir::Cast(i32, ClampIndex(il + PrimExpr(int64_t{1}), wide)), {tt}));
      } else {
        fill.push_back(ir::Store(lo_t, ir::Cast(i32, ClampIndex(ir::Cast(i64, RoundCoord(a, cx)), wide)), {tt}));
      }
      PrimExpr l = ir::Cast(i64, ir::Load(lo_t, {jj}));
      PrimExpr v = linear ? blend(l, ir::Cast(i64, ir::Load(hi_t, {jj})), ir::Load(w_t, {jj})) : src(l);
      columns = Loop(j, PrimExpr(int64_t{0}), PrimExpr(*out_w), ir::Store(o, v, out_at(jj)));
    }
    ir::Stmt tables;
    if (!fill.empty()) tables = Loop(t, PrimExpr(int64_t{0}), PrimExpr(*out_w), ir::Seq(fill));
    // Per output row: its source row(s) and weight, then the row buffer.
    PrimExpr cy = SourceCoord(a, yy, in_h, out_h);
    ir::Stmt per_row;
    if (linear) {
      PrimExpr fly = Intrin("floor", {cy});
      ir::Stmt fill_row = Loop(i, PrimExpr(int64_t{0}), wide,
                               ir::Store(row, x({nn, cc, PrimExpr(ylo), ii}) * (one - PrimExpr(fy)) +
                                                  x({nn, cc, PrimExpr(yhi), ii}) * PrimExpr(fy), {ii}));
      per_row = ir::Seq({fill_row, columns});
      per_row = std::make_shared<ir::LetStmtNode>(fy, cy - fly, per_row);
      per_row = std::make_shared<ir::LetStmtNode>(yhi, ClampIndex(ir::Cast(i64, fly) + PrimExpr(int64_t{1}), in_h), per_row);
      per_row = std::make_shared<ir::LetStmtNode>(ylo, ClampIndex(ir::Cast(i64, fly), in_h), per_row);
    } else {
      PrimExpr sy = row_k != 0 ? ir::MakeBinary(ir::TirKind::kFloorDiv, yy, PrimExpr(row_k))
                               : ClampIndex(ir::Cast(i64, RoundCoord(a, cy)), in_h);
      per_row = std::make_shared<ir::LetStmtNode>(ylo, sy, columns);
    }
    ir::Stmt plane = Loop(y, PrimExpr(int64_t{0}), out_h, per_row);
    if (linear) plane = std::make_shared<ir::AllocateNode>(row, plane);
    if (tables) plane = ir::Seq({tables, plane});
    for (const ir::Buffer& t : {w_t, hi_t, lo_t})
      if (t) plane = std::make_shared<ir::AllocateNode>(t, plane);
    ir::Stmt body = Loop(c, PrimExpr(int64_t{0}), out_shape[1], plane);
    return Loop(n, PrimExpr(int64_t{0}), out_shape[0], body);
  });
}

Result<ir::PrimFunc> LegalizeResize2d(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ShapedArg(r, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* oi, ShapedResult(r));
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, ReadResize(r));
  DType dt = xi->dtype, f = DType::Float32();
  te::FuncBuilder b(name);
  te::Tensor x = b.Input("data", xi->shape, dt);
  std::vector<PrimExpr> out_shape = b.Local(oi->shape);
  int pos[2] = {a.hpos, a.hpos + 1};
  // Source coordinate (float32) of output index o along spatial axis s.
  auto coord = [&](const PrimExpr& o, int s) { return SourceCoord(a, o, x.shape()[pos[s]], out_shape[pos[s]]); };
  auto clamp = [&](const PrimExpr& i, int s) { return ClampIndex(i, x.shape()[pos[s]]); };
  auto to_index = [](const PrimExpr& v) { return ir::Cast(DType::Int64(), v); };
  if (te::Tensor phased = LinearPhases(b, x, out_shape, a, dt); phased.defined()) return b.Build({phased});
  if (te::Tensor sep = SeparableResize(b, x, out_shape, a, dt); sep.defined()) return b.Build({sep});
  te::Tensor out = b.Compute("resize", out_shape, dt, [&](const te::Indices& i) {
    if (a.method == "nearest_neighbor") {
      te::Indices idx = i;
      for (int s = 0; s < 2; ++s) {
        if (int64_t k = NearestFactor(a, x.shape()[pos[s]], out_shape[pos[s]]); k != 0) {
          idx[pos[s]] = ir::MakeBinary(ir::TirKind::kFloorDiv, i[pos[s]], PrimExpr(k));
          continue;
        }
        PrimExpr rounded = RoundCoord(a, coord(i[pos[s]], s));
        idx[pos[s]] = clamp(to_index(rounded), s);
      }
      return x(idx);
    }
    PrimExpr lo[2], hi[2], frac[2];
    for (int s = 0; s < 2; ++s) {
      PrimExpr c = coord(i[pos[s]], s);
      PrimExpr fl = Intrin("floor", {c});
      frac[s] = c - fl;
      lo[s] = clamp(to_index(fl), s);
      hi[s] = clamp(to_index(fl) + PrimExpr(1), s);
    }
    auto at = [&](const PrimExpr& y, const PrimExpr& xx) {
      te::Indices idx = i;
      idx[pos[0]] = y;
      idx[pos[1]] = xx;
      return CastTo(f, x(idx));
    };
    PrimExpr one = Const(f, 1.0);
    PrimExpr top = at(lo[0], lo[1]) * (one - frac[1]) + at(lo[0], hi[1]) * frac[1];
    PrimExpr bottom = at(hi[0], lo[1]) * (one - frac[1]) + at(hi[0], hi[1]) * frac[1];
    return CastTo(dt, top * (one - frac[0]) + bottom * frac[0]);
  });
  return b.Build({out});
}

}  // namespace
}  // namespace nn

void AddResizeOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.image.resize2d", "resize2d", -1, InferResize2d, LegalizeResize2d, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
