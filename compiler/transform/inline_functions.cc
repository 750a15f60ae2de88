#include "compiler/transform/inline_functions.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/regroup_dataflow.h"

namespace kiln {
namespace transform {
namespace {

using VarMap = std::map<const ir::VarNode*, ir::PrimExpr>;
using DimPairs = std::vector<std::pair<ir::PrimExpr, ir::PrimExpr>>;  // (callee's, caller's)

// How often each function is named (as a call's target or as a value).
void CountRefs(const ir::Expr& e, std::map<std::string, int>* refs) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kGlobalVar: ++(*refs)[static_cast<const ir::GlobalVarExpr&>(*e).name]; break;
    case ir::ExprKind::kExternFunc: ++(*refs)[static_cast<const ir::ExternFuncExpr&>(*e).global_symbol]; break;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CountRefs(f, refs);
      break;
    case ir::ExprKind::kTupleGetItem: CountRefs(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, refs); break;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CountRefs(c.op, refs);
      for (const auto& a : c.args) CountRefs(a, refs);
      break;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CountRefs(bind.value, refs);
      CountRefs(s.body, refs);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CountRefs(i.cond, refs);
      CountRefs(i.then_branch, refs);
      CountRefs(i.else_branch, refs);
      break;
    }
    default: break;
  }
}

// The variables of a dimension; nullptr for a part that is not integer
// arithmetic on variables.
void DimVars(const ir::PrimExpr& e, std::set<const ir::VarNode*>* out) {
  if (!e.defined() || e.as<ir::IntImmNode>()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    out->insert(v);
  } else if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    DimVars(b->a, out);
    DimVars(b->b, out);
  } else {
    out->insert(nullptr);
  }
}

void SInfoVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out) {
  if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
    for (const auto& d : t->shape) DimVars(d, out);
  } else if (const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s)) {
    for (const auto& d : sh->values) DimVars(d, out);
  } else if (const auto* p = ir::SInfoAs<ir::PrimSInfo>(s)) {
    DimVars(p->value, out);
  } else if (const auto* tu = ir::SInfoAs<ir::TupleSInfo>(s)) {
    for (const auto& f : tu->fields) SInfoVars(f, out);
  }
}

// The symbolic variables a function defines: its parameters' and its
// match_casts' (in any block, arms included).
void MatchCastVars(const ir::Expr& e, std::set<const ir::VarNode*>* out) {
  if (const auto* s = ir::ExprAs<ir::SeqExprNode>(e)) {
    for (const auto& block : s->blocks)
      for (const auto& b : block.bindings) {
        if (b.match_cast) SInfoVars(b.match_cast, out);
        MatchCastVars(b.value, out);
      }
  } else if (const auto* i = ir::ExprAs<ir::IfExpr>(e)) {
    MatchCastVars(i->then_branch, out);
    MatchCastVars(i->else_branch, out);
  }
}

std::set<const ir::VarNode*> Scope(const ir::FunctionExpr& f) {
  std::set<const ir::VarNode*> scope;
  for (const auto& p : f.params) SInfoVars(p->struct_info, &scope);
  MatchCastVars(f.body, &scope);
  scope.erase(nullptr);
  return scope;
}

// The dimensions of `param` (the callee's) beside those of `arg` (the
// caller's); false where a value of `arg`'s struct info might not have
// `param`'s kind, dtype or rank.
bool PairDims(const ir::StructInfo& param, const ir::StructInfo& arg, DimPairs* out) {
  if (!param || !arg) return false;
  switch (param->kind) {
    case ir::SInfoKind::kObject: return true;
    case ir::SInfoKind::kTensor: {
      const auto* p = ir::SInfoAs<ir::TensorSInfo>(param);
      const auto* a = ir::SInfoAs<ir::TensorSInfo>(arg);
      if (!a || (p->has_dtype && (!a->has_dtype || a->dtype != p->dtype))) return false;
      if (p->ndim >= 0 && a->ndim != p->ndim) return false;
      if (!p->has_shape) return true;
      if (!a->has_shape || a->shape.size() != p->shape.size()) return false;
      for (size_t i = 0; i < p->shape.size(); ++i) out->push_back({p->shape[i], a->shape[i]});
      return true;
    }
    case ir::SInfoKind::kShape: {
      const auto* p = ir::SInfoAs<ir::ShapeSInfo>(param);
      const auto* a = ir::SInfoAs<ir::ShapeSInfo>(arg);
      if (!a || (p->ndim >= 0 && a->ndim != p->ndim)) return false;
      if (!p->has_values) return true;
      if (!a->has_values || a->values.size() != p->values.size()) return false;
      for (size_t i = 0; i < p->values.size(); ++i) out->push_back({p->values[i], a->values[i]});
      return true;
    }
    case ir::SInfoKind::kPrim: {
      const auto* p = ir::SInfoAs<ir::PrimSInfo>(param);
      const auto* a = ir::SInfoAs<ir::PrimSInfo>(arg);
      if (!a || a->dtype != p->dtype) return false;
      if (!p->value.defined()) return true;
      if (!a->value.defined()) return false;
      out->push_back({p->value, a->value});
      return true;
    }
    case ir::SInfoKind::kTuple: {
      const auto* p = ir::SInfoAs<ir::TupleSInfo>(param);
      const auto* a = ir::SInfoAs<ir::TupleSInfo>(arg);
      if (!a || a->fields.size() != p->fields.size()) return false;
      for (size_t i = 0; i < p->fields.size(); ++i)
        if (!PairDims(p->fields[i], a->fields[i], out)) return false;
      return true;
    }
    case ir::SInfoKind::kFunc: return false;
  }
  return false;
}

// Binds the unbound variables of `p` so that it reads like `a`: a variable
// takes `a`; an operation matches the same operation.
bool Match(const ir::PrimExpr& p, const ir::PrimExpr& a, VarMap* vmap) {
  if (const auto* v = p.as<ir::VarNode>()) {
    if (!vmap->count(v)) (*vmap)[v] = a;
    return true;  // a bound variable is checked with the rest
  }
  if (p.as<ir::IntImmNode>()) return true;
  if (!ir::IsBinary(p->kind()) || p->kind() != a->kind()) return false;
  const auto* pb = static_cast<const ir::BinaryNode*>(p.get());
  const auto* ab = static_cast<const ir::BinaryNode*>(a.get());
  return Match(pb->a, ab->a, vmap) && Match(pb->b, ab->b, vmap);
}

// The callee's symbolic variables in the caller's terms, when every
// parameter's dimensions then provably equal the arguments'.
bool BindParams(const ir::FunctionExpr& callee, const std::vector<ir::Expr>& args,
                const std::set<const ir::VarNode*>& scope, VarMap* vmap) {
  DimPairs pairs;
  std::set<const ir::VarNode*> needed;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!PairDims(callee.params[i]->struct_info, args[i]->struct_info, &pairs)) return false;
    SInfoVars(callee.params[i]->struct_info, &needed);
  }
  if (needed.count(nullptr)) return false;
  // Plain variables first, so compound dimensions only fill in the rest.
  for (const auto& [p, a] : pairs)
    if (const auto* v = p.as<ir::VarNode>()) vmap->emplace(v, a);
  for (const auto& [p, a] : pairs)
    if (!Match(p, a, vmap)) return false;
  for (const ir::VarNode* v : needed) {
    auto it = vmap->find(v);
    if (it == vmap->end()) return false;
    std::set<const ir::VarNode*> uses;
    DimVars(it->second, &uses);
    for (const ir::VarNode* u : uses)
      if (!scope.count(u)) return false;
  }
  for (const auto& [p, a] : pairs)
    if (!arith::CanProveEqual(arith::Substitute(p, *vmap), a)) return false;
  return true;
}

// A copy of the callee's body in the caller: parameters read the arguments,
// symbolic variables the caller's expressions, every binding a new variable.
class BodyCopier : public ExprMutator {
 public:
  BodyCopier(const ir::FunctionExpr& callee, const std::vector<ir::Expr>& args, VarMap vmap) : vmap_(std::move(vmap)) {
    copy_vars_ = true;
    for (size_t i = 0; i < args.size(); ++i) var_remap_[callee.params[i].get()] = args[i];
  }
  ir::Expr Copy(const ir::Expr& e) { return VisitExpr(e); }
  ir::PrimExpr VisitPrimExpr(const ir::PrimExpr& e) override { return arith::Substitute(e, vmap_); }
  ir::StructInfo VisitStructInfo(const ir::StructInfo& s) override { return MapShapes(s); }

 private:
  VarMap vmap_;
};

class Renamer : public ExprMutator {
 public:
  ir::Expr Rename(const ir::Expr& e) { return VisitExpr(e); }
  void Replace(const ir::VarExpr* old, ir::Expr now) { var_remap_[old] = std::move(now); }
};

// `seq` (a function's body or an If arm) with its binding (block k, binding
// j), a call of `callee`, inlined: the new blocks and body; false when that
// would lose a check. `scope`: the caller's symbolic variables.
bool SpliceCall(const ir::SeqExprNode& seq, size_t k, size_t j, const ir::FunctionExpr& callee,
                const std::set<const ir::VarNode*>& scope, std::vector<ir::BindingBlock>* blocks, ir::Expr* body) {
  const ir::Binding& site = seq.blocks[k].bindings[j];
  const auto& call = static_cast<const ir::CallExpr&>(*site.value);
  VarMap vmap;
  if (!BindParams(callee, call.args, scope, &vmap)) return false;
  if (!ir::ExprAs<ir::SeqExprNode>(callee.body)) return false;
  BodyCopier copier(callee, call.args, std::move(vmap));
  const ir::Expr copied = copier.Copy(callee.body);
  const auto& copy = static_cast<const ir::SeqExprNode&>(*copied);

  blocks->assign(seq.blocks.begin(), seq.blocks.begin() + static_cast<std::ptrdiff_t>(k));
  ir::BindingBlock before;
  before.bindings.assign(seq.blocks[k].bindings.begin(), seq.blocks[k].bindings.begin() + static_cast<std::ptrdiff_t>(j));
  if (!before.bindings.empty()) blocks->push_back(std::move(before));
  blocks->insert(blocks->end(), copy.blocks.begin(), copy.blocks.end());
  ir::BindingBlock after;
  ir::Expr result = copy.body;
  if (!ir::ExprAs<ir::VarExpr>(result)) {
    ir::Binding b;
    b.var = ir::MakeRVar(site.var->name);
    b.value = result;
    b.span = site.span;
    after.bindings.push_back(b);
    result = b.var;
  }
  // A tuple result's fields, when the callee built it (`return (a, b)`).
  const ir::TupleExpr* fields = nullptr;
  for (const auto& block : copy.blocks)
    for (const auto& b : block.bindings)
      if (b.var == result && !b.match_cast) fields = ir::ExprAs<ir::TupleExpr>(b.value);
  // Uses of the call's result, and of its aliases, read the inlined result;
  // its items read the fields (no tuple is built and taken apart again).
  Renamer renamer;
  renamer.Replace(site.var.get(), result);
  auto rest = [&](const std::vector<ir::Binding>& bindings, size_t from, ir::BindingBlock* out) {
    for (size_t i = from; i < bindings.size(); ++i) {
      ir::Binding b = bindings[i];
      b.value = renamer.Rename(b.value);
      if (!b.match_cast && b.value == result) {
        renamer.Replace(b.var.get(), result);
        continue;
      }
      const auto* item = ir::ExprAs<ir::TupleGetItemExpr>(b.value);
      if (!b.match_cast && fields && item && item->tuple == result && item->index >= 0 &&
          item->index < static_cast<int>(fields->fields.size())) {
        renamer.Replace(b.var.get(), fields->fields[item->index]);
        continue;
      }
      out->bindings.push_back(std::move(b));
    }
  };
  rest(seq.blocks[k].bindings, j + 1, &after);
  if (!after.bindings.empty()) blocks->push_back(std::move(after));
  for (size_t i = k + 1; i < seq.blocks.size(); ++i) {
    ir::BindingBlock b;
    b.is_dataflow = seq.blocks[i].is_dataflow;
    rest(seq.blocks[i].bindings, 0, &b);
    if (!b.bindings.empty()) blocks->push_back(std::move(b));
  }
  *body = renamer.Rename(seq.body);
  return true;
}

bool IsPrimitive(const ir::FunctionExpr& f) {
  auto it = f.attrs.find("Primitive");
  return it != f.attrs.end();
}

// What InlineOne looks for calls with: the module, how often each function
// is named, and the caller.
struct Site {
  ir::IRModule* mod;
  std::map<std::string, int>* refs;
  const std::string* caller;
  std::set<const ir::VarNode*> scope;
  std::string inlined;  // the callee inlined, once one is
};

// `seq` with its first call that can be inlined inlined, searching its
// ordinary blocks and, inside them, the arms of Ifs (where a branch of an
// imported If is one call of a lifted function: inlined, the arm runs the
// branch's kernels in the caller's frame instead of calling a function that
// checks its arguments again, plans its own arena and returns a tuple).
// nullptr when there is none. `top`: seq is the function's body (its blocks
// are then regrouped by the caller; an arm keeps the callee's blocks, whose
// dataflow outputs are already what leaves them).
ir::Expr InlineInSeq(const ir::SeqExprNode& seq, Site* site) {
  for (size_t k = 0; k < seq.blocks.size(); ++k) {
    if (seq.blocks[k].is_dataflow) continue;
    for (size_t j = 0; j < seq.blocks[k].bindings.size(); ++j) {
      const ir::Binding& b = seq.blocks[k].bindings[j];
      if (const auto* i = ir::ExprAs<ir::IfExpr>(b.value)) {
        const auto* t = ir::ExprAs<ir::SeqExprNode>(i->then_branch);
        const auto* e = ir::ExprAs<ir::SeqExprNode>(i->else_branch);
        ir::Expr nt = t ? InlineInSeq(*t, site) : nullptr;
        ir::Expr ne = !nt && e ? InlineInSeq(*e, site) : nullptr;
        if (!nt && !ne) continue;
        auto ni = std::make_shared<ir::IfExpr>(i->cond, nt ? nt : i->then_branch, ne ? ne : i->else_branch);
        ni->span = i->span;
        ni->struct_info = i->struct_info;
        std::vector<ir::BindingBlock> blocks = seq.blocks;
        blocks[k].bindings[j].value = ni;
        auto ns = std::make_shared<ir::SeqExprNode>(std::move(blocks), seq.body);
        ns->span = seq.span;
        ns->struct_info = seq.struct_info;
        return ns;
      }
      const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
      const auto* gv = call && !b.match_cast ? ir::ExprAs<ir::GlobalVarExpr>(call->op) : nullptr;
      if (!gv || gv->name == *site->caller || (*site->refs)[gv->name] != 1) continue;
      ir::Function callee = site->mod->FindRelax(gv->name);
      if (!callee || !callee->is_private || IsPrimitive(*callee) || callee->params.size() != call->args.size()) continue;
      std::vector<ir::BindingBlock> blocks;
      ir::Expr body;
      if (!SpliceCall(seq, k, j, *callee, site->scope, &blocks, &body)) continue;
      site->inlined = gv->name;  // gv may die with the old function
      auto ns = std::make_shared<ir::SeqExprNode>(std::move(blocks), body);
      ns->span = seq.span;
      ns->struct_info = seq.struct_info;
      return ns;
    }
  }
  return nullptr;
}

// Inlines one call; false when there is none to inline.
bool InlineOne(ir::IRModule* mod) {
  std::map<std::string, int> refs;
  for (const auto& e : mod->entries)
    if (e.relax) CountRefs(e.relax->body, &refs);
  for (auto& e : mod->entries) {
    if (!e.relax || IsPrimitive(*e.relax)) continue;
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e.relax->body);
    if (!seq) continue;
    Site site{mod, &refs, &e.name, Scope(*e.relax), {}};
    ir::Expr ns = InlineInSeq(*seq, &site);
    if (!ns) continue;
    const auto& s = static_cast<const ir::SeqExprNode&>(*ns);
    e.relax = RegroupDataflow(ir::WithBody(e.relax, s.blocks, s.body, /*keep_struct_info=*/false));
    for (auto it = mod->entries.begin(); it != mod->entries.end(); ++it) {
      if (it->name == site.inlined) {
        mod->entries.erase(it);
        break;
      }
    }
    return true;
  }
  return false;
}

}  // namespace

Result<ir::IRModule> InlineFunctions(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  // Each round inlines one call and infers struct info again, so the next
  // call's arguments carry the caller's symbolic variables.
  while (InlineOne(&out)) {
    KILN_ASSIGN_OR_RETURN(out, relax::InferStructInfo(out));
  }
  return out;
}

}  // namespace transform
}  // namespace kiln
