#include "compiler/transform/guard_raise_arms.h"

#include <memory>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/regroup_dataflow.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

bool IsRaiseCall(const ir::Expr& e) {
  const auto* call = ir::ExprAs<ir::CallExpr>(e);
  const auto* f = call ? ir::ExprAs<ir::ExternFuncExpr>(call->op) : nullptr;
  return f && f->global_symbol == "vm.builtin.raise";
}

bool AlwaysRaises(const ir::Expr& arm) {
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(arm);
  if (!seq) return false;
  for (const auto& block : seq->blocks)
    for (const auto& b : block.bindings)
      if (IsRaiseCall(b.value)) return true;
  return false;
}

ir::Expr Zero() { return std::make_shared<ir::PrimValueExpr>(ir::IntImm(DType::Int64(), 0)); }

// An arm that runs `arm`'s bindings (the raise) and gives 0.
ir::Expr RaiseOnly(const ir::Expr& arm) {
  const auto& seq = static_cast<const ir::SeqExprNode&>(*arm);
  auto out = std::make_shared<ir::SeqExprNode>(seq.blocks, Zero());
  out->span = seq.span;
  return out;
}

ir::Expr Nothing() { return std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, Zero()); }

// Uses of the rewritten Ifs' variables read the new ones.
class Renamer : public ExprMutator {
 public:
  ir::Expr Rename(const ir::Expr& e) { return VisitExpr(e); }
  void Replace(const ir::VarExpr* old, ir::Expr now) { var_remap_[old] = std::move(now); }
};

bool Movable(const ir::Binding& b, const UseCounts& cond_reads) {
  return !b.match_cast && IsPureValue(b.value) && !cond_reads.count(b.var.get());
}

// The function with its top-level raise-arm Ifs rewritten, or `f`.
ir::Function Rewrite(const ir::Function& f) {
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
  if (!seq) return f;
  // Top-level bindings, each with whether its block is a dataflow block.
  std::vector<std::pair<ir::Binding, bool>> items;
  for (const auto& block : seq->blocks)
    for (const auto& b : block.bindings) items.push_back({b, block.is_dataflow});
  Renamer renamer;
  bool changed = false;
  std::vector<std::pair<ir::Binding, bool>> out;
  // Arms spliced in are visited in turn (an arm may hold such an If itself).
  for (size_t i = 0; i < items.size(); ++i) {
    ir::Binding b = items[i].first;
    b.value = renamer.Rename(b.value);
    const auto* i_expr = ir::ExprAs<ir::IfExpr>(b.value);
    bool then_raises = i_expr && AlwaysRaises(i_expr->then_branch);
    bool else_raises = i_expr && AlwaysRaises(i_expr->else_branch);
    const auto* good = !i_expr || b.match_cast || then_raises == else_raises
                           ? nullptr
                           : ir::ExprAs<ir::SeqExprNode>(then_raises ? i_expr->else_branch : i_expr->then_branch);
    if (!good) {
      out.push_back({b, items[i].second});
      continue;
    }
    changed = true;
    ir::Expr then_arm = then_raises ? RaiseOnly(i_expr->then_branch) : Nothing();
    ir::Expr else_arm = else_raises ? RaiseOnly(i_expr->else_branch) : Nothing();
    auto guard_if = std::make_shared<ir::IfExpr>(i_expr->cond, then_arm, else_arm);
    guard_if->span = i_expr->span;
    ir::Binding guard;
    guard.var = ir::MakeRVar(b.var->name + "_guard");
    guard.value = guard_if;
    guard.span = b.span;
    // Up past the pure bindings the condition does not read.
    UseCounts cond_reads;
    CountUses(i_expr->cond, &cond_reads);
    size_t at = out.size();
    while (at > 0 && Movable(out[at - 1].first, cond_reads)) --at;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), {guard, false});
    // The good arm's bindings come next, then its result stands for x.
    std::vector<std::pair<ir::Binding, bool>> arm;
    for (const auto& block : good->blocks)
      for (const auto& ab : block.bindings) arm.push_back({ab, block.is_dataflow});
    // x keeps the struct info both arms shared: the good arm's result may
    // be a call whose declared result names the callee's symbolic variables
    // (inline-functions replaces such aliases once it inlines the call).
    ir::Binding result;
    result.var = ir::MakeRVar(b.var->name, b.var->struct_info);
    result.value = good->body;
    result.span = b.span;
    renamer.Replace(b.var.get(), result.var);
    arm.push_back({result, false});
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(i + 1), arm.begin(), arm.end());
  }
  if (!changed) return f;
  // One block per binding; RegroupDataflow joins them.
  std::vector<ir::BindingBlock> blocks;
  for (auto& [b, dataflow] : out) {
    ir::BindingBlock block;
    block.is_dataflow = dataflow;
    block.bindings.push_back(std::move(b));
    blocks.push_back(std::move(block));
  }
  return RegroupDataflow(ir::WithBody(f, std::move(blocks), renamer.Rename(seq->body), /*keep_struct_info=*/false));
}

}  // namespace

Result<ir::IRModule> GuardRaiseArms(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  bool changed = false;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    ir::Function f = Rewrite(e.relax);
    changed |= f != e.relax;
    e.relax = f;
  }
  if (!changed) return out;
  return relax::InferStructInfo(out);
}

}  // namespace transform
}  // namespace kiln
