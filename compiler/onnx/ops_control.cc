// Control flow: If.
//
// A condition known at import time (a constant, or folded shape arithmetic)
// imports only the branch it takes, into the function being built, so that
// exporters' static checks leave no trace in the program. Otherwise each
// branch is lifted into a private Relax function of its own (its enclosing
// values become parameters; subgraph_import.cc) and the node becomes
//
//     if cond:  r = cls.main_then(args...)
//     else:     r = cls.main_else(args...)
//
// between two dataflow blocks of the calling function (Relax keeps `if` out
// of dataflow blocks). Outputs whose shapes differ between the branches get
// fresh symbolic dimensions by R.match_cast, so later operators still see
// their rank and dtype. Outputs whose ranks (or dtypes) differ between the
// branches cannot be one Relax value: what follows the If is then imported
// once per branch (if_tail.cc).
//
// A branch that does not import because the model is wrong on that path at
// these shapes (its operators refuse their operands: typically a shape check
// inside it folded, with the input dimensions pinned, into a path that only
// inputs the If excludes would take) becomes an arm that raises those
// problems when it runs, as long as the other branch imports: ONNX Runtime
// fails the same path only when it runs. silero-vad pinned to 16 kHz frames
// is this: its 8 kHz branch feeds LSTM a rank-5 tensor at 512 samples.
#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

// The branch `fn(args)` as an If arm: a sequence that binds the call.
ir::Expr BranchCall(const builder::BlockBuilder& bb, const std::string& fn, const std::vector<ir::Expr>& args) {
  ir::StructInfo ret = bb.module().FindRelax(fn)->ret_sinfo;
  auto call = std::make_shared<ir::CallExpr>(std::make_shared<ir::GlobalVarExpr>(fn), args);
  call->struct_info = ret;
  ir::RVar r = ir::MakeRVar(fn + "_result");
  r->struct_info = ret;
  ir::BindingBlock block;
  block.bindings.push_back(ir::Binding{r, call, nullptr, {}});
  auto seq = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, r);
  seq->struct_info = ret;
  return seq;
}

// Whether a one-element constant is non-zero (any element type).
bool Truth(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.NumBytes(); ++i)
    if (p[i] != 0) return true;
  return false;
}

// Whether two branch results are tensors (or tuples of tensors) of the same
// ranks and dtypes, so that one Relax value can hold either.
bool SameRanksAndDtypes(const ir::StructInfo& a, const ir::StructInfo& b) {
  const auto* ta = ir::SInfoAs<ir::TupleSInfo>(a);
  const auto* tb = ir::SInfoAs<ir::TupleSInfo>(b);
  if (ta != nullptr || tb != nullptr) {
    if (ta == nullptr || tb == nullptr || ta->fields.size() != tb->fields.size()) return false;
    for (size_t i = 0; i < ta->fields.size(); ++i)
      if (!SameRanksAndDtypes(ta->fields[i], tb->fields[i])) return false;
    return true;
  }
  const auto* xa = ir::SInfoAs<ir::TensorSInfo>(a);
  const auto* xb = ir::SInfoAs<ir::TensorSInfo>(b);
  if (xa == nullptr || xb == nullptr) return true;  // not tensors: left to the checks below
  return xa->ndim == xb->ndim && xa->has_dtype == xb->has_dtype && (!xa->has_dtype || xa->dtype == xb->dtype);
}

// The declared type of a raise arm standing for a branch of type `s`: `s`
// itself where every dimension is a constant (binding none), so that pinned
// shapes stay known after the If; its ranks and dtypes otherwise.
ir::StructInfo NeverReturnsType(const ir::StructInfo& s) {
  std::set<const ir::VarNode*> vars;
  CollectDimVars(s, &vars);
  if (!vars.empty()) return RanksOnly(s);
  if (const auto* t = ir::SInfoAs<ir::TupleSInfo>(s)) {
    for (const auto& f : t->fields) {
      const auto* ft = ir::SInfoAs<ir::TensorSInfo>(f);
      if (ft != nullptr && !ft->has_shape) return RanksOnly(s);
    }
  } else if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
    if (!t->has_shape) return RanksOnly(s);
  }
  return s;
}

Status ConvertIf(NodeCtx& ctx) {
  const ::onnx::AttributeProto* then_attr = ctx.Attr("then_branch");
  const ::onnx::AttributeProto* else_attr = ctx.Attr("else_branch");
  if (then_attr == nullptr || !then_attr->has_g() || else_attr == nullptr || !else_attr->has_g()) {
    return ctx.Invalid("then_branch and else_branch (graphs) are required");
  }
  const ::onnx::GraphProto& then_g = then_attr->g();
  const ::onnx::GraphProto& else_g = else_attr->g();
  size_t n = ctx.NumOutputs();
  if (static_cast<size_t>(then_g.output_size()) != n || static_cast<size_t>(else_g.output_size()) != n) {
    return ctx.Invalid("the branches have " + std::to_string(then_g.output_size()) + " and " +
                       std::to_string(else_g.output_size()) + " outputs; the node has " + std::to_string(n));
  }
  Importer* imp = ctx.importer();

  // A condition known at import time takes one branch, inline.
  KILN_ASSIGN_OR_RETURN(const Value* cv, ctx.In(0));
  std::optional<bool> known;
  if (cv->constant.defined() && cv->constant.NumElements() == 1) {
    known = Truth(cv->constant);
  } else if (cv->known && cv->known->elems.size() == 1) {
    if (auto c = ConstDim(cv->known->elems[0])) known = *c != 0;
  }
  if (known) {
    std::vector<Value> outs;
    KILN_RETURN_IF_ERROR(imp->ImportInline(*known ? then_g : else_g, &outs));
    for (size_t i = 0; i < n; ++i) ctx.SetOutputValue(i, outs[i]);
    return Status::Ok();
  }

  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* ci, ctx.Info(0));
  if (ci->has_dtype && ci->dtype != DType::Bool()) return ctx.Unsupported("a condition of dtype " + DTypeName(ci->dtype) + " (bool only)");
  for (const auto& d : ci->shape) {
    auto c = ConstDim(d);
    if (!c || *c != 1) return ctx.Invalid("the condition must hold one element");
  }
  std::string base = IdentifierText(ctx.node().name().empty() ? "if" : ctx.node().name());
  // From here on the bindings sit outside a dataflow block; the branches'
  // arguments are taken after it ends, as the variables that leave it.
  KILN_RETURN_IF_ERROR(imp->SuspendDataflow());
  std::vector<ir::Expr> then_args, else_args;
  std::vector<std::string> then_wrong, else_wrong;
  Result<std::string> then_fn = imp->LiftBranch(then_g, base + "_then", &then_args, &then_wrong);
  Result<std::string> else_fn = imp->LiftBranch(else_g, base + "_else", &else_args, &else_wrong);
  if (!then_fn.ok() || !else_fn.ok()) {
    // A branch the model gets wrong at these shapes (pinned ones fold its
    // shape checks into a path whose operators refuse their operands) is
    // no error while the other branch imports: ONNX Runtime too fails only
    // when that branch runs, so it raises then. Otherwise what failed is
    // listed.
    const Result<std::string>& failed = then_fn.ok() ? else_fn : then_fn;
    const std::vector<std::string>& wrong = then_fn.ok() ? else_wrong : then_wrong;
    if (!then_fn.ok() && !else_fn.ok()) {
      imp->AddProblems(then_wrong);
      imp->AddProblems(else_wrong);
      if (!then_wrong.empty() && !else_wrong.empty()) {
        return ctx.Invalid("neither branch can run at these shapes (the problems are listed)");
      }
      return then_wrong.empty() ? then_fn.status() : else_fn.status();
    }
    if (wrong.empty()) return failed.status();
  }
  builder::BlockBuilder& bb = imp->bb();
  KILN_ASSIGN_OR_RETURN(ir::Expr cond, ctx.Input(0));
  if (ci->ndim != 0) { KILN_ASSIGN_OR_RETURN(cond, ctx.Op("reshape", {cond, MakeShape({})})); }
  ir::Expr then_arm, else_arm;
  if (then_fn.ok() && else_fn.ok()) {
    if (!SameRanksAndDtypes(bb.module().FindRelax(*then_fn)->ret_sinfo, bb.module().FindRelax(*else_fn)->ret_sinfo)) {
      // A Relax value has one rank: what follows is imported once per branch.
      return imp->SplitIfTail(ctx, IfBranches{cond, *then_fn, *else_fn, then_args, else_args});
    }
    then_arm = BranchCall(bb, *then_fn, then_args);
    else_arm = BranchCall(bb, *else_fn, else_args);
  } else {
    bool then_runs = then_fn.ok();
    const std::string& good = then_runs ? *then_fn : *else_fn;
    ir::Expr runs = BranchCall(bb, good, then_runs ? then_args : else_args);
    std::string message = imp->CurrentNodeLabel() + ": its " + (then_runs ? "false" : "true") +
                          " branch cannot run at these shapes:";
    for (const auto& p : then_runs ? else_wrong : then_wrong) message += "\n  " + p;
    ir::Expr raises = RaiseArm(message, NeverReturnsType(bb.module().FindRelax(good)->ret_sinfo),
                               base + (then_runs ? "_else_raise" : "_then_raise"));
    then_arm = then_runs ? runs : raises;
    else_arm = then_runs ? raises : runs;
  }
  auto if_expr = std::make_shared<ir::IfExpr>(cond, then_arm, else_arm);
  KILN_ASSIGN_OR_RETURN(ir::RVar r, bb.Emit(if_expr));
  std::vector<ir::Expr> outs;
  if (n == 1) {
    outs.push_back(r);
  } else {
    for (size_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(ir::RVar item, bb.Emit(std::make_shared<ir::TupleGetItemExpr>(r, static_cast<int>(i))));
      outs.push_back(item);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(outs[i]->struct_info);
    if (t == nullptr || t->ndim < 0 || !t->has_dtype) {
      return ctx.Unsupported("output " + std::to_string(i) + ": the branches give tensors of different ranks or dtypes");
    }
    if (!t->has_shape) {
      std::vector<ir::PrimExpr> dims;
      for (int k = 0; k < t->ndim; ++k) dims.push_back(ir::PrimExpr(ir::MakeVar(IdentifierText(ctx.node().output(static_cast<int>(i))) + "_dim" + std::to_string(k))));
      KILN_ASSIGN_OR_RETURN(ir::RVar cast, bb.EmitMatchCast(outs[i], ir::MakeTensorSInfo(dims, t->dtype)));
      outs[i] = cast;
    }
  }
  KILN_RETURN_IF_ERROR(imp->ResumeDataflow());
  for (size_t i = 0; i < n; ++i) ctx.SetOutput(i, outs[i]);
  return Status::Ok();
}

}  // namespace

void AddControlFlowConverters(ConverterTable* t) { (*t)["If"] = ConvertIf; }

}  // namespace onnx
}  // namespace kiln
