// cache_read and cache_write: a copy of a buffer in another scope, with a
// block that fills it (read) or writes it back (write).
#include <memory>

#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

Buffer CopyBuffer(const Buffer& b, const std::string& scope) {
  auto n = std::make_shared<BufferNode>(*b);
  n->name = b->name + "_" + scope;
  n->data = MakeVar(n->name, HandleType());
  n->scope = scope;
  n->strides.clear();
  return n;
}

// for ax...: block name: dst[v...] = src[v...]
Stmt CopyNest(const std::string& name, const Buffer& src, const Buffer& dst) {
  Block b;
  b.name = name;
  std::vector<PrimExpr> idx, values;
  std::vector<Var> loops;
  for (size_t d = 0; d < src->shape.size(); ++d) {
    Var v = MakeVar("v" + std::to_string(d), src->shape[d].dtype());
    Var ax = MakeVar("ax" + std::to_string(d), src->shape[d].dtype());
    b.iter_vars.push_back(IterVar{v, IntImm(src->shape[d].dtype(), 0), src->shape[d], IterKind::kSpatial});
    idx.push_back(PrimExpr(v));
    values.push_back(PrimExpr(ax));
    loops.push_back(ax);
  }
  b.body = Store(dst, Load(src, idx), idx);
  b.reads = {sched::FullRegion(src)};
  b.writes = {sched::FullRegion(dst)};
  Stmt s = std::make_shared<BlockRealizeNode>(values, sched::True(), b);
  for (size_t d = loops.size(); d-- > 0;)
    s = std::make_shared<ForNode>(loops[d], IntImm(loops[d]->dtype, 0), src->shape[d], ForKind::kSerial, s);
  return s;
}

// Index in the root's statement list of the one holding `site`.
size_t TopIndex(const Stmt& root, const sched::Site& site, std::vector<Stmt>* top) {
  const auto* r = As<BlockRealizeNode>(root);
  const auto* seq = As<SeqStmtNode>(r->block.body);
  *top = seq ? seq->seq : std::vector<Stmt>{r->block.body};
  for (size_t k = 0; k < top->size(); ++k) {
    if (site.stmt == (*top)[k]) return k;
    for (const auto& a : site.ancestors)
      if (a == (*top)[k]) return k;
  }
  return top->size();
}

Stmt WithRootBody(const Stmt& root, std::vector<Stmt> top) {
  const auto* r = As<BlockRealizeNode>(root);
  Block b = r->block;
  b.body = Seq(std::move(top));
  return std::make_shared<BlockRealizeNode>(r->iter_values, r->predicate, std::move(b));
}

Stmt RetargetBlock(const BlockRealizeNode* br, const Buffer& from, const Buffer& to) {
  auto fn = [&](const PrimExpr& e) -> PrimExpr {
    const auto* l = e.as<BufferLoadNode>();
    if (l && l->buffer == from) return Load(to, l->indices);
    return e;
  };
  Block b = br->block;
  auto stores = [&](const Stmt& s) -> Stmt {
    return sched::RewriteStmts(s, [&](const Stmt& x) -> Stmt {
      const auto* st = As<BufferStoreNode>(x);
      if (!st || st->buffer != from) return nullptr;
      Stmt inner = sched::RewriteExprs(Store(to, st->value, st->indices), fn);
      return inner;
    });
  };
  if (b.init) b.init = sched::RewriteExprs(stores(b.init), fn);
  b.body = sched::RewriteExprs(stores(b.body), fn);
  return std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, std::move(b));
}

}  // namespace

Result<BlockRV> Schedule::CacheRead(const BlockRV& block, int read_index, const std::string& scope) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  const std::string where = "cache_read: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  const auto* br = As<BlockRealizeNode>(site.stmt);
  std::vector<Buffer> reads;
  for (const auto& r : br->block.reads) reads.push_back(r.buffer);
  if (reads.empty()) reads = sched::BlockAccesses(br->block).reads;
  if (read_index < 0 || read_index >= static_cast<int>(reads.size()))
    return InvalidArgument(where + " has " + std::to_string(reads.size()) + " read buffers; index " +
                           std::to_string(read_index) + " is out of range");
  Buffer buf = reads[read_index];
  if (sched::Writes(br->block, buf)) return FailedPrecondition(where + " also writes " + buf->name);
  std::vector<Stmt> top;
  size_t ti = TopIndex(body(), site, &top);
  if (ti == top.size()) return InvalidArgument(where + " is not under the root block");
  auto order = sched::BlockOrder(body());
  for (const auto& s : sched::CollectBlocks(top[ti]))
    if (sched::Writes(As<BlockRealizeNode>(s)->block, buf))
      return FailedPrecondition(where + ": " + buf->name + " is written by block \"" +
                                As<BlockRealizeNode>(s)->block.name + "\" in the same loop nest");
  Buffer local = CopyBuffer(buf, scope);
  std::string copy_name = sched::FreshBlockName(body(), buf->name + "_" + scope);
  Stmt out = sched::Replace(body(), br, RetargetBlock(br, buf, local));
  top.clear();
  ti = TopIndex(out, sched::FindBlock(out, name), &top);
  top.insert(top.begin() + ti, CopyNest(copy_name, buf, local));
  out = sched::AddRootAlloc(WithRootBody(out, top), local);
  SetBody(sched::RefreshRegions(out));
  BlockRV rv = NewBlockRV(copy_name);
  Record("cache_read", {TraceArg::Block(block), TraceArg::Int(read_index), TraceArg::Str(scope)}, {}, {rv}, {});
  return rv;
}

Result<BlockRV> Schedule::CacheWrite(const BlockRV& block, int write_index, const std::string& scope) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  const std::string where = "cache_write: block \"" + name + "\"";
  sched::Site site = sched::FindBlock(body(), name);
  const auto* br = As<BlockRealizeNode>(site.stmt);
  std::vector<Buffer> writes;
  for (const auto& r : br->block.writes) writes.push_back(r.buffer);
  if (writes.empty()) writes = sched::BlockAccesses(br->block).writes;
  if (write_index < 0 || write_index >= static_cast<int>(writes.size()))
    return InvalidArgument(where + " has " + std::to_string(writes.size()) + " write buffers; index " +
                           std::to_string(write_index) + " is out of range");
  Buffer buf = writes[write_index];
  // The copy writes back the whole buffer, so the block must write all of it.
  bool covers = true;
  for (const auto* st : sched::BlockAccesses(br->block).stores) {
    if (st->buffer != buf) continue;
    for (size_t d = 0; d < st->indices.size() && covers; ++d) {
      const auto* v = st->indices[d].as<VarNode>();
      bool ok = false;
      for (const auto& iv : br->block.iter_vars)
        if (iv.var.get() == v && iv.kind == IterKind::kSpatial) {
          auto mn = iv.min.as<IntImmNode>();
          ok = mn && mn->value == 0 && (iv.extent.same_as(buf->shape[d]) ||
                                        (iv.extent.as<IntImmNode>() && buf->shape[d].as<IntImmNode>() &&
                                         iv.extent.as<IntImmNode>()->value == buf->shape[d].as<IntImmNode>()->value));
        }
      covers = ok;
    }
  }
  if (!covers)
    return FailedPrecondition(where + " does not write the whole of " + buf->name +
                              " (its store indices must be spatial iteration variables over the full shape)");
  std::vector<Stmt> top;
  size_t ti = TopIndex(body(), site, &top);
  if (ti == top.size()) return InvalidArgument(where + " is not under the root block");
  for (const auto& s : sched::CollectBlocks(top[ti])) {
    const auto* o = As<BlockRealizeNode>(s);
    if (o == br) continue;
    if (sched::Writes(o->block, buf) || sched::Reads(o->block, buf))
      return FailedPrecondition(where + ": " + buf->name + " is also accessed by block \"" + o->block.name +
                                "\" in the same loop nest");
  }
  Buffer local = CopyBuffer(buf, scope);
  std::string copy_name = sched::FreshBlockName(body(), buf->name + "_" + scope);
  Stmt out = sched::Replace(body(), br, RetargetBlock(br, buf, local));
  top.clear();
  ti = TopIndex(out, sched::FindBlock(out, name), &top);
  top.insert(top.begin() + ti + 1, CopyNest(copy_name, local, buf));
  out = sched::AddRootAlloc(WithRootBody(out, top), local);
  SetBody(sched::RefreshRegions(out));
  BlockRV rv = NewBlockRV(copy_name);
  Record("cache_write", {TraceArg::Block(block), TraceArg::Int(write_index), TraceArg::Str(scope)}, {}, {rv}, {});
  return rv;
}

}  // namespace tir
}  // namespace kiln
