#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {

void CountUses(const ir::Expr& e, UseCounts* uses) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kVar: ++(*uses)[static_cast<const ir::VarExpr*>(e.get())]; break;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CountUses(f, uses);
      break;
    case ir::ExprKind::kTupleGetItem: CountUses(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, uses); break;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CountUses(c.op, uses);
      for (const auto& a : c.args) CountUses(a, uses);
      break;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CountUses(bind.value, uses);
      CountUses(s.body, uses);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CountUses(i.cond, uses);
      CountUses(i.then_branch, uses);
      CountUses(i.else_branch, uses);
      break;
    }
    default: break;
  }
}

}  // namespace transform
}  // namespace kiln
