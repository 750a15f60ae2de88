#include "compiler/transform/dead_code_elimination.h"

#include "compiler/relax/remove_unused.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

class DeadBindingRemover : public ExprMutator {
 public:
  explicit DeadBindingRemover(UseCounts uses) : uses_(std::move(uses)) {}
  bool removed() const { return removed_; }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    auto it = uses_.find(b.var.get());
    bool used = it != uses_.end() && it->second > 0;
    // Outside dataflow, a match_cast is a run-time check: keep it.
    bool droppable = in_dataflow || (!b.match_cast && IsPureValue(b.value));
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
