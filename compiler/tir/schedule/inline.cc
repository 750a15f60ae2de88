// compute_inline and reverse_compute_inline.
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

bool IsParam(const PrimFunc& f, const Buffer& b) {
  for (const auto& kv : f->buffer_map)
    if (kv.second == b) return true;
  return false;
}

bool IsReduction(const Block& b) {
  if (b.init) return true;
  for (const auto& iv : b.iter_vars)
    if (iv.kind == IterKind::kReduce) return true;
  return false;
}

// When `indices` are distinct iteration variables of `block`, their vars.
bool IterVarIndices(const Block& block, const std::vector<PrimExpr>& indices, std::vector<const VarNode*>* out) {
  std::unordered_set<const VarNode*> ivs, seen;
  for (const auto& iv : block.iter_vars) ivs.insert(iv.var.get());
  out->clear();
  for (const auto& e : indices) {
    const auto* v = e.as<VarNode>();
    if (!v || !ivs.count(v) || !seen.insert(v).second) return false;
    out->push_back(v);
  }
  return true;
}

std::vector<const BlockRealizeNode*> Blocks(const Stmt& root) {
  std::vector<const BlockRealizeNode*> out;
  for (const auto& s : sched::CollectBlocks(root)) out.push_back(As<BlockRealizeNode>(s));
  return out;
}

}  // namespace

Status Schedule::ComputeInline(const BlockRV& block) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  const std::string where = "compute_inline: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  const auto* br = As<BlockRealizeNode>(site.stmt);
  const Block& b = br->block;
  if (IsReduction(b)) return FailedPrecondition(where + " is a reduction block; only spatial blocks can be inlined");
  const auto* store = As<BufferStoreNode>(b.body);
  if (!store) return FailedPrecondition(where + ": its body is not a single buffer store");
  if (!sched::IsConstTrue(br->predicate)) return FailedPrecondition(where + " has a predicate (T.where)");
  std::vector<const VarNode*> idx;
  if (!IterVarIndices(b, store->indices, &idx))
    return FailedPrecondition(where + " stores to " + store->buffer->name +
                              " at indices that are not distinct iteration variables");
  std::unordered_set<const VarNode*> local = sched::LocalVars(body());
  std::unordered_set<const VarNode*> allowed(idx.begin(), idx.end());
  for (const VarNode* v : sched::VarsOf(store->value))
    if (local.count(v) && !allowed.count(v))
      return FailedPrecondition(where + ": its value depends on " + v->name + ", which is not a store index");
  const Buffer& buf = store->buffer;
  if (IsParam(func_, buf))
    return FailedPrecondition(where + " writes the function parameter " + buf->name + ", which must stay");
  for (const auto* other : Blocks(body())) {
    if (other == br || other == As<BlockRealizeNode>(body())) continue;
    if (sched::Writes(other->block, buf))
      return FailedPrecondition(where + ": block \"" + other->block.name + "\" also writes " + buf->name);
  }
  for (const auto& l : sched::BlockAccesses(b).loads)
    if (l->buffer == buf) return FailedPrecondition(where + " reads its own output " + buf->name);
  Stmt out = sched::Replace(body(), br, nullptr);
  PrimExpr value = store->value;
  out = sched::RewriteExprs(out, [&](const PrimExpr& e) -> PrimExpr {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer != buf) return e;
    VarMap map;
    for (size_t d = 0; d < idx.size(); ++d) map[idx[d]] = load->indices[d];
    return Substitute(value, map);
  });
  out = sched::RefreshRegions(sched::RemoveAlloc(out, buf));
  SetBody(out);
  Record("compute_inline", {TraceArg::Block(block)}, {}, {}, {});
  return Status::Ok();
}

Status Schedule::ReverseComputeInline(const BlockRV& block) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  const std::string where = "reverse_compute_inline: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  const auto* cr = As<BlockRealizeNode>(site.stmt);
  const Block& c = cr->block;
  if (IsReduction(c)) return FailedPrecondition(where + " is a reduction block; only spatial blocks can be inlined");
  const auto* cstore = As<BufferStoreNode>(c.body);
  if (!cstore) return FailedPrecondition(where + ": its body is not a single buffer store");
  if (!sched::IsConstTrue(cr->predicate)) return FailedPrecondition(where + " has a predicate (T.where)");
  // The intermediate buffer: read here, produced by exactly one other block.
  std::vector<const BlockRealizeNode*> all = Blocks(body());
  const auto* root = As<BlockRealizeNode>(body());
  Buffer buf;
  const BlockRealizeNode* producer = nullptr;
  for (const auto& r : sched::BlockAccesses(c).reads) {
    if (IsParam(func_, r)) continue;
    const BlockRealizeNode* p = nullptr;
    for (const auto* o : all)
      if (o != cr && o != root && sched::Writes(o->block, r)) {
        if (p) return FailedPrecondition(where + ": " + r->name + " has more than one producer");
        p = o;
      }
    if (!p) continue;
    if (buf) return FailedPrecondition(where + " reads more than one intermediate buffer (" + buf->name + ", " + r->name + ")");
    buf = r;
    producer = p;
  }
  if (!buf) return FailedPrecondition(where + " reads no buffer produced by another block");
  std::vector<const VarNode*> idx;
  bool first = true;
  for (const auto* l : sched::BlockAccesses(c).loads) {
    if (l->buffer != buf) continue;
    std::vector<const VarNode*> this_idx;
    if (!IterVarIndices(c, l->indices, &this_idx) || (!first && this_idx != idx))
      return FailedPrecondition(where + " reads " + buf->name + " at indices that are not the same distinct iteration variables");
    idx = this_idx;
    first = false;
  }
  if (idx.size() != c.iter_vars.size())
    return FailedPrecondition(where + ": not every iteration variable indexes " + buf->name);
  for (const auto* o : all)
    if (o != cr && o != producer && o != root && sched::Reads(o->block, buf))
      return FailedPrecondition(where + ": " + buf->name + " is also read by block \"" + o->block.name + "\"");
  const Block& p = producer->block;
  const std::string pwhere = "reverse_compute_inline: producer \"" + p.name + "\"";
  if (IsReduction(p)) return FailedPrecondition(pwhere + " is a reduction block");
  const auto* pstore = As<BufferStoreNode>(p.body);
  if (!pstore) return FailedPrecondition(pwhere + ": its body is not a single buffer store");
  // Blocks between the producer and this one must not touch what moves.
  auto order = sched::BlockOrder(body());
  size_t lo = order[p.name], hi = order[c.name];
  for (const auto* o : all) {
    size_t k = order[o->block.name];
    if (k <= lo || k >= hi) continue;
    if (sched::Writes(o->block, cstore->buffer) || sched::Reads(o->block, cstore->buffer))
      return FailedPrecondition(where + ": block \"" + o->block.name + "\" between it and its producer accesses " +
                                cstore->buffer->name);
    for (const auto& r : sched::BlockAccesses(c).reads)
      if (r != buf && sched::Writes(o->block, r))
        return FailedPrecondition(where + ": block \"" + o->block.name + "\" between it and its producer writes " + r->name);
  }
  VarMap map;
  for (size_t d = 0; d < idx.size(); ++d) map[idx[d]] = pstore->indices[d];
  PrimExpr pvalue = pstore->value;
  auto rewrite = [&](const PrimExpr& e) -> PrimExpr {
    const auto* load = e.as<BufferLoadNode>();
    if (load && load->buffer == buf) return pvalue;
    return e;
  };
  // c's variables become the producer's store indices, then its loads of
  // buf (now at exactly those indices) become the producer's value.
  Stmt renamed = Substitute(Store(cstore->buffer, cstore->value, cstore->indices), map);
  const auto* rs = As<BufferStoreNode>(renamed);
  Stmt value_holder = sched::RewriteExprs(std::make_shared<EvaluateNode>(rs->value), rewrite);
  Stmt new_store = Store(rs->buffer, As<EvaluateNode>(value_holder)->value, rs->indices);
  Block nb = p;
  nb.body = new_store;
  Stmt out = sched::Replace(body(), producer, std::make_shared<BlockRealizeNode>(producer->iter_values, producer->predicate, nb));
  out = sched::Replace(out, cr, nullptr);
  out = sched::RefreshRegions(sched::RemoveAlloc(out, buf));
  SetBody(out);
  Record("reverse_compute_inline", {TraceArg::Block(block)}, {}, {}, {});
  return Status::Ok();
}

}  // namespace tir
}  // namespace kiln
