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

  std::unordered_map<const ir::VarExpr*, ir::RVar> promote_;
};

}  // namespace

Result<ir::IRModule> CanonicalizeBindings(const ir::IRModule& mod) {
  return MutateFunctions<Canonicalizer>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
