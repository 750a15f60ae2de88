#include "compiler/relax/remove_unused.h"

#include <set>
#include <string>

namespace kiln {
namespace relax {
namespace {

// Collects every function name an expression refers to: GlobalVars, and
// ExternFunc names (R.call_dps_packed may name a PrimFunc of the module).
void CollectRefs(const ir::Expr& e, std::set<std::string>* out) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kGlobalVar: out->insert(static_cast<const ir::GlobalVarExpr&>(*e).name); break;
    case ir::ExprKind::kExternFunc: out->insert(static_cast<const ir::ExternFuncExpr&>(*e).global_symbol); break;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CollectRefs(f, out);
      break;
    case ir::ExprKind::kTupleGetItem: CollectRefs(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, out); break;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CollectRefs(c.op, out);
      for (const auto& a : c.args) CollectRefs(a, out);
      break;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CollectRefs(bind.value, out);
      CollectRefs(s.body, out);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CollectRefs(i.cond, out);
      CollectRefs(i.then_branch, out);
      CollectRefs(i.else_branch, out);
      break;
    }
    default: break;
  }
}

}  // namespace

ir::IRModule RemoveUnusedFunctions(const ir::IRModule& mod) {
  std::set<std::string> live;
  std::vector<std::string> work;
  for (const auto& e : mod.entries) {
    if (e.relax && !e.relax->is_private) work.push_back(e.name);
  }
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (!live.insert(name).second) continue;
    const ir::ModuleEntry* e = mod.Find(name);
    if (!e || !e->relax) continue;
    std::set<std::string> refs;
    CollectRefs(e->relax->body, &refs);
    for (const auto& r : refs)
      if (mod.Find(r) && !live.count(r)) work.push_back(r);
  }
  ir::IRModule out;
  out.name = mod.name;
  for (const auto& e : mod.entries)
    if (live.count(e.name)) out.entries.push_back(e);
  return out;
}

}  // namespace relax
}  // namespace kiln
