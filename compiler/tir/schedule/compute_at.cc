// compute_at and reverse_compute_at: move a producer (consumer) block under a
// loop of its consumer (producer), computing only the region one iteration of
// that loop needs (produces).
//
// Regions are bounded per dimension over the loops under the target loop:
// an index must be affine in each such loop variable (e(v + 1) - e(v) is a
// constant), so its extreme values are at the loop's ends. Anything else is
// refused rather than over- or under-approximated.
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

struct Range {
  PrimExpr min, extent;
};

struct InnerLoop {
  Var var;
  PrimExpr min, extent;
};

// [lo, hi] of `e` over the inner loops.
Status Bound(const PrimExpr& e, const std::vector<InnerLoop>& loops, PrimExpr* lo, PrimExpr* hi) {
  *lo = e;
  *hi = e;
  for (const auto& l : loops) {
    if (!sched::UsesVar(e, l.var.get())) continue;
    PrimExpr step = arith::Simplify(Substitute(e, VarMap{{l.var.get(), PrimExpr(l.var) + PrimExpr(1)}}) - e);
    auto c = arith::AsConstInt(step);
    if (!c) return FailedPrecondition("cannot bound the index " + arith::ToDebugString(e) + " over loop " + l.var->name);
    PrimExpr first = l.min, last = arith::Simplify(l.min + l.extent - PrimExpr(1));
    if (*c < 0) std::swap(first, last);
    *lo = Substitute(*lo, VarMap{{l.var.get(), first}});
    *hi = Substitute(*hi, VarMap{{l.var.get(), last}});
  }
  *lo = arith::Simplify(*lo);
  *hi = arith::Simplify(*hi);
  return Status::Ok();
}

// The inner loops between `loop` (exclusive) and the block at `site`.
std::vector<InnerLoop> LoopsBelow(const sched::Site& site, const StmtNode* loop) {
  std::vector<InnerLoop> out;
  bool below = false;
  for (const auto& a : site.ancestors) {
    if (a.get() == loop) {
      below = true;
      continue;
    }
    const auto* f = As<ForNode>(a);
    if (below && f) out.push_back({f->loop_var, f->min, f->extent});
  }
  return out;
}

// Accumulates the union of index ranges per dimension.
Status Accumulate(const std::vector<PrimExpr>& indices, const std::vector<InnerLoop>& loops, std::vector<Range>* lo_hi,
                  bool* first) {
  if (*first) lo_hi->assign(indices.size(), Range{});
  for (size_t d = 0; d < indices.size(); ++d) {
    PrimExpr lo, hi;
    KILN_RETURN_IF_ERROR(Bound(indices[d], loops, &lo, &hi));
    if (*first) {
      (*lo_hi)[d] = {lo, hi};
    } else {
      (*lo_hi)[d].min = arith::Simplify(MakeBinary(TirKind::kMin, (*lo_hi)[d].min, lo));
      (*lo_hi)[d].extent = arith::Simplify(MakeBinary(TirKind::kMax, (*lo_hi)[d].extent, hi));
    }
  }
  *first = false;
  return Status::Ok();
}

// Bounds of every loop variable with a constant range, for proofs.
arith::VarBounds LoopBounds(const Stmt& root) {
  arith::VarBounds b;
  sched::RewriteStmts(root, [&](const Stmt& s) -> Stmt {
    if (const auto* f = As<ForNode>(s)) {
      auto mn = arith::AsConstInt(f->min), ext = arith::AsConstInt(f->extent);
      if (mn && ext) b[f->loop_var.get()] = arith::IntBounds::Range(*mn, *mn + *ext - 1);
      else b[f->loop_var.get()] = arith::IntBounds::AtLeast(mn ? *mn : arith::kNegInf);
    }
    return nullptr;
  });
  return b;
}

// Builds `for ax...: block` for `blk`, where the iteration variables named
// in `dims` (per region dimension) run over `region` and every other
// iteration variable over its whole domain.
Stmt BuildNest(const BlockRealizeNode* br, const std::vector<const VarNode*>& dims, const std::vector<Range>& region,
               const arith::VarBounds& outer_bounds) {
  const Block& b = br->block;
  std::vector<Var> loops;
  std::vector<Range> loop_ranges;
  std::vector<PrimExpr> values(b.iter_vars.size());
  PrimExpr pred = sched::True();
  arith::VarBounds bounds = outer_bounds;
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    size_t d = 0;
    while (d < dims.size() && dims[d] != iv.var.get()) ++d;
    Var ax = MakeVar("ax" + std::to_string(loops.size()), iv.var->dtype);
    if (d < dims.size()) {
      PrimExpr ext = arith::Simplify(region[d].extent - region[d].min + PrimExpr(1));
      loops.push_back(ax);
      loop_ranges.push_back({IntImm(iv.var->dtype, 0), ext});
      values[i] = arith::Simplify(region[d].min + PrimExpr(ax));
      if (auto c = arith::AsConstInt(ext)) bounds[ax.get()] = arith::IntBounds::Range(0, *c - 1);
      else bounds[ax.get()] = arith::IntBounds::AtLeast(0);
      PrimExpr lo_ok = MakeBinary(TirKind::kGE, values[i], iv.min);
      PrimExpr hi_ok = MakeBinary(TirKind::kLT, values[i], arith::Simplify(iv.min + iv.extent));
      if (!arith::CanProve(lo_ok, bounds)) pred = sched::And(pred, lo_ok);
      if (!arith::CanProve(hi_ok, bounds)) pred = sched::And(pred, hi_ok);
    } else {
      loops.push_back(ax);
      loop_ranges.push_back({iv.min, iv.extent});
      values[i] = PrimExpr(ax);
    }
  }
  Stmt s = std::make_shared<BlockRealizeNode>(values, pred, b);
  for (size_t k = loops.size(); k-- > 0;)
    s = std::make_shared<ForNode>(loops[k], loop_ranges[k].min, loop_ranges[k].extent, ForKind::kSerial, s);
  return s;
}

bool IsParam(const PrimFunc& f, const Buffer& b) {
  for (const auto& kv : f->buffer_map)
    if (kv.second == b) return true;
  return false;
}

VarMap IterMap(const BlockRealizeNode* br) {
  VarMap m;
  for (size_t i = 0; i < br->block.iter_vars.size(); ++i) m[br->block.iter_vars[i].var.get()] = br->iter_values[i];
  return m;
}

// Store / load indices that are distinct iteration variables of the block.
bool IterIndices(const Block& b, const std::vector<PrimExpr>& idx, std::vector<const VarNode*>* out) {
  std::unordered_set<const VarNode*> ivs, seen;
  for (const auto& iv : b.iter_vars) ivs.insert(iv.var.get());
  out->clear();
  for (const auto& e : idx) {
    const auto* v = e.as<VarNode>();
    if (!v || !ivs.count(v) || !seen.insert(v).second) return false;
    out->push_back(v);
  }
  return true;
}

}  // namespace

Status Schedule::ComputeAt(const BlockRV& block, const LoopRV& loop) {
  if (loop.id == kRootLoopId) {
    KILN_RETURN_IF_ERROR(Resolve(block).status());
    Record("compute_at", {TraceArg::Block(block), TraceArg::Loop(loop)}, {}, {}, {});
    return Status::Ok();
  }
  if (loop.id == kInlineLoopId) {
    // Recorded as compute_at(b, INLINE), not compute_inline, so a replay with
    // another sampled location follows the sample.
    Trace before = trace_;
    KILN_RETURN_IF_ERROR(ComputeInline(block));
    trace_ = before;
    Record("compute_at", {TraceArg::Block(block), TraceArg::Loop(loop)}, {}, {}, {});
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  KILN_ASSIGN_OR_RETURN(Var lv, Resolve(loop));
  const std::string where = "compute_at: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  sched::Site lsite = sched::FindLoop(body(), lv.get());
  const auto* br = As<BlockRealizeNode>(site.stmt);
  const Block& b = br->block;
  if (sched::IsAncestor(site, lsite.stmt.get())) return InvalidArgument(where + " is already under loop " + lv->name);
  if (!sched::IsConstTrue(br->predicate)) return FailedPrecondition(where + " has a predicate (T.where)");
  sched::Accesses acc = sched::BlockAccesses(b);
  if (acc.writes.size() != 1) return FailedPrecondition(where + " writes more than one buffer");
  Buffer buf = acc.writes[0];
  if (IsParam(func_, buf))
    return FailedPrecondition(where + " writes the function parameter " + buf->name + "; only intermediate buffers can be computed at a loop");
  std::vector<const VarNode*> dims;
  for (const auto* st : acc.stores) {
    std::vector<const VarNode*> d;
    if (!IterIndices(b, st->indices, &d) || (!dims.empty() && d != dims))
      return FailedPrecondition(where + " stores to " + buf->name + " at indices that are not its iteration variables");
    dims = d;
  }
  for (size_t i = 0; i < b.iter_vars.size(); ++i) {
    bool in = false;
    for (const auto* d : dims) in |= d == b.iter_vars[i].var.get();
    if (b.iter_vars[i].kind == IterKind::kSpatial && !in)
      return FailedPrecondition(where + ": spatial variable " + b.iter_vars[i].var->name + " does not index " + buf->name);
  }
  auto order = sched::BlockOrder(body());
  const auto* root = As<BlockRealizeNode>(body());
  size_t first_under = SIZE_MAX;
  std::vector<Range> region;
  bool first = true;
  for (const auto& s : sched::CollectBlocks(body())) {
    const auto* o = As<BlockRealizeNode>(s);
    if (o == br || o == root) continue;
    sched::Site os = sched::FindBlock(body(), o->block.name);
    bool under = sched::IsAncestor(os, lsite.stmt.get());
    if (under) first_under = std::min(first_under, order[o->block.name]);
    if (sched::Writes(o->block, buf)) return FailedPrecondition(where + ": block \"" + o->block.name + "\" also writes " + buf->name);
    if (!sched::Reads(o->block, buf)) continue;
    if (!under)
      return FailedPrecondition(where + ": block \"" + o->block.name + "\" reads " + buf->name + " outside loop " + lv->name);
    VarMap m = IterMap(o);
    std::vector<InnerLoop> inner = LoopsBelow(os, lsite.stmt.get());
    for (const auto* l : sched::BlockAccesses(o->block).loads) {
      if (l->buffer != buf) continue;
      std::vector<PrimExpr> idx;
      for (const auto& e : l->indices) idx.push_back(arith::Simplify(Substitute(e, m)));
      KILN_RETURN_IF_ERROR_CTX(Accumulate(idx, inner, &region, &first), "%s", where.c_str());
    }
  }
  if (first) return FailedPrecondition(where + ": no block under loop " + lv->name + " reads " + buf->name);
  if (order[name] > first_under) return FailedPrecondition(where + " runs after the blocks under loop " + lv->name);
  // What the block reads must not be written between its place and the loop.
  for (const auto& s : sched::CollectBlocks(body())) {
    const auto* o = As<BlockRealizeNode>(s);
    if (o == br || o == root || order[o->block.name] < order[name]) continue;
    for (const auto& r : acc.reads)
      if (sched::Writes(o->block, r) && order[o->block.name] < first_under)
        return FailedPrecondition(where + ": block \"" + o->block.name + "\" writes " + r->name + " before loop " + lv->name);
  }
  Stmt nest = BuildNest(br, dims, region, LoopBounds(body()));
  Stmt out = sched::Replace(body(), br, nullptr);
  const auto* f = As<ForNode>(sched::FindLoop(out, lv.get()).stmt);
  out = sched::Replace(out, f, std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, Seq({nest, f->body})));
  SetBody(sched::RefreshRegions(out));
  Record("compute_at", {TraceArg::Block(block), TraceArg::Loop(loop)}, {}, {}, {});
  return Status::Ok();
}

Status Schedule::ReverseComputeAt(const BlockRV& block, const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  KILN_ASSIGN_OR_RETURN(Var lv, Resolve(loop));
  const std::string where = "reverse_compute_at: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  sched::Site lsite = sched::FindLoop(body(), lv.get());
  const auto* br = As<BlockRealizeNode>(site.stmt);
  const Block& b = br->block;
  if (sched::IsAncestor(site, lsite.stmt.get())) return InvalidArgument(where + " is already under loop " + lv->name);
  if (b.init) return FailedPrecondition(where + " is a reduction block");
  for (const auto& iv : b.iter_vars)
    if (iv.kind == IterKind::kReduce) return FailedPrecondition(where + " is a reduction block");
  if (!sched::IsConstTrue(br->predicate)) return FailedPrecondition(where + " has a predicate (T.where)");
  sched::Accesses acc = sched::BlockAccesses(b);
  auto order = sched::BlockOrder(body());
  const auto* root = As<BlockRealizeNode>(body());
  // Loops at and outside the target loop: a producer's reduction must not use them.
  std::unordered_set<const VarNode*> outer = {lv.get()};
  for (const auto& a : lsite.ancestors)
    if (const auto* f = As<ForNode>(a)) outer.insert(f->loop_var.get());
  std::vector<const VarNode*> dims;  // per region entry, the consumer's iteration variable
  std::vector<Range> region;
  size_t last_under = 0;
  bool any_under = false;
  for (const auto& s : sched::CollectBlocks(body())) {
    const auto* o = As<BlockRealizeNode>(s);
    if (o == br || o == root) continue;
    sched::Site os = sched::FindBlock(body(), o->block.name);
    bool under = sched::IsAncestor(os, lsite.stmt.get());
    if (under) {
      any_under = true;
      last_under = std::max(last_under, order[o->block.name]);
    }
    for (const auto& w : acc.writes)
      if (sched::Writes(o->block, w)) return FailedPrecondition(where + ": block \"" + o->block.name + "\" also writes " + w->name);
    for (const auto& r : acc.reads) {
      if (!sched::Writes(o->block, r)) continue;
      if (!under) {
        if (order[o->block.name] > order[name]) continue;
        // Written before the loop: fine unless it is also written under it.
        continue;
      }
      for (size_t i = 0; i < o->block.iter_vars.size(); ++i)
        if (o->block.iter_vars[i].kind == IterKind::kReduce && sched::UsesAny(o->iter_values[i], outer))
          return FailedPrecondition(where + ": the reduction of block \"" + o->block.name + "\" is not complete within loop " + lv->name);
      // The consumer's indices of r, per dimension.
      std::vector<const VarNode*> cdims;
      for (const auto* l : acc.loads) {
        if (l->buffer != r) continue;
        std::vector<const VarNode*> d;
        if (!IterIndices(b, l->indices, &d) || (!cdims.empty() && d != cdims))
          return FailedPrecondition(where + " reads " + r->name + " at indices that are not its iteration variables");
        cdims = d;
      }
      VarMap m = IterMap(o);
      std::vector<InnerLoop> inner = LoopsBelow(os, lsite.stmt.get());
      for (const auto* st : sched::BlockAccesses(o->block).stores) {
        if (st->buffer != r) continue;
        std::vector<PrimExpr> idx;
        for (const auto& e : st->indices) idx.push_back(arith::Simplify(Substitute(e, m)));
        std::vector<Range> one;
        bool f1 = true;
        KILN_RETURN_IF_ERROR_CTX(Accumulate(idx, inner, &one, &f1), "%s", where.c_str());
        for (size_t d = 0; d < cdims.size(); ++d) {
          size_t k = 0;
          while (k < dims.size() && dims[k] != cdims[d]) ++k;
          if (k == dims.size()) {
            dims.push_back(cdims[d]);
            region.push_back(one[d]);
          } else {
            region[k].min = arith::Simplify(MakeBinary(TirKind::kMin, region[k].min, one[d].min));
            region[k].extent = arith::Simplify(MakeBinary(TirKind::kMax, region[k].extent, one[d].extent));
          }
        }
      }
    }
  }
  if (!any_under || dims.empty())
    return FailedPrecondition(where + ": no block under loop " + lv->name + " writes what it reads");
  if (order[name] < last_under) return FailedPrecondition(where + " runs before the blocks under loop " + lv->name);
  // Inputs written outside the loop must be written before it; nothing after
  // the loop may touch the consumer's output before the consumer ran.
  for (const auto& s : sched::CollectBlocks(body())) {
    const auto* o = As<BlockRealizeNode>(s);
    if (o == br || o == root) continue;
    size_t k = order[o->block.name];
    if (k <= last_under || k >= order[name]) continue;
    if (sched::IsAncestor(sched::FindBlock(body(), o->block.name), lsite.stmt.get())) continue;
    for (const auto& r : acc.reads)
      if (sched::Writes(o->block, r))
        return FailedPrecondition(where + ": block \"" + o->block.name + "\" writes " + r->name + " after loop " + lv->name);
    for (const auto& w : acc.writes)
      if (sched::Reads(o->block, w))
        return FailedPrecondition(where + ": block \"" + o->block.name + "\" reads " + w->name + " after loop " + lv->name);
  }
  Stmt nest = BuildNest(br, dims, region, LoopBounds(body()));
  Stmt out = sched::Replace(body(), br, nullptr);
  const auto* f = As<ForNode>(sched::FindLoop(out, lv.get()).stmt);
  out = sched::Replace(out, f, std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, Seq({f->body, nest})));
  SetBody(sched::RefreshRegions(out));
  Record("reverse_compute_at", {TraceArg::Block(block), TraceArg::Loop(loop)}, {}, {}, {});
  return Status::Ok();
}

}  // namespace tir
}  // namespace kiln
