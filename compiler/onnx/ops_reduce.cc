// Reductions and scans: Reduce{Mean,Sum,Max,Min,Prod}, ArgMax/ArgMin,
// CumSum, TopK, Trilu.
#include <algorithm>

#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/run_time_axes.h"

namespace kiln {
namespace onnx {
namespace {

using ir::PrimExpr;

Status Set(NodeCtx& ctx, Result<ir::Expr> r) {
  if (!r.ok()) return r.status();
  ctx.SetOutput(0, *r);
  return Status::Ok();
}

struct ReduceDef {
  const char* onnx;
  const char* relax;
  ir::TirKind fold;
};

const ReduceDef kReduce[] = {
    {"ReduceMean", "mean", ir::TirKind::kAdd}, {"ReduceSum", "sum", ir::TirKind::kAdd},
    {"ReduceMax", "max", ir::TirKind::kMax},   {"ReduceMin", "min", ir::TirKind::kMin},
    {"ReduceProd", "prod", ir::TirKind::kMul},
};

Status ConvertReduce(NodeCtx& ctx) {
  const ReduceDef* def = nullptr;
  for (const auto& d : kReduce)
    if (ctx.op_type() == d.onnx) def = &d;
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t keepdims, ctx.AttrInt("keepdims", 1));
  KILN_ASSIGN_OR_RETURN(int64_t noop_empty, ctx.AttrInt("noop_with_empty_axes", 0));
  // Axes: an input for ReduceSum from opset 13 (and the others from 18).
  bool axes_input = (ctx.op_type() == "ReduceSum" && ctx.opset() >= 13) || ctx.opset() >= 18;
  std::vector<int64_t> axes;
  if (axes_input) {
    if (IsRunTimeOperand(ctx, 1)) {
      // Axes fed when the program runs: their count is static; an empty
      // list is decided here, the rest reduce over a run-time view.
      KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ai, ctx.Info(1));
      std::optional<int64_t> n = ai->ndim == 1 && ai->has_shape ? ConstDim(ai->shape[0]) : std::nullopt;
      if (!(n && *n == 0) && xi->ndim > 0) return RunTimeReduce(ctx, def->relax, keepdims != 0, noop_empty != 0);
    } else if (ctx.HasInput(1)) {
      KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(1, "axes"));
    }
  } else {
    KILN_ASSIGN_OR_RETURN(axes, ctx.AttrInts("axes", {}));
  }
  KILN_ASSIGN_OR_RETURN(const Value* xv, ctx.In(0));
  if (axes.empty() && noop_empty) {
    ctx.SetOutputValue(0, *xv);
    return Status::Ok();
  }
  if (axes.empty())
    for (int64_t i = 0; i < xi->ndim; ++i) axes.push_back(i);
  for (auto& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, xi->ndim)); }
  std::sort(axes.begin(), axes.end());
  // A reduction of a known 1-D integer value (the product of a shape).
  if (xv->known && xv->known->shape.size() == 1 && ctx.op_type() != "ReduceMean") {
    KnownInts out;
    out.dtype = xv->known->dtype;
    PrimExpr acc;
    for (const auto& e : xv->known->elems) acc = acc.defined() ? SimplifyDim(ir::MakeBinary(def->fold, acc, e)) : e;
    if (acc.defined()) {
      out.elems = {acc};
      if (keepdims) out.shape = {1};
      ctx.SetOutputKnown(0, out);
      return Status::Ok();
    }
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op(def->relax, {x}, {{"axis", AttrInts(axes)}, {"keepdims", AttrB(keepdims != 0)}}));
}

// x reversed along `axis` (a static dimension): strided_slice with step -1.
Result<ir::Expr> Flip(NodeCtx& ctx, ir::Expr x, int64_t axis) {
  return ctx.Op("strided_slice", {x}, {{"axes", AttrInts({axis})}, {"begin", AttrInts({-1})},
                                       {"end", AttrInts({-(int64_t{1} << 40)})}, {"strides", AttrInts({-1})},
                                       {"assume_inbound", AttrB(false)}});
}

Status ConvertArgReduce(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", 0));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  KILN_ASSIGN_OR_RETURN(int64_t keepdims, ctx.AttrInt("keepdims", 1));
  KILN_ASSIGN_OR_RETURN(int64_t last, ctx.AttrInt("select_last_index", 0));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  const char* op = ctx.op_type() == "ArgMax" ? "argmax" : "argmin";
  ir::AttrMap attrs = {{"axis", AttrI(axis)}, {"keepdims", AttrB(keepdims != 0)}};
  if (!last) return Set(ctx, ctx.Op(op, {x}, attrs));
  // The last occurrence: the first one in the reversed axis, counted back.
  auto d = ConstDim(xi->shape[axis]);
  if (!d) return ctx.Unsupported("select_last_index=1 on a symbolic axis");
  KILN_ASSIGN_OR_RETURN(ir::Expr rev, Flip(ctx, x, axis));
  KILN_ASSIGN_OR_RETURN(ir::Expr idx, ctx.Op(op, {rev}, attrs));
  return Set(ctx, ctx.Op("subtract", {ScalarConst(DType::Int64(), static_cast<double>(*d - 1)), idx}));
}

Status ConvertCumSum(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  KILN_ASSIGN_OR_RETURN(int64_t exclusive, ctx.AttrInt("exclusive", 0));
  KILN_ASSIGN_OR_RETURN(int64_t reverse, ctx.AttrInt("reverse", 0));
  if (IsRunTimeOperand(ctx, 1)) return RunTimeCumSum(ctx, exclusive != 0, reverse != 0);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx.ConstInts(1, "axis"));
  if (axis.size() != 1) return ctx.Invalid("axis must hold one value");
  KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axis[0], xi->ndim));
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  ir::AttrMap attrs = {{"axis", AttrI(a)}, {"exclusive", AttrB(exclusive != 0)}};
  if (!reverse) return Set(ctx, ctx.Op("cumsum", {x}, attrs));
  KILN_ASSIGN_OR_RETURN(ir::Expr rev, Flip(ctx, x, a));
  KILN_ASSIGN_OR_RETURN(ir::Expr cs, ctx.Op("cumsum", {rev}, attrs));
  return Set(ctx, Flip(ctx, cs, a));
}

Status ConvertTopK(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* xi, ctx.Info(0));
  int64_t k = 0;
  PrimExpr k_expr;  // a K known only as a symbolic value (read at run time)
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.AttrInt("axis", -1));
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis, xi->ndim));
  if (ctx.opset() < 10) {
    KILN_ASSIGN_OR_RETURN(k, ctx.AttrInt("k", -1));
  } else {
    KILN_ASSIGN_OR_RETURN(const KnownInts* kk, ctx.ShapeOperand(1, "K"));
    if (kk->elems.size() != 1) return ctx.Invalid("K must hold one value");
    if (auto c = ConstDim(kk->elems[0])) {
      k = *c;
    } else {
      // The outputs' axis has K elements, a size the kernel takes as a
      // scalar; a K beyond the axis is cut to it (ONNX Runtime refuses it)
      // so that the kernel never reads outside its input.
      k_expr = SimplifyDim(ir::MakeBinary(ir::TirKind::kMin, kk->elems[0], xi->shape[static_cast<size_t>(axis)]));
    }
  }
  if (!k_expr.defined() && (k < 0 || k > kMaxElements)) return ctx.Invalid("K must lie in [0, 2^50]");
  KILN_ASSIGN_OR_RETURN(int64_t largest, ctx.AttrInt("largest", 1));
  KILN_ASSIGN_OR_RETURN(int64_t sorted, ctx.AttrInt("sorted", 1));
  if (!sorted) return ctx.Unsupported("sorted=0");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  ir::AttrMap attrs = {{"axis", AttrI(axis)}, {"ret_type", AttrS("both")}, {"largest", AttrB(largest != 0)},
                       {"dtype", AttrS("int64")}};
  std::vector<ir::Expr> args = {x};
  if (k_expr.defined()) {
    args.push_back(PrimValue(k_expr));
  } else {
    attrs["k"] = AttrI(k);
  }
  KILN_ASSIGN_OR_RETURN(ir::Expr r, ctx.Op("topk", args, attrs));
  for (int i = 0; i < 2; ++i) {
    if (!ctx.HasOutput(static_cast<size_t>(i))) continue;
    KILN_ASSIGN_OR_RETURN(ir::Expr p, ctx.Emit(std::make_shared<ir::TupleGetItemExpr>(r, i)));
    ctx.SetOutput(static_cast<size_t>(i), p);
  }
  return Status::Ok();
}

Status ConvertTrilu(NodeCtx& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t upper, ctx.AttrInt("upper", 1));
  int64_t k = 0;
  if (ctx.HasInput(1) && !ctx.Known(1) && !ctx.In(1).value()->constant.defined()) {
    // k fed as a run-time tensor: the kernel compares with it as a scalar.
    KILN_ASSIGN_OR_RETURN(PrimExpr kv, SignedRunTimeScalar(ctx, 1, "k"));
    KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
    return Set(ctx, ctx.Op(upper ? "triu" : "tril", {x, PrimValue(kv)}));
  }
  if (ctx.HasInput(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ctx.ConstInts(1, "k"));
    if (kv.size() != 1) return ctx.Invalid("k must hold one value");
    k = kv[0];
  }
  if (k > kMaxElements || k < -kMaxElements) return ctx.Invalid("k out of range");
  KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(0));
  return Set(ctx, ctx.Op(upper ? "triu" : "tril", {x, PrimValue(PrimExpr(k))}));
}

}  // namespace

void AddReduceConverters(ConverterTable* t) {
  for (const auto& d : kReduce) (*t)[d.onnx] = ConvertReduce;
  (*t)["ArgMax"] = ConvertArgReduce;
  (*t)["ArgMin"] = ConvertArgReduce;
  (*t)["CumSum"] = ConvertCumSum;
  (*t)["TopK"] = ConvertTopK;
  (*t)["Trilu"] = ConvertTrilu;
}

}  // namespace onnx
}  // namespace kiln
