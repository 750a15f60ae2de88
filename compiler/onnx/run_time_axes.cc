// Axes, bounds and repeats that only arrive as run-time tensors (see
// run_time_axes.h). Each converter computes the sizes it needs as small int64
// tensors (elementwise ops over arange(rank) against the operand), reads
// them into symbolic values, and moves the data with kernels whose axes are
// static: a reshape to a view where the chosen axes are fixed positions
// (Reduce: every axis split in two, one of them 1; CumSum: outer x axis x
// inner), a take per axis (Slice), a broadcast (Tile). The static-operand
// paths of the converters stay as they are; these run only when the operand
// is not known at import time.
#include "compiler/onnx/run_time_axes.h"

namespace kiln {
namespace onnx {

using ir::PrimExpr;

namespace {

ir::Expr I64(int64_t v) { return ScalarConst(DType::Int64(), static_cast<double>(v)); }

ir::Expr Tuple(std::vector<ir::Expr> fields) { return std::make_shared<ir::TupleExpr>(std::move(fields)); }

Status Set(NodeCtx& ctx, Result<ir::Expr> r) {
  if (!r.ok()) return r.status();
  ctx.SetOutput(0, *r);
  return Status::Ok();
}

// Input i as an int64 tensor of static length *n (a scalar becomes [1]).
Result<ir::Expr> RunTimeInts(NodeCtx& ctx, size_t i, const char* what, int64_t* n) {
  KILN_ASSIGN_OR_RETURN(*n, RunTimeShapeLength(ctx, i, what));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* info, ctx.Info(i));
  KILN_ASSIGN_OR_RETURN(ir::Expr t, ctx.Input(i));
  if (info->ndim == 0) { KILN_ASSIGN_OR_RETURN(t, ctx.Op("reshape", {t, MakeShape({PrimExpr(int64_t{1})})})); }
  if (info->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(t, ctx.Op("astype", {t}, {{"dtype", AttrS("int64")}})); }
  return t;
}

// An operand of `n` values that may be constant or run-time, as int64 [n].
Result<ir::Expr> AnyInts(NodeCtx& ctx, size_t i, const char* what, int64_t n) {
  if (!IsRunTimeOperand(ctx, i)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.ConstInts(i, what));
    if (static_cast<int64_t>(v.size()) != n) {
      return ctx.Invalid(std::string(what) + " has " + std::to_string(v.size()) + " values, starts has " + std::to_string(n));
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(std::vector<int64_t>{n}, DType::Int64()));
    for (int64_t k = 0; k < n; ++k) t.data<int64_t>()[k] = v[static_cast<size_t>(k)];
    return MakeConstant(t);
  }
  int64_t len = 0;
  KILN_ASSIGN_OR_RETURN(ir::Expr t, RunTimeInts(ctx, i, what, &len));
  if (len != n) return ctx.Invalid(std::string(what) + " has " + std::to_string(len) + " values, starts has " + std::to_string(n));
  return t;
}

Result<ir::Expr> ShapeTensor(NodeCtx& ctx, const std::vector<PrimExpr>& dims) {
  return ctx.Emit(ir::MakeOpCall("relax.shape_to_tensor", {MakeShape(dims)}, {}));
}

Result<ir::Expr> Arange(NodeCtx& ctx, int64_t n) {
  return ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(PrimExpr(n)), PrimValue(PrimExpr(int64_t{1}))},
                {{"dtype", AttrS("int64")}});
}

Result<ir::Expr> Reshape(NodeCtx& ctx, ir::Expr t, std::vector<PrimExpr> dims) {
  return ctx.Op("reshape", {t, MakeShape(std::move(dims))});
}

// Axes in [-rank, rank) to [0, rank).
Result<ir::Expr> NormAxes(NodeCtx& ctx, ir::Expr axes, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("less", {axes, I64(0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr up, ctx.Op("add", {axes, I64(rank)}));
  return ctx.Op("where", {neg, up, axes});
}

// The number of normalized axes outside [0, rank), as int64 [1]. The
// converters read it with the sizes they read anyway, matched against 0, so
// an axis out of range is a run-time error, never silently ignored (a read
// of its own would be removed as unused).
Result<ir::Expr> AxesOutOfRange(NodeCtx& ctx, ir::Expr axes_n, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(ir::Expr lo, ctx.Op("less", {axes_n, I64(0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr hi, ctx.Op("greater_equal", {axes_n, I64(rank)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, ctx.Op("logical_or", {lo, hi}));
  KILN_ASSIGN_OR_RETURN(bad, ctx.Op("astype", {bad}, {{"dtype", AttrS("int64")}}));
  return ctx.Op("sum", {bad}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}});
}

// [rank, k] int64: 1 where axis i (row) is axes[j] (column).
Result<ir::Expr> AxisMatch(NodeCtx& ctx, ir::Expr axes_n, PrimExpr k, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(ir::Expr i, Arange(ctx, rank));
  KILN_ASSIGN_OR_RETURN(i, Reshape(ctx, i, {PrimExpr(rank), PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr a, Reshape(ctx, axes_n, {PrimExpr(int64_t{1}), k}));
  KILN_ASSIGN_OR_RETURN(ir::Expr eq, ctx.Op("equal", {i, a}));
  return ctx.Op("astype", {eq}, {{"dtype", AttrS("int64")}});
}

Result<ir::Expr> RowSum(NodeCtx& ctx, ir::Expr m) {
  return ctx.Op("sum", {m}, {{"axis", AttrInts({1})}, {"keepdims", AttrB(false)}});
}

// [rank] int64: 1 for the axes named in `axes_n` (normalized), else 0.
Result<ir::Expr> AxesMask(NodeCtx& ctx, ir::Expr axes_n, PrimExpr k, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(ir::Expr m, AxisMatch(ctx, axes_n, k, rank));
  KILN_ASSIGN_OR_RETURN(ir::Expr s, RowSum(ctx, m));
  return ctx.Op("minimum", {s, I64(1)});
}

// The entries of `values` [r] where keep [r] is 1, in order: [out_len].
Result<ir::Expr> Compact(NodeCtx& ctx, ir::Expr values, ir::Expr keep, int64_t r, int64_t out_len) {
  KILN_ASSIGN_OR_RETURN(ir::Expr pos, ctx.Op("cumsum", {keep}, {{"axis", AttrI(0)}, {"exclusive", AttrB(true)}}));
  KILN_ASSIGN_OR_RETURN(pos, Reshape(ctx, pos, {PrimExpr(int64_t{1}), PrimExpr(r)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr j, Arange(ctx, out_len));
  KILN_ASSIGN_OR_RETURN(j, Reshape(ctx, j, {PrimExpr(out_len), PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr at, ctx.Op("equal", {pos, j}));
  KILN_ASSIGN_OR_RETURN(at, ctx.Op("astype", {at}, {{"dtype", AttrS("int64")}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr kv, ctx.Op("multiply", {keep, values}));
  KILN_ASSIGN_OR_RETURN(kv, Reshape(ctx, kv, {PrimExpr(int64_t{1}), PrimExpr(r)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr picked, ctx.Op("multiply", {at, kv}));
  return RowSum(ctx, picked);
}

// x reshaped to the n sizes of `shape` [n], read when the program runs; the
// product of the sizes is read too and must be x's element count (the
// match checks it), so a wrong size is an error, not a bad read.
// With `must_be_zero` ([1], an AxesOutOfRange count of the axes in input
// `axes_input` of a rank-`axes_rank` tensor) read along, matched against 0.
// `count_why` says what a wrong count means for the converter ("" when it
// cannot be wrong: the generic text then stays).
Result<ir::Expr> ReshapeAtRunTime(NodeCtx& ctx, const ir::TensorSInfo& xi, ir::Expr x, ir::Expr shape, int64_t n,
                                  const std::string& base, const std::string& count_why, ir::Expr must_be_zero = nullptr,
                                  size_t axes_input = 1, int64_t axes_rank = 0) {
  PrimExpr total(int64_t{1});
  for (const auto& d : xi.shape) total = total * d;
  total = SimplifyDim(total);
  if (n == 0) return Reshape(ctx, x, {});
  KILN_ASSIGN_OR_RETURN(ir::Expr count, ctx.Op("prod", {shape}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
  // The axes count before the element count: an axis out of range is
  // reported as such, not as the wrong count it also causes.
  std::vector<ir::Expr> parts = {shape};
  if (must_be_zero) parts.push_back(must_be_zero);
  parts.push_back(count);
  KILN_ASSIGN_OR_RETURN(ir::Expr with_count, ctx.Op("concat", {Tuple(parts)}, {{"axis", AttrI(0)}}));
  const int64_t len = n + static_cast<int64_t>(parts.size()) - 1;
  const size_t at_count = static_cast<size_t>(len) - 1;
  std::vector<PrimExpr> expected(static_cast<size_t>(len));
  expected[at_count] = total;
  if (must_be_zero) expected[static_cast<size_t>(n)] = PrimExpr(int64_t{0});
  // The match is named after what it reads; its messages say what fails.
  const std::string name = must_be_zero ? base + "_and_count_of_axes_out_of_range" : base;
  std::vector<std::string> messages(static_cast<size_t>(len));
  if (!count_why.empty()) {
    messages[at_count] =
        RunTimeNode(ctx) + ": " + count_why + "; " + InputText(ctx, 0, true) + " holds " + ExpectedText(total) + " elements";
  }
  if (must_be_zero) messages[static_cast<size_t>(n)] = AxesOutOfRangeMessage(ctx, axes_input, axes_rank);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ReadShapeAtRunTime(ctx, with_count, len, name, expected, messages));
  dims.resize(static_cast<size_t>(n));
  return Reshape(ctx, x, dims);
}

}  // namespace

bool IsRunTimeOperand(NodeCtx& ctx, size_t i) {
  if (!ctx.HasInput(i)) return false;
  Result<const Value*> v = ctx.In(i);
  if (!v.ok()) return false;
  if ((*v)->constant.defined()) return false;
  const KnownInts* k = ctx.Known(i);
  return !(k && k->Ints());
}

Status RunTimeSqueeze(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  int64_t k = 0;
  KILN_ASSIGN_OR_RETURN(ir::Expr axes, RunTimeInts(ctx, 1, "axes", &k));
  if (k > r) return ctx.Invalid(std::to_string(k) + " axes for a rank-" + std::to_string(r) + " input");
  if (k == 0) return Internal("RunTimeSqueeze needs axes");  // ConvertSqueeze squeezes as without axes
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(axes, NormAxes(ctx, axes, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, AxesOutOfRange(ctx, axes, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr mask, AxesMask(ctx, axes, k, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr keep, ctx.Op("subtract", {I64(1), mask}));
  KILN_ASSIGN_OR_RETURN(ir::Expr dims, ShapeTensor(ctx, xi->shape));
  KILN_ASSIGN_OR_RETURN(ir::Expr out, Compact(ctx, dims, keep, r, r - k));
  // The element count match makes a squeezed axis other than 1 an error.
  return Set(ctx, ReshapeAtRunTime(ctx, *xi, x, out, r - k, ctx.node().output(0) + "_shape",
                                   "an axis named by " + InputText(ctx, 1) +
                                       " does not have size 1: the squeezed shape holds {got} elements",
                                   bad, 1, r));
}

Status RunTimeUnsqueeze(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  int64_t k = 0;
  KILN_ASSIGN_OR_RETURN(ir::Expr axes, RunTimeInts(ctx, 1, "axes", &k));
  const int64_t out_rank = r + k;
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  if (r == 0) return Set(ctx, Reshape(ctx, x, std::vector<PrimExpr>(static_cast<size_t>(k), PrimExpr(int64_t{1}))));
  KILN_ASSIGN_OR_RETURN(axes, NormAxes(ctx, axes, out_rank));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, AxesOutOfRange(ctx, axes, out_rank));
  KILN_ASSIGN_OR_RETURN(ir::Expr is_new, AxesMask(ctx, axes, k, out_rank));
  // Output axis j that is not new reads input axis j - (new axes before j).
  KILN_ASSIGN_OR_RETURN(ir::Expr j, Arange(ctx, out_rank));
  KILN_ASSIGN_OR_RETURN(ir::Expr jc, Reshape(ctx, j, {PrimExpr(out_rank), PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr ar, Reshape(ctx, axes, {PrimExpr(int64_t{1}), PrimExpr(k)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr before, ctx.Op("less", {ar, jc}));
  KILN_ASSIGN_OR_RETURN(before, ctx.Op("astype", {before}, {{"dtype", AttrS("int64")}}));
  KILN_ASSIGN_OR_RETURN(before, RowSum(ctx, before));
  KILN_ASSIGN_OR_RETURN(ir::Expr src, ctx.Op("subtract", {j, before}));
  KILN_ASSIGN_OR_RETURN(src, ctx.Op("clip", {src, PrimValue(PrimExpr(int64_t{0})), PrimValue(PrimExpr(r - 1))}));
  KILN_ASSIGN_OR_RETURN(ir::Expr dims, ShapeTensor(ctx, xi->shape));
  KILN_ASSIGN_OR_RETURN(ir::Expr from, ctx.Op("take", {dims, src}, {{"axis", AttrI(0)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr isn, ctx.Op("greater", {is_new, I64(0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr out, ctx.Op("where", {isn, I64(1), from}));
  // Repeated axes leave an output axis unnamed (its size then comes from the input).
  return Set(ctx, ReshapeAtRunTime(ctx, *xi, x, out, out_rank, ctx.node().output(0) + "_shape",
                                   "the values of " + InputText(ctx, 1) + " repeat an axis: the result would hold {got} elements",
                                   bad, 1, out_rank));
}

Status RunTimeReduce(NodeCtx& ctx, const char* relax_op, bool keepdims, bool noop_with_empty_axes) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(1));
  std::optional<int64_t> static_len = ai->ndim == 1 && ai->has_shape ? ConstDim(ai->shape[0]) : std::nullopt;
  int64_t k = 0;
  PrimExpr k_expr;
  ir::Expr axes;
  if (ai->ndim == 1 && ai->has_shape && !static_len) {
    // A symbolic count of axes: the result's rank is the input's only when
    // the reduced axes are kept.
    if (!keepdims) {
      return ctx.Unsupported("axes (input 1) of symbolic length with keepdims=0 (the result's rank would depend on it)");
    }
    if (ai->dtype != DType::Int64() && ai->dtype != DType::Int32()) {
      return ctx.Invalid("axes (input 1) must be an int64 tensor, got " + DTypeName(ai->dtype));
    }
    k_expr = ai->shape[0];
    KILN_ASSIGN_OR_RETURN(axes, ctx.Input(1));
    if (ai->dtype != DType::Int64()) { KILN_ASSIGN_OR_RETURN(axes, ctx.Op("astype", {axes}, {{"dtype", AttrS("int64")}})); }
  } else {
    KILN_ASSIGN_OR_RETURN(axes, RunTimeInts(ctx, 1, "axes", &k));
    k_expr = PrimExpr(k);
  }
  if (r == 0 || (static_len && k == 0)) return Internal("RunTimeReduce needs axes and a rank > 0");  // the callers handle these
  KILN_ASSIGN_OR_RETURN(axes, NormAxes(ctx, axes, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, AxesOutOfRange(ctx, axes, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr red, AxesMask(ctx, axes, k_expr, r));
  if (!static_len && ai->ndim == 1) {
    // No axes when the program runs: every axis, or none with noop_with_empty_axes.
    KILN_ASSIGN_OR_RETURN(ir::Expr kt, ShapeTensor(ctx, {k_expr}));
    KILN_ASSIGN_OR_RETURN(ir::Expr empty, ctx.Op("equal", {kt, I64(0)}));
    KILN_ASSIGN_OR_RETURN(red, ctx.Op("where", {empty, I64(noop_with_empty_axes ? 0 : 1), red}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr redb, ctx.Op("greater", {red, I64(0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr dims, ShapeTensor(ctx, xi->shape));
  // Every axis i split into (kept_i, reduced_i), one of them 1: the
  // reduction then is over the static odd axes of a rank-2r view.
  KILN_ASSIGN_OR_RETURN(ir::Expr kept, ctx.Op("where", {redb, I64(1), dims}));
  KILN_ASSIGN_OR_RETURN(ir::Expr gone, ctx.Op("where", {redb, dims, I64(1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr kc, Reshape(ctx, kept, {PrimExpr(r), PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr gc, Reshape(ctx, gone, {PrimExpr(r), PrimExpr(int64_t{1})}));
  KILN_ASSIGN_OR_RETURN(ir::Expr pairs, ctx.Op("concat", {Tuple({kc, gc})}, {{"axis", AttrI(1)}}));
  KILN_ASSIGN_OR_RETURN(pairs, Reshape(ctx, pairs, {PrimExpr(2 * r)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr view, ReshapeAtRunTime(ctx, *xi, x, pairs, 2 * r, ctx.node().output(0) + "_view", "", bad, 1, r));
  std::vector<int64_t> odd;
  for (int64_t i = 0; i < r; ++i) odd.push_back(2 * i + 1);
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Op(relax_op, {view}, {{"axis", AttrInts(odd)}, {"keepdims", AttrB(false)}}));
  if (keepdims) return Set(ctx, y);
  if (k > r) return ctx.Invalid(std::to_string(k) + " axes for a rank-" + std::to_string(r) + " input");
  KILN_ASSIGN_OR_RETURN(ir::Expr keep, ctx.Op("subtract", {I64(1), red}));
  KILN_ASSIGN_OR_RETURN(ir::Expr out, Compact(ctx, dims, keep, r, r - k));
  const auto* yi = ir::SInfoAs<ir::TensorSInfo>(y->struct_info);
  if (!yi) return Internal("reduction without a tensor type");
  return Set(ctx, ReshapeAtRunTime(ctx, *yi, y, out, r - k, ctx.node().output(0) + "_shape", ""));
}

Status RunTimeCumSum(NodeCtx& ctx, bool exclusive, bool reverse) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  if (r == 0) return ctx.Invalid("the input must have rank 1 or more");
  int64_t k = 0;
  KILN_ASSIGN_OR_RETURN(ir::Expr axis, RunTimeInts(ctx, 1, "axis", &k));
  if (k != 1) return ctx.Invalid("axis must hold one value");
  KILN_ASSIGN_OR_RETURN(axis, NormAxes(ctx, axis, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, AxesOutOfRange(ctx, axis, r));
  // The canonical view outer x axis x inner, sized when the program runs:
  // the scan is then over the static middle axis.
  KILN_ASSIGN_OR_RETURN(ir::Expr i, Arange(ctx, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr dims, ShapeTensor(ctx, xi->shape));
  std::vector<ir::Expr> parts;
  for (const char* cmp : {"less", "equal", "greater"}) {
    KILN_ASSIGN_OR_RETURN(ir::Expr in, ctx.Op(cmp, {i, axis}));
    KILN_ASSIGN_OR_RETURN(ir::Expr d, ctx.Op("where", {in, dims, I64(1)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr p, ctx.Op("prod", {d}, {{"axis", AttrInts({0})}, {"keepdims", AttrB(true)}}));
    parts.push_back(p);
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr view_shape, ctx.Op("concat", {Tuple(parts)}, {{"axis", AttrI(0)}}));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr view, ReshapeAtRunTime(ctx, *xi, x, view_shape, 3, ctx.node().output(0) + "_view", "", bad, 1, r));
  const auto* vi = ir::SInfoAs<ir::TensorSInfo>(view->struct_info);
  if (!vi || vi->ndim != 3) return Internal("cumsum view without rank 3");
  const PrimExpr n = vi->shape[1];
  ir::Expr rev_idx;
  if (reverse) {
    // n - 1 - arange(n): the scan runs from the end.
    KILN_ASSIGN_OR_RETURN(ir::Expr a, ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(n), PrimValue(PrimExpr(int64_t{1}))},
                                             {{"dtype", AttrS("int64")}}));
    KILN_ASSIGN_OR_RETURN(ir::Expr nt, ShapeTensor(ctx, {SimplifyDim(n - PrimExpr(int64_t{1}))}));
    KILN_ASSIGN_OR_RETURN(rev_idx, ctx.Op("subtract", {nt, a}));
    KILN_ASSIGN_OR_RETURN(view, ctx.Op("take", {view, rev_idx}, {{"axis", AttrI(1)}}));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr cs, ctx.Op("cumsum", {view}, {{"axis", AttrI(1)}, {"exclusive", AttrB(exclusive)}}));
  if (reverse) { KILN_ASSIGN_OR_RETURN(cs, ctx.Op("take", {cs, rev_idx}, {{"axis", AttrI(1)}})); }
  return Set(ctx, Reshape(ctx, cs, xi->shape));
}

Status RunTimeTile(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  KILN_ASSIGN_OR_RETURN(const KnownInts* reps, ctx.ShapeOperand(1, "repeats"));
  if (static_cast<int64_t>(reps->elems.size()) != r) {
    return ctx.Invalid("repeats has " + std::to_string(reps->elems.size()) + " values for a rank-" + std::to_string(r) + " input");
  }
  // [1, d0, 1, d1, ...] broadcast to [r0, d0, r1, d1, ...], then merged.
  std::vector<PrimExpr> spread, wide, out;
  for (int64_t i = 0; i < r; ++i) {
    const PrimExpr& d = xi->shape[static_cast<size_t>(i)];
    const PrimExpr& n = reps->elems[static_cast<size_t>(i)];
    spread.insert(spread.end(), {PrimExpr(int64_t{1}), d});
    wide.insert(wide.end(), {n, d});
    out.push_back(SimplifyDim(n * d));
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  KILN_ASSIGN_OR_RETURN(ir::Expr s, Reshape(ctx, x, spread));
  KILN_ASSIGN_OR_RETURN(ir::Expr b, ctx.Op("broadcast_to", {s, MakeShape(wide)}));
  return Set(ctx, Reshape(ctx, b, out));
}

Status RunTimeSlice(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  const int64_t r = xi->ndim;
  int64_t k = 0;
  if (IsRunTimeOperand(ctx, 1)) {
    KILN_ASSIGN_OR_RETURN(k, RunTimeShapeLength(ctx, 1, "starts"));
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> s, ctx.ConstInts(1, "starts"));
    k = static_cast<int64_t>(s.size());
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr starts, AnyInts(ctx, 1, "starts", k));
  KILN_ASSIGN_OR_RETURN(ir::Expr ends, AnyInts(ctx, 2, "ends", k));
  ir::Expr axes, steps;
  if (ctx.HasInput(3)) {
    KILN_ASSIGN_OR_RETURN(axes, AnyInts(ctx, 3, "axes", k));
  } else {
    KILN_ASSIGN_OR_RETURN(axes, Arange(ctx, k));
  }
  if (ctx.HasInput(4)) {
    KILN_ASSIGN_OR_RETURN(steps, AnyInts(ctx, 4, "steps", k));
  } else {
    KILN_ASSIGN_OR_RETURN(Tensor ones, Tensor::Empty(std::vector<int64_t>{k}, DType::Int64()));
    for (int64_t i = 0; i < k; ++i) ones.data<int64_t>()[i] = 1;
    steps = MakeConstant(ones);
  }
  KILN_ASSIGN_OR_RETURN(axes, NormAxes(ctx, axes, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr bad, AxesOutOfRange(ctx, axes, r));
  // Per axis of x: its start, end and step (0, its size, 1 when no entry
  // names it), normalized and clamped as ONNX defines.
  KILN_ASSIGN_OR_RETURN(ir::Expr match, AxisMatch(ctx, axes, k, r));
  KILN_ASSIGN_OR_RETURN(ir::Expr named, RowSum(ctx, match));
  KILN_ASSIGN_OR_RETURN(ir::Expr namedb, ctx.Op("greater", {named, I64(0)}));
  auto per_axis = [&](ir::Expr v) -> Result<ir::Expr> {
    KILN_ASSIGN_OR_RETURN(ir::Expr row, Reshape(ctx, v, {PrimExpr(int64_t{1}), PrimExpr(k)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr m, ctx.Op("multiply", {match, row}));
    return RowSum(ctx, m);
  };
  // Bounds and steps beyond +-2^50 (INT64_MAX for "to the end") act as
  // +-2^50, so the arithmetic below cannot overflow.
  auto bound = [&](ir::Expr v) -> Result<ir::Expr> {
    KILN_ASSIGN_OR_RETURN(ir::Expr lo, ctx.Op("maximum", {v, I64(-kMaxElements)}));
    return ctx.Op("minimum", {lo, I64(kMaxElements)});
  };
  KILN_ASSIGN_OR_RETURN(starts, bound(starts));
  KILN_ASSIGN_OR_RETURN(ends, bound(ends));
  KILN_ASSIGN_OR_RETURN(steps, bound(steps));
  KILN_ASSIGN_OR_RETURN(ir::Expr dims, ShapeTensor(ctx, xi->shape));
  KILN_ASSIGN_OR_RETURN(ir::Expr st, per_axis(starts));
  KILN_ASSIGN_OR_RETURN(ir::Expr en, per_axis(ends));
  KILN_ASSIGN_OR_RETURN(en, ctx.Op("where", {namedb, en, dims}));
  KILN_ASSIGN_OR_RETURN(ir::Expr sp, per_axis(steps));
  KILN_ASSIGN_OR_RETURN(sp, ctx.Op("where", {namedb, sp, I64(1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr zero_step, ctx.Op("equal", {sp, I64(0)}));
  KILN_ASSIGN_OR_RETURN(sp, ctx.Op("where", {zero_step, I64(1), sp}));  // ONNX forbids 0; never divide by it
  KILN_ASSIGN_OR_RETURN(ir::Expr fwd, ctx.Op("greater", {sp, I64(0)}));
  auto wrap = [&](ir::Expr v) -> Result<ir::Expr> {
    KILN_ASSIGN_OR_RETURN(ir::Expr neg, ctx.Op("less", {v, I64(0)}));
    KILN_ASSIGN_OR_RETURN(ir::Expr up, ctx.Op("add", {v, dims}));
    return ctx.Op("where", {neg, up, v});
  };
  KILN_ASSIGN_OR_RETURN(st, wrap(st));
  KILN_ASSIGN_OR_RETURN(en, wrap(en));
  KILN_ASSIGN_OR_RETURN(ir::Expr last, ctx.Op("subtract", {dims, I64(1)}));
  // Forward: start and end in [0, d]; backward: start in [0, d-1], end in [-1, d-1].
  KILN_ASSIGN_OR_RETURN(ir::Expr lo_end, ctx.Op("where", {fwd, I64(0), I64(-1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr hi, ctx.Op("where", {fwd, dims, last}));
  KILN_ASSIGN_OR_RETURN(st, ctx.Op("maximum", {st, I64(0)}));
  KILN_ASSIGN_OR_RETURN(st, ctx.Op("minimum", {st, hi}));
  KILN_ASSIGN_OR_RETURN(en, ctx.Op("maximum", {en, lo_end}));
  KILN_ASSIGN_OR_RETURN(en, ctx.Op("minimum", {en, hi}));
  // Length: ceil(|end - start| / |step|) when the step goes the right way.
  KILN_ASSIGN_OR_RETURN(ir::Expr span, ctx.Op("subtract", {en, st}));
  KILN_ASSIGN_OR_RETURN(ir::Expr back, ctx.Op("negative", {span}));
  KILN_ASSIGN_OR_RETURN(span, ctx.Op("where", {fwd, span, back}));
  KILN_ASSIGN_OR_RETURN(span, ctx.Op("maximum", {span, I64(0)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr mag, ctx.Op("abs", {sp}));
  KILN_ASSIGN_OR_RETURN(ir::Expr num, ctx.Op("add", {span, mag}));
  KILN_ASSIGN_OR_RETURN(num, ctx.Op("subtract", {num, I64(1)}));
  KILN_ASSIGN_OR_RETURN(ir::Expr len, ctx.Op("floor_divide", {num, mag}));
  KILN_ASSIGN_OR_RETURN(ir::Expr len_bad, ctx.Op("concat", {Tuple({len, bad})}, {{"axis", AttrI(0)}}));
  std::vector<PrimExpr> expected(static_cast<size_t>(r) + 1);
  expected[static_cast<size_t>(r)] = PrimExpr(int64_t{0});
  std::vector<std::string> messages(static_cast<size_t>(r) + 1);
  messages[static_cast<size_t>(r)] = AxesOutOfRangeMessage(ctx, 3, r);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out,
                        ReadShapeAtRunTime(ctx, len_bad, r + 1, ctx.node().output(0) + "_len_and_count_of_axes_out_of_range",
                                           expected, messages));
  out.pop_back();
  // One gather per axis: start + arange(len) * step.
  KILN_ASSIGN_OR_RETURN(ir::Expr y, ctx.Input(0));
  for (int64_t a = 0; a < r; ++a) {
    auto elem = [&](ir::Expr t) {
      return ctx.Op("strided_slice", {t}, {{"axes", AttrInts({0})}, {"begin", AttrInts({a})}, {"end", AttrInts({a + 1})},
                                           {"strides", AttrInts({1})}, {"assume_inbound", AttrB(true)}});
    };
    const PrimExpr& n = out[static_cast<size_t>(a)];
    KILN_ASSIGN_OR_RETURN(ir::Expr ar, ctx.Op("arange", {PrimValue(PrimExpr(int64_t{0})), PrimValue(n), PrimValue(PrimExpr(int64_t{1}))},
                                              {{"dtype", AttrS("int64")}}));
    KILN_ASSIGN_OR_RETURN(ir::Expr s0, elem(st));
    KILN_ASSIGN_OR_RETURN(ir::Expr d0, elem(sp));
    KILN_ASSIGN_OR_RETURN(ir::Expr idx, ctx.Op("multiply", {ar, d0}));
    KILN_ASSIGN_OR_RETURN(idx, ctx.Op("add", {idx, s0}));
    KILN_ASSIGN_OR_RETURN(y, ctx.Op("take", {y, idx}, {{"axis", AttrI(a)}}));
  }
  return Set(ctx, y);
}

}  // namespace onnx
}  // namespace kiln
