// Binary elementwise operators with numpy broadcasting: arithmetic (add,
// subtract, multiply, divide, floor_divide, floor_mod, power, maximum,
// minimum), comparisons (equal ... greater_equal, result bool), logical
// and/or (result bool), and the three-way where(cond, a, b).
//
// Operands must have the same dtype (as TVM: no implicit promotion); the
// result shape is the numpy broadcast of the operand shapes, symbolic
// dimensions included. The unary family lives in op_unary.cc.
//
// Integer division: divide truncates toward zero (TVM's, C's and ONNX's Div on
// integers); floor_divide and floor_mod round toward negative infinity as
// numpy's // and %. An integer division by zero gives 0 (as numpy, which warns)
// instead of trapping the process that runs the kernel.
#include "compiler/relax/op_defs.h"

#include <algorithm>

#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

enum class Domain { kNumeric, kAny };  // numeric: not bool
enum class Out { kSame, kBool };
using BodyFn = PrimExpr (*)(const PrimExpr& a, const PrimExpr& b);

struct BinaryDef {
  const char* name;
  const char* short_name;
  Domain domain;
  Out out;
  BodyFn body;
};

PrimExpr C(const PrimExpr& like, double v) { return Const(like.dtype(), v); }

// An integer division guarded against a zero divisor (lazy if_then_else: the
// division is not evaluated when b == 0).
PrimExpr GuardedIntDiv(TirKind kind, const PrimExpr& a, const PrimExpr& b) {
  return Intrin(a.dtype(), "if_then_else", {Bin(TirKind::kEQ, b, C(b, 0)), C(a, 0), Bin(kind, a, b)});
}

PrimExpr AddB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kAdd, a, b); }
PrimExpr SubB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kSub, a, b); }
PrimExpr MulB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kMul, a, b); }
PrimExpr DivB(const PrimExpr& a, const PrimExpr& b) {
  return a.dtype().is_float() ? Bin(TirKind::kDiv, a, b) : GuardedIntDiv(TirKind::kDiv, a, b);
}
PrimExpr FloorDivB(const PrimExpr& a, const PrimExpr& b) {
  return a.dtype().is_float() ? Intrin(a.dtype(), "floor", {Bin(TirKind::kDiv, a, b)})
                              : GuardedIntDiv(TirKind::kFloorDiv, a, b);
}
PrimExpr FloorModB(const PrimExpr& a, const PrimExpr& b) {
  if (!a.dtype().is_float()) return GuardedIntDiv(TirKind::kFloorMod, a, b);
  // a - floor(a / b) * b, numpy's sign convention (result has b's sign).
  return Bin(TirKind::kSub, a, Bin(TirKind::kMul, Intrin(a.dtype(), "floor", {Bin(TirKind::kDiv, a, b)}), b));
}
PrimExpr PowB(const PrimExpr& a, const PrimExpr& b) {
  if (a.dtype().is_float()) return Intrin(a.dtype(), "pow", {a, b});
  // Integers: exact through float64 for results below 2^53; rounded so that
  // a libm pow that is off by an ulp still gives the integer.
  DType f64 = DType::Float64();
  PrimExpr p = Intrin(f64, "pow", {ir::Cast(f64, a), ir::Cast(f64, b)});
  return ir::Cast(a.dtype(), Intrin(f64, "round", {p}));
}
PrimExpr MaxB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kMax, a, b); }
PrimExpr MinB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kMin, a, b); }
PrimExpr EqB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kEQ, a, b); }
PrimExpr NeB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kNE, a, b); }
PrimExpr LtB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kLT, a, b); }
PrimExpr LeB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kLE, a, b); }
PrimExpr GtB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kGT, a, b); }
PrimExpr GeB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kGE, a, b); }
PrimExpr AndB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kAnd, ToBool(a), ToBool(b)); }
PrimExpr OrB(const PrimExpr& a, const PrimExpr& b) { return Bin(TirKind::kOr, ToBool(a), ToBool(b)); }

const BinaryDef kBinary[] = {
    {"relax.add", "add", Domain::kNumeric, Out::kSame, AddB},
    {"relax.subtract", "subtract", Domain::kNumeric, Out::kSame, SubB},
    {"relax.multiply", "multiply", Domain::kNumeric, Out::kSame, MulB},
    {"relax.divide", "divide", Domain::kNumeric, Out::kSame, DivB},
    {"relax.floor_divide", "floor_divide", Domain::kNumeric, Out::kSame, FloorDivB},
    {"relax.floor_mod", "floor_mod", Domain::kNumeric, Out::kSame, FloorModB},
    {"relax.power", "power", Domain::kNumeric, Out::kSame, PowB},
    {"relax.maximum", "maximum", Domain::kNumeric, Out::kSame, MaxB},
    {"relax.minimum", "minimum", Domain::kNumeric, Out::kSame, MinB},
    {"relax.equal", "equal", Domain::kAny, Out::kBool, EqB},
    {"relax.not_equal", "not_equal", Domain::kAny, Out::kBool, NeB},
    {"relax.less", "less", Domain::kAny, Out::kBool, LtB},
    {"relax.less_equal", "less_equal", Domain::kAny, Out::kBool, LeB},
    {"relax.greater", "greater", Domain::kAny, Out::kBool, GtB},
    {"relax.greater_equal", "greater_equal", Domain::kAny, Out::kBool, GeB},
    {"relax.logical_and", "logical_and", Domain::kAny, Out::kBool, AndB},
    {"relax.logical_or", "logical_or", Domain::kAny, Out::kBool, OrB},
};

const BinaryDef* FindDef(const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (!op) return nullptr;
  for (const BinaryDef& d : kBinary)
    if (op->name == d.name) return &d;
  return nullptr;
}

// The result of broadcasting tensors `ts` (rank-only when a shape is unknown).
Result<ir::StructInfo> BroadcastResult(const ir::CallExpr& call, const std::vector<const ir::TensorSInfo*>& ts,
                                       DType dtype, bool known_dtype) {
  int ndim = 0;
  bool all_shapes = true;
  for (const auto* t : ts) {
    all_shapes &= t->has_shape;
    ndim = (ndim < 0 || t->ndim < 0) ? -1 : std::max(ndim, t->ndim);
  }
  if (!all_shapes) return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, ndim, dtype, known_dtype));
  std::vector<PrimExpr> shape = ts[0]->shape;
  for (size_t i = 1; i < ts.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(shape, BroadcastShapes(call, shape, ts[i]->shape));
  }
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(true, shape, -1, dtype, known_dtype));
}

// Checks the two value operands: same dtype, allowed by the domain. Returns
// the common dtype (has_dtype false when neither knows it).
Result<std::pair<DType, bool>> CommonDType(const ir::CallExpr& call, const ir::TensorSInfo& a, const ir::TensorSInfo& b,
                                           Domain domain) {
  if (a.has_dtype && b.has_dtype && a.dtype != b.dtype) {
    return Error(call, "operand dtypes differ: " + Str(a.dtype) + " and " + Str(b.dtype));
  }
  bool known = a.has_dtype || b.has_dtype;
  DType t = a.has_dtype ? a.dtype : b.dtype;
  if (known && t.lanes != 1) return Error(call, "vector dtype " + Str(t) + " is not supported");
  if (known && domain == Domain::kNumeric && IsBool(t)) return Error(call, "does not accept bool tensors");
  return std::make_pair(t, known);
}

Result<ir::StructInfo> InferBinary(const ir::CallExpr& call) {
  const BinaryDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[1]);
  if (!a || !b) return InvalidArgument(Where(call.span) + OpLabel(call) + " expects two tensors");
  KILN_ASSIGN_OR_RETURN(auto dt, CommonDType(call, *a, *b, def->domain));
  if (def->out == Out::kBool) return BroadcastResult(call, {a, b}, DType::Bool(), true);
  return BroadcastResult(call, {a, b}, dt.first, dt.second);
}

Result<ir::PrimFunc> LegalizeBinary(const ir::CallExpr& call, const std::string& name) {
  const BinaryDef* def = FindDef(call);
  KILN_CHECK(def != nullptr, "operator missing from its family table");
  const ir::TensorSInfo* a = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[1]);
  if (!a || !b || !a->has_shape || !b->has_shape) {
    return Unimplemented(Prefix(call) + "legalization needs known shapes");
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  te::FuncBuilder fb(name);
  te::Tensor ta = fb.Input("A", a->shape, a->dtype);
  te::Tensor tb = fb.Input("B", b->shape, b->dtype);
  te::Tensor r = fb.Compute(std::string("T_") + def->short_name, out->shape, out->dtype, [&](const te::Indices& i) {
    return def->body(ta(BroadcastIndex(ta.shape(), i)), tb(BroadcastIndex(tb.shape(), i)));
  });
  return fb.Build({r});
}

// where(cond, a, b): cond is bool (other dtypes are compared with zero), a and
// b share the result dtype; all three broadcast together.
Result<ir::StructInfo> InferWhere(const ir::CallExpr& call) {
  const ir::TensorSInfo* c = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* a = TensorInfoOf(call.args[1]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[2]);
  if (!c || !a || !b) return InvalidArgument(Where(call.span) + "R.where expects three tensors");
  KILN_ASSIGN_OR_RETURN(auto dt, CommonDType(call, *a, *b, Domain::kAny));
  return BroadcastResult(call, {c, a, b}, dt.first, dt.second);
}

Result<ir::PrimFunc> LegalizeWhere(const ir::CallExpr& call, const std::string& name) {
  const ir::TensorSInfo* c = TensorInfoOf(call.args[0]);
  const ir::TensorSInfo* a = TensorInfoOf(call.args[1]);
  const ir::TensorSInfo* b = TensorInfoOf(call.args[2]);
  if (!c || !a || !b || !c->has_shape || !a->has_shape || !b->has_shape) {
    return Unimplemented(Prefix(call) + "legalization needs known shapes");
  }
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  te::FuncBuilder fb(name);
  te::Tensor tc = fb.Input("C", c->shape, c->dtype);
  te::Tensor ta = fb.Input("A", a->shape, a->dtype);
  te::Tensor tb = fb.Input("B", b->shape, b->dtype);
  te::Tensor r = fb.Compute("T_where", out->shape, out->dtype, [&](const te::Indices& i) {
    return Select(ToBool(tc(BroadcastIndex(tc.shape(), i))), ta(BroadcastIndex(ta.shape(), i)),
                  tb(BroadcastIndex(tb.shape(), i)));
  });
  return fb.Build({r});
}

}  // namespace

void AddElementwiseOps(std::vector<OpInfo>* t) {
  for (const BinaryDef& d : kBinary) t->push_back({d.name, d.short_name, 2, InferBinary, LegalizeBinary, OpPattern::kBroadcast});
  t->push_back({"relax.where", "where", 3, InferWhere, LegalizeWhere, OpPattern::kBroadcast});
}

}  // namespace relax
}  // namespace kiln
