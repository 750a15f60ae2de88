// Creation operators: zeros, ones, full (a shape and, for full, a fill value
// tensor), zeros_like, ones_like, full_like, arange(start, end, step), tril /
// triu(x, k), one_hot(indices, on_value, off_value, depth, axis).
//
// As TVM: R.zeros(R.shape([2, n]), dtype="float32"); R.full(shape, R.const(v,
// "float32"), dtype=None); R.arange(R.prim_value(0), R.prim_value(10),
// R.prim_value(1), dtype="int64") (one argument: end; two: start, end);
// R.tril(x, R.prim_value(k)) or R.tril(x, k=k); R.one_hot(indices,
// R.prim_value(on), R.prim_value(off), depth=d, axis=-1).
//
// Shapes may be symbolic: zeros/ones/full take the dimensions of the shape
// argument; arange's end may be a symbolic integer (its length is then
// ceil((end - start) / step) for constant start and step). Each kernel is one
// elementwise stage; the *_like kernels receive `x` for its shape only.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/arith/simplify.h"
#include "compiler/relax/op_defs.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using namespace elem;  // NOLINT

bool OpIs(const ir::CallExpr& call, const char* name) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  return op && op->name == name;
}

ir::StructInfo TensorOf(const std::vector<PrimExpr>& shape, DType dtype) { return ir::MakeTensorSInfo(shape, dtype); }

// ------------------------------------------------------------ zeros, ones, full

// What each of the six fill operators reads from its call.
struct Fill {
  bool like = false;   // *_like: shape from x (argument 0)
  bool has_value = false;  // full/full_like: the fill tensor follows
  double constant = 0;     // zeros/ones
};

Fill FillOf(const ir::CallExpr& call) {
  Fill f;
  f.like = OpIs(call, "relax.zeros_like") || OpIs(call, "relax.ones_like") || OpIs(call, "relax.full_like");
  f.has_value = OpIs(call, "relax.full") || OpIs(call, "relax.full_like");
  f.constant = OpIs(call, "relax.ones") || OpIs(call, "relax.ones_like") ? 1 : 0;
  return f;
}

Result<ir::StructInfo> InferFill(const ir::CallExpr& call) {
  Fill f = FillOf(call);
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeAttr(call, "dtype"));
  const ir::TensorSInfo* value = nullptr;
  if (f.has_value) {
    KILN_ASSIGN_OR_RETURN(value, TensorArg(call, 1, "the fill value"));
    if (value->ndim > 0) return Error(call, "the fill value must be a scalar tensor, got " + SInfoString(call.args[1]->struct_info));
    if (!dtype && value->has_dtype) dtype = value->dtype;
  }
  if (f.like) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "the operand"));
    bool known = dtype.has_value() || x->has_dtype;
    DType t = dtype ? *dtype : x->dtype;
    return ir::StructInfo(std::make_shared<ir::TensorSInfo>(x->has_shape, x->shape, x->ndim, t, known));
  }
  // zeros/ones default to float32 as TVM's Python API.
  DType t = dtype ? *dtype : DType::Float32();
  const auto* s = ir::SInfoAs<ir::ShapeSInfo>(call.args[0]->struct_info);
  if (!s) return Error(call, "the shape must be an R.shape([...]), got " + SInfoString(call.args[0]->struct_info));
  if (!s->has_values) return ir::MakeTensorSInfoNdim(s->ndim, t);
  for (const auto& d : s->values) {
    auto c = ConstDim(d);
    if (c && *c < 0) return Error(call, "negative dimension " + std::to_string(*c) + " in shape " + ShapeString(s->values));
  }
  return TensorOf(s->values, t);
}

Result<ir::PrimFunc> LegalizeFill(const ir::CallExpr& call, const std::string& name) {
  Fill f = FillOf(call);
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  te::FuncBuilder b(name);
  if (f.like) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
    b.Input("A", x->shape, x->dtype);  // read for nothing but its shape
  }
  te::Tensor value;
  if (f.has_value) {
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* v, ShapedTensorArg(call, 1, "the fill value"));
    value = b.Input("fill_value", v->shape, v->dtype);
  }
  DType dt = out->dtype;
  te::Tensor r = b.Compute("T_full", out->shape, dt, [&](const te::Indices&) {
    if (!value.defined()) return Const(dt, f.constant);
    PrimExpr v = value({});
    if (IsBool(dt)) return ToBool(v);
    return CastTo(dt, v);
  });
  return b.Build({r});
}

// ------------------------------------------------------------ arange

struct Range {
  PrimExpr start, end, step;  // int64 or float constants; end may be symbolic
  bool is_float = false;
};

Result<PrimExpr> RangeArg(const ir::CallExpr& call, size_t i, const char* what) {
  const auto* pv = ir::ExprAs<ir::PrimValueExpr>(call.args[i]);
  if (!pv) return Error(call, std::string(what) + " must be an R.prim_value, got " + SInfoString(call.args[i]->struct_info));
  return arith::Simplify(pv->value);
}

Result<Range> ReadRange(const ir::CallExpr& call) {
  size_t n = call.args.size();
  if (n < 1 || n > 3) return Error(call, "takes (end), (start, end) or (start, end, step), got " + std::to_string(n) + " arguments");
  Range r;
  r.start = PrimExpr(int64_t{0});
  r.step = PrimExpr(int64_t{1});
  if (n == 1) {
    KILN_ASSIGN_OR_RETURN(r.end, RangeArg(call, 0, "end"));
  } else {
    KILN_ASSIGN_OR_RETURN(r.start, RangeArg(call, 0, "start"));
    KILN_ASSIGN_OR_RETURN(r.end, RangeArg(call, 1, "end"));
    if (n == 3) {
      KILN_ASSIGN_OR_RETURN(r.step, RangeArg(call, 2, "step"));
    }
  }
  for (const PrimExpr* e : {&r.start, &r.end, &r.step}) r.is_float |= e->dtype().is_float();
  for (const PrimExpr* e : {&r.start, &r.step}) {
    if (!e->as<ir::IntImmNode>() && !e->as<ir::FloatImmNode>()) {
      return Error(call, "start and step must be constants, got " + DimString(*e));
    }
  }
  if (r.is_float && !r.end.as<ir::IntImmNode>() && !r.end.as<ir::FloatImmNode>()) {
    return Error(call, "a float range needs a constant end, got " + DimString(r.end));
  }
  return r;
}

double Value(const PrimExpr& e) {
  if (const auto* i = e.as<ir::IntImmNode>()) return static_cast<double>(i->value);
  return e.as<ir::FloatImmNode>()->value;
}

Result<PrimExpr> RangeLength(const ir::CallExpr& call, const Range& r) {
  double step = Value(r.step);
  if (step == 0) return Error(call, "step must not be 0");
  if (r.end.as<ir::IntImmNode>() || r.end.as<ir::FloatImmNode>()) {
    double len = std::ceil((Value(r.end) - Value(r.start)) / step);
    return PrimExpr(static_cast<int64_t>(std::max(len, 0.0)));
  }
  // Symbolic integer end: ceil((end - start) / step), assumed non-negative.
  int64_t s = static_cast<int64_t>(step), a = static_cast<int64_t>(Value(r.start));
  PrimExpr end = CastTo(DType::Int64(), r.end);
  PrimExpr span = s > 0 ? end - PrimExpr(a) + PrimExpr(s - 1) : PrimExpr(a) - end + PrimExpr(-s - 1);
  return arith::Simplify(ir::MakeBinary(TirKind::kFloorDiv, span, PrimExpr(s > 0 ? s : -s)));
}

Result<ir::StructInfo> InferArange(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(Range r, ReadRange(call));
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeAttr(call, "dtype"));
  KILN_ASSIGN_OR_RETURN(PrimExpr len, RangeLength(call, r));
  return TensorOf({len}, dtype ? *dtype : (r.is_float ? DType::Float32() : DType::Int64()));
}

Result<ir::PrimFunc> LegalizeArange(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(Range r, ReadRange(call));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  DType dt = out->dtype;
  te::FuncBuilder b(name);
  te::Tensor t = b.Compute("T_arange", out->shape, dt, [&](const te::Indices& i) {
    if (dt.is_float()) {
      return Bin(TirKind::kAdd, Const(dt, Value(r.start)), Bin(TirKind::kMul, ir::Cast(dt, i[0]), Const(dt, Value(r.step))));
    }
    // Integers: in int64, then converted (float constants are truncated first, as numpy's int arange).
    PrimExpr v = i[0] * PrimExpr(static_cast<int64_t>(Value(r.step))) + PrimExpr(static_cast<int64_t>(Value(r.start)));
    return CastTo(dt, v);
  });
  return b.Build({t});
}

// ------------------------------------------------------------ tril / triu

// k as an expression: a constant, or a symbolic R.prim_value (a k read when
// the program runs), which the kernel takes as a scalar.
Result<PrimExpr> ReadK(const ir::CallExpr& call) {
  if (call.args.size() > 2) return Error(call, "takes x and k, got " + std::to_string(call.args.size()) + " arguments");
  if (call.args.size() == 2) {
    const auto* p = ir::ExprAs<ir::PrimValueExpr>(call.args[1]);
    if (p && p->value.defined() && p->value.dtype().is_int() && !ConstDim(p->value)) return p->value;
  }
  KILN_ASSIGN_OR_RETURN(Scalar k, ScalarArg(call, 1, "k", 0.0));
  if (k.is_float) return Error(call, "k must be an integer");
  return PrimExpr(static_cast<int64_t>(k.value));
}

Result<ir::StructInfo> InferTri(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "the operand"));
  if (x->ndim >= 0 && x->ndim < 2) return Error(call, "needs a tensor of rank >= 2, got rank " + std::to_string(x->ndim));
  KILN_RETURN_IF_ERROR(ReadK(call).status());
  return call.args[0]->struct_info;
}

Result<ir::PrimFunc> LegalizeTri(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(PrimExpr k, ReadK(call));
  bool lower = OpIs(call, "relax.tril");
  te::FuncBuilder b(name);
  k = b.Local(k);
  te::Tensor in = b.Input("A", x->shape, x->dtype);
  te::Tensor r = b.Compute(lower ? "T_tril" : "T_triu", in.shape(), x->dtype, [&](const te::Indices& i) {
    size_t n = i.size();
    PrimExpr diag = i[n - 1] - i[n - 2];  // column - row
    PrimExpr keep = Bin(lower ? TirKind::kLE : TirKind::kGE, diag, k);
    return Select(keep, in(i), Const(x->dtype, 0));
  });
  return b.Build({r});
}

// ------------------------------------------------------------ one_hot

struct OneHot {
  Scalar on, off;
  int64_t depth = 0;
  int64_t axis = -1;
  DType dtype;
};

Result<OneHot> ReadOneHot(const ir::CallExpr& call, int64_t ndim) {
  if (call.args.size() != 3) {
    return Error(call, "takes indices, on_value and off_value, got " + std::to_string(call.args.size()) + " arguments");
  }
  OneHot o;
  KILN_ASSIGN_OR_RETURN(o.on, ScalarArg(call, 1, "on_value", std::nullopt));
  KILN_ASSIGN_OR_RETURN(o.off, ScalarArg(call, 2, "off_value", std::nullopt));
  if (o.on.dtype != o.off.dtype) {
    return Error(call, "on_value and off_value have different dtypes: " + Str(o.on.dtype) + " and " + Str(o.off.dtype));
  }
  o.dtype = o.on.dtype;
  KILN_ASSIGN_OR_RETURN(o.depth, IntAttr(call, "depth", -1));
  if (o.depth <= 0) return Error(call, "depth must be a positive integer, got " + std::to_string(o.depth));
  KILN_ASSIGN_OR_RETURN(int64_t axis, IntAttr(call, "axis", -1));
  o.axis = axis;
  if (ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(o.axis, NormalizeAxis(call, axis, ndim + 1));
  }
  return o;
}

Result<ir::StructInfo> InferOneHot(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "indices"));
  if (x->has_dtype && (!x->dtype.is_int() || IsBool(x->dtype))) {
    return Error(call, "indices must be an integer tensor, got " + Str(x->dtype));
  }
  KILN_ASSIGN_OR_RETURN(OneHot o, ReadOneHot(call, x->ndim));
  if (!x->has_shape) return ir::MakeTensorSInfoNdim(x->ndim < 0 ? -1 : x->ndim + 1, o.dtype);
  std::vector<PrimExpr> shape = x->shape;
  shape.insert(shape.begin() + o.axis, PrimExpr(o.depth));
  return TensorOf(shape, o.dtype);
}

Result<ir::PrimFunc> LegalizeOneHot(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "indices"));
  KILN_ASSIGN_OR_RETURN(OneHot o, ReadOneHot(call, x->ndim));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  te::FuncBuilder b(name);
  te::Tensor in = b.Input("indices", x->shape, x->dtype);
  te::Tensor r = b.Compute("T_one_hot", out->shape, o.dtype, [&](const te::Indices& i) {
    te::Indices idx = i;
    PrimExpr d = idx[o.axis];
    idx.erase(idx.begin() + o.axis);
    return Select(Bin(TirKind::kEQ, CastTo(DType::Int64(), in(idx)), d), Const(o.dtype, o.on.value), Const(o.dtype, o.off.value));
  });
  return b.Build({r});
}

}  // namespace

void AddCreateOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.zeros", "zeros", 1, InferFill, LegalizeFill, OpPattern::kInjective});
  t->push_back({"relax.ones", "ones", 1, InferFill, LegalizeFill, OpPattern::kInjective});
  t->push_back({"relax.full", "full", 2, InferFill, LegalizeFill, OpPattern::kInjective});
  t->push_back({"relax.zeros_like", "zeros_like", 1, InferFill, LegalizeFill, OpPattern::kElemWise});
  t->push_back({"relax.ones_like", "ones_like", 1, InferFill, LegalizeFill, OpPattern::kElemWise});
  t->push_back({"relax.full_like", "full_like", 2, InferFill, LegalizeFill, OpPattern::kElemWise});
  t->push_back({"relax.arange", "arange", -1, InferArange, LegalizeArange, OpPattern::kInjective});
  t->push_back({"relax.tril", "tril", -1, InferTri, LegalizeTri, OpPattern::kInjective});
  t->push_back({"relax.triu", "triu", -1, InferTri, LegalizeTri, OpPattern::kInjective});
  t->push_back({"relax.one_hot", "one_hot", -1, InferOneHot, LegalizeOneHot, OpPattern::kInjective});
}

}  // namespace relax
}  // namespace kiln
