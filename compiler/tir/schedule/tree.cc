#include "compiler/tir/schedule/tree.h"

#include <memory>
#include <utility>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace sched {

using namespace ir;  // NOLINT

namespace {

// Children of a statement, in execution order.
std::vector<Stmt> Children(const Stmt& s) {
  switch (s->kind()) {
    case TirKind::kFor: return {As<ForNode>(s)->body};
    case TirKind::kSeqStmt: return As<SeqStmtNode>(s)->seq;
    case TirKind::kIfThenElse: {
      const auto* x = As<IfThenElseNode>(s);
      if (x->else_case) return {x->then_case, x->else_case};
      return {x->then_case};
    }
    case TirKind::kLetStmt: return {As<LetStmtNode>(s)->body};
    case TirKind::kAllocate: return {As<AllocateNode>(s)->body};
    case TirKind::kBlockRealize: {
      const auto* x = As<BlockRealizeNode>(s);
      if (x->block.init) return {x->block.init, x->block.body};
      return {x->block.body};
    }
    default: return {};
  }
}

bool FindIf(const Stmt& s, const std::function<bool(const Stmt&)>& pred, std::vector<Stmt>* path, Site* out) {
  if (!s) return false;
  if (pred(s)) {
    out->stmt = s;
    out->ancestors = *path;
    return true;
  }
  path->push_back(s);
  for (const auto& c : Children(s))
    if (FindIf(c, pred, path, out)) return true;
  path->pop_back();
  return false;
}

void Collect(const Stmt& s, bool stop_at_blocks, bool is_top, std::vector<Stmt>* out) {
  if (!s) return;
  if (As<BlockRealizeNode>(s)) {
    if (!is_top || !stop_at_blocks) out->push_back(s);
    if (stop_at_blocks && !is_top) return;
  }
  for (const auto& c : Children(s)) Collect(c, stop_at_blocks, false, out);
}

Stmt Rebuild(const Stmt& s, const StmtNode* target, const Stmt& repl, bool is_root) {
  if (!s) return s;
  if (s.get() == target) return repl;
  switch (s->kind()) {
    case TirKind::kFor: {
      const auto* x = As<ForNode>(s);
      Stmt b = Rebuild(x->body, target, repl, false);
      if (b == x->body) return s;
      if (!b) return nullptr;
      return std::make_shared<ForNode>(x->loop_var, x->min, x->extent, x->for_kind, b, x->thread_tag);
    }
    case TirKind::kSeqStmt: {
      const auto* x = As<SeqStmtNode>(s);
      std::vector<Stmt> seq;
      bool changed = false;
      for (const auto& c : x->seq) {
        Stmt n = Rebuild(c, target, repl, false);
        changed |= n != c;
        if (n) seq.push_back(n);
      }
      if (!changed) return s;
      if (seq.empty()) return nullptr;
      return Seq(std::move(seq));
    }
    case TirKind::kIfThenElse: {
      const auto* x = As<IfThenElseNode>(s);
      Stmt t = Rebuild(x->then_case, target, repl, false);
      Stmt e = Rebuild(x->else_case, target, repl, false);
      if (t == x->then_case && e == x->else_case) return s;
      if (!t && !e) return nullptr;
      if (!t) return std::make_shared<IfThenElseNode>(PrimExpr(std::make_shared<NotNode>(x->cond)), e, nullptr);
      return std::make_shared<IfThenElseNode>(x->cond, t, e);
    }
    case TirKind::kLetStmt: {
      const auto* x = As<LetStmtNode>(s);
      Stmt b = Rebuild(x->body, target, repl, false);
      if (b == x->body) return s;
      if (!b) return nullptr;
      return std::make_shared<LetStmtNode>(x->var, x->value, b);
    }
    case TirKind::kAllocate: {
      const auto* x = As<AllocateNode>(s);
      Stmt b = Rebuild(x->body, target, repl, false);
      if (b == x->body) return s;
      if (!b) return nullptr;
      return std::make_shared<AllocateNode>(x->buffer, b);
    }
    case TirKind::kBlockRealize: {
      const auto* x = As<BlockRealizeNode>(s);
      Stmt init = Rebuild(x->block.init, target, repl, false);
      Stmt body = Rebuild(x->block.body, target, repl, false);
      if (init == x->block.init && body == x->block.body) return s;
      if (!body && !is_root) return nullptr;
      Block b = x->block;
      b.init = init;
      b.body = body ? body : Seq({});
      if (!b.body) b.body = std::make_shared<SeqStmtNode>(std::vector<Stmt>{});
      return std::make_shared<BlockRealizeNode>(x->iter_values, x->predicate, std::move(b));
    }
    default: return s;
  }
}

class StmtRewriter : public StmtExprMutator {
 public:
  explicit StmtRewriter(const std::function<Stmt(const Stmt&)>& fn) : fn_(fn) {}
  Stmt MutateStmt(const Stmt& s) override {
    if (!s) return s;
    if (Stmt r = fn_(s)) return r;
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  const std::function<Stmt(const Stmt&)>& fn_;
};

class ExprRewriter : public StmtExprMutator {
 public:
  explicit ExprRewriter(const std::function<PrimExpr(const PrimExpr&)>& fn) : fn_(fn) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (!e.defined()) return e;
    return fn_(StmtExprMutator::MutateExpr(e));
  }

 private:
  const std::function<PrimExpr(const PrimExpr&)>& fn_;
};

class AccessVisitor : public StmtExprVisitor {
 public:
  Accesses acc;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      acc.loads.push_back(l);
      Add(&acc.reads, l->buffer);
    }
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (As<BlockRealizeNode>(s)) return;  // nested blocks are not ours
    if (const auto* st = As<BufferStoreNode>(s)) {
      acc.stores.push_back(st);
      Add(&acc.writes, st->buffer);
    }
    StmtExprVisitor::VisitStmt(s);
  }

 private:
  static void Add(std::vector<Buffer>* v, const Buffer& b) {
    for (const auto& x : *v)
      if (x == b) return;
    v->push_back(b);
  }
};

class VarUser : public StmtExprVisitor {
 public:
  explicit VarUser(const std::unordered_set<const VarNode*>& vars) : vars_(vars) {}
  bool found = false;
  void VisitExpr(const PrimExpr& e) override {
    if (found || !e.defined()) return;
    if (const auto* v = e.as<VarNode>()) {
      if (vars_.count(v)) found = true;
      return;
    }
    StmtExprVisitor::VisitExpr(e);
  }

 private:
  const std::unordered_set<const VarNode*>& vars_;
};

}  // namespace

Site FindBlock(const Stmt& root, const std::string& name) {
  Site site;
  std::vector<Stmt> path;
  FindIf(root, [&](const Stmt& s) {
    const auto* br = As<BlockRealizeNode>(s);
    return br != nullptr && br->block.name == name;
  }, &path, &site);
  return site;
}

Site FindLoop(const Stmt& root, const VarNode* loop_var) {
  Site site;
  std::vector<Stmt> path;
  FindIf(root, [&](const Stmt& s) {
    const auto* f = As<ForNode>(s);
    return f != nullptr && f->loop_var.get() == loop_var;
  }, &path, &site);
  return site;
}

std::vector<Stmt> CollectBlocks(const Stmt& root) {
  std::vector<Stmt> out;
  Collect(root, false, true, &out);
  return out;
}

std::vector<Stmt> ChildBlocks(const Stmt& s) {
  std::vector<Stmt> out;
  Collect(s, true, true, &out);
  return out;
}

Stmt Replace(const Stmt& root, const StmtNode* target, const Stmt& replacement) {
  return Rebuild(root, target, replacement, true);
}

Stmt RewriteStmts(const Stmt& root, const std::function<Stmt(const Stmt&)>& fn) {
  return StmtRewriter(fn).MutateStmt(root);
}

Stmt RewriteExprs(const Stmt& root, const std::function<PrimExpr(const PrimExpr&)>& fn) {
  return ExprRewriter(fn).MutateStmt(root);
}

Accesses BlockAccesses(const Block& block) {
  AccessVisitor v;
  if (block.init) v.VisitStmt(block.init);
  // The body itself may be a nested block; visit its children directly.
  if (As<BlockRealizeNode>(block.body) == nullptr) v.VisitStmt(block.body);
  return v.acc;
}

bool Reads(const Block& block, const Buffer& buf) {
  for (const auto& b : BlockAccesses(block).reads)
    if (b == buf) return true;
  return false;
}

bool Writes(const Block& block, const Buffer& buf) {
  for (const auto& b : BlockAccesses(block).writes)
    if (b == buf) return true;
  return false;
}

bool UsesAny(const PrimExpr& e, const std::unordered_set<const VarNode*>& vars) {
  VarUser u(vars);
  u.VisitExpr(e);
  return u.found;
}

bool UsesVar(const PrimExpr& e, const VarNode* var) { return UsesAny(e, {var}); }

bool IsConstTrue(const PrimExpr& e) {
  if (!e.defined()) return true;
  const auto* imm = e.as<IntImmNode>();
  return imm != nullptr && imm->value != 0;
}

PrimExpr True() { return IntImm(DType::Bool(), 1); }

PrimExpr And(const PrimExpr& a, const PrimExpr& b) {
  if (IsConstTrue(a)) return b;
  if (IsConstTrue(b)) return a;
  return MakeBinary(TirKind::kAnd, a, b);
}

std::string FreshBlockName(const Stmt& root, const std::string& base) {
  std::set<std::string> used;
  for (const auto& s : CollectBlocks(root)) used.insert(As<BlockRealizeNode>(s)->block.name);
  if (!used.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string n = base + "_" + std::to_string(k);
    if (!used.count(n)) return n;
  }
}

BufferRegion FullRegion(const Buffer& b) {
  BufferRegion r;
  r.buffer = b;
  for (const auto& d : b->shape) r.ranges.push_back({PrimExpr(0), d});
  return r;
}

namespace {

bool HasRegion(const std::vector<BufferRegion>& v, const Buffer& b) {
  for (const auto& r : v)
    if (r.buffer == b) return true;
  return false;
}

std::vector<BufferRegion> Refresh(const std::vector<BufferRegion>& old, const std::vector<Buffer>& used) {
  std::vector<BufferRegion> out;
  for (const auto& r : old) {
    for (const auto& b : used)
      if (b == r.buffer) out.push_back(r);
  }
  for (const auto& b : used)
    if (!HasRegion(out, b)) out.push_back(FullRegion(b));
  return out;
}

}  // namespace

Stmt RefreshRegions(const Stmt& root) {
  const auto* top = As<BlockRealizeNode>(root);
  return RewriteStmts(root, [&](const Stmt& s) -> Stmt {
    const auto* br = As<BlockRealizeNode>(s);
    if (!br || br == top) return nullptr;
    Accesses acc = BlockAccesses(br->block);
    std::vector<Buffer> reads;
    for (const auto& b : acc.reads) {
      // A reduction's own output is not listed as a read (as TVM prints it).
      bool written = false;
      for (const auto& w : acc.writes) written |= w == b;
      if (!written || HasRegion(br->block.reads, b)) reads.push_back(b);
    }
    Block b = br->block;
    b.reads = Refresh(b.reads, reads);
    b.writes = Refresh(b.writes, acc.writes);
    Stmt inner = RefreshRegions(b.body);
    b.body = inner;
    return std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, std::move(b));
  });
}

Stmt RemoveAlloc(const Stmt& root, const Buffer& buf) {
  return RewriteStmts(root, [&](const Stmt& s) -> Stmt {
    const auto* br = As<BlockRealizeNode>(s);
    if (!br) return nullptr;
    bool has = false;
    for (const auto& b : br->block.alloc_buffers) has |= b == buf;
    if (!has) return nullptr;
    Block b = br->block;
    b.alloc_buffers.clear();
    for (const auto& x : br->block.alloc_buffers)
      if (x != buf) b.alloc_buffers.push_back(x);
    return std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, std::move(b));
  });
}

Stmt AddRootAlloc(const Stmt& root, const Buffer& buf) {
  const auto* br = As<BlockRealizeNode>(root);
  Block b = br->block;
  b.alloc_buffers.push_back(buf);
  return std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, std::move(b));
}

std::map<std::string, size_t> BlockOrder(const Stmt& root) {
  std::map<std::string, size_t> out;
  for (const auto& s : CollectBlocks(root)) out[As<BlockRealizeNode>(s)->block.name] = out.size();
  return out;
}

bool IsAncestor(const Site& site, const StmtNode* anc) {
  for (const auto& a : site.ancestors)
    if (a.get() == anc) return true;
  return false;
}

namespace {
class LocalVarCollector : public StmtExprVisitor {
 public:
  std::unordered_set<const VarNode*> vars;
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) vars.insert(f->loop_var.get());
    if (const auto* br = As<BlockRealizeNode>(s))
      for (const auto& iv : br->block.iter_vars) vars.insert(iv.var.get());
    StmtExprVisitor::VisitStmt(s);
  }
};
class AllVars : public StmtExprVisitor {
 public:
  std::unordered_set<const VarNode*> vars;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<VarNode>()) vars.insert(v);
    StmtExprVisitor::VisitExpr(e);
  }
};
}  // namespace

std::unordered_set<const VarNode*> LocalVars(const Stmt& root) {
  LocalVarCollector c;
  c.VisitStmt(root);
  return c.vars;
}

std::unordered_set<const VarNode*> VarsOf(const PrimExpr& e) {
  AllVars c;
  c.VisitExpr(e);
  return c.vars;
}

}  // namespace sched
}  // namespace tir
}  // namespace kiln
