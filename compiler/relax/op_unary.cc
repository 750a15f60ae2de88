// Unary elementwise operators: math (exp, log, sqrt, rsqrt, tanh, sigmoid,
// erf), activations (nn.relu, nn.gelu exact and tanh form, nn.silu,
// nn.leakyrelu, hard_sigmoid, hard_swish, clip), sign and rounding (negative,
// abs, floor, ceil, round, sign, square), predicates (logical_not, isnan,
// isinf, isfinite) and astype.
//
// Every operator keeps the shape of its operand (symbolic dimensions
// included); the result dtype is the operand's, bool for predicates, or
// astype's `dtype`. Math and activations require a float operand (as TVM);
// rounding of an integer tensor is the identity. One table below drives
// inference and legalization; each kernel is one elementwise stage.
#include <cmath>
#include <cstring>

#include "compiler/relax/op_defs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

enum class Domain { kFloat, kNumeric, kAny };  // operand dtypes accepted (numeric: not bool)
enum class Out { kSame, kBool, kDType };       // result dtype

// Attributes read once per call (before the kernel body is built).
struct Params {
  double a = 0, b = 0;
  DType out;  // the result dtype
};
using ReadFn = Result<Params> (*)(const ir::CallExpr& call, DType in);
using BodyFn = PrimExpr (*)(const PrimExpr& x, const Params& p);

struct UnaryDef {
  const char* name;
  const char* short_name;
  Domain domain;
  Out out;
  ReadFn read;  // nullptr: no attributes
  BodyFn body;
};

PrimExpr C(const PrimExpr& like, double v) { return Const(like.dtype(), v); }
PrimExpr Add(PrimExpr a, PrimExpr b) { return Bin(TirKind::kAdd, a, b); }
PrimExpr Mul(PrimExpr a, PrimExpr b) { return Bin(TirKind::kMul, a, b); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return Bin(TirKind::kMax, a, b); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return Bin(TirKind::kMin, a, b); }
PrimExpr Math(const char* op, const PrimExpr& x) { return Intrin(x.dtype(), op, {x}); }

PrimExpr Exp(const PrimExpr& x, const Params&) { return Math("exp", x); }
PrimExpr Log(const PrimExpr& x, const Params&) { return Math("log", x); }
PrimExpr Sqrt(const PrimExpr& x, const Params&) { return Math("sqrt", x); }
PrimExpr Rsqrt(const PrimExpr& x, const Params&) { return Math("rsqrt", x); }
PrimExpr Tanh(const PrimExpr& x, const Params&) { return Math("tanh", x); }
PrimExpr Sigmoid(const PrimExpr& x, const Params&) { return Math("sigmoid", x); }
PrimExpr Erf(const PrimExpr& x, const Params&) { return Math("erf", x); }
// 0.5 x (1 + erf(x / sqrt 2))
PrimExpr Gelu(const PrimExpr& x, const Params&) {
  return Mul(Mul(C(x, 0.5), x), Add(C(x, 1.0), Math("erf", Mul(x, C(x, M_SQRT1_2)))));
}
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
PrimExpr GeluTanh(const PrimExpr& x, const Params&) {
  PrimExpr inner = Mul(C(x, std::sqrt(2.0 / M_PI)), Add(x, Mul(C(x, 0.044715), Mul(Mul(x, x), x))));
  return Mul(Mul(C(x, 0.5), x), Add(C(x, 1.0), Math("tanh", inner)));
}
PrimExpr Silu(const PrimExpr& x, const Params&) { return Mul(x, Math("sigmoid", x)); }
PrimExpr Relu(const PrimExpr& x, const Params&) { return Max(x, C(x, 0)); }
PrimExpr LeakyRelu(const PrimExpr& x, const Params& p) {
  return Select(Bin(TirKind::kGE, x, C(x, 0)), x, Mul(x, C(x, p.a)));
}
PrimExpr Clip(const PrimExpr& x, const Params& p) { return Min(Max(x, C(x, p.a)), C(x, p.b)); }
// clip(alpha x + beta, 0, 1); PyTorch's defaults alpha = 1/6, beta = 1/2.
PrimExpr HardSigmoid(const PrimExpr& x, const Params& p) {
  return Min(Max(Add(Mul(x, C(x, p.a)), C(x, p.b)), C(x, 0)), C(x, 1));
}
PrimExpr HardSwish(const PrimExpr& x, const Params& p) { return Mul(x, HardSigmoid(x, p)); }
PrimExpr Negative(const PrimExpr& x, const Params&) {
  // -0.0 - x flips the sign of zeros too (numpy's negative(0.0) is -0.0).
  return Bin(TirKind::kSub, x.dtype().is_float() ? C(x, -0.0) : C(x, 0), x);
}
PrimExpr Abs(const PrimExpr& x, const Params&) {
  if (x.dtype().is_float()) return Math("fabs", x);
  if (!IsSignedInt(x.dtype())) return x;
  return Select(Bin(TirKind::kLT, x, C(x, 0)), Bin(TirKind::kSub, C(x, 0), x), x);
}
PrimExpr Rounding(const char* op, const PrimExpr& x) { return x.dtype().is_float() ? Math(op, x) : x; }
PrimExpr Floor(const PrimExpr& x, const Params&) { return Rounding("floor", x); }
PrimExpr Ceil(const PrimExpr& x, const Params&) { return Rounding("ceil", x); }
PrimExpr Round(const PrimExpr& x, const Params&) { return Rounding("round", x); }  // half to even, as numpy
PrimExpr Sign(const PrimExpr& x, const Params&) {
  // NaN stays NaN (numpy): both comparisons are false and x is returned.
  PrimExpr zero_or_x = x.dtype().is_float() ? x : C(x, 0);
  return Select(Bin(TirKind::kGT, x, C(x, 0)), C(x, 1),
                Select(Bin(TirKind::kLT, x, C(x, 0)), C(x, -1), zero_or_x));
}
PrimExpr Square(const PrimExpr& x, const Params&) { return Mul(x, x); }
PrimExpr LogicalNot(const PrimExpr& x, const Params&) {
  return PrimExpr(std::make_shared<ir::NotNode>(ToBool(x)));
}
// x != x holds exactly for NaN: one compare, no library call.
PrimExpr IsNan(const PrimExpr& x, const Params&) {
  return x.dtype().is_float() ? Bin(TirKind::kNE, x, x) : Const(DType::Bool(), 0);
}
PrimExpr IsInf(const PrimExpr& x, const Params&) {
  return x.dtype().is_float() ? Bin(TirKind::kEQ, Math("fabs", x), C(x, HUGE_VAL)) : Const(DType::Bool(), 0);
}
PrimExpr IsFinite(const PrimExpr& x, const Params&) {
  // Ordered compare: false for NaN and for +-inf.
  return x.dtype().is_float() ? Bin(TirKind::kLT, Math("fabs", x), C(x, HUGE_VAL)) : Const(DType::Bool(), 1);
}
PrimExpr AsType(const PrimExpr& x, const Params& p) {
  if (IsBool(p.out)) return ToBool(x);
  if (IsBool(x.dtype())) return Select(x, Const(p.out, 1), Const(p.out, 0));
  return CastTo(p.out, x);
}

Result<Params> ReadLeakyRelu(const ir::CallExpr& call, DType in) {
  Params p;
  p.out = in;
  KILN_ASSIGN_OR_RETURN(p.a, FloatAttr(call, "alpha", 0.01));
  return p;
}

Result<Params> ReadClip(const ir::CallExpr& call, DType in) {
  Params p;
  p.out = in;
  if (call.args.size() > 3) return Error(call, "takes x, min and max, got " + std::to_string(call.args.size()) + " arguments");
  KILN_ASSIGN_OR_RETURN(Scalar lo, ScalarArg(call, 1, "min", std::nullopt));
  KILN_ASSIGN_OR_RETURN(Scalar hi, ScalarArg(call, 2, "max", std::nullopt));
  if (lo.value > hi.value) {
    return Error(call, "min " + std::to_string(lo.value) + " is greater than max " + std::to_string(hi.value));
  }
  p.a = lo.value;
  p.b = hi.value;
  return p;
}

Result<Params> ReadHardSigmoid(const ir::CallExpr& call, DType in) {
  Params p;
  p.out = in;
  KILN_ASSIGN_OR_RETURN(p.a, FloatAttr(call, "alpha", 1.0 / 6.0));
  KILN_ASSIGN_OR_RETURN(p.b, FloatAttr(call, "beta", 0.5));
  return p;
}

Result<Params> ReadAsType(const ir::CallExpr& call, DType) {
  Params p;
  KILN_ASSIGN_OR_RETURN(std::optional<DType> t, DTypeAttr(call, "dtype"));
  // R.astype(x, "float16") as written by hand (TVM prints dtype=...).
  if (call.args.size() > 2) return Error(call, "takes x and dtype, got " + std::to_string(call.args.size()) + " arguments");
  if (call.args.size() == 2) {
    if (const auto* d = ir::ExprAs<ir::DataTypeImmExpr>(call.args[1])) {
      t = d->value;
    } else if (const auto* s = ir::ExprAs<ir::StringImmExpr>(call.args[1])) {
      Result<DType> parsed = ParseDType(s->value);
      if (!parsed.ok()) return Error(call, "\"" + s->value + "\" is not a dtype");
      t = *parsed;
    } else {
      return Error(call, "the dtype must be a string, as in R.astype(x, dtype=\"float16\")");
    }
  }
  if (!t) return Error(call, "needs dtype=\"...\"");
  if (t->lanes != 1 || !(t->is_float() || t->is_int())) return Error(call, "cannot convert to " + Str(*t));
  p.out = *t;
  return p;
}

const UnaryDef kUnary[] = {
    {"relax.exp", "exp", Domain::kFloat, Out::kSame, nullptr, Exp},
    {"relax.log", "log", Domain::kFloat, Out::kSame, nullptr, Log},
    {"relax.sqrt", "sqrt", Domain::kFloat, Out::kSame, nullptr, Sqrt},
    {"relax.rsqrt", "rsqrt", Domain::kFloat, Out::kSame, nullptr, Rsqrt},
    {"relax.tanh", "tanh", Domain::kFloat, Out::kSame, nullptr, Tanh},
    {"relax.sigmoid", "sigmoid", Domain::kFloat, Out::kSame, nullptr, Sigmoid},
    {"relax.erf", "erf", Domain::kFloat, Out::kSame, nullptr, Erf},
    {"relax.nn.gelu", "gelu", Domain::kFloat, Out::kSame, nullptr, Gelu},
    {"relax.nn.gelu_tanh", "gelu_tanh", Domain::kFloat, Out::kSame, nullptr, GeluTanh},
    {"relax.nn.silu", "silu", Domain::kFloat, Out::kSame, nullptr, Silu},
    {"relax.nn.relu", "relu", Domain::kNumeric, Out::kSame, nullptr, Relu},
    {"relax.nn.leakyrelu", "leakyrelu", Domain::kFloat, Out::kSame, ReadLeakyRelu, LeakyRelu},
    {"relax.nn.leaky_relu", "leaky_relu", Domain::kFloat, Out::kSame, ReadLeakyRelu, LeakyRelu},
    {"relax.clip", "clip", Domain::kNumeric, Out::kSame, ReadClip, Clip},
    {"relax.hard_sigmoid", "hard_sigmoid", Domain::kFloat, Out::kSame, ReadHardSigmoid, HardSigmoid},
    {"relax.nn.hard_sigmoid", "hard_sigmoid", Domain::kFloat, Out::kSame, ReadHardSigmoid, HardSigmoid},
    {"relax.hard_swish", "hard_swish", Domain::kFloat, Out::kSame, ReadHardSigmoid, HardSwish},
    {"relax.nn.hard_swish", "hard_swish", Domain::kFloat, Out::kSame, ReadHardSigmoid, HardSwish},
    {"relax.nn.hardswish", "hardswish", Domain::kFloat, Out::kSame, ReadHardSigmoid, HardSwish},
    {"relax.negative", "negative", Domain::kNumeric, Out::kSame, nullptr, Negative},
    {"relax.abs", "abs", Domain::kNumeric, Out::kSame, nullptr, Abs},
    {"relax.floor", "floor", Domain::kNumeric, Out::kSame, nullptr, Floor},
    {"relax.ceil", "ceil", Domain::kNumeric, Out::kSame, nullptr, Ceil},
    {"relax.round", "round", Domain::kNumeric, Out::kSame, nullptr, Round},
    {"relax.sign", "sign", Domain::kNumeric, Out::kSame, nullptr, Sign},
    {"relax.square", "square", Domain::kNumeric, Out::kSame, nullptr, Square},
    {"relax.logical_not", "logical_not", Domain::kAny, Out::kBool, nullptr, LogicalNot},
    {"relax.isnan", "isnan", Domain::kNumeric, Out::kBool, nullptr, IsNan},
    {"relax.isinf", "isinf", Domain::kNumeric, Out::kBool, nullptr, IsInf},
    {"relax.isfinite", "isfinite", Domain::kNumeric, Out::kBool, nullptr, IsFinite},
    {"relax.astype", "astype", Domain::kAny, Out::kDType, ReadAsType, AsType},
};

const UnaryDef* FindDef(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (!op) return nullptr;
  for (const UnaryDef& d : kUnary)
    if (op->name == d.name) return &d;
  return nullptr;
}

// Checks the operand and reads the attributes; `in` may be unknown
// (has_dtype false), in which case only attributes are checked.
Result<Params> Prepare(const ir::CallExpr& call, const UnaryDef& def, const ir::TensorSInfo& x) {
  DType in = x.dtype;
  if (x.has_dtype) {
    if (in.lanes != 1) return Error(call, "vector dtype " + Str(in) + " is not supported");
    if (def.domain == Domain::kFloat && !in.is_float()) return Error(call, "requires a float tensor, got " + Str(in));
    if (def.domain == Domain::kNumeric && IsBool(in)) return Error(call, "does not accept a bool tensor");
  }
  Params p;
  p.out = in;
  if (def.read) {
    KILN_ASSIGN_OR_RETURN(p, def.read(call, in));
  }
  if (def.out == Out::kBool) p.out = DType::Bool();
  return p;
}

Result<ir::StructInfo> InferUnary(const ir::CallExpr& call) {
  const UnaryDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  const ir::TensorSInfo* x = call.args.empty() ? nullptr : TensorInfoOf(call.args[0]);
  if (!x) return InvalidArgument(Where(call.span) + OpLabel(call) + " expects a tensor");
  KILN_ASSIGN_OR_RETURN(Params p, Prepare(call, *def, *x));
  bool known_dtype = x->has_dtype || def->out != Out::kSame;
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(x->has_shape, x->shape, x->ndim, p.out, known_dtype));
}

Result<ir::PrimFunc> LegalizeUnary(const ir::CallExpr& call, const std::string& name) {
  const UnaryDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(Params p, Prepare(call, *def, *x));
  te::FuncBuilder b(name);
  te::Tensor in = b.Input("A", x->shape, x->dtype);
  te::Tensor out = b.Compute(std::string("T_") + def->short_name, in.shape(), p.out,
                             [&](const te::Indices& i) { return def->body(in(i), p); });
  return b.Build({out});
}

}  // namespace

void AddUnaryOps(std::vector<OpInfo>* t) {
  for (const UnaryDef& d : kUnary) {
    // clip takes its bounds as arguments (TVM) or attributes (older printers);
    // astype its dtype as an attribute or, written by hand, an argument.
    bool variadic = std::strcmp(d.name, "relax.clip") == 0 || std::strcmp(d.name, "relax.astype") == 0;
    int num_args = variadic ? -1 : 1;
    t->push_back({d.name, d.short_name, num_args, InferUnary, LegalizeUnary, OpPattern::kElemWise});
  }
}

}  // namespace relax
}  // namespace kiln
