// Elementwise ONNX operators: arithmetic and comparison with numpy
// broadcasting (folded at import time on known integer values, so shape
// arithmetic never reaches the program), unary math, activations, Clip,
// variadic Min/Max/Sum/Mean, Where, Cast.
#include <cmath>
#include <limits>

#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/onnx_tensor.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;
using ir::TirKind;

// ---------------------------------------------------------------- folding

// numpy broadcasting of two known shapes.
std::optional<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The flat index into `shape` (right-aligned in `out`) of output element `flat`.
int64_t SourceIndex(int64_t flat, const std::vector<int64_t>& out, const std::vector<int64_t>& shape) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t d = out.size() - 1 - k;
    int64_t coord = flat % out[d];
    flat /= out[d];
    if (k < shape.size()) {
      size_t sd = shape.size() - 1 - k;
      if (shape[sd] != 1) idx += coord * stride;
      stride *= shape[sd];
    }
  }
  return idx;
}

// Element count of a known shape; known values are small, anything else is
// reported as too big to fold.
int64_t NumElems(const std::vector<int64_t>& s) {
  auto n = CheckedProduct(s);
  return n ? *n : std::numeric_limits<int64_t>::max();
}

constexpr int64_t kMaxFold = 1 << 12;

// a (op) b on constants without overflow, or nullopt.
std::optional<int64_t> FoldConst(TirKind kind, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (kind) {
    case TirKind::kAdd: if (__builtin_add_overflow(a, b, &r)) return std::nullopt; return r;
    case TirKind::kSub: if (__builtin_sub_overflow(a, b, &r)) return std::nullopt; return r;
    case TirKind::kMul: if (__builtin_mul_overflow(a, b, &r)) return std::nullopt; return r;
    case TirKind::kFloorDiv:
    case TirKind::kFloorMod: {
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) { --q; m += b; }
      return kind == TirKind::kFloorDiv ? q : m;
    }
    case TirKind::kMin: return std::min(a, b);
    case TirKind::kMax: return std::max(a, b);
    case TirKind::kEQ: return int64_t{a == b};
    case TirKind::kNE: return int64_t{a != b};
    case TirKind::kLT: return int64_t{a < b};
    case TirKind::kLE: return int64_t{a <= b};
    case TirKind::kGT: return int64_t{a > b};
    case TirKind::kGE: return int64_t{a >= b};
    default: return std::nullopt;
  }
}

std::optional<KnownInts> FoldBinary(TirKind kind, const KnownInts& a, const KnownInts& b, bool to_bool) {
  auto shape = BroadcastShapes(a.shape, b.shape);
  if (!shape) return std::nullopt;
  KnownInts out;
  out.shape = *shape;
  out.dtype = to_bool ? DType::Bool() : a.dtype;
  int64_t n = NumElems(*shape);
  if (n > kMaxFold) return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    PrimExpr x = a.elems[SourceIndex(i, *shape, a.shape)];
    PrimExpr y = b.elems[SourceIndex(i, *shape, b.shape)];
    auto cx = ConstDim(x), cy = ConstDim(y);
    PrimExpr r;
    if (cx && cy) {
      auto c = FoldConst(kind, *cx, *cy);
      if (!c) return std::nullopt;
      r = PrimExpr(*c);
    } else {
      // Symbolic dims: only small constants take part (no overflow inside the simplifier).
      for (const auto& c : {cx, cy})
        if (c && (*c > kMaxElements || *c < -kMaxElements)) return std::nullopt;
      if (kind == TirKind::kFloorDiv && cy && *cy == 0) return std::nullopt;
      r = SimplifyDim(ir::MakeBinary(kind, x, y));
    }
    if (to_bool) {
      auto c = ConstDim(r);
      if (!c) return std::nullopt;  // comparisons must decide
      r = PrimExpr(int64_t{*c != 0});
    } else if (r.dtype() != DType::Int64()) {
      r = SimplifyDim(ir::Cast(DType::Int64(), r));
    }
    out.elems.push_back(r);
  }
  return out;
}

// ---------------------------------------------------------------- binary

struct BinaryDef {
  const char* onnx;
  const char* relax;
  TirKind fold;
  bool to_bool;
  bool foldable;
};

const BinaryDef kBinary[] = {
    {"Add", "add", TirKind::kAdd, false, true},
    {"Sub", "subtract", TirKind::kSub, false, true},
    {"Mul", "multiply", TirKind::kMul, false, true},
    {"Div", "divide", TirKind::kFloorDiv, false, true},  // shape values are non-negative
    {"Pow", "power", TirKind::kAdd, false, false},
    {"Equal", "equal", TirKind::kEQ, true, true},
    {"Less", "less", TirKind::kLT, true, true},
    {"LessOrEqual", "less_equal", TirKind::kLE, true, true},
    {"Greater", "greater", TirKind::kGT, true, true},
    {"GreaterOrEqual", "greater_equal", TirKind::kGE, true, true},
    {"And", "logical_and", TirKind::kAnd, false, false},
    {"Or", "logical_or", TirKind::kOr, false, false},
    {"Mod", "floor_mod", TirKind::kFloorMod, false, false},
};

const BinaryDef* FindBinary(const std::string& op) {
  for (const auto& d : kBinary)
    if (op == d.onnx) return &d;
  return nullptr;
}

// Symbolic dimensions that shape arithmetic cannot prove equal, such as a
// feature pyramid's upsampled ((h + 1) // 2 + 1) // 2 * 2 against the skip
// connection's (h + 1) // 2: equal for the input sizes a model is meant for,
// not for every size. The second operand is matched to the first's
// dimensions by R.match_cast, which checks them when the program runs (and
// reports a mismatch naming both), as ONNX Runtime checks shapes when it
// runs. A dimension that is 1 broadcasts only when it is a constant 1.
Result<ir::Expr> MatchUnprovenDims(NodeCtx& ctx, const ir::Expr& a, ir::Expr b) {
  const auto* ta = ir::SInfoAs<ir::TensorSInfo>(a->struct_info);
  const auto* tb = ir::SInfoAs<ir::TensorSInfo>(b->struct_info);
  if (!ta || !tb || !ta->has_shape || !tb->has_shape || !tb->has_dtype) return b;
  std::vector<ir::PrimExpr> shape = tb->shape;
  size_t na = ta->shape.size(), nb = shape.size();
  std::vector<std::string> messages(nb);
  bool changed = false;
  for (size_t k = 0; k < std::min(na, nb); ++k) {
    const ir::PrimExpr& da = ta->shape[na - 1 - k];
    ir::PrimExpr& db = shape[nb - 1 - k];
    if (ConstDim(da) || ConstDim(db)) continue;
    if (relax::CompareDims(da, db) != relax::DimRelation::kUnknown) continue;
    messages[nb - 1 - k] = RunTimeNode(ctx) + ": " + InputText(ctx, 1, true) + " has " + relax::DimString(db) +
                           " = {got} at axis " + std::to_string(nb - 1 - k) + "; the compiled model needs it equal to axis " +
                           std::to_string(na - 1 - k) + " of " + InputText(ctx, 0, true) + ": " + ExpectedText(da);
    db = da;
    changed = true;
  }
  if (!changed) return b;
  // Named after the ONNX value, so that a run-time mismatch names it.
  std::string name = IdentifierText(ctx.node().input(1));
  KILN_ASSIGN_OR_RETURN(ir::RVar cast,
                        ctx.importer()->bb().EmitMatchCast(b, ir::MakeTensorSInfo(shape, tb->dtype), name + "_matched", messages));
  return ir::Expr(cast);
}

// Before opset 7 a binary operator broadcasts only with broadcast=1, and
// then B's dimensions match A's from `axis` on (by default A's last ones):
// B reshaped with trailing 1s to A's rank broadcasts as numpy does.
// broadcast=0 needs equal shapes.
Result<ir::Expr> LegacyBroadcastB(NodeCtx& ctx, ir::Expr b) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* bi, ctx.Info(1));
  KILN_ASSIGN_OR_RETURN(int64_t broadcast, ctx.AttrInt("broadcast", 0));
  if (broadcast == 0) {
    bool same = ai->ndim == bi->ndim;
    for (size_t i = 0; same && i < ai->shape.size(); ++i)
      same = relax::CompareDims(ai->shape[i], bi->shape[i]) != relax::DimRelation::kNotEqual;
    if (!same) return ctx.Invalid("broadcast=0 (before opset 7) needs operands of the same shape");
    return b;
  }
  if (bi->ndim > ai->ndim) return ctx.Invalid("broadcast=1: B has a higher rank than A");
  int64_t axis = ai->ndim - bi->ndim;
  if (ctx.HasAttr("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, ctx.AttrInt("axis", 0));
    if (axis < 0) axis += ai->ndim;
    if (axis < 0 || axis + bi->ndim > ai->ndim) {
      return ctx.Invalid("broadcast=1: B of rank " + std::to_string(bi->ndim) + " does not fit A of rank " +
                         std::to_string(ai->ndim) + " from axis " + std::to_string(axis));
    }
  }
  int64_t trailing = ai->ndim - axis - bi->ndim;
  if (trailing == 0) return b;
  std::vector<ir::PrimExpr> dims = bi->shape;
  dims.insert(dims.end(), static_cast<size_t>(trailing), ir::PrimExpr(int64_t{1}));
  return ctx.Op("reshape", {b, MakeShape(dims)});
}

Status ConvertBinary(NodeCtx& ctx) {
  const BinaryDef* def = FindBinary(ctx.op_type());
  if (ctx.op_type() == "Mod") {
    KILN_ASSIGN_OR_RETURN(int64_t fmod, ctx.AttrInt("fmod", 0));
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ctx.Info(0));
    if (fmod != 0 && !x->dtype.is_float()) return ctx.Unsupported("fmod=1 on integers");
    if (fmod == 0 && x->dtype.is_float()) return ctx.Invalid("fmod=0 on floats");
    if (fmod) {
      // fmod(a, b) = a - trunc(a / b) * b; trunc through sign * floor(|q|).
      KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(0));
      KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(1));
      KILN_ASSIGN_OR_RETURN(ir::Expr q, ctx.Op("divide", {a, b}));
      KILN_ASSIGN_OR_RETURN(ir::Expr aq, ctx.Op("abs", {q}));
      KILN_ASSIGN_OR_RETURN(ir::Expr fq, ctx.Op("floor", {aq}));
      KILN_ASSIGN_OR_RETURN(ir::Expr sq, ctx.Op("sign", {q}));
      KILN_ASSIGN_OR_RETURN(ir::Expr t, ctx.Op("multiply", {sq, fq}));
      KILN_ASSIGN_OR_RETURN(ir::Expr tb, ctx.Op("multiply", {t, b}));
      KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("subtract", {a, tb}));
      ctx.SetOutput(0, r);
      return Status::Ok();
    }
  }
  const KnownInts* ka = ctx.Known(0);
  const KnownInts* kb = ctx.Known(1);
  if (def->foldable && ka && kb && ka->dtype == kb->dtype && (ctx.opset() >= 7 || ka->shape == kb->shape)) {
    if (auto k = FoldBinary(def->fold, *ka, *kb, def->to_bool)) {
      ctx.SetOutputKnown(0, *k);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Input(1));
  if (ctx.opset() < 7) { KILN_ASSIGN_OR_RETURN(b, LegacyBroadcastB(ctx, b)); }
  if (ctx.op_type() == "Pow") {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ctx.Info(0));
    // Exponents 1, 2 and 0.5 (variance, RMS and distance patterns) need no powf.
    auto e = ctx.ConstScalar(1, "exponent");
    if (e.ok() && x->dtype.is_float()) {
      if (*e == 1.0) {
        ctx.SetOutput(0, a);
        return Status::Ok();
      }
      if (*e == 2.0) {
        KILN_ASSIGN_OR_RETURN(ir::Expr sq, ctx.Op("multiply", {a, a}));
        ctx.SetOutput(0, sq);
        return Status::Ok();
      }
      if (*e == 0.5) {
        KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("sqrt", {a}));
        ctx.SetOutput(0, r);
        return Status::Ok();
      }
    }
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* y, ctx.Info(1));
    if (x->dtype != y->dtype) {
      KILN_ASSIGN_OR_RETURN(b, ctx.Op("astype", {b}, {{"dtype", AttrS(DTypeName(x->dtype))}}));
    }
  }
  KILN_ASSIGN_OR_RETURN(b, MatchUnprovenDims(ctx, a, b));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op(def->relax, {a, b}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// ---------------------------------------------------------------- unary

struct UnaryDef {
  const char* onnx;
  const char* relax;
};

const UnaryDef kUnary[] = {
    {"Sqrt", "sqrt"},     {"Exp", "exp"},       {"Log", "log"},           {"Erf", "erf"},
    {"Tanh", "tanh"},     {"Sigmoid", "sigmoid"}, {"Relu", "nn.relu"},    {"Neg", "negative"},
    {"Abs", "abs"},       {"Floor", "floor"},   {"Ceil", "ceil"},         {"Not", "logical_not"},
    {"Round", "round"},   {"Sign", "sign"},     {"IsNaN", "isnan"},
};

Status ConvertUnary(NodeCtx& ctx) {
  const char* relax = nullptr;
  for (const auto& d : kUnary)
    if (ctx.op_type() == d.onnx) relax = d.relax;
  const KnownInts* k = ctx.Known(0);
  if (k && (ctx.op_type() == "Neg" || ctx.op_type() == "Abs" || ctx.op_type() == "Relu")) {
    KnownInts out = *k;
    for (auto& e : out.elems) {
      if (ctx.op_type() == "Neg") e = SimplifyDim(PrimExpr(int64_t{0}) - e);
      else if (ctx.op_type() == "Relu") e = SimplifyDim(ir::MakeBinary(TirKind::kMax, e, PrimExpr(int64_t{0})));
      else if (auto c = ConstDim(e)) e = PrimExpr(*c < 0 ? -*c : *c);
    }
    ctx.SetOutputKnown(0, out);
    return Status::Ok();
  }
  // Not of a decided comparison (torch's `input.dim() != 2` of a rank check)
  // folds, so that an If on it takes its branch at import time.
  if (k && ctx.op_type() == "Not" && k->dtype == DType::Bool()) {
    if (auto ints = k->Ints()) {
      KnownInts out = *k;
      for (size_t i = 0; i < ints->size(); ++i) out.elems[i] = PrimExpr(int64_t{(*ints)[i] == 0});
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op(relax, {x}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertReciprocal(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("divide", {ScalarConst(xi->dtype, 1.0), x}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertLeakyRelu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double alpha, ctx.AttrFloat("alpha", 0.01));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("nn.leakyrelu", {x}, {{"alpha", AttrF(alpha)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// PRelu(x, slope) = x for x >= 0, slope * x otherwise; slope broadcasts to x
// (unidirectionally from opset 7: numpy rules with x's shape as the result).
Status ConvertPRelu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* si, ctx.Info(1));
  if (si->ndim > xi->ndim) {
    return ctx.Invalid("slope of rank " + std::to_string(si->ndim) + " does not broadcast to an input of rank " +
                       std::to_string(xi->ndim));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr slope, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("multiply", {x, slope}));
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("greater_equal", {x, ScalarConst(xi->dtype, 0.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("where", {pos, x, neg}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Elu(x) = x for x > 0, alpha * (exp(x) - 1) otherwise.
Status ConvertElu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double alpha, ctx.AttrFloat("alpha", 1.0));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  DType t = xi->dtype;
  KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("exp", {x}));
  KILN_ASSIGN_OR_RETURN(ir::Expr em1, ctx.Op("subtract", {e, ScalarConst(t, 1.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("multiply", {em1, ScalarConst(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("greater", {x, ScalarConst(t, 0.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("where", {pos, x, neg}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Selu(x) = gamma * (x for x > 0, alpha * (exp(x) - 1) otherwise).
Status ConvertSelu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double alpha, ctx.AttrFloat("alpha", 1.67326319217681884765625));
  KILN_ASSIGN_OR_RETURN(double gamma, ctx.AttrFloat("gamma", 1.05070102214813232421875));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  DType t = xi->dtype;
  KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("exp", {x}));
  KILN_ASSIGN_OR_RETURN(ir::Expr em1, ctx.Op("subtract", {e, ScalarConst(t, 1.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("multiply", {em1, ScalarConst(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("greater", {x, ScalarConst(t, 0.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("where", {pos, x, neg}));
  KILN_ASSIGN_OR_RETURN(r, ctx.Op("multiply", {r, ScalarConst(t, gamma)}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Softplus(x) = log(1 + exp(x)), as max(x, 0) + log(1 + exp(-|x|)): no
// overflow for large x.
Status ConvertSoftplus(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  DType t = xi->dtype;
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Op("abs", {x}));
  KILN_ASSIGN_OR_RETURN(ir::Expr na, ctx.Op("negative", {a}));
  KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("exp", {na}));
  KILN_ASSIGN_OR_RETURN(ir::Expr e1, ctx.Op("add", {e, ScalarConst(t, 1.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr l, ctx.Op("log", {e1}));
  KILN_ASSIGN_OR_RETURN(ir::Expr m, ctx.Op("maximum", {x, ScalarConst(t, 0.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("add", {m, l}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Softsign(x) = x / (1 + |x|).
Status ConvertSoftsign(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Op("abs", {x}));
  KILN_ASSIGN_OR_RETURN(ir::Expr d, ctx.Op("add", {a, ScalarConst(xi->dtype, 1.0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("divide", {x, d}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertGelu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string approx, ctx.AttrString("approximate", "none"));
  if (approx != "none" && approx != "tanh") return ctx.Unsupported("approximate=\"" + approx + "\" (none or tanh)");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op(approx == "tanh" ? "nn.gelu_tanh" : "nn.gelu", {x}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertHardSigmoid(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(double alpha, ctx.AttrFloat("alpha", 0.2));
  KILN_ASSIGN_OR_RETURN(double beta, ctx.AttrFloat("beta", 0.5));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("hard_sigmoid", {x}, {{"alpha", AttrF(alpha)}, {"beta", AttrF(beta)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

Status ConvertHardSwish(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("hard_swish", {x}, {{"alpha", AttrF(1.0 / 6.0)}, {"beta", AttrF(0.5)}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Clip: min/max attributes before opset 11, optional inputs from 11.
Status ConvertClip(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  DType t = xi->dtype;
  std::optional<double> lo, hi;
  std::optional<ir::Expr> lo_t, hi_t;
  if (ctx.opset() < 11) {
    if (ctx.HasAttr("min")) {
      KILN_ASSIGN_OR_RETURN(double v, ctx.AttrFloat("min", 0));
      lo = v;
    }
    if (ctx.HasAttr("max")) {
      KILN_ASSIGN_OR_RETURN(double v, ctx.AttrFloat("max", 0));
      hi = v;
    }
  } else {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.HasInput(i)) continue;
      auto c = ctx.ConstScalar(i, i == 1 ? "min" : "max");
      if (c.ok()) {
        (i == 1 ? lo : hi) = *c;
      } else {
        KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
        (i == 1 ? lo_t : hi_t) = e;
      }
    }
  }
  ir::Expr r = x;
  if (lo && hi && *lo <= *hi) {
    ir::PrimExpr pl = t.is_float() ? ir::FloatImm(DType::Float32(), *lo) : PrimExpr(static_cast<int64_t>(*lo));
    ir::PrimExpr ph = t.is_float() ? ir::FloatImm(DType::Float32(), *hi) : PrimExpr(static_cast<int64_t>(*hi));
    KILN_ASSIGN_OR_RETURN(r, ctx.Op("clip", {x, PrimValue(pl), PrimValue(ph)}));
    ctx.SetOutput(0, r);
    return Status::Ok();
  }
  if (lo) lo_t = ScalarConst(t, *lo);
  if (hi) hi_t = ScalarConst(t, *hi);
  if (lo_t) { KILN_ASSIGN_OR_RETURN(r, ctx.Op("maximum", {r, *lo_t})); }
  if (hi_t) { KILN_ASSIGN_OR_RETURN(r, ctx.Op("minimum", {r, *hi_t})); }
  if (!lo_t && !hi_t) { KILN_ASSIGN_OR_RETURN(r, ctx.Op("add", {x, ScalarConst(t, 0)})); }
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Min, Max, Sum, Mean over any number of inputs, broadcast.
Status ConvertVariadic(NodeCtx& ctx) {
  const std::string& op = ctx.op_type();
  const char* relax = op == "Min" ? "minimum" : op == "Max" ? "maximum" : "add";
  if (ctx.NumInputs() == 0) return ctx.Invalid("needs at least one input");
  bool all_known = true;
  for (size_t i = 0; i < ctx.NumInputs(); ++i) all_known = all_known && ctx.Known(i);
  if (all_known && op != "Mean") {
    KnownInts acc = *ctx.Known(0);
    TirKind kind = op == "Min" ? TirKind::kMin : op == "Max" ? TirKind::kMax : TirKind::kAdd;
    bool ok = true;
    for (size_t i = 1; i < ctx.NumInputs() && ok; ++i) {
      auto k = FoldBinary(kind, acc, *ctx.Known(i), false);
      if (k) acc = *k; else ok = false;
    }
    if (ok) {
      ctx.SetOutputKnown(0, acc);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr acc, ctx.Input(0));
  for (size_t i = 1; i < ctx.NumInputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Input(i));
    KILN_ASSIGN_OR_RETURN(acc, ctx.Op(relax, {acc, e}));
  }
  if (op == "Mean") {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
    if (ctx.NumInputs() > 1 || true) {
      KILN_ASSIGN_OR_RETURN(acc, ctx.Op("divide", {acc, ScalarConst(xi->dtype, static_cast<double>(ctx.NumInputs()))}));
    }
  } else if (ctx.NumInputs() == 1) {
    // One input: the identity.
  }
  ctx.SetOutput(0, acc);
  return Status::Ok();
}

Status ConvertWhere(NodeCtx& ctx) {
  const KnownInts* c = ctx.Known(0);
  const KnownInts* a = ctx.Known(1);
  const KnownInts* b = ctx.Known(2);
  if (c && a && b && a->dtype == b->dtype) {
    auto s1 = BroadcastShapes(c->shape, a->shape);
    auto shape = s1 ? BroadcastShapes(*s1, b->shape) : std::nullopt;
    auto conds = c->Ints();
    if (shape && conds && NumElems(*shape) <= kMaxFold) {
      KnownInts out;
      out.shape = *shape;
      out.dtype = a->dtype;
      for (int64_t i = 0; i < NumElems(*shape); ++i) {
        bool take_a = (*conds)[SourceIndex(i, *shape, c->shape)] != 0;
        out.elems.push_back(take_a ? a->elems[SourceIndex(i, *shape, a->shape)] : b->elems[SourceIndex(i, *shape, b->shape)]);
      }
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr cond, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(1));
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Input(2));
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("where", {cond, x, y}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

// Cast's `to` names the type as a string before opset 6 ("FLOAT").
Result<int64_t> LegacyCastTo(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string name, ctx.AttrString("to", ""));
  ::onnx::TensorProto_DataType t;
  if (!::onnx::TensorProto_DataType_Parse(name, &t)) return ctx.Invalid("to=\"" + name + "\" names no element type");
  return static_cast<int64_t>(t);
}

Status ConvertCast(NodeCtx& ctx) {
  int64_t to = -1;
  if (ctx.opset() < 6) {
    KILN_ASSIGN_OR_RETURN(to, LegacyCastTo(ctx));
  } else {
    KILN_ASSIGN_OR_RETURN(to, ctx.AttrInt("to", -1));
  }
  auto dt = DTypeFromOnnx(static_cast<int>(to));
  if (!dt.ok()) return dt.status();
  const KnownInts* k = ctx.Known(0);
  if (k && dt->is_int() && *dt != DType::Bool()) {
    KnownInts out = *k;
    out.dtype = *dt;
    ctx.SetOutputKnown(0, out);
    return Status::Ok();
  }
  // To bool, constant contents fold (x != 0): conditions of Ifs stay known.
  if (k && *dt == DType::Bool()) {
    if (auto ints = k->Ints()) {
      KnownInts out = *k;
      out.dtype = DType::Bool();
      for (size_t i = 0; i < ints->size(); ++i) out.elems[i] = PrimExpr(int64_t{(*ints)[i] != 0});
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  // To float32, constant contents fold to a constant: a shape value cast to
  // float (YOLO exports' anchor grids: Range(0, Cast(H), 1)) stays a constant
  // when --dim pins H, so the Range after it has a static length (NudeNet
  // pinned at 320: "cannot prove that dimensions ..._len ... and 2100 are
  // equal or 1").
  if (k && *dt == DType::Float32() && k->elems.size() <= 4096) {
    if (auto ints = k->Ints()) {
      KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(k->shape, DType::Float32()));
      for (size_t i = 0; i < ints->size(); ++i) t.data<float>()[i] = static_cast<float>((*ints)[i]);
      ctx.SetOutputValue(0, ConstantValue(t));
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (xi->dtype == *dt) {
    ctx.SetOutput(0, x);
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("astype", {x}, {{"dtype", AttrS(DTypeName(*dt))}}));
  ctx.SetOutput(0, r);
  return Status::Ok();
}

}  // namespace

void AddElementwiseConverters(ConverterTable* t) {
  for (const auto& d : kBinary) (*t)[d.onnx] = ConvertBinary;
  for (const auto& d : kUnary) (*t)[d.onnx] = ConvertUnary;
  (*t)["Reciprocal"] = ConvertReciprocal;
  (*t)["LeakyRelu"] = ConvertLeakyRelu;
  (*t)["Elu"] = ConvertElu;
  (*t)["PRelu"] = ConvertPRelu;
  (*t)["Selu"] = ConvertSelu;
  (*t)["Softplus"] = ConvertSoftplus;
  (*t)["Softsign"] = ConvertSoftsign;
  (*t)["Gelu"] = ConvertGelu;
  (*t)["HardSigmoid"] = ConvertHardSigmoid;
  (*t)["HardSwish"] = ConvertHardSwish;
  (*t)["Clip"] = ConvertClip;
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) (*t)[op] = ConvertVariadic;
  (*t)["Where"] = ConvertWhere;
  (*t)["Cast"] = ConvertCast;
}

}  // namespace onnx
}  // namespace kiln
