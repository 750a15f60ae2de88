#include "compiler/relax/legalize_ops.h"

#include <map>
#include <memory>
#include <set>
#include <string>

#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace relax {
namespace {

// The symbolic variables struct info mentions, by name (each name once;
// `ambiguous` gets names two different variables share).
class CallerVars : public tir::StmtExprVisitor {
 public:
  void VisitExpr(const ir::PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      auto it = by_name.find(v->name);
      if (it == by_name.end()) {
        by_name.emplace(v->name, e);
      } else if (it->second.get() != v) {
        ambiguous.insert(v->name);
      }
    }
    tir::StmtExprVisitor::VisitExpr(e);
  }
  void Visit(const ir::StructInfo& s) {
    if (!s) return;
    if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
      for (const auto& d : t->shape) VisitExpr(d);
    } else if (const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s)) {
      for (const auto& d : sh->values) VisitExpr(d);
    } else if (const auto* p = ir::SInfoAs<ir::PrimSInfo>(s)) {
      if (p->value.defined()) VisitExpr(p->value);
    } else if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(s)) {
      for (const auto& f : tup->fields) Visit(f);
    }
  }
  std::map<std::string, ir::PrimExpr> by_name;
  std::set<std::string> ambiguous;
};

// The caller's values of `f`'s scalar parameters: te::FuncBuilder names each
// after the caller's variable it stands for, which the call's operands or
// result mention. Empty when `f` takes buffers only.
Result<std::vector<ir::PrimExpr>> TirVars(const ir::PrimFuncNode& f, const ir::CallExpr& call) {
  std::vector<ir::PrimExpr> values;
  CallerVars vars;
  bool collected = false;
  for (const auto& p : f.params) {
    if (f.BufferOf(p)) continue;
    if (!collected) {
      for (const auto& a : call.args) vars.Visit(a->struct_info);
      vars.Visit(call.struct_info);
      collected = true;
    }
    auto it = vars.by_name.find(p->name);
    if (it == vars.by_name.end() || vars.ambiguous.count(p->name)) {
      // Legalizations build kernels from the call's shapes only, and a
      // function's symbolic variables have distinct names.
      return Internal(Where(call.span) + OpDisplayName(call) + ": kernel " + f.name + " needs the symbolic variable '" +
                           p->name + "', which " +
                           (it == vars.by_name.end() ? "the call does not mention" : "names two different variables here"));
    }
    values.push_back(it->second);
  }
  return values;
}

class Legalizer {
 public:
  explicit Legalizer(ir::IRModule* mod) : mod_(mod) {}

  Result<ir::Expr> VisitSeq(const ir::Expr& e) {
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e);
    if (!seq) return e;
    bool changed = false;
    std::vector<ir::BindingBlock> blocks = seq->blocks;
    for (auto& block : blocks) {
      for (auto& b : block.bindings) {
        KILN_ASSIGN_OR_RETURN(ir::Expr value, VisitValue(b.value));
        if (value != b.value) {
          b.value = value;
          changed = true;
        }
      }
    }
    // The result may itself be an operator call (`return R.add(x, y)`).
    KILN_ASSIGN_OR_RETURN(ir::Expr body, VisitValue(seq->body));
    if (body != seq->body) changed = true;
    if (!changed) return e;
    auto out = std::make_shared<ir::SeqExprNode>(std::move(blocks), body);
    out->span = seq->span;
    out->struct_info = seq->struct_info;
    return ir::Expr(out);
  }

 private:
  Result<ir::Expr> VisitValue(const ir::Expr& e) {
    if (const auto* i = ir::ExprAs<ir::IfExpr>(e)) {
      KILN_ASSIGN_OR_RETURN(ir::Expr t, VisitSeq(i->then_branch));
      KILN_ASSIGN_OR_RETURN(ir::Expr f, VisitSeq(i->else_branch));
      if (t == i->then_branch && f == i->else_branch) return e;
      auto out = std::make_shared<ir::IfExpr>(i->cond, t, f);
      out->span = i->span;
      out->struct_info = i->struct_info;
      return ir::Expr(out);
    }
    // Operator calls nested in other expressions (R.add(R.nn.relu(x), y),
    // tuple fields) are legalized in place, innermost first.
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(e)) {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Expr> fields, VisitAll(t->fields));
      if (fields == t->fields) return e;
      auto out = std::make_shared<ir::TupleExpr>(std::move(fields));
      out->span = t->span;
      out->struct_info = t->struct_info;
      return ir::Expr(out);
    }
    if (const auto* g = ir::ExprAs<ir::TupleGetItemExpr>(e)) {
      KILN_ASSIGN_OR_RETURN(ir::Expr tuple, VisitValue(g->tuple));
      if (tuple == g->tuple) return e;
      auto out = std::make_shared<ir::TupleGetItemExpr>(tuple, g->index);
      out->span = g->span;
      out->struct_info = g->struct_info;
      return ir::Expr(out);
    }
    const auto* call = ir::ExprAs<ir::CallExpr>(e);
    if (!call) return e;
    ir::Expr rebuilt = e;
    KILN_ASSIGN_OR_RETURN(std::vector<ir::Expr> new_args, VisitAll(call->args));
    if (new_args != call->args) {
      auto c = std::make_shared<ir::CallExpr>(call->op, std::move(new_args), call->attrs, call->sinfo_args);
      c->span = call->span;
      c->struct_info = call->struct_info;
      rebuilt = c;
      call = c.get();
    }
    const auto* op = ir::ExprAs<ir::OpExpr>(call->op);
    if (!op) return rebuilt;
    const OpInfo* info = FindOp(op->name);
    if (!info || !info->legalize) return rebuilt;  // call_tir / call_dps_packed stay

    // The kernel takes the call's tensors only: tuple arguments (concat) are
    // flattened into their fields; shapes and values (reshape's target) are
    // already folded into the PrimFunc.
    std::vector<ir::Expr> tensor_args;
    for (const auto& a : call->args) FlattenTensors(a, &tensor_args);
    auto args = std::make_shared<ir::TupleExpr>(tensor_args);
    std::vector<ir::StructInfo> arg_sinfo;
    for (const auto& a : tensor_args) arg_sinfo.push_back(a->struct_info);
    args->struct_info = std::make_shared<ir::TupleSInfo>(arg_sinfo);

    std::string name = mod_->UniqueName(info->short_name);
    KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, info->legalize(*call, name));
    // Fusion reads the operator's pattern from the kernel.
    auto nf = std::make_shared<ir::PrimFuncNode>(*f);
    nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
    nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(info->pattern);
    mod_->Add(name, ir::PrimFunc(nf));
    ir::Expr callee = std::make_shared<ir::GlobalVarExpr>(name);
    callee->struct_info = std::make_shared<ir::ObjectSInfo>();
    // A tuple result (split, topk) is one out_sinfo per output buffer.
    std::vector<ir::StructInfo> out_sinfo{call->struct_info};
    if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(call->struct_info)) out_sinfo = tup->fields;
    std::vector<ir::Expr> call_args{callee, args};
    KILN_ASSIGN_OR_RETURN(std::vector<ir::PrimExpr> tir_vars, TirVars(*f, *call));
    if (!tir_vars.empty()) {
      auto shape = std::make_shared<ir::ShapeExpr>(tir_vars);
      shape->struct_info = std::make_shared<ir::ShapeSInfo>(true, tir_vars, static_cast<int>(tir_vars.size()));
      call_args.push_back(shape);
    }
    auto out = std::make_shared<ir::CallExpr>(std::make_shared<ir::OpExpr>("relax.call_tir"), std::move(call_args),
                                              ir::AttrMap{}, std::move(out_sinfo));
    out->span = call->span;
    out->struct_info = call->struct_info;
    // A one-field tuple (split into 1 part) is one output buffer, which the
    // call returns as a tensor: wrap it back into the tuple the op promised.
    if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(call->struct_info); tup && tup->fields.size() == 1) {
      out->struct_info = tup->fields[0];
      auto wrapped = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{out});
      wrapped->span = call->span;
      wrapped->struct_info = call->struct_info;
      return ir::Expr(wrapped);
    }
    return ir::Expr(out);
  }

  // Appends the tensors of `e`: itself, the fields of a tuple expression, or
  // t[i] for each field of a tuple-typed value; anything else is skipped.
  static void FlattenTensors(const ir::Expr& e, std::vector<ir::Expr>* out) {
    if (ir::SInfoAs<ir::TensorSInfo>(e->struct_info)) {
      out->push_back(e);
    } else if (const auto* t = ir::ExprAs<ir::TupleExpr>(e)) {
      for (const auto& f : t->fields) FlattenTensors(f, out);
    } else if (const auto* ts = ir::SInfoAs<ir::TupleSInfo>(e->struct_info)) {
      for (size_t i = 0; i < ts->fields.size(); ++i) {
        auto item = std::make_shared<ir::TupleGetItemExpr>(e, static_cast<int>(i));
        item->span = e->span;
        item->struct_info = ts->fields[i];
        FlattenTensors(item, out);
      }
    }
  }

  Result<std::vector<ir::Expr>> VisitAll(const std::vector<ir::Expr>& exprs) {
    std::vector<ir::Expr> out;
    for (const auto& x : exprs) {
      KILN_ASSIGN_OR_RETURN(ir::Expr v, VisitValue(x));
      out.push_back(v);
    }
    return out;
  }

  ir::IRModule* mod_;
};

}  // namespace

Result<ir::IRModule> LegalizeOps(const ir::IRModule& mod, const LegalizeOptions& /*options*/) {
  ir::IRModule out = mod;
  Legalizer legalizer(&out);
  for (size_t i = 0; i < out.entries.size(); ++i) {
    ir::Function f = out.entries[i].relax;
    if (!f) continue;
    KILN_ASSIGN_OR_RETURN(ir::Expr body, legalizer.VisitSeq(f->body));
    if (body == f->body) continue;
    auto nf = std::make_shared<ir::FunctionExpr>(*f);
    nf->body = body;
    out.entries[i].relax = nf;  // entries may have grown; index stays valid
  }
  return out;
}

}  // namespace relax
}  // namespace kiln
