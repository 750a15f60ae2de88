#include "compiler/transform/regroup_dataflow.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// Renames uses through var_remap_, which the caller fills as it goes.
class Renamer : public ExprMutator {
 public:
  ir::Expr Rename(const ir::Expr& e) { return VisitExpr(e); }
  void Replace(const ir::VarExpr* old, ir::RVar now) { var_remap_[old] = std::move(now); }
};

}  // namespace

ir::Function RegroupDataflow(const ir::Function& f) {
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
  if (!seq) return f;
  struct Item {
    const ir::Binding* b;
    bool dataflow;  // may live in a dataflow block
  };
  std::vector<Item> items;
  for (const auto& block : seq->blocks)
    for (const auto& b : block.bindings)
      items.push_back({&b, block.is_dataflow || (!b.match_cast && IsPureValue(b.value))});

  // The end (one past the last binding) of each binding's run, and the last
  // reader of each variable (items.size() for the function's result).
  std::vector<size_t> run_end(items.size());
  for (size_t i = items.size(); i-- > 0;) {
    bool joined = i + 1 < items.size() && items[i + 1].dataflow == items[i].dataflow;
    run_end[i] = joined ? run_end[i + 1] : i + 1;
  }
  std::unordered_map<const ir::VarExpr*, size_t> last_read;
  for (size_t i = 0; i < items.size(); ++i) {
    UseCounts uses;
    CountUses(items[i].b->value, &uses);
    for (const auto& u : uses) last_read[u.first] = i;
  }
  {
    UseCounts uses;
    CountUses(seq->body, &uses);
    for (const auto& u : uses) last_read[u.first] = items.size();
  }

  Renamer renamer;
  bool changed = false;
  std::vector<ir::BindingBlock> blocks;
  for (size_t i = 0; i < items.size(); ++i) {
    const ir::Binding& b = *items[i].b;
    if (blocks.empty() || i == 0 || run_end[i] != run_end[i - 1]) {
      blocks.emplace_back();
      blocks.back().is_dataflow = items[i].dataflow;
    }
    ir::Binding nb = b;
    nb.value = renamer.Rename(b.value);
    auto r = last_read.find(b.var.get());
    bool dataflow_var = items[i].dataflow && (r == last_read.end() || r->second < run_end[i]);
    if (dataflow_var != b.var->is_dataflow) {
      auto v = std::make_shared<ir::VarExpr>(b.var->name, b.var->annotation, dataflow_var);
      v->span = b.var->span;
      v->struct_info = b.var->struct_info;
      renamer.Replace(b.var.get(), v);
      nb.var = v;
    }
    changed |= nb.var != b.var || nb.value != b.value;
    blocks.back().bindings.push_back(std::move(nb));
  }
  ir::Expr body = renamer.Rename(seq->body);
  changed |= body != seq->body || blocks.size() != seq->blocks.size();
  for (size_t k = 0; !changed && k < blocks.size(); ++k)
    changed = blocks[k].is_dataflow != seq->blocks[k].is_dataflow ||
              blocks[k].bindings.size() != seq->blocks[k].bindings.size();
  if (!changed) return f;
  return ir::WithBody(f, std::move(blocks), body);
}

}  // namespace transform
}  // namespace kiln
