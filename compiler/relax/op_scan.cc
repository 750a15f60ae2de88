// Scans and selection: cumsum / cumprod(x, axis=None, dtype=None,
// exclusive=False) and topk(x, k=1, axis=-1, ret_type="both", largest=True,
// dtype="int32").
//
// cumsum/cumprod: axis=None scans the flattened tensor (result rank 1); the
// result dtype is `dtype` or the operand's; exclusive scans start from the
// identity (out[0] = 0 or 1). The kernel is one custom TIR stage: loops over
// the axes before the scanned one, a serial loop along it, and inside that
// loops over the axes after it, each element combined with the previous
// output row's.
//
// topk: the k largest (largest=False: smallest) elements along `axis`, in
// order, ties broken by the lower index (a stable order); k < 1 means the
// whole axis. ret_type "both" gives the tuple (values, indices), "values" or
// "indices" one tensor; indices have `dtype`. The kernel keeps a heap of
// the best k so far (about n + k ln(n / k) log k steps a row on unordered
// data, k values of scratch), sorts it, then gathers the values. NaNs are not ordered (results with NaN
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

// Lazy a && b (the second side may load out of bounds when the first
// decides).
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
    // The axis loop sits between the axes before it and those after it, so
    // each step combines whole contiguous rows of the inner axes with the
    // row before (one vectorizable pass); with the axis innermost a scan
    // over axis 1 of [1, 8192, 64] ran 64 scalar chains 256 bytes a step.
    const std::vector<PrimExpr>& oshape = o->shape;
    std::vector<ir::Var> vars(oshape.size());
    te::Indices idx(oshape.size());
    for (size_t d = 0; d < oshape.size(); ++d) {
      vars[d] = ir::MakeVar(d == axis ? std::string("k") : "i" + std::to_string(d));
      idx[d] = PrimExpr(vars[d]);
    }
    PrimExpr kk = idx[axis];
    PrimExpr prev = ir::Load(o, With(idx, axis, kk - PrimExpr(int64_t{1})));
    PrimExpr first, next;
    if (a.exclusive) {
      first = Const(dt, prod ? 1 : 0);
      next = combine(prev, value(in(in_index(With(idx, axis, kk - PrimExpr(int64_t{1}))))));
    } else {
      first = value(in(in_index(With(idx, axis, PrimExpr(int64_t{0})))));
      next = combine(prev, value(in(in_index(idx))));
    }
    PrimExpr v = Intrin(dt, "if_then_else", {Bin(TirKind::kEQ, kk, PrimExpr(int64_t{0})), first, next});
    ir::Stmt st = ir::Store(o, v, idx);
    for (size_t d = oshape.size(); d-- > 0;) st = For(vars[d], oshape[d], st);
    return st;
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

  // A heap of the best k so far, its root the worst of them (ORT's and
  // OpenVINO's method): elements 0..k-1 are heapified, each later element
  // that beats the root replaces it and sifts down, and the heap is then
  // sorted in place, best first (heapsort's extraction). "Worse" is a strict
  // order: a lower value (largest) or, among equal values, the higher index,
  // so ties keep the lower index first (stable), and a later element equal
  // to the root never enters. A row costs n compares plus about
  // k ln(n / k) log2(k) sift steps; the earlier k scans of the row (O(k n))
  // took 1.5 ms for k = 100 of 25200, where the peers take about 20 us.
  // Values sit in a scratch row beside the indices (in the output).
  PrimExpr kk = shape[axis];
  const std::optional<int64_t> k_static = ConstDim(kk);
  int64_t depth = 40;  // sift steps: floor(log2(k)) + 1 covers any heap of k
  if (k_static) {
    depth = 1;
    while ((int64_t{1} << depth) <= *k_static) ++depth;
  }
  te::Tensor idx = b.Custom("T_topk_indices", shape, it, [&](const ir::Buffer& o) {
    return LoopsExcept(shape, axis, "i", [&](const te::Indices& outer) {
      const PrimExpr zero(int64_t{0}), one(int64_t{1}), two(int64_t{2});
      auto local = [](const std::string& nm, std::vector<PrimExpr> sh, DType d) {
        auto node = std::make_shared<ir::BufferNode>(*ir::MakeBuffer(nm, std::move(sh), d));
        node->scope = "local";
        return ir::Buffer(node);
      };
      ir::Buffer hv = local("heap_values", {kk}, x->dtype);
      ir::Buffer st = local("sift", {PrimExpr(int64_t{3})}, DType::Int64());  // position, child, index swap
      ir::Buffer tv = local("swap_value", {one}, x->dtype);
      auto at = [&](PrimExpr pos) { return in(With(outer, axis, std::move(pos))); };
      auto slot = [&](const PrimExpr& p) { return With(outer, axis, p); };
      auto hval = [&](const PrimExpr& p) { return ir::Load(hv, {p}); };
      auto hidx = [&](const PrimExpr& p) { return CastTo(DType::Int64(), ir::Load(o, slot(p))); };
      auto worse = [&](const PrimExpr& i, const PrimExpr& j) {
        return Bin(TirKind::kOr, Bin(better, hval(j), hval(i)),
                   Bin(TirKind::kAnd, Bin(TirKind::kEQ, hval(i), hval(j)), Bin(TirKind::kGT, hidx(i), hidx(j))));
      };
      auto swap = [&](const PrimExpr& i, const PrimExpr& j) {
        return ir::Seq({ir::Store(tv, hval(i), {zero}), ir::Store(hv, hval(j), {i}), ir::Store(hv, ir::Load(tv, {zero}), {j}),
                        ir::Store(st, hidx(i), {two}), ir::Store(o, ir::Load(o, slot(j)), slot(i)),
                        ir::Store(o, CastTo(it, ir::Load(st, {two})), slot(j))});
      };
      // Sift the entry at `start` down a heap of `size` entries.
      auto sift = [&](const PrimExpr& start, const PrimExpr& size) {
        PrimExpr pos = ir::Load(st, {zero}), ch = ir::Load(st, {one});
        PrimExpr c = pos * two + one;
        ir::Stmt pick_child = ir::Store(
            st, Select(LazyAnd(Bin(TirKind::kLT, c + one, size), worse(c + one, c)), c + one, c), {one});
        ir::Stmt step = std::make_shared<ir::IfThenElseNode>(
            worse(ch, pos), ir::Seq({swap(pos, ch), ir::Store(st, ch, {zero})}), ir::Store(st, size, {zero}));
        ir::Var s = ir::MakeVar("s");
        return ir::Seq({ir::Store(st, start, {zero}),
                        For(s, PrimExpr(depth), If(Bin(TirKind::kLT, c, size), ir::Seq({pick_child, step})))});
      };
      ir::Var j = ir::MakeVar("j"), h = ir::MakeVar("h"), m = ir::MakeVar("m"), t = ir::MakeVar("t");
      PrimExpr jj(j), mm(m);
      ir::Stmt fill = For(j, kk, ir::Seq({ir::Store(hv, at(jj), {jj}), ir::Store(o, CastTo(it, jj), slot(jj))}));
      // Heapify: sift every inner node, the last first.
      PrimExpr inner = ir::MakeBinary(TirKind::kFloorDiv, kk, two);
      ir::Stmt heapify = For(h, inner, sift(inner - one - PrimExpr(h), kk));
      ir::Stmt scan = For(m, n - kk, [&] {
        PrimExpr e = kk + mm;
        return If(Bin(better, at(e), hval(zero)),
                  ir::Seq({ir::Store(hv, at(e), {zero}), ir::Store(o, CastTo(it, e), slot(zero)), sift(zero, kk)}));
      }());
      PrimExpr last = kk - one - PrimExpr(t);
      ir::Stmt sort = For(t, kk, ir::Seq({swap(zero, last), sift(zero, last)}));
      ir::Stmt row = ir::Seq({fill, heapify, scan, sort});
      row = std::make_shared<ir::AllocateNode>(hv, std::make_shared<ir::AllocateNode>(
                                                       st, std::make_shared<ir::AllocateNode>(tv, row)));
      // k = 0 (a run-time K): nothing to keep, and no root to compare with.
      return k_static ? row : If(Bin(TirKind::kGT, kk, zero), row);
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
