// Scans and selection: cumsum / cumprod(x, axis=None, dtype=None,
// exclusive=False) and topk(x, k=1, axis=-1, ret_type="both", largest=True,
// dtype="int32").
//
// cumsum/cumprod: axis=None scans the flattened tensor (result rank 1); the
// result dtype is `dtype` or the operand's; exclusive scans start from the
// identity (out[0] = 0 or 1). The kernel is one custom TIR stage: loops over
// the other axes, a serial loop along the axis that reads the previous
// output element.
//
// topk: the k largest (largest=False: smallest) elements along `axis`, in
// order, ties broken by the lower index (a stable order); k < 1 means the
// whole axis. ret_type "both" gives the tuple (values, indices), "values" or
// "indices" one tensor; indices have `dtype`. The kernel picks element j as
// the best of those ordered after pick j-1 (O(k n) per row, no scratch
// memory), then gathers the values. NaNs are not ordered (results with NaN
// inputs are unspecified).
#include <functional>
#include <optional>

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

ir::Stmt For(const ir::Var& v, const PrimExpr& extent, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, PrimExpr(int64_t{0}), extent, ir::ForKind::kSerial, std::move(body));
}

ir::Stmt If(const PrimExpr& cond, ir::Stmt then_case) {
  return std::make_shared<ir::IfThenElseNode>(cond, std::move(then_case), nullptr);
}

// Lazy a || b and a && b (the second side may load out of bounds when the
// first decides).
PrimExpr LazyOr(const PrimExpr& a, const PrimExpr& b) { return Intrin(DType::Bool(), "if_then_else", {a, Const(DType::Bool(), 1), b}); }
PrimExpr LazyAnd(const PrimExpr& a, const PrimExpr& b) { return Intrin(DType::Bool(), "if_then_else", {a, b, Const(DType::Bool(), 0)}); }

// Wraps `body` in serial loops over every dimension of `shape` except `skip`
// and returns the index with `slot` at position `skip`.
ir::Stmt LoopsExcept(const std::vector<PrimExpr>& shape, size_t skip, const std::string& prefix,
                     const std::function<ir::Stmt(const te::Indices& outer)>& body) {
  std::vector<ir::Var> vars;
  te::Indices outer;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d == skip) {
      outer.push_back(PrimExpr());
      continue;
    }
    vars.push_back(ir::MakeVar(prefix + std::to_string(d)));
    outer.push_back(PrimExpr(vars.back()));
  }
  ir::Stmt s = body(outer);
  size_t vi = vars.size();
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == skip) continue;
    s = For(vars[--vi], shape[d], s);
  }
  return s;
}

te::Indices With(te::Indices idx, size_t d, PrimExpr v) {
  idx[d] = std::move(v);
  return idx;
}

// ------------------------------------------------------------ cumsum / cumprod

struct ScanAttrs {
  std::optional<int64_t> axis;  // normalized; nullopt: flatten
  std::optional<DType> dtype;
  bool exclusive = false;
};

Result<ScanAttrs> ReadScan(const ir::CallExpr& call, int64_t ndim) {
  ScanAttrs a;
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> axis, AxisAttr(call, "axis"));
  KILN_ASSIGN_OR_RETURN(a.dtype, DTypeAttr(call, "dtype"));
  KILN_ASSIGN_OR_RETURN(a.exclusive, BoolAttr(call, "exclusive", false));
  if (axis && ndim >= 0) {
    KILN_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(call, *axis, ndim));
    axis = n;
  }
  a.axis = axis;
  return a;
}

Result<ir::StructInfo> InferScan(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(ScanAttrs a, ReadScan(call, x->ndim));
  if (x->has_dtype && IsBool(x->dtype) && !a.dtype) return Error(call, "of a bool tensor needs dtype=\"...\"");
  bool known = a.dtype.has_value() || x->has_dtype;
  DType t = a.dtype ? *a.dtype : x->dtype;
  if (a.axis) return ir::StructInfo(std::make_shared<ir::TensorSInfo>(x->has_shape, x->shape, x->ndim, t, known));
  if (!x->has_shape) return ir::StructInfo(std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, 1, t, known));
  PrimExpr n(int64_t{1});
  for (const auto& d : x->shape) n = n * d;
  return ir::StructInfo(std::make_shared<ir::TensorSInfo>(true, std::vector<PrimExpr>{arith::Simplify(n)}, 1, t, known));
}

Result<ir::PrimFunc> LegalizeScan(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(ScanAttrs a, ReadScan(call, x->ndim));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(call));
  bool prod = OpIs(call, "relax.cumprod");
  DType dt = out->dtype;
  te::FuncBuilder b(name);
  te::Tensor in = b.Input("A", x->shape, x->dtype);
  std::vector<PrimExpr> in_shape = in.shape();
  auto combine = [&](PrimExpr acc, PrimExpr v) { return Bin(prod ? TirKind::kMul : TirKind::kAdd, acc, v); };
  auto value = [&](PrimExpr v) { return IsBool(v.dtype()) ? Select(v, Const(dt, 1), Const(dt, 0)) : CastTo(dt, v); };

  te::Tensor r = b.Custom(prod ? "T_cumprod" : "T_cumsum", out->shape, dt, [&](const ir::Buffer& o) {
    // The scanned axis of the output and how an output index reads the input.
    size_t axis = a.axis ? static_cast<size_t>(*a.axis) : 0;
    std::function<te::Indices(const te::Indices&)> in_index = [](const te::Indices& i) { return i; };
    if (!a.axis) {
      // Flattened: unravel the flat index into the input's row-major index.
      in_index = [&](const te::Indices& i) {
        te::Indices idx(in_shape.size());
        PrimExpr rest = i[0];
        for (size_t d = in_shape.size(); d-- > 0;) {
          idx[d] = d == 0 ? rest : ir::MakeBinary(TirKind::kFloorMod, rest, in_shape[d]);
          rest = ir::MakeBinary(TirKind::kFloorDiv, rest, in_shape[d]);
        }
        return idx;
      };
    }
    return LoopsExcept(o->shape, axis, "i", [&](const te::Indices& outer) {
      ir::Var k = ir::MakeVar("k");
      PrimExpr kk(k);
      PrimExpr prev = ir::Load(o, With(outer, axis, kk - PrimExpr(int64_t{1})));
      PrimExpr first, next;
      if (a.exclusive) {
        first = Const(dt, prod ? 1 : 0);
        next = combine(prev, value(in(in_index(With(outer, axis, kk - PrimExpr(int64_t{1}))))));
      } else {
        first = value(in(in_index(With(outer, axis, PrimExpr(int64_t{0})))));
        next = combine(prev, value(in(in_index(With(outer, axis, kk)))));
      }
      PrimExpr v = Intrin(dt, "if_then_else", {Bin(TirKind::kEQ, kk, PrimExpr(int64_t{0})), first, next});
      return For(k, o->shape[axis], ir::Store(o, v, With(outer, axis, kk)));
    });
  });
  return b.Build({r});
}

// ------------------------------------------------------------ topk

struct TopK {
  int64_t k = 1;
  PrimExpr k_expr;  // a symbolic k (R.prim_value argument 1), else undefined
  int64_t axis = -1;
  std::string ret_type;
  bool largest = true;
  DType index_dtype;
};

Result<TopK> ReadTopK(const ir::CallExpr& call, int64_t ndim) {
  TopK t;
  KILN_ASSIGN_OR_RETURN(t.k, IntAttr(call, "k", 1));
  // k may be an argument instead: R.prim_value(k), symbolic (a K that the
  // program reads when it runs, an ONNX TopK's K input); the kernel then takes
  // it as a scalar and the caller guarantees 0 <= k <= the axis.
  if (call.args.size() > 1) {
    const auto* p = ir::ExprAs<ir::PrimValueExpr>(call.args[1]);
    if (!p || !p->value.defined()) return Error(call, "k (argument 1) must be an R.prim_value");
    if (auto c = ConstDim(p->value)) {
      t.k = *c;
    } else {
      t.k = -1;
      t.k_expr = p->value;
    }
  }
  KILN_ASSIGN_OR_RETURN(t.axis, IntAttr(call, "axis", -1));
  if (ndim >= 0) {
    if (ndim == 0) return Error(call, "needs a tensor of rank >= 1");
    KILN_ASSIGN_OR_RETURN(t.axis, NormalizeAxis(call, t.axis, ndim));
  }
  KILN_ASSIGN_OR_RETURN(t.ret_type, StringAttr(call, "ret_type", "both"));
  if (t.ret_type != "both" && t.ret_type != "values" && t.ret_type != "indices") {
    return Error(call, "ret_type must be \"both\", \"values\" or \"indices\", got \"" + t.ret_type + "\"");
  }
  KILN_ASSIGN_OR_RETURN(t.largest, BoolAttr(call, "largest", true));
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeAttr(call, "dtype"));
  t.index_dtype = dtype ? *dtype : DType::Int32();
  if (!t.index_dtype.is_int() || IsBool(t.index_dtype)) return Error(call, "index dtype must be an integer type, got " + Str(t.index_dtype));
  return t;
}

Result<ir::StructInfo> InferTopK(const ir::CallExpr& call) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, TensorArg(call, 0, "the operand"));
  if (x->has_dtype && IsBool(x->dtype)) return Error(call, "does not accept bool tensors");
  KILN_ASSIGN_OR_RETURN(TopK t, ReadTopK(call, x->ndim));
  ir::StructInfo values, indices;
  if (x->has_shape) {
    std::vector<PrimExpr> shape = x->shape;
    if (t.k >= 1) {
      auto n = ConstDim(shape[t.axis]);
      if (n && t.k > *n) {
        return Error(call, "k = " + std::to_string(t.k) + " is larger than axis " + std::to_string(t.axis) + " of " +
                               ShapeString(x->shape));
      }
      shape[t.axis] = PrimExpr(t.k);
    } else if (t.k_expr.defined()) {
      shape[t.axis] = t.k_expr;
    }
    values = std::make_shared<ir::TensorSInfo>(true, shape, -1, x->dtype, x->has_dtype);
    indices = ir::MakeTensorSInfo(shape, t.index_dtype);
  } else {
    values = std::make_shared<ir::TensorSInfo>(false, std::vector<PrimExpr>{}, x->ndim, x->dtype, x->has_dtype);
    indices = ir::MakeTensorSInfoNdim(x->ndim, t.index_dtype);
  }
  if (t.ret_type == "values") return values;
  if (t.ret_type == "indices") return indices;
  return ir::StructInfo(std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{values, indices}));
}

Result<ir::PrimFunc> LegalizeTopK(const ir::CallExpr& call, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, ShapedTensorArg(call, 0, "the operand"));
  KILN_ASSIGN_OR_RETURN(TopK t, ReadTopK(call, x->ndim));
  te::FuncBuilder b(name);
  te::Tensor in = b.Input("A", x->shape, x->dtype);
  size_t axis = static_cast<size_t>(t.axis);
  std::vector<PrimExpr> shape = in.shape();
  PrimExpr n = shape[axis];
  if (t.k >= 1) shape[axis] = PrimExpr(t.k);
  if (t.k_expr.defined()) shape[axis] = b.Local(t.k_expr);
  DType it = t.index_dtype;
  TirKind better = t.largest ? TirKind::kGT : TirKind::kLT;

  te::Tensor idx = b.Custom("T_topk_indices", shape, it, [&](const ir::Buffer& o) {
    return LoopsExcept(shape, axis, "i", [&](const te::Indices& outer) {
      ir::Var j = ir::MakeVar("j"), m = ir::MakeVar("m");
      PrimExpr jj(j), mm(m);
      auto at = [&](PrimExpr pos) { return in(With(outer, axis, std::move(pos))); };
      PrimExpr cur = CastTo(DType::Int64(), ir::Load(o, With(outer, axis, jj)));
      PrimExpr prev = CastTo(DType::Int64(), ir::Load(o, With(outer, axis, jj - PrimExpr(int64_t{1}))));
      PrimExpr v = at(mm);
      // m comes after pick j-1 in the order (value, then lower index first).
      PrimExpr pv = at(prev);
      PrimExpr after_prev = Bin(TirKind::kOr, Bin(better, pv, v),
                                Bin(TirKind::kAnd, Bin(TirKind::kEQ, pv, v), Bin(TirKind::kGT, mm, prev)));
      PrimExpr eligible = LazyOr(Bin(TirKind::kEQ, jj, PrimExpr(int64_t{0})), after_prev);
      // m beats the best so far (m grows, so a tie keeps the earlier one).
      PrimExpr beats = LazyOr(Bin(TirKind::kLT, cur, PrimExpr(int64_t{0})), Bin(better, v, at(cur)));
      ir::Stmt pick = If(LazyAnd(eligible, beats), ir::Store(o, CastTo(it, mm), With(outer, axis, jj)));
      ir::Stmt row = ir::Seq({ir::Store(o, Const(it, -1), With(outer, axis, jj)), For(m, n, pick)});
      return For(j, shape[axis], row);
    });
  });
  te::Tensor values = b.Compute("T_topk_values", shape, x->dtype, [&](const te::Indices& i) {
    return in(With(i, axis, CastTo(DType::Int64(), idx(i))));
  });
  if (t.ret_type == "values") return b.Build({values});
  if (t.ret_type == "indices") return b.Build({idx});
  return b.Build({values, idx});
}

}  // namespace

void AddScanOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.cumsum", "cumsum", 1, InferScan, LegalizeScan, OpPattern::kOpaque});
  t->push_back({"relax.cumprod", "cumprod", 1, InferScan, LegalizeScan, OpPattern::kOpaque});
  t->push_back({"relax.topk", "topk", -1, InferTopK, LegalizeTopK, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
