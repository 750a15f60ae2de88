#include "compiler/transform/dead_code_elimination.h"

#include "compiler/relax/remove_unused.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// The top-level dimensions of a tensor or shape struct info.
const std::vector<ir::PrimExpr>* DimsOf(const ir::StructInfo& s) {
  if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) return t->has_shape ? &t->shape : nullptr;
  if (const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s)) return sh->has_values ? &sh->values : nullptr;
  return nullptr;
}

// A match_cast that gives a symbolic variable to a dimension its value's
// struct info does not name (a shape read from a tensor at run time, a
// data-dependent size) defines that variable for later bindings, which use
// the variable and not the cast's result: it must stay even when its result
// is unused.
bool DefinesSymbols(const ir::Binding& b) {
  if (!b.match_cast) return false;
  const std::vector<ir::PrimExpr>* target = DimsOf(b.match_cast);
  if (!target) return false;
  const std::vector<ir::PrimExpr>* source = DimsOf(b.value->struct_info);
  for (size_t i = 0; i < target->size(); ++i) {
    const auto* v = (*target)[i].as<ir::VarNode>();
    if (!v) continue;
    if (!source || i >= source->size() || (*source)[i].as<ir::VarNode>() != v) return true;
  }
  return false;
}

class DeadBindingRemover : public ExprMutator {
 public:
  explicit DeadBindingRemover(UseCounts uses) : uses_(std::move(uses)) {}
  bool removed() const { return removed_; }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    auto it = uses_.find(b.var.get());
    bool used = it != uses_.end() && it->second > 0;
    // Outside dataflow, a match_cast is a run-time check: keep it. So is one
    // with messages, a check an importer asked for (a count that must be 0).
    bool droppable = (in_dataflow && !DefinesSymbols(b) && b.messages.empty()) || (!b.match_cast && IsPureValue(b.value));
    if (!used && droppable) {
      removed_ = true;
      return;
    }
    ExprMutator::VisitBinding(b, in_dataflow, out);
  }

 private:
  UseCounts uses_;
  bool removed_ = false;
};

}  // namespace

Result<ir::IRModule> EliminateDeadCode(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    // Removing a binding can make its operands dead: repeat to a fixed point.
    for (;;) {
      UseCounts uses;
      CountUses(e.relax->body, &uses);
      DeadBindingRemover remover(std::move(uses));
      ir::Function f = remover.VisitFunction(e.relax);
      e.relax = f;
      if (!remover.removed()) break;
    }
  }
  return relax::RemoveUnusedFunctions(out);
}

}  // namespace transform
}  // namespace kiln
