#include "compiler/transform/canonicalize_bindings.h"

#include <unordered_map>
#include <unordered_set>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

// True when a value of struct info `have` always satisfies `want`.
bool Proves(const ir::StructInfo& have, const ir::StructInfo& want) {
  if (!have || !want) return false;
  if (want->kind == ir::SInfoKind::kObject) return true;
  const auto* h = ir::SInfoAs<ir::TensorSInfo>(have);
  const auto* w = ir::SInfoAs<ir::TensorSInfo>(want);
  if (!h || !w) return false;
  if (w->has_dtype && (!h->has_dtype || h->dtype != w->dtype)) return false;
  if (w->ndim >= 0 && h->ndim != w->ndim) return false;
  if (!w->has_shape) return true;
  if (!h->has_shape) return false;
  for (size_t i = 0; i < w->shape.size(); ++i) {
    if (relax::CompareDims(h->shape[i], w->shape[i]) != relax::DimRelation::kEqual) return false;
  }
  return true;
}

const ir::VarExpr* AsVar(const ir::Expr& e) { return ir::ExprAs<ir::VarExpr>(e); }

class Canonicalizer : public ExprMutator {
 public:
  ir::BindingBlock VisitBlock(const ir::BindingBlock& block) override {
    // Output aliases: `gv = lv` with lv a dataflow var of this block (seen
    // through earlier aliases) and gv an output. The first such gv takes over
    // lv's definition.
    std::unordered_set<const ir::VarExpr*> defined_here;
    for (const auto& b : block.bindings) defined_here.insert(b.var.get());
    if (block.is_dataflow) {
      std::unordered_map<const ir::VarExpr*, const ir::VarExpr*> alias_of;  // dataflow alias -> its source
      for (const auto& b : block.bindings) {
        const ir::VarExpr* src = IsAlias(b) ? AsVar(b.value) : nullptr;
        if (!src) continue;
        while (alias_of.count(src)) src = alias_of[src];
        if (b.var->is_dataflow) {
          alias_of[b.var.get()] = src;
        } else if (src->is_dataflow && defined_here.count(src) && !promote_.count(src)) {
          promote_[src] = b.var;
        }
      }
    }
    return ExprMutator::VisitBlock(block);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    if (const auto* item = ir::ExprAs<ir::TupleGetItemExpr>(b.value)) {
      if (AsVar(item->tuple) && !b.match_cast) items_[b.var.get()] = {item->tuple, item->index};
    }
    if (const ir::Expr* whole = RebuiltTuple(b)) {
      // `(t[0], ..., t[n-1])`: t itself (an If's tuple result taken apart
      // and put back together for the function's result).
      var_remap_[b.var.get()] = VisitExpr(*whole);
      return;
    }
    if (IsAlias(b)) {
      ir::Expr target = VisitExpr(b.value);
      // gv = lv where lv was promoted to gv: the definition already is gv.
      if (target.get() != b.var.get()) var_remap_[b.var.get()] = target;
      return;
    }
    auto p = promote_.find(b.var.get());
    if (p == promote_.end()) return ExprMutator::VisitBinding(b, in_dataflow, out);
    ir::Binding nb = b;
    nb.value = VisitExpr(b.value);
    nb.var = p->second;
    var_remap_[b.var.get()] = p->second;
    out->push_back(std::move(nb));
  }

 private:
  static bool IsAlias(const ir::Binding& b) {
    if (!AsVar(b.value)) return false;
    if (!b.match_cast) return true;
    return Proves(b.value->struct_info, b.match_cast);
  }

  // The tuple t when `b` binds (t[0], ..., t[n-1]), every item in order, of
  // a tuple t of n fields; null otherwise. Not for a dataflow t bound to a
  // variable that leaves its block.
  const ir::Expr* RebuiltTuple(const ir::Binding& b) const {
    const auto* tuple = ir::ExprAs<ir::TupleExpr>(b.value);
    if (!tuple || b.match_cast || tuple->fields.empty()) return nullptr;
    const ir::Expr* whole = nullptr;
    for (size_t i = 0; i < tuple->fields.size(); ++i) {
      const ir::VarExpr* f = AsVar(tuple->fields[i]);
      auto it = f ? items_.find(f) : items_.end();
      if (it == items_.end() || it->second.second != static_cast<int>(i)) return nullptr;
      if (whole && it->second.first.get() != whole->get()) return nullptr;
      whole = &it->second.first;
    }
    const auto* v = AsVar(*whole);
    const auto* ts = ir::SInfoAs<ir::TupleSInfo>(v->struct_info);
    if (!ts || ts->fields.size() != tuple->fields.size()) return nullptr;
    if (v->is_dataflow && !b.var->is_dataflow) return nullptr;
    return whole;
  }

  std::unordered_map<const ir::VarExpr*, ir::RVar> promote_;
  std::unordered_map<const ir::VarExpr*, std::pair<ir::Expr, int>> items_;  // item var -> (tuple, index)
};

}  // namespace

Result<ir::IRModule> CanonicalizeBindings(const ir::IRModule& mod) {
  return MutateFunctions<Canonicalizer>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
