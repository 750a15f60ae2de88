#include "compiler/transform/common_subexpr_elimination.h"

#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

bool SameSInfo(const ir::StructInfo& a, const ir::StructInfo& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  // Symbolic dimensions are shared Var nodes within a function, so the
  // printed forms are equal exactly when the struct infos are.
  return text::PrintStructInfo(a) == text::PrintStructInfo(b);
}

// Equality of two values after variable remapping: leaves (variables,
// constants, functions) by identity or name, calls and tuples structurally.
bool SameValue(const ir::Expr& a, const ir::Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
    case ir::ExprKind::kOp: return ir::ExprAs<ir::OpExpr>(a)->name == ir::ExprAs<ir::OpExpr>(b)->name;
    case ir::ExprKind::kGlobalVar: return ir::ExprAs<ir::GlobalVarExpr>(a)->name == ir::ExprAs<ir::GlobalVarExpr>(b)->name;
    case ir::ExprKind::kExternFunc:
      return ir::ExprAs<ir::ExternFuncExpr>(a)->global_symbol == ir::ExprAs<ir::ExternFuncExpr>(b)->global_symbol;
    case ir::ExprKind::kStringImm: return ir::ExprAs<ir::StringImmExpr>(a)->value == ir::ExprAs<ir::StringImmExpr>(b)->value;
    case ir::ExprKind::kDataTypeImm: return ir::ExprAs<ir::DataTypeImmExpr>(a)->value == ir::ExprAs<ir::DataTypeImmExpr>(b)->value;
    case ir::ExprKind::kPrimValue:
      return ir::StructuralEqual(ir::ExprAs<ir::PrimValueExpr>(a)->value, ir::ExprAs<ir::PrimValueExpr>(b)->value) &&
             text::PrintPrimExpr(ir::ExprAs<ir::PrimValueExpr>(a)->value) ==
                 text::PrintPrimExpr(ir::ExprAs<ir::PrimValueExpr>(b)->value);
    case ir::ExprKind::kShapeExpr: {
      const auto &x = ir::ExprAs<ir::ShapeExpr>(a)->values, &y = ir::ExprAs<ir::ShapeExpr>(b)->values;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (text::PrintPrimExpr(x[i]) != text::PrintPrimExpr(y[i])) return false;
      return true;
    }
    case ir::ExprKind::kTuple: {
      const auto &x = ir::ExprAs<ir::TupleExpr>(a)->fields, &y = ir::ExprAs<ir::TupleExpr>(b)->fields;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!SameValue(x[i], y[i])) return false;
      return true;
    }
    case ir::ExprKind::kTupleGetItem: {
      const auto *x = ir::ExprAs<ir::TupleGetItemExpr>(a), *y = ir::ExprAs<ir::TupleGetItemExpr>(b);
      return x->index == y->index && SameValue(x->tuple, y->tuple);
    }
    case ir::ExprKind::kCall: {
      const auto *x = ir::ExprAs<ir::CallExpr>(a), *y = ir::ExprAs<ir::CallExpr>(b);
      if (!SameValue(x->op, y->op) || !(x->attrs == y->attrs) || x->args.size() != y->args.size() ||
          x->sinfo_args.size() != y->sinfo_args.size())
        return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!SameValue(x->args[i], y->args[i])) return false;
      for (size_t i = 0; i < x->sinfo_args.size(); ++i)
        if (!SameSInfo(x->sinfo_args[i], y->sinfo_args[i])) return false;
      return true;
    }
    default: return false;  // variables and constants: identity only
  }
}

class Cse : public ExprMutator {
 public:
  ir::BindingBlock VisitBlock(const ir::BindingBlock& block) override {
    if (!block.is_dataflow) return ExprMutator::VisitBlock(block);
    seen_.clear();
    ir::BindingBlock out = ExprMutator::VisitBlock(block);
    seen_.clear();
    return out;
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    ir::Expr value = VisitExpr(b.value);
    bool candidate = in_dataflow && !b.match_cast && value->kind == ir::ExprKind::kCall && IsPureValue(value);
    if (candidate) {
      for (const auto& prev : seen_) {
        if (!SameValue(prev.second, value)) continue;
        if (b.var->is_dataflow) {
          var_remap_[b.var.get()] = prev.first;
        } else {
          ir::Binding alias = b;
          alias.value = prev.first;
          out->push_back(alias);
        }
        return;
      }
    }
    ir::Binding nb = b;
    nb.value = value;
    out->push_back(nb);
    if (candidate) seen_.push_back({b.var, value});
  }

 private:
  std::vector<std::pair<ir::RVar, ir::Expr>> seen_;
};

}  // namespace

Result<ir::IRModule> EliminateCommonSubexpressions(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    Cse cse;
    e.relax = cse.VisitFunction(e.relax);
  }
  return out;
}

}  // namespace transform
}  // namespace kiln
