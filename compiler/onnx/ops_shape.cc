// Shape and data-movement ONNX operators. Each folds at import time when its
// inputs are known (Shape of a tensor, Gather/Concat/Slice/Unsqueeze/... of
// known values), so shape subgraphs end as R.shape([...]) operands.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/simplify.h"
#include "compiler/onnx/equal_dims.h"
#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/run_time_axes.h"
#include "compiler/onnx/onnx_tensor.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;

Status Set(NodeCtx& ctx, Result<ir::Expr> r) {
  if (!r.ok()) return r.status();
  ctx.SetOutput(0, *r);
  return Status::Ok();
}

// The element count, or INT64_MAX when negative/too large (never equal to a real count).
int64_t Product(const std::vector<int64_t>& v) {
  auto n = CheckedProduct(v);
  return n ? *n : std::numeric_limits<int64_t>::max();
}

PrimExpr DimProduct(const std::vector<PrimExpr>& dims, size_t begin, size_t end) {
  PrimExpr p = PrimExpr(int64_t{1});
  for (size_t i = begin; i < end; ++i) p = p * dims[i];
  return SimplifyDim(p);
}

// Known contents with a new shape (same elements).
KnownInts Reshaped(const KnownInts& k, std::vector<int64_t> shape) {
  KnownInts o = k;
  o.shape = std::move(shape);
  return o;
}

// Static dims of a known-rank tensor, or nullopt.
std::optional<std::vector<int64_t>> StaticDims(const ir::TensorSInfo& t) {
  std::vector<int64_t> out;
  for (const auto& d : t.shape) {
    auto c = ConstDim(d);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::vector<int64_t> KnownShapeOf(NodeCtx& ctx, size_t i) {
  const KnownInts* k = ctx.Known(i);
  return k ? k->shape : std::vector<int64_t>{};
}

// ---------------------------------------------------------------- Shape, Size

Status ConvertShape(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  int64_t rank = xi->ndim;
  KILN_ASSIGN_OR_RETURN(int64_t start, ctx.AttrInt("start", 0));
  KILN_ASSIGN_OR_RETURN(int64_t end, ctx.AttrInt("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  KnownInts k;
  for (int64_t i = start; i < end; ++i) k.elems.push_back(SimplifyDim(xi->shape[i]));
  k.shape = {static_cast<int64_t>(k.elems.size())};
  ctx.SetOutputKnown(0, k);
  return Status::Ok();
}

Status ConvertSize(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KnownInts k;
  k.elems.push_back(DimProduct(xi->shape, 0, xi->shape.size()));
  ctx.SetOutputKnown(0, k);
  return Status::Ok();
}

Status ConvertIdentity(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const Value* v, ctx.In(0));
  ctx.SetOutputValue(0, *v);
  return Status::Ok();
}

// ---------------------------------------------------------------- Constant

Tensor ScalarTensor(DType t, double v) {
  Tensor out = Tensor::Empty(std::vector<int64_t>{}, t).value();
  if (t == DType::Float32()) *out.data<float>() = static_cast<float>(v);
  else *out.data<int64_t>() = static_cast<int64_t>(v);
  return out;
}

Status ConvertConstant(NodeCtx& ctx) {
  const auto& node = ctx.node();
  for (const auto& a : node.attribute()) {
    const std::string& n = a.name();
    Tensor t;
    if (n == "value") {
      std::string base;  // external data of a Constant resolves like initializers'
      KILN_ASSIGN_OR_RETURN(t, TensorFromProto(a.t(), base));
    } else if (n == "value_float") {
      t = ScalarTensor(DType::Float32(), a.f());
    } else if (n == "value_int") {
      t = ScalarTensor(DType::Int64(), static_cast<double>(a.i()));
    } else if (n == "value_floats" || n == "value_ints") {
      bool f = n == "value_floats";
      int64_t count = f ? a.floats_size() : a.ints_size();
      KILN_ASSIGN_OR_RETURN(t, Tensor::Empty(std::vector<int64_t>{count}, f ? DType::Float32() : DType::Int64()));
      for (int64_t i = 0; i < count; ++i) {
        if (f) t.data<float>()[i] = a.floats(static_cast<int>(i));
        else t.data<int64_t>()[i] = a.ints(static_cast<int>(i));
      }
    } else {
      return ctx.Unsupported("the " + n + " attribute (sparse and string constants)");
    }
    ctx.SetOutputValue(0, ConstantValue(t));
    return Status::Ok();
  }
  return ctx.Invalid("has no value attribute");
}

// ConstantOfShape(shape; value = float 0): a constant when the shape is
// static, R.full otherwise.
Status ConvertConstantOfShape(NodeCtx& ctx) {
  // A shape fed as a run-time tensor is read into symbolic dimensions.
  KILN_ASSIGN_OR_RETURN(const KnownInts* k, ctx.ShapeOperand(0, "shape"));
  Tensor value = ScalarTensor(DType::Float32(), 0.0);
  if (const auto* a = ctx.Attr("value")) {
    KILN_ASSIGN_OR_RETURN(value, TensorFromProto(a->t(), ""));
    if (value.NumElements() != 1) return ctx.Invalid("value must hold one element");
  }
  DType dt = value.dtype();
  auto dims = k->Ints();
  if (dims && Product(*dims) <= (1 << 20)) {
    for (int64_t d : *dims)
      if (d < 0) return ctx.Invalid("negative dimension in the shape");
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(*dims, dt));
    size_t eb = dt.bytes();
    for (int64_t i = 0; i < t.NumElements(); ++i) std::memcpy(static_cast<char*>(t.raw_data()) + i * eb, value.raw_data(), eb);
    ctx.SetOutputValue(0, ConstantValue(t));
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(CheckShape(k->elems));
  Tensor scalar = Tensor::Empty(std::vector<int64_t>{}, dt).value();
  std::memcpy(scalar.raw_data(), value.raw_data(), dt.bytes());
  return Set(ctx, ctx.Op("full", {MakeShape(k->elems), MakeConstant(scalar)}, {{"dtype", AttrS(DTypeName(dt))}}));
}

// Range(start, limit, delta): known when all three are, else R.arange.
// Range whose bounds only the running program knows: its length
// max(ceil((limit - start) / delta), 0) is computed (in float64) and read as a
// data-dependent size n; the values are start + i * delta for i < n.
Status ConvertRunTimeRange(NodeCtx& ctx, DType dt) {
  std::vector<ir::Expr> wide;
  for (size_t i = 0; i < 3; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(i));
    if (info->ndim != 0 || info->dtype != dt) {
      return ctx.Invalid("start, limit and delta must be scalars of one dtype");
    }
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
    KILN_ASSIGN_OR_RETURN(e, ctx.Op("astype", {e}, {{"dtype", AttrS("float64")}}));
    wide.push_back(e);
  }
  // A zero step never reaches the limit (ONNX leaves it undefined): an error.
  KILN_ASSIGN_OR_RETURN(ir::Expr zero_step, ctx.Op("equal", {wide[2], ScalarConst(DType::Float64(), 0)}));
  KILN_ASSIGN_OR_RETURN(zero_step, ctx.Op("astype", {zero_step}, {{"dtype", AttrS("int64")}}));
  KILN_RETURN_IF_ERROR(ReadShapeAtRunTime(ctx, zero_step, 1, ctx.node().input(2) + "_is_zero", {PrimExpr(int64_t{0})},
                                          {RunTimeNode(ctx) + ": " + InputText(ctx, 2) + " (the step) is 0; a Range needs a "
                                                                                   "step other than 0"})
                           .status());
  KILN_ASSIGN_OR_RETURN(ir::Expr span, ctx.Op("subtract", {wide[1], wide[0]}));
  KILN_ASSIGN_OR_RETURN(ir::Expr steps, ctx.Op("divide", {span, wide[2]}));
  KILN_ASSIGN_OR_RETURN(steps, ctx.Op("ceil", {steps}));
  KILN_ASSIGN_OR_RETURN(steps, ctx.Op("maximum", {steps, ScalarConst(DType::Float64(), 0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr count, ctx.Op("astype", {steps}, {{"dtype", AttrS("int64")}}));
  KILN_ASSIGN_OR_RETURN(PrimExpr n, RunTimeSize(ctx, count, ctx.node().output(0)));
  KILN_ASSIGN_OR_RETURN(ir::Expr idx, ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(n), PrimValue(PrimExpr(int64_t{1}))},
                                             {{"dtype", AttrS(DTypeName(dt))}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr start, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr delta, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(ir::Expr scaled, ctx.Op("multiply", {idx, delta}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("add", {scaled, start}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertRange(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(0));
  DType dt = si->dtype;
  const KnownInts *ks = ctx.Known(0), *kl = ctx.Known(1), *kd = ctx.Known(2);
  if (ks && kl && kd && ks->elems.size() == 1 && kl->elems.size() == 1 && kd->elems.size() == 1) {
    auto s = ConstDim(ks->elems[0]), d = ConstDim(kd->elems[0]);
    auto l = ConstDim(kl->elems[0]);
    const int64_t lim = kMaxElements;
    bool small = s && d && std::llabs(*s) <= lim && std::llabs(*d) <= lim && (!l || std::llabs(*l) <= lim);
    if (s && d && !small) return ctx.Invalid("start, limit or delta is too large");
    if (s && d && *d != 0) {
      int64_t n = l ? std::max<int64_t>(0, (*l - *s + *d + (*d > 0 ? -1 : 1)) / *d) : 0;
      if (l && n <= (1 << 12)) {
        KnownInts k;
        k.dtype = ks->dtype;
        k.shape = {n};
        for (int64_t i = 0; i < n; ++i) k.elems.push_back(PrimExpr(*s + i * *d));
        ctx.SetOutputKnown(0, k);
        return Status::Ok();
      }
      ir::Expr r;
      KILN_ASSIGN_OR_RETURN(r, ctx.Op("arange", {PrimValue(PrimExpr(*s)), PrimValue(kl->elems[0]), PrimValue(PrimExpr(*d))},
                                       {{"dtype", AttrS(DTypeName(dt))}}));
      ctx.SetOutput(0, r);
      return Status::Ok();
    }
  }
  if (dt.is_float()) {
    auto s = ctx.ConstScalar(0, "start");
    auto l = ctx.ConstScalar(1, "limit");
    auto d = ctx.ConstScalar(2, "delta");
    if (s.ok() && l.ok() && d.ok() && *d != 0) {
      double count = std::ceil((*l - *s) / *d);
      if (!(count <= 1e9)) return ctx.Invalid("Range of more than 1e9 elements");
      int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
      KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(std::vector<int64_t>{n}, DType::Float32()));
      if (dt != DType::Float32()) return ctx.Unsupported("Range of " + DTypeName(dt));
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(*s + i * *d);
      ctx.SetOutputValue(0, ConstantValue(t));
      return Status::Ok();
    }
  }
  return ConvertRunTimeRange(ctx, dt);
}

// ---------------------------------------------------------------- Reshape family

// A product as its constant factor and its other factors (Mul nodes split).
struct Factors {
  int64_t c = 1;
  std::vector<PrimExpr> syms;
};
bool AddFactors(const PrimExpr& e, Factors* f) {
  if (auto c = ConstDim(e)) return !__builtin_mul_overflow(f->c, *c, &f->c);
  if (const auto* m = e.as<ir::MulNode>()) return AddFactors(m->a, f) && AddFactors(m->b, f);
  f->syms.push_back(e);
  return true;
}

// The target shape of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
Result<std::vector<PrimExpr>> ReshapeTarget(NodeCtx& ctx, const ir::TensorSInfo& x, const KnownInts& shape, bool allowzero) {
  std::vector<PrimExpr> out;
  int infer = -1;
  for (size_t i = 0; i < shape.elems.size(); ++i) {
    PrimExpr e = shape.elems[i];
    auto c = ConstDim(e);
    if (c && *c == 0 && !allowzero) {
      if (i >= x.shape.size()) return ctx.Invalid("shape entry " + std::to_string(i) + " is 0 but the input has rank " + std::to_string(x.ndim));
      e = x.shape[i];
    } else if (c && *c == -1) {
      if (infer >= 0) return ctx.Invalid("shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (c && *c < -1) {
      return ctx.Invalid("shape entry " + std::to_string(*c) + " is negative");
    }
    out.push_back(e);
  }
  if (infer >= 0) {
    // total / known by cancelling factors: (n * 3 * 4) / (n) = 12, and
    // (b * 6 * s) / (b * 6 * s) = 1 — a floor division of the products
    // would not simplify.
    Factors total, known;
    for (const auto& d : x.shape) {
      if (!AddFactors(d, &total)) return ctx.Invalid("the input has too many elements");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (static_cast<int>(i) == infer) continue;
      if (!AddFactors(out[i], &known)) return ctx.Invalid("shape has too many elements");
    }
    if (known.c == 0) return ctx.Invalid("shape has a -1 beside a 0 entry");
    for (auto it = known.syms.begin(); it != known.syms.end();) {
      auto m = std::find_if(total.syms.begin(), total.syms.end(),
                            [&](const PrimExpr& t) { return arith::CanProveEqual(t, *it); });
      if (m == total.syms.end()) { ++it; continue; }
      total.syms.erase(m);
      it = known.syms.erase(it);
    }
    if (known.syms.empty() && total.c % known.c == 0) {
      PrimExpr r = PrimExpr(total.c / known.c);
      for (const auto& e : total.syms) r = r * e;
      out[infer] = SimplifyDim(r);
    } else {
      // Factors that do not cancel (a dim computed as (n * 3) // 2, an entry
      // taken from another input): the floor division of what is left,
      // which ONNX requires to be exact.
      PrimExpr num = PrimExpr(total.c), den = PrimExpr(known.c);
      for (const auto& e : total.syms) num = num * e;
      for (const auto& e : known.syms) den = den * e;
      out[infer] = SimplifyDim(ir::MakeBinary(ir::TirKind::kFloorDiv, num, den));
    }
  }
  return out;
}

// Reshape to a shape fed as a run-time tensor: its 0 entries (copy the
// input's dimension, unless allowzero) and -1 entry (the rest) are resolved
// when the program runs, with tensor arithmetic on the shape and the input's
// dimensions; the result is read into symbolic dimensions. The product of
// the shape is read with it and matched against the input's element count,
// so an inconsistent shape is an error when the program runs, never a kernel
// reading outside its input.
Status ConvertRunTimeReshape(NodeCtx& ctx, const ir::TensorSInfo& xi) {
  KILN_ASSIGN_OR_RETURN(int64_t n, RunTimeShapeLength(ctx, 1, "shape"));
  KILN_ASSIGN_OR_RETURN(int64_t allowzero, ctx.AttrInt("allowzero", 0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr s, ctx.Input(1));
  if (si->ndim == 0) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("reshape", {s, MakeShape({PrimExpr(int64_t{1})})})); }
  if (si->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("astype", {s}, {{"dtype", AttrS("int64")}})); }
  const int64_t r = static_cast<int64_t>(xi.shape.size());
  auto slice = [&](const ir::Expr& t, int64_t b, int64_t e) {
    return ctx.Op("strided_slice", {t}, {{"axes", AttrInts({0})}, {"begin", AttrInts({b})}, {"end", AttrInts({e})},
                                         {"strides", AttrInts({1})}});
  };
  const int64_t m = std::min(n, r);
  ir::Expr d = s;
  if (!allowzero && m > 0) {
    KILN_ASSIGN_OR_RETURN(ir::Expr xs, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(xi.shape)}, {})));
    KILN_ASSIGN_OR_RETURN(ir::Expr head, slice(s, 0, m));
    KILN_ASSIGN_OR_RETURN(ir::Expr xhead, slice(xs, 0, m));
    KILN_ASSIGN_OR_RETURN(ir::Expr zero, ctx.Op("equal", {head, ScalarConst(DType::Int64(), 0)}));
    KILN_ASSIGN_OR_RETURN(head, ctx.Op("where", {zero, xhead, head}));
    d = head;
    if (n > m) {
      KILN_ASSIGN_OR_RETURN(ir::Expr tail, slice(s, m, n));
      KILN_ASSIGN_OR_RETURN(d, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{head, tail})},
                                      {{"axis", AttrI(0)}}));
    }
  }
  PrimExpr total(int64_t{1});
  for (const auto& dim : xi.shape) total = total * dim;
  total = SimplifyDim(total);
  KILN_ASSIGN_OR_RETURN(ir::Expr total_t, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape({total})}, {})));
  KILN_ASSIGN_OR_RETURN(ir::Expr infer, ctx.Op("equal", {d, ScalarConst(DType::Int64(), -1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr rest, ctx.Op("where", {infer, ScalarConst(DType::Int64(), 1), d}));
  KILN_ASSIGN_OR_RETURN(ir::Expr part, ctx.Op("prod", {rest}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr safe, ctx.Op("maximum", {part, ScalarConst(DType::Int64(), 1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr missing, ctx.Op("floor_divide", {total_t, safe}));
  KILN_ASSIGN_OR_RETURN(d, ctx.Op("where", {infer, missing, d}));
  KILN_ASSIGN_OR_RETURN(ir::Expr count, ctx.Op("prod", {d}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr with_count,
                        ctx.Op("concat", {std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{d, count})}, {{"axis", AttrI(0)}}));
  std::vector<PrimExpr> expected(static_cast<size_t>(n) + 1);
  expected[static_cast<size_t>(n)] = total;
  std::vector<std::string> messages(static_cast<size_t>(n) + 1);
  messages[static_cast<size_t>(n)] = RunTimeNode(ctx) + ": " + InputText(ctx, 1) + " asks for {got} elements; " +
                                     InputText(ctx, 0, true) + " holds " + ExpectedText(total);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims,
                        ReadShapeAtRunTime(ctx, with_count, n + 1, ctx.node().input(1), expected, messages));
  dims.pop_back();
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("reshape", {x, MakeShape(dims)}));
}

Status ConvertReshape(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KnownInts shape;
  if (ctx.opset() < 5 || ctx.HasAttr("shape")) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> s, ctx.AttrInts("shape", {}));
    for (int64_t v : s) shape.elems.push_back(PrimExpr(v));
  } else {
    const KnownInts* k = ctx.Known(1);
    if (!k) return ConvertRunTimeReshape(ctx, *xi);
    shape = *k;
  }
  KILN_ASSIGN_OR_RETURN(int64_t allowzero, ctx.AttrInt("allowzero", 0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ReshapeTarget(ctx, *xi, shape, allowzero != 0));
  KILN_RETURN_IF_ERROR(CheckShape(dims));
  if (const KnownInts* kx = ctx.Known(0)) {
    std::vector<int64_t> s;
    bool ok = true;
    for (const auto& d : dims) {
      auto c = ConstDim(d);
      if (!c) ok = false; else s.push_back(*c);
    }
    if (ok && Product(s) == static_cast<int64_t>(kx->elems.size())) {
      ctx.SetOutputKnown(0, Reshaped(*kx, s));
      return Status::Ok();
    }
  }
  // R.reshape reads a 0 as "copy the input's dimension"; a literal 0
  // (allowzero=1) means an empty result, which R.zeros gives directly.
  for (const auto& d : dims) {
    auto c = ConstDim(d);
    if (allowzero && c && *c == 0) {
      return Set(ctx, ctx.Op("zeros", {MakeShape(dims)}, {{"dtype", AttrS(DTypeName(xi->dtype))}}));
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("reshape", {x, MakeShape(dims)}));
}

Status ConvertFlatten(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 1));
  if (axis < 0) axis += xi->ndim;
  if (axis < 0 || axis > xi->ndim) return ctx.Invalid("axis out of range for rank " + std::to_string(xi->ndim));
  std::vector<PrimExpr> dims = {DimProduct(xi->shape, 0, axis), DimProduct(xi->shape, axis, xi->shape.size())};
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("reshape", {x, MakeShape(dims)}));
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13.
Result<std::optional<std::vector<int64_t>>> AxesOf(NodeCtx& ctx, size_t input) {
  if (ctx.opset() < 13) {
    if (!ctx.HasAttr("axes")) return std::optional<std::vector<int64_t>>();
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, ctx.AttrInts("axes", {}));
    return std::optional<std::vector<int64_t>>(a);
  }
  if (!ctx.HasInput(input)) return std::optional<std::vector<int64_t>>();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, ctx.ConstInts(input, "axes"));
  return std::optional<std::vector<int64_t>>(a);
}

Status ConvertSqueeze(NodeCtx& ctx) {
  bool empty_run_time_axes = false;  // squeezes as no axes do
  if (ctx.opset() >= 13 && IsRunTimeOperand(ctx, 1)) {
    KILN_ASSIGN_OR_RETURN(int64_t n, RunTimeShapeLength(ctx, 1, "axes"));
    if (n > 0) return RunTimeSqueeze(ctx);
    empty_run_time_axes = true;
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  std::optional<std::vector<int64_t>> axes_opt;
  if (!empty_run_time_axes) { KILN_ASSIGN_OR_RETURN(axes_opt, AxesOf(ctx, 1)); }
  std::vector<int64_t> axes;
  if (axes_opt) {
    for (int64_t a : *axes_opt) {
      KILN_ASSIGN_OR_RETURN(int64_t n, NormAxis(a, xi->ndim));
      axes.push_back(n);
    }
  } else {
    // Without axes ONNX squeezes every axis that is 1 when the node runs, so
    // the result's rank depends on the sizes. Kiln's ranks are fixed: a
    // symbolic axis is taken as one of them and checked to be 1 by
    // R.match_cast when the program runs (named after the node's output, so
    // a violation names it) — models squeeze all axes of a [batch, 1] score
    // called with batch 1.
    std::vector<PrimExpr> unit = xi->shape;
    std::vector<std::string> messages(static_cast<size_t>(xi->ndim));
    bool symbolic = false;
    for (int64_t i = 0; i < xi->ndim; ++i) {
      auto c = ConstDim(xi->shape[i]);
      if (!c) {
        unit[i] = PrimExpr(int64_t{1});
        symbolic = true;
        messages[static_cast<size_t>(i)] =
            RunTimeNode(ctx) + " has no axes, so it squeezes axis " + std::to_string(i) + " of " + InputText(ctx, 0, true) +
            ", which the compiled model takes to be 1 (" + arith::ToDebugString(xi->shape[i]) + " = {got}); give the axes";
      }
      if (!c || *c == 1) axes.push_back(i);
    }
    if (symbolic) {
      KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
      KILN_ASSIGN_OR_RETURN(ir::RVar one, ctx.importer()->bb().EmitMatchCast(
                                               x, ir::MakeTensorSInfo(unit, xi->dtype),
                                               IdentifierText(ctx.node().output(0)) + "_unit_axes", messages));
      return Set(ctx, ctx.Op("squeeze", {ir::Expr(one)}, {{"axis", AttrInts(axes)}}));
    }
  }
  std::sort(axes.begin(), axes.end());
  if (const KnownInts* k = ctx.Known(0)) {
    std::vector<int64_t> s;
    for (size_t i = 0; i < k->shape.size(); ++i)
      if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i))) s.push_back(k->shape[i]);
    ctx.SetOutputKnown(0, Reshaped(*k, s));
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("squeeze", {x}, {{"axis", AttrInts(axes)}}));
}

Status ConvertUnsqueeze(NodeCtx& ctx) {
  if (ctx.opset() >= 13 && IsRunTimeOperand(ctx, 1)) return RunTimeUnsqueeze(ctx);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(auto axes_opt, AxesOf(ctx, 1));
  if (!axes_opt) return ctx.Invalid("axes are required");
  int64_t out_rank = xi->ndim + static_cast<int64_t>(axes_opt->size());
  std::vector<int64_t> axes;
  for (int64_t a : *axes_opt) {
    KILN_ASSIGN_OR_RETURN(int64_t n, NormAxis(a, out_rank));
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  if (const KnownInts* k = ctx.Known(0)) {
    std::vector<int64_t> s;
    size_t src = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      if (std::binary_search(axes.begin(), axes.end(), i)) s.push_back(1);
      else s.push_back(k->shape[src++]);
    }
    ctx.SetOutputKnown(0, Reshaped(*k, s));
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("expand_dims", {x}, {{"axis", AttrInts(axes)}}));
}

// Output element (i0, i1, ...) of known contents `k` is k[j] where axis a of
// the output reads input axis axes[a] at begin[a] + i_a * step[a]: a
// transpose (begin 0, step 1) or a slice (axes in order). `out_dim(a)` is the
// output's size along a. Checks the perm is one and the indices in range.
template <typename OutDim>
Status SetKnownStrided(NodeCtx& ctx, const KnownInts& k, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& begin, const std::vector<int64_t>& step, OutDim out_dim) {
  const size_t rank = k.shape.size();
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || static_cast<size_t>(a) >= rank || seen[static_cast<size_t>(a)]) return ctx.Invalid("perm is not a permutation of the axes");
    seen[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> in_strides(rank, 1), out_shape(rank);
  for (size_t a = rank; a-- > 1;) in_strides[a - 1] = in_strides[a] * k.shape[a];
  int64_t total = 1;
  for (size_t a = 0; a < rank; ++a) {
    out_shape[a] = out_dim(a);
    total *= out_shape[a];
  }
  KnownInts out;
  out.dtype = k.dtype;
  out.shape = out_shape;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t j = 0;
    for (size_t a = 0; a < rank; ++a) {
      int64_t src = begin[a] + idx[a] * step[a];
      const size_t ax = static_cast<size_t>(axes[a]);
      if (src < 0 || src >= k.shape[ax]) return Internal("known slice index out of range");
      j += src * in_strides[ax];
    }
    out.elems.push_back(k.elems[static_cast<size_t>(j)]);
    for (size_t a = rank; a-- > 0;) {
      if (++idx[a] < out_shape[a]) break;
      idx[a] = 0;
    }
  }
  ctx.SetOutputKnown(0, out);
  return Status::Ok();
}

Status ConvertTranspose(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  std::vector<int64_t> rev;
  for (int64_t i = xi->ndim - 1; i >= 0; --i) rev.push_back(i);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx.AttrInts("perm", rev));
  // Known contents fold (torch's F.pad export reverses its pads through a
  // 2-d Reshape, Slice and Transpose): the pads stay known at import.
  if (const KnownInts* k = ctx.Known(0); k && perm.size() == k->shape.size()) {
    return SetKnownStrided(ctx, *k, perm, std::vector<int64_t>(perm.size(), 0), std::vector<int64_t>(perm.size(), 1),
                           [&](size_t i) { return k->shape[static_cast<size_t>(perm[i])]; });
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("permute_dims", {x}, {{"axes", AttrInts(perm)}}));
}

// ---------------------------------------------------------------- Concat, Split

Status ConvertConcat(NodeCtx& ctx) {
  // axis is optional before opset 4, then 1.
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", ctx.opset() < 4 ? 1 : 0));
  bool all_known = true;
  for (size_t i = 0; i < ctx.NumInputs(); ++i) {
    const KnownInts* k = ctx.Known(i);
    all_known = all_known && k && k->shape.size() == 1;
  }
  if (all_known && ctx.NumInputs() > 0 && (axis == 0 || axis == -1)) {
    KnownInts out;
    out.dtype = ctx.Known(0)->dtype;
    for (size_t i = 0; i < ctx.NumInputs(); ++i)
      for (const auto& e : ctx.Known(i)->elems) out.elems.push_back(e);
    out.shape = {static_cast<int64_t>(out.elems.size())};
    ctx.SetOutputKnown(0, out);
    return Status::Ok();
  }
  std::vector<ir::Expr> parts;
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* first, ctx.Info(0));
  for (size_t i = 0; i < ctx.NumInputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(i));
    if (i > 0 && info->ndim == first->ndim && first->ndim > 0) {
      // The other axes must be input 0's.
      const int64_t a = axis < 0 ? axis + first->ndim : axis;
      std::vector<EqualDim> dims;
      for (int64_t j = 0; j < first->ndim; ++j) {
        if (j != a) dims.push_back({static_cast<size_t>(j), 0, static_cast<size_t>(j)});
      }
      KILN_ASSIGN_OR_RETURN(e, MatchEqualDims(ctx, e, i, dims));
    }
    parts.push_back(e);
  }
  if (parts.size() == 1) return Set(ctx, Result<ir::Expr>(parts[0]));
  return Set(ctx, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(parts)}, {{"axis", AttrI(axis)}}));
}

// Split by sizes fed as a run-time tensor: the sizes, and their sum, read
// into symbolic values when the program runs; the sum is matched against the
// axis (sizes that do not add up are a run-time error, never a read outside
// the input), each part a strided_slice from the sum of the sizes before it.
Status ConvertRunTimeSplit(NodeCtx& ctx, const ir::TensorSInfo& xi, int64_t axis) {
  KILN_ASSIGN_OR_RETURN(int64_t len, RunTimeShapeLength(ctx, 1, "split"));
  const size_t n = ctx.NumOutputs();
  if (static_cast<size_t>(len) != n) {
    return ctx.Invalid("split has " + std::to_string(len) + " sizes for " + std::to_string(n) + " outputs");
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr s, ctx.Input(1));
  if (si->ndim == 0) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("reshape", {s, MakeShape({PrimExpr(int64_t{1})})})); }
  if (si->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("astype", {s}, {{"dtype", AttrS("int64")}})); }
  KILN_ASSIGN_OR_RETURN(ir::Expr sum, ctx.Op("sum", {s}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr with_sum,
                        ctx.Op("concat", {std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{s, sum})}, {{"axis", AttrI(0)}}));
  std::vector<PrimExpr> expected(n + 1);
  expected[n] = xi.shape[static_cast<size_t>(axis)];
  std::vector<std::string> messages(n + 1);
  messages[n] = RunTimeNode(ctx) + ": the sizes in " + InputText(ctx, 1) + " add up to {got}; axis " + std::to_string(axis) +
                " of " + InputText(ctx, 0, true) + " has " + ExpectedText(expected[n]);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> sizes, ReadShapeAtRunTime(ctx, with_sum, static_cast<int64_t>(n) + 1,
                                                                        ctx.node().input(1), expected, messages));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  PrimExpr begin(int64_t{0});
  for (size_t i = 0; i < n; ++i) {
    PrimExpr end = SimplifyDim(begin + sizes[i]);
    KILN_ASSIGN_OR_RETURN(ir::Expr part, ctx.Op("strided_slice", {x, MakeShape({PrimExpr(axis)}), MakeShape({begin}),
                                                                  MakeShape({end}), MakeShape({PrimExpr(int64_t{1})})}));
    ctx.SetOutput(i, part);
    begin = end;
  }
  return Status::Ok();
}

Status ConvertSplit(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  std::vector<int64_t> split;
  if (ctx.opset() < 2 && ctx.HasInput(1)) {  // opset 1 may pass the sizes as an input
    KILN_ASSIGN_OR_RETURN(split, ctx.ConstInts(1, "split"));
  } else if (ctx.opset() < 13 && ctx.HasAttr("split")) {
    KILN_ASSIGN_OR_RETURN(split, ctx.AttrInts("split", {}));
  } else if (ctx.opset() >= 13 && ctx.HasInput(1)) {
    if (!ctx.Known(1) && !ctx.In(1).value()->constant.defined()) return ConvertRunTimeSplit(ctx, *xi, axis);
    KILN_ASSIGN_OR_RETURN(split, ctx.ConstInts(1, "split"));
  }
  size_t n = ctx.NumOutputs();
  // Opset 18's num_outputs: parts of ceil(d / n), the last one shorter, as
  // relax split's sections.
  if (ctx.HasAttr("num_outputs")) {
    KILN_ASSIGN_OR_RETURN(int64_t num_outputs, ctx.AttrInt("num_outputs", 0));
    if (num_outputs != static_cast<int64_t>(n)) {
      return ctx.Invalid("num_outputs=" + std::to_string(num_outputs) + " but the node has " + std::to_string(n) + " outputs");
    }
    if (!split.empty()) return ctx.Invalid("both num_outputs and the split input are given");
  }
  ir::AttrMap attrs = {{"axis", AttrI(axis)}};
  if (split.empty()) {
    attrs["indices_or_sections"] = AttrI(static_cast<int64_t>(n));
  } else {
    if (split.size() != n) return ctx.Invalid("split has " + std::to_string(split.size()) + " sizes for " + std::to_string(n) + " outputs");
    std::vector<int64_t> indices;
    int64_t acc = 0;
    for (int64_t v : split)
      if (v < 0 || v > kMaxElements) return ctx.Invalid("split sizes must lie in [0, 2^50]");
    for (size_t i = 0; i + 1 < split.size(); ++i) indices.push_back(acc += split[i]);
    attrs["indices_or_sections"] = AttrInts(indices);
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (n == 1) return Set(ctx, Result<ir::Expr>(x));
  KILN_ASSIGN_OR_RETURN(ir::Expr parts, ctx.Op("split", {x}, attrs));
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSIGN_OR_RETURN(ir::Expr p, ctx.Emit(std::make_shared<ir::TupleGetItemExpr>(parts, static_cast<int>(i))));
    ctx.SetOutput(i, p);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- Slice

// Slice whose starts or ends hold symbolic values: R.strided_slice with
// begin and end as R.shape([...]) arguments, the symbolic ones trusted to lie
// inside their axes (op_slice.cc). ONNX's "to the end" (INT64_MAX) and
// negative constants keep their meaning.
Status ConvertSymbolicSlice(NodeCtx& ctx, const ir::TensorSInfo& xi, const KnownInts& starts, const KnownInts& ends) {
  std::vector<int64_t> axes, steps;
  if (ctx.HasInput(3)) { KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(3, "axes")); }
  if (ctx.HasInput(4)) { KILN_ASSIGN_OR_RETURN(steps, ctx.ConstInts(4, "steps")); }
  size_t n = starts.elems.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.elems.size() != n || axes.size() != n || steps.size() != n) {
    return ctx.Invalid("starts, ends, axes and steps must have the same length");
  }
  for (auto& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, xi.ndim)); }
  for (int64_t s : steps)
    if (s == 0) return ctx.Invalid("a step is 0");
  const int64_t big = std::numeric_limits<int32_t>::max();
  auto bounded = [&](const PrimExpr& e) {
    auto c = ConstDim(e);
    return c ? PrimExpr(std::clamp<int64_t>(*c, -big - 1, big)) : e;
  };
  std::vector<PrimExpr> begin, end, axes_e, steps_e;
  for (size_t i = 0; i < n; ++i) {
    begin.push_back(bounded(starts.elems[i]));
    end.push_back(bounded(ends.elems[i]));
    axes_e.push_back(PrimExpr(axes[i]));
    steps_e.push_back(PrimExpr(steps[i]));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("strided_slice", {x, MakeShape(axes_e), MakeShape(begin), MakeShape(end), MakeShape(steps_e)}));
}

Status ConvertSlice(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    KILN_ASSIGN_OR_RETURN(starts, ctx.AttrInts("starts", {}));
    KILN_ASSIGN_OR_RETURN(ends, ctx.AttrInts("ends", {}));
    KILN_ASSIGN_OR_RETURN(axes, ctx.AttrInts("axes", {}));
  } else {
    // starts and ends from shape arithmetic (x[:seq]) are symbolic.
    const KnownInts* ks = ctx.Known(1);
    const KnownInts* ke = ctx.Known(2);
    if (ks && ke && (!ks->Ints() || !ke->Ints())) return ConvertSymbolicSlice(ctx, *xi, *ks, *ke);
    for (size_t i = 1; i <= 4; ++i) {
      if (IsRunTimeOperand(ctx, i)) return RunTimeSlice(ctx);
    }
    KILN_ASSIGN_OR_RETURN(starts, ctx.ConstInts(1, "starts"));
    KILN_ASSIGN_OR_RETURN(ends, ctx.ConstInts(2, "ends"));
    if (ctx.HasInput(3)) { KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(3, "axes")); }
    if (ctx.HasInput(4)) { KILN_ASSIGN_OR_RETURN(steps, ctx.ConstInts(4, "steps")); }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.Invalid("starts, ends, axes and steps must have the same length");
  }
  for (auto& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, xi->ndim)); }
  for (int64_t s : steps)
    if (s == 0) return ctx.Invalid("a step is 0");
  // Clamp like numpy where the dimension is static (ONNX uses INT64_MAX for "to the end").
  for (size_t i = 0; i < axes.size(); ++i) {
    auto d = ConstDim(xi->shape[axes[i]]);
    if (!d) {
      // R.strided_slice takes a constant index on a symbolic axis as lying
      // inside it, except 2^31 - 1 (-2^31) for "to the end" ("to the start").
      // Exporters write other large ends for that (tf2onnx 10^9), so ends at
      // or beyond +-10^9 on a symbolic axis are read as that: Kiln assumes
      // symbolic dimensions below 10^9.
      const int64_t big = std::numeric_limits<int32_t>::max();
      const int64_t far = 1000000000;
      if (ends[i] >= far) ends[i] = big;
      if (ends[i] <= -far) ends[i] = -big - 1;
      if (steps[i] < 0 && starts[i] >= far) starts[i] = big;
      ends[i] = std::clamp<int64_t>(ends[i], -big - 1, big);
      starts[i] = std::clamp<int64_t>(starts[i], -big - 1, big);
      continue;
    }
    auto fix = [&](int64_t v, bool is_end) {
      if (v < 0) v += *d;
      if (steps[i] > 0) return std::clamp<int64_t>(v, 0, *d);
      return std::clamp<int64_t>(v, -1, *d - 1) + (is_end && v < 0 ? 0 : 0);
    };
    starts[i] = fix(starts[i], false);
    ends[i] = fix(ends[i], true);
  }
  if (const KnownInts* k = ctx.Known(0); k && k->shape.size() > 1) {
    // Every axis static here (known contents have a static shape).
    const size_t rank = k->shape.size();
    std::vector<int64_t> all(rank), begin(rank, 0), step(rank, 1), out_dims(k->shape);
    for (size_t a = 0; a < rank; ++a) all[a] = static_cast<int64_t>(a);
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      begin[a] = starts[i];
      step[a] = steps[i];
      const int64_t span = steps[i] > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
      const int64_t mag = steps[i] > 0 ? steps[i] : -steps[i];
      out_dims[a] = std::max<int64_t>(0, (span + mag - 1) / mag);
    }
    return SetKnownStrided(ctx, *k, all, begin, step, [&](size_t a) { return out_dims[a]; });
  }
  if (const KnownInts* k = ctx.Known(0)) {
    if (k->shape.size() == 1 && axes.size() == 1) {
      KnownInts out;
      out.dtype = k->dtype;
      int64_t s = starts[0], e = ends[0], st = steps[0];
      for (int64_t i = s; st > 0 ? i < e : i > e; i += st) out.elems.push_back(k->elems[i]);
      out.shape = {static_cast<int64_t>(out.elems.size())};
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  // A negative step's end of -1 (before the first element) cannot be written
  // as an index; numpy's strided_slice reads it as "from the end", so give it
  // the lowest value, which clamps to "to the start".
  for (size_t i = 0; i < axes.size(); ++i)
    if (steps[i] < 0 && ends[i] == -1 && ConstDim(xi->shape[axes[i]])) ends[i] = -(int64_t{1} << 31) - 1;
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("strided_slice", {x}, {{"axes", AttrInts(axes)}, {"begin", AttrInts(starts)},
                                                {"end", AttrInts(ends)}, {"strides", AttrInts(steps)}}));
}

// ---------------------------------------------------------------- Gather

// Indices only known when the program runs must lie in [-d, d - 1] for
// axis `axis` (of size d) of x, or the kernel would read outside x: the
// number outside is counted, read and matched against 0 (a match with a
// message is kept even though nothing uses it).
Status CheckIndicesInRange(NodeCtx& ctx, ir::Expr idx, const ir::TensorSInfo& xi, int64_t axis) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ii, ctx.Info(1));
  if (!xi.has_shape || !ii->has_shape) return Status::Ok();
  const PrimExpr d = xi.shape[static_cast<size_t>(axis)];
  KILN_ASSIGN_OR_RETURN(ir::Expr dt, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape({d})}, {})));
  if (ii->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(idx, ctx.Op("astype", {idx}, {{"dtype", AttrS("int64")}})); }
  KILN_ASSIGN_OR_RETURN(ir::Expr neg_d, ctx.Op("negative", {dt}));
  KILN_ASSIGN_OR_RETURN(ir::Expr lo, ctx.Op("less", {idx, neg_d}));
  KILN_ASSIGN_OR_RETURN(ir::Expr hi, ctx.Op("greater_equal", {idx, dt}));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, ctx.Op("logical_or", {lo, hi}));
  KILN_ASSIGN_OR_RETURN(bad, ctx.Op("astype", {bad}, {{"dtype", AttrS("int64")}}));
  if (ii->ndim == 0) { KILN_ASSIGN_OR_RETURN(bad, ctx.Op("reshape", {bad, MakeShape({PrimExpr(int64_t{1})})})); }
  std::vector<int64_t> all;
  for (int64_t k = 0; k < std::max<int64_t>(ii->ndim, 1); ++k) all.push_back(k);
  KILN_ASSIGN_OR_RETURN(ir::Expr count, ctx.Op("sum", {bad}, {{"axis", AttrInts(all)}, {"keepdims", AttrB(false)}}));
  const std::string range = ConstDim(d) ? "[" + std::to_string(-*ConstDim(d)) + ", " + std::to_string(*ConstDim(d) - 1) + "]"
                                        : "[-" + relax::DimString(d) + ", " + relax::DimString(d) + " - 1]";
  std::string message = RunTimeNode(ctx) + ": {got} of the values of " + InputText(ctx, 1) + " lie outside " + range +
                        ", the indices of axis " + std::to_string(axis) + " of " + InputText(ctx, 0, true);
  return ReadShapeAtRunTime(ctx, count, 1, ctx.node().input(1) + "_out_of_range", {PrimExpr(int64_t{0})}, {message})
      .status();
}

Status ConvertGather(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  const KnownInts* kx = ctx.Known(0);
  const KnownInts* ki = ctx.Known(1);
  if (kx && ki && kx->shape.size() == 1) {
    auto idx = ki->Ints();
    if (idx) {
      KnownInts out;
      out.dtype = kx->dtype;
      out.shape = ki->shape;
      int64_t n = static_cast<int64_t>(kx->elems.size());
      for (int64_t i : *idx) {
        if (i < 0) i += n;
        if (i < 0 || i >= n) return ctx.Invalid("index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " elements");
        out.elems.push_back(kx->elems[i]);
      }
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr idx, ctx.Input(1));
  if (IsRunTimeOperand(ctx, 1)) KILN_RETURN_IF_ERROR(CheckIndicesInRange(ctx, idx, *xi, axis));
  return Set(ctx, ctx.Op("take", {x, idx}, {{"axis", AttrI(axis)}}));
}

Status ConvertGatherElements(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr idx, ctx.Input(1));
  return Set(ctx, ctx.Op("gather_elements", {x, idx}, {{"axis", AttrI(axis)}}));
}

// ---------------------------------------------------------------- Expand, Tile

// Expand's shape fed at run time, where the input's dimension `dx` is kept:
// the shape's entry must be 1 or dx. where(s == 1, dx, s) is read and matched
// against dx at the `checked` positions (the others read into unused
// variables), its message naming the entry.
Status CheckExpandShape(NodeCtx& ctx, const KnownInts& k, const std::vector<PrimExpr>& want, const std::vector<bool>& checked) {
  const size_t m = k.elems.size();
  KILN_ASSIGN_OR_RETURN(ir::Expr s, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(1));
  if (si->ndim == 0) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("reshape", {s, MakeShape({PrimExpr(int64_t{1})})})); }
  if (si->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(s, ctx.Op("astype", {s}, {{"dtype", AttrS("int64")}})); }
  std::vector<PrimExpr> dx(m, PrimExpr(int64_t{1}));
  std::vector<PrimExpr> expected(m);
  std::vector<std::string> messages(m);
  for (size_t j = 0; j < m; ++j) {
    if (!checked[j]) continue;
    dx[j] = want[j];
    expected[j] = want[j];
    messages[j] = RunTimeNode(ctx) + ": entry " + std::to_string(j) + " of " + InputText(ctx, 1) +
                  " is {got}; it must be 1 or the dimension it broadcasts with, of " + InputText(ctx, 0, true) + ": " +
                  ExpectedText(want[j]);
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr dxt, ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(dx)}, {})));
  KILN_ASSIGN_OR_RETURN(ir::Expr one, ctx.Op("equal", {s, ScalarConst(DType::Int64(), 1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr fixed, ctx.Op("where", {one, dxt, s}));
  return ReadShapeAtRunTime(ctx, fixed, static_cast<int64_t>(m), ctx.node().input(1) + "_broadcast", expected, messages)
      .status();
}

Status ConvertExpand(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  // A shape fed as a run-time tensor is read into symbolic dimensions; where
  // the input's dimension is not 1 the shape's must be 1 or equal to it
  // (checked when the program runs: CheckExpandShape).
  const bool run_time = IsRunTimeOperand(ctx, 1);
  KILN_ASSIGN_OR_RETURN(const KnownInts* k, ctx.ShapeOperand(1, "shape"));
  // Bidirectional broadcasting of the input's shape and the given one.
  size_t n = std::max(xi->shape.size(), k->elems.size());
  std::vector<PrimExpr> out(n);
  std::vector<PrimExpr> want(k->elems.size());
  std::vector<bool> checked(k->elems.size(), false);
  bool any_checked = false;
  for (size_t i = 0; i < n; ++i) {
    bool has_x = i >= n - xi->shape.size(), has_s = i >= n - k->elems.size();
    PrimExpr dx = has_x ? xi->shape[i - (n - xi->shape.size())] : PrimExpr(int64_t{1});
    PrimExpr ds = has_s ? k->elems[i - (n - k->elems.size())] : PrimExpr(int64_t{1});
    auto cs = ConstDim(ds), cx = ConstDim(dx);
    if (cs && *cs == 1) out[i] = dx;
    else if (cx && *cx == 1) out[i] = ds;
    else if (cs && cx && *cs != *cx) return ctx.Invalid("cannot broadcast dimension " + std::to_string(*cx) + " to " + std::to_string(*cs));
    else {
      out[i] = dx;
      if (run_time && has_s && relax::CompareDims(dx, ds) != relax::DimRelation::kEqual) {
        const size_t j = i - (n - k->elems.size());
        want[j] = dx;
        checked[j] = any_checked = true;
      }
    }
  }
  KILN_RETURN_IF_ERROR(CheckShape(out));
  if (any_checked) KILN_RETURN_IF_ERROR(CheckExpandShape(ctx, *k, want, checked));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("broadcast_to", {x, MakeShape(out)}));
}

Status ConvertTile(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  std::vector<int64_t> reps;
  if (ctx.opset() < 6) {
    // Tile(input, tiles, axis): `tiles` copies along one axis.
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> tiles, ctx.ConstInts(1, "tiles"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx.ConstInts(2, "axis"));
    if (tiles.size() != 1 || axis.size() != 1) return ctx.Invalid("tiles and axis must be single values");
    KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axis[0], xi->ndim));
    reps.assign(static_cast<size_t>(xi->ndim), 1);
    reps[static_cast<size_t>(a)] = tiles[0];
  } else {
    if (IsRunTimeOperand(ctx, 1)) return RunTimeTile(ctx);
    KILN_ASSIGN_OR_RETURN(reps, ctx.ConstInts(1, "repeats"));
  }
  std::vector<PrimExpr> tiled;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0 || reps[i] > kMaxElements) return ctx.Invalid("repeats must lie in [0, 2^50]");
    PrimExpr d = i < xi->shape.size() ? xi->shape[i] : PrimExpr(int64_t{1});
    auto c = ConstDim(d);
    int64_t prod = 0;
    if (c && __builtin_mul_overflow(*c, reps[i], &prod)) return ctx.Invalid("repeats make the result too large");
    tiled.push_back(c ? PrimExpr(prod) : SimplifyDim(d * PrimExpr(reps[i])));
  }
  KILN_RETURN_IF_ERROR(CheckShape(tiled));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op("tile", {x}, {{"repeats", AttrInts(reps)}}));
}

}  // namespace

void AddShapeConverters(ConverterTable* t) {
  (*t)["Shape"] = ConvertShape;
  (*t)["Size"] = ConvertSize;
  (*t)["Identity"] = ConvertIdentity;
  (*t)["Constant"] = ConvertConstant;
  (*t)["ConstantOfShape"] = ConvertConstantOfShape;
  (*t)["Range"] = ConvertRange;
  (*t)["Reshape"] = ConvertReshape;
  (*t)["Flatten"] = ConvertFlatten;
  (*t)["Squeeze"] = ConvertSqueeze;
  (*t)["Unsqueeze"] = ConvertUnsqueeze;
  (*t)["Transpose"] = ConvertTranspose;
  (*t)["Concat"] = ConvertConcat;
  (*t)["Split"] = ConvertSplit;
  (*t)["Slice"] = ConvertSlice;
  (*t)["Gather"] = ConvertGather;
  (*t)["GatherElements"] = ConvertGatherElements;
  (*t)["Expand"] = ConvertExpand;
  (*t)["Tile"] = ConvertTile;
}

}  // namespace onnx
}  // namespace kiln
