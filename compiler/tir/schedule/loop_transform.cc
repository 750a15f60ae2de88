// split, fuse, reorder and tile.
#include <algorithm>
#include <memory>
#include <unordered_set>

#include "compiler/arith/simplify.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

PrimExpr FloorDivE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr FloorModE(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }

bool IsZero(const PrimExpr& e) {
  auto c = arith::AsConstInt(e);
  return c && *c == 0;
}

// Conjoins `pred` to the predicate of every block directly under `s`; with no
// block there, guards `s` with an IfThenElse.
Stmt AddPredicate(const Stmt& s, const PrimExpr& pred) {
  std::vector<Stmt> blocks = As<BlockRealizeNode>(s) ? std::vector<Stmt>{s} : sched::ChildBlocks(s);
  if (blocks.empty()) return std::make_shared<IfThenElseNode>(pred, s, nullptr);
  Stmt out = s;
  for (const auto& b : blocks) {
    const auto* br = As<BlockRealizeNode>(b);
    out = sched::Replace(out, br,
                         std::make_shared<BlockRealizeNode>(br->iter_values, sched::And(br->predicate, pred), br->block));
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + v[k];
  return s;
}

}  // namespace

Result<std::vector<LoopRV>> Schedule::Split(const LoopRV& loop, const std::vector<int64_t>& factors) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  const auto* f = As<ForNode>(sched::FindLoop(body(), v.get()).stmt);
  const std::string where = "split: loop " + v->name;
  if (factors.size() < 2) return InvalidArgument(where + ": give at least two factors");
  if (f->for_kind != ForKind::kSerial)
    return InvalidArgument(where + " is " + ForKindName(f->for_kind) + "; split it before changing its kind");
  int inferred = -1;
  int64_t known = 1;
  for (size_t k = 0; k < factors.size(); ++k) {
    if (factors[k] == -1) {
      if (inferred >= 0) return InvalidArgument(where + ": at most one factor may be None (-1)");
      inferred = static_cast<int>(k);
    } else if (factors[k] <= 0) {
      return InvalidArgument(where + ": factor " + std::to_string(factors[k]) + " is not positive");
    } else {
      if (known > (int64_t{1} << 40) / factors[k]) return InvalidArgument(where + ": factors too large");
      known *= factors[k];
    }
  }
  std::vector<PrimExpr> extents;
  for (int64_t x : factors) extents.push_back(PrimExpr(x));
  bool need_pred = false;
  auto ext_const = arith::AsConstInt(f->extent);
  if (inferred >= 0) {
    if (ext_const) {
      extents[inferred] = PrimExpr((*ext_const + known - 1) / known);
      need_pred = *ext_const % known != 0;
    } else {
      extents[inferred] = arith::Simplify(FloorDivE(f->extent + PrimExpr(known - 1), PrimExpr(known)));
      need_pred = !arith::CanProveEqual(FloorModE(f->extent, PrimExpr(known)), PrimExpr(0));
    }
  } else {
    if (!ext_const)
      return InvalidArgument(where + " has the symbolic extent " + arith::ToDebugString(f->extent) +
                             "; give one factor as None (-1) so it is inferred");
    if (known < *ext_const)
      return InvalidArgument(where + ": factors multiply to " + std::to_string(known) +
                             ", less than the extent " + std::to_string(*ext_const));
    need_pred = known > *ext_const;
  }
  for (auto& e : extents) {
    auto c = arith::AsConstInt(e);
    if (c && e.dtype() != f->loop_var->dtype) e = IntImm(f->loop_var->dtype, *c);
  }
  // New loop variables i_0, i_1, ... and the value of the old one.
  std::vector<Var> vars;
  for (size_t k = 0; k < factors.size(); ++k) vars.push_back(MakeVar(v->name + "_" + std::to_string(k), v->dtype));
  PrimExpr fused = PrimExpr(vars[0]);
  for (size_t k = 1; k < vars.size(); ++k) fused = fused * extents[k] + PrimExpr(vars[k]);
  PrimExpr value = IsZero(f->min) ? fused : f->min + fused;
  Stmt inner = Substitute(f->body, VarMap{{v.get(), value}});
  if (need_pred) inner = AddPredicate(inner, MakeBinary(TirKind::kLT, fused, f->extent));
  for (size_t k = vars.size(); k-- > 0;)
    inner = std::make_shared<ForNode>(vars[k], IntImm(v->dtype, 0), extents[k], ForKind::kSerial, inner);
  SetBody(sched::Replace(body(), f, inner));
  std::vector<LoopRV> out;
  for (const auto& nv : vars) out.push_back(NewLoopRV(nv));
  Record("split", {TraceArg::Loop(loop), TraceArg::Ints(factors)}, {"", "factors"}, {}, out);
  return out;
}

Result<LoopRV> Schedule::Fuse(const std::vector<LoopRV>& loops) {
  if (loops.size() < 2) return InvalidArgument("fuse: give at least two loops");
  std::vector<Var> vars;
  std::vector<const ForNode*> fors;
  for (const auto& l : loops) {
    KILN_ASSIGN_OR_RETURN(Var v, Resolve(l));
    vars.push_back(v);
    fors.push_back(As<ForNode>(sched::FindLoop(body(), v.get()).stmt));
  }
  std::unordered_set<const VarNode*> outer;
  for (size_t k = 0; k < fors.size(); ++k) {
    if (fors[k]->for_kind != ForKind::kSerial)
      return InvalidArgument("fuse: loop " + vars[k]->name + " is " + ForKindName(fors[k]->for_kind));
    if (k + 1 < fors.size() && fors[k]->body.get() != fors[k + 1])
      return InvalidArgument("fuse: loops " + vars[k]->name + " and " + vars[k + 1]->name +
                             " are not adjacent (" + vars[k + 1]->name + " is not the whole body of " +
                             vars[k]->name + ")");
    if (sched::UsesAny(fors[k]->min, outer) || sched::UsesAny(fors[k]->extent, outer))
      return InvalidArgument("fuse: the range of loop " + vars[k]->name + " depends on an outer fused loop");
    outer.insert(vars[k].get());
  }
  std::string name;
  for (const auto& v : vars) name += v->name + "_";
  Var fv = MakeVar(name + "fused", vars[0]->dtype);
  PrimExpr total = fors[0]->extent;
  for (size_t k = 1; k < fors.size(); ++k) total = arith::Simplify(total * fors[k]->extent);
  VarMap map;
  PrimExpr inner_prod = PrimExpr(1);
  for (size_t k = fors.size(); k-- > 0;) {
    PrimExpr x = PrimExpr(fv);
    if (k + 1 < fors.size()) x = FloorDivE(x, inner_prod);
    if (k > 0) x = FloorModE(x, fors[k]->extent);
    x = arith::Simplify(x);
    map[vars[k].get()] = IsZero(fors[k]->min) ? x : fors[k]->min + x;
    inner_prod = arith::Simplify(inner_prod * fors[k]->extent);
  }
  if (auto c = arith::AsConstInt(total)) total = IntImm(fv->dtype, *c);
  Stmt inner = Substitute(fors.back()->body, map);
  Stmt loop = std::make_shared<ForNode>(fv, IntImm(fv->dtype, 0), total, ForKind::kSerial, inner);
  SetBody(sched::Replace(body(), fors[0], loop));
  LoopRV out = NewLoopRV(fv);
  std::vector<TraceArg> in;
  for (const auto& l : loops) in.push_back(TraceArg::Loop(l));
  Record("fuse", in, {}, {}, {out});
  return out;
}

Status Schedule::Reorder(const std::vector<LoopRV>& loops) {
  if (loops.empty()) return InvalidArgument("reorder: no loops given");
  std::vector<Var> vars;
  std::vector<std::string> names;
  std::unordered_set<const VarNode*> given;
  size_t outermost = 0, best_depth = SIZE_MAX;
  std::vector<sched::Site> sites;
  for (const auto& l : loops) {
    KILN_ASSIGN_OR_RETURN(Var v, Resolve(l));
    if (!given.insert(v.get()).second) return InvalidArgument("reorder: loop " + v->name + " is given twice");
    vars.push_back(v);
    names.push_back(v->name);
    sites.push_back(sched::FindLoop(body(), v.get()));
    if (sites.back().ancestors.size() < best_depth) {
      best_depth = sites.back().ancestors.size();
      outermost = vars.size() - 1;
    }
  }
  // Walk the perfect nest down from the outermost given loop.
  std::vector<const ForNode*> chain;
  const ForNode* cur = As<ForNode>(sites[outermost].stmt);
  size_t seen = 0;
  while (true) {
    chain.push_back(cur);
    if (given.count(cur->loop_var.get())) ++seen;
    if (seen == given.size()) break;
    const ForNode* next = As<ForNode>(cur->body);
    if (next == nullptr)
      return InvalidArgument("reorder: loops " + Join(names) + " are not in one perfect loop nest (the body of " +
                             cur->loop_var->name + " is not a single loop)");
    cur = next;
  }
  std::unordered_set<const VarNode*> chain_vars;
  for (const auto* c : chain) chain_vars.insert(c->loop_var.get());
  for (const auto* c : chain)
    if (sched::UsesAny(c->min, chain_vars) || sched::UsesAny(c->extent, chain_vars))
      return InvalidArgument("reorder: the range of loop " + c->loop_var->name + " depends on another loop of the nest");
  std::vector<const ForNode*> order = chain;
  size_t next_given = 0;
  for (auto& slot : order) {
    if (!given.count(slot->loop_var.get())) continue;
    slot = As<ForNode>(sites[next_given++].stmt);
  }
  Stmt inner = chain.back()->body;
  for (size_t k = order.size(); k-- > 0;)
    inner = std::make_shared<ForNode>(order[k]->loop_var, order[k]->min, order[k]->extent, order[k]->for_kind, inner);
  SetBody(sched::Replace(body(), chain.front(), inner));
  std::vector<TraceArg> in;
  for (const auto& l : loops) in.push_back(TraceArg::Loop(l));
  Record("reorder", in, {}, {}, {});
  return Status::Ok();
}

Result<std::vector<LoopRV>> Schedule::Tile(const std::vector<LoopRV>& loops, const std::vector<int64_t>& tile_sizes) {
  if (loops.size() != tile_sizes.size())
    return InvalidArgument("tile: " + std::to_string(loops.size()) + " loops but " +
                           std::to_string(tile_sizes.size()) + " tile sizes");
  // Tile is several primitives; undo all of them when one refuses.
  PrimFunc saved_func = func_;
  Trace saved_trace = trace_;
  std::vector<LoopRV> outers, inners;
  Status st = Status::Ok();
  for (size_t k = 0; k < loops.size() && st.ok(); ++k) {
    Result<std::vector<LoopRV>> r = Split(loops[k], {-1, tile_sizes[k]});
    if (!r.ok()) {
      st = r.status();
      break;
    }
    outers.push_back((*r)[0]);
    inners.push_back((*r)[1]);
  }
  std::vector<LoopRV> all = outers;
  all.insert(all.end(), inners.begin(), inners.end());
  if (st.ok()) st = Reorder(all);
  if (!st.ok()) {
    func_ = saved_func;
    trace_ = saved_trace;
    st.Annotate("tile");
    return st;
  }
  return all;
}

}  // namespace tir
}  // namespace kiln
