#include "compiler/transform/flatten_nested_calls.h"

#include <memory>
#include <set>
#include <string>

#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

bool IsLeaf(const ir::Expr& e) {
  switch (e->kind) {
    case ir::ExprKind::kCall:
    case ir::ExprKind::kTupleGetItem:
    case ir::ExprKind::kIf:
    case ir::ExprKind::kSeqExpr:
    case ir::ExprKind::kFunction:
      return false;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields)
        if (!IsLeaf(f)) return false;
      return true;
    default:
      return true;
  }
}

// Names every variable of a function uses, so new ones do not collide.
void CollectNames(const ir::Expr& e, std::set<std::string>* names) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& block : s.blocks)
        for (const auto& b : block.bindings) {
          names->insert(b.var->name);
          CollectNames(b.value, names);
        }
      CollectNames(s.body, names);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CollectNames(i.then_branch, names);
      CollectNames(i.else_branch, names);
      break;
    }
    default:
      break;
  }
}

class Flattener : public ExprMutator {
 public:
  ir::Function VisitFunction(const ir::Function& f) override {
    names_.clear();
    counter_ = 0;
    for (const auto& p : f->params) names_.insert(p->name);
    CollectNames(f->body, &names_);
    return ExprMutator::VisitFunction(f);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    std::vector<ir::Binding> mine;
    ExprMutator::VisitBinding(b, in_dataflow, &mine);
    for (auto& nb : mine) {
      nb.value = FlattenOperands(nb.value, in_dataflow, out);
      out->push_back(std::move(nb));
    }
  }

 private:
  // `e` with leaf operands; bindings for the hoisted operands go to `out`.
  ir::Expr FlattenOperands(const ir::Expr& e, bool dataflow, std::vector<ir::Binding>* out) {
    switch (e->kind) {
      case ir::ExprKind::kCall: {
        const auto& c = static_cast<const ir::CallExpr&>(*e);
        bool changed = false;
        std::vector<ir::Expr> args;
        for (const auto& a : c.args) {
          args.push_back(ToLeaf(a, dataflow, out));
          changed |= args.back() != a;
        }
        if (!changed) return e;
        auto n = std::make_shared<ir::CallExpr>(c.op, std::move(args), c.attrs, c.sinfo_args);
        return WithInfoOf(n, e);
      }
      case ir::ExprKind::kTuple: {
        const auto& t = static_cast<const ir::TupleExpr&>(*e);
        bool changed = false;
        std::vector<ir::Expr> fields;
        for (const auto& f : t.fields) {
          fields.push_back(ToLeaf(f, dataflow, out));
          changed |= fields.back() != f;
        }
        if (!changed) return e;
        return WithInfoOf(std::make_shared<ir::TupleExpr>(std::move(fields)), e);
      }
      case ir::ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const ir::TupleGetItemExpr&>(*e);
        ir::Expr t = ToLeaf(g.tuple, dataflow, out);
        if (t == g.tuple) return e;
        return WithInfoOf(std::make_shared<ir::TupleGetItemExpr>(t, g.index), e);
      }
      default:
        return e;
    }
  }

  // A leaf for operand `e`: itself, a tuple of leaves, or a new variable.
  ir::Expr ToLeaf(const ir::Expr& e, bool dataflow, std::vector<ir::Binding>* out) {
    if (e->kind == ir::ExprKind::kTuple) return FlattenOperands(e, dataflow, out);
    if (IsLeaf(e)) return e;
    ir::Expr value = FlattenOperands(e, dataflow, out);
    ir::RVar var = ir::MakeRVar(FreshName(), nullptr, dataflow);
    var->struct_info = e->struct_info;
    out->push_back(ir::Binding{var, value, nullptr, e->span});
    return var;
  }

  std::string FreshName() {
    while (true) {
      std::string n = counter_ == 0 ? "lv" : "lv" + std::to_string(counter_);
      ++counter_;
      if (names_.insert(n).second) return n;
    }
  }

  std::set<std::string> names_;
  int counter_ = 0;
};

}  // namespace

Result<ir::IRModule> FlattenNestedCalls(const ir::IRModule& mod) {
  return MutateFunctions<Flattener>(mod, /*renormalize=*/false);
}

}  // namespace transform
}  // namespace kiln
