// decompose_reduction: the init of a reduction block becomes its own block
// "<name>_init" in a copy of the spatial loops, placed before a given loop.
#include <memory>
#include <unordered_set>

#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

Result<BlockRV> Schedule::DecomposeReduction(const BlockRV& block, const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  KILN_ASSIGN_OR_RETURN(Var lv, Resolve(loop));
  const std::string where = "decompose_reduction: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  const auto* br = As<BlockRealizeNode>(site.stmt);
  const Block& b = br->block;
  if (!b.init) return FailedPrecondition(where + " has no init (it is not a reduction, or was decomposed already)");
  // The loops from `loop` down to the block, and those outside it.
  size_t pos = site.ancestors.size();
  for (size_t k = 0; k < site.ancestors.size(); ++k) {
    const auto* f = As<ForNode>(site.ancestors[k]);
    if (f && f->loop_var == lv) pos = k;
  }
  if (pos == site.ancestors.size())
    return InvalidArgument(where + ": loop " + lv->name + " is not one of its loops");
  for (size_t k = pos + 1; k < site.ancestors.size(); ++k)
    if (As<BlockRealizeNode>(site.ancestors[k])) return InvalidArgument(where + ": loop " + lv->name + " is outside its parent block");
  std::unordered_set<const VarNode*> outside;
  for (size_t k = 0; k < pos; ++k)
    if (const auto* f = As<ForNode>(site.ancestors[k])) outside.insert(f->loop_var.get());
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].kind == IterKind::kReduce && sched::UsesAny(br->iter_values[i], outside))
      return FailedPrecondition(where + ": its reduction variable " + b.iter_vars[i].var->name +
                                " depends on a loop outside " + lv->name + "; the init would run more than once");
  // Loops the spatial bindings use, copied with fresh variables.
  std::unordered_set<const VarNode*> used;
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].kind == IterKind::kSpatial)
      for (const VarNode* v : sched::VarsOf(br->iter_values[i])) used.insert(v);
  std::vector<const ForNode*> kept;
  std::unordered_set<const VarNode*> dropped;
  VarMap loop_map;
  std::vector<Var> new_vars;
  for (size_t k = pos; k < site.ancestors.size(); ++k) {
    const auto* f = As<ForNode>(site.ancestors[k]);
    if (!f) continue;
    if (used.count(f->loop_var.get())) {
      kept.push_back(f);
      Var nv = MakeVar(f->loop_var->name + "_init", f->loop_var->dtype);
      new_vars.push_back(nv);
      loop_map[f->loop_var.get()] = PrimExpr(nv);
    } else {
      dropped.insert(f->loop_var.get());
    }
  }
  if (sched::UsesAny(br->predicate, dropped))
    return FailedPrecondition(where + ": its predicate depends on a reduction loop");
  Block init;
  init.name = sched::FreshBlockName(body(), name + "_init");
  std::vector<PrimExpr> values;
  VarMap iv_map;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    if (b.iter_vars[i].kind != IterKind::kSpatial) continue;
    IterVar iv = b.iter_vars[i];
    iv.var = MakeVar(iv.var->name, iv.var->dtype);
    iv_map[b.iter_vars[i].var.get()] = PrimExpr(iv.var);
    init.iter_vars.push_back(iv);
    values.push_back(Substitute(br->iter_values[i], loop_map));
  }
  init.body = Substitute(b.init, iv_map);
  Stmt nest = std::make_shared<BlockRealizeNode>(values, Substitute(br->predicate, loop_map), init);
  for (size_t k = kept.size(); k-- > 0;) {
    if (sched::UsesAny(kept[k]->min, dropped) || sched::UsesAny(kept[k]->extent, dropped))
      return FailedPrecondition(where + ": the range of loop " + kept[k]->loop_var->name + " depends on a reduction loop");
    nest = std::make_shared<ForNode>(new_vars[k], Substitute(kept[k]->min, loop_map),
                                     Substitute(kept[k]->extent, loop_map), ForKind::kSerial, nest);
  }
  Block nb = b;
  nb.init = nullptr;
  Stmt out = sched::Replace(body(), br, std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, nb));
  const StmtNode* loop_node = sched::FindLoop(out, lv.get()).stmt.get();
  Stmt loop_stmt = sched::FindLoop(out, lv.get()).stmt;
  out = sched::Replace(out, loop_node, Seq({nest, loop_stmt}));
  SetBody(sched::RefreshRegions(out));
  BlockRV rv = NewBlockRV(init.name);
  Record("decompose_reduction", {TraceArg::Block(block), TraceArg::Loop(loop)}, {}, {rv}, {});
  return rv;
}

}  // namespace tir
}  // namespace kiln
