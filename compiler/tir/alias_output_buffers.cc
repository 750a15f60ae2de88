#include "compiler/tir/alias_output_buffers.h"

#include <memory>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// Same dtype and shape: the same static extents, or symbolic extents
// proven equal (softmax over a symbolic row: its exp workspace and its
// output are both (n, .., h * w * 21)).
bool SameShape(const Buffer& a, const Buffer& b) {
  if (nest::SameStaticShape(a, b)) return true;
  if (a->dtype != b->dtype || a->shape.size() != b->shape.size()) return false;
  for (size_t d = 0; d < a->shape.size(); ++d)
    if (!nest::ProvenSameExtent(a->shape[d], b->shape[d])) return false;
  return true;
}

// The loads and stores of one buffer's storage in a statement.
struct Refs : StmtExprVisitor {
  explicit Refs(const Buffer& b) : buffer(b) {}
  const Buffer& buffer;
  std::vector<const BufferLoadNode*> loads;
  std::vector<const BufferStoreNode*> stores;
  bool other_shape = false;  // accessed through a view of another shape
  bool escapes = false;      // the handle itself is used

  bool Mine(const Buffer& b) {
    if (b->data.get() != buffer->data.get()) return false;
    if (b != buffer && !SameShape(b, buffer)) other_shape = true;
    return true;
  }
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      if (Mine(l->buffer)) loads.push_back(l);
    }
    if (e.get() == buffer->data.get()) escapes = true;
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      if (Mine(st->buffer)) stores.push_back(st);
    }
    StmtExprVisitor::VisitStmt(s);
  }
  size_t count() const { return loads.size() + stores.size(); }
  bool clean() const { return !other_shape && !escapes; }
};

Refs RefsIn(const Stmt& s, const Buffer& b) {
  Refs r(b);
  r.VisitStmt(s);
  return r;
}

bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!arith::StructuralEqual(a[i], b[i])) return false;
  return true;
}

// The loops from `s` down to `target` (through loops, sequences, lets and
// allocations); false when `target` is not reached that way.
bool LoopsTo(const Stmt& s, const BufferStoreNode* target, std::vector<const ForNode*>* loops) {
  if (s.get() == target) return true;
  if (const auto* f = As<ForNode>(s)) {
    loops->push_back(f);
    if (LoopsTo(f->body, target, loops)) return true;
    loops->pop_back();
    return false;
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    for (const Stmt& c : seq->seq)
      if (LoopsTo(c, target, loops)) return true;
    return false;
  }
  if (const auto* let = As<LetStmtNode>(s)) return LoopsTo(let->body, target, loops);
  if (const auto* a = As<AllocateNode>(s)) return LoopsTo(a->body, target, loops);
  return false;
}

// Whether each of `loops` indexes its own dimension of `indices` with
// exactly its variable.
bool EachLoopOwnsADimension(const std::vector<const ForNode*>& loops, const std::vector<PrimExpr>& indices) {
  std::vector<bool> used(indices.size(), false);
  for (const ForNode* f : loops) {
    bool found = false;
    for (size_t d = 0; d < indices.size() && !found; ++d) {
      if (used[d] || !nest::IsVar(indices[d], f->loop_var.get())) continue;
      used[d] = true;
      found = true;
    }
    if (!found) return false;
  }
  return true;
}

// Rewrites every access of `from`'s storage to `to` (same shape).
class Retarget : public StmtExprMutator {
 public:
  Retarget(const Buffer& from, Buffer to) : from_(from->data.get()), to_(std::move(to)) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* l = m.as<BufferLoadNode>();
    if (l == nullptr || l->buffer->data.get() != from_) return m;
    return Load(to_, l->indices);
  }
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* st = As<BufferStoreNode>(m);
    if (st == nullptr || st->buffer->data.get() != from_) return m;
    return Store(to_, st->value, st->indices);
  }

 private:
  const VarNode* from_;
  Buffer to_;
};

// `alloc`'s body with its buffer living in output `out`, or null when a
// condition of the header fails.
Stmt TryAlias(const AllocateNode* alloc, const Buffer& out, const Stmt& func_body) {
  const Buffer& e = alloc->buffer;
  if (e->scope != "global" || !e->strides.empty() || !out->strides.empty() || !SameShape(e, out)) return nullptr;
  Refs o_all = RefsIn(func_body, out);
  if (!o_all.clean() || !o_all.loads.empty() || o_all.stores.size() != 1) return nullptr;
  const BufferStoreNode* store = o_all.stores[0];
  Refs o_in = RefsIn(alloc->body, out);
  Refs e_in = RefsIn(alloc->body, e);
  if (o_in.stores.size() != 1 || !e_in.clean() || e_in.count() == 0) return nullptr;
  const size_t total = o_in.count() + e_in.count();
  auto indices_of_all = [&]() {
    std::vector<const std::vector<PrimExpr>*> v;
    for (const auto* l : e_in.loads) v.push_back(&l->indices);
    for (const auto* s : e_in.stores) v.push_back(&s->indices);
    v.push_back(&store->indices);
    return v;
  };
  const std::vector<const std::vector<PrimExpr>*> all = indices_of_all();
  for (const auto* idx : all)
    if (idx->size() != e->shape.size()) return nullptr;

  // Down to the sequence that splits the accesses.
  std::vector<bool> owned(e->shape.size(), false);
  Stmt cur = alloc->body;
  Stmt split;
  while (cur && !split) {
    if (const auto* f = As<ForNode>(cur)) {
      bool found = false;
      for (size_t d = 0; d < owned.size() && !found; ++d) {
        if (owned[d]) continue;
        bool all_var = true;
        for (const auto* idx : all) all_var = all_var && nest::IsVar((*idx)[d], f->loop_var.get());
        if (all_var) owned[d] = found = true;
      }
      if (!found) return nullptr;
      cur = f->body;
    } else if (const auto* seq = As<SeqStmtNode>(cur)) {
      Stmt holder;
      for (const Stmt& c : seq->seq)
        if (RefsIn(c, e).count() + RefsIn(c, out).count() == total) holder = c;
      if (holder) {
        cur = holder;
      } else {
        split = cur;
      }
    } else if (const auto* let = As<LetStmtNode>(cur)) {
      cur = let->body;
    } else if (const auto* inner = As<AllocateNode>(cur)) {
      cur = inner->body;
    } else {
      return nullptr;
    }
  }
  if (!split) return nullptr;

  // From there to the statement holding O's store: through sequences whose
  // later statements touch neither buffer (what comes before the store's
  // statement runs first), allocations (ExtendAllocateScopes wraps softmax's
  // sum and output loops in the sum's partial buffers) and lets that read
  // neither buffer.
  Stmt last = split;
  for (bool deeper = true; deeper;) {
    deeper = false;
    if (const auto* a = As<AllocateNode>(last)) {
      last = a->body;
      deeper = true;
    } else if (const auto* let = As<LetStmtNode>(last)) {
      Refs in_value_e(e), in_value_o(out);
      in_value_e.VisitExpr(let->value);
      in_value_o.VisitExpr(let->value);
      if (in_value_e.count() + in_value_o.count() == 0) {
        last = let->body;
        deeper = true;
      }
    } else if (const auto* seq = As<SeqStmtNode>(last)) {
      size_t j = seq->seq.size();
      for (size_t i = 0; i < seq->seq.size(); ++i)
        if (!RefsIn(seq->seq[i], out).stores.empty()) j = i;
      if (j == seq->seq.size()) return nullptr;
      for (size_t i = j + 1; i < seq->seq.size(); ++i)
        if (RefsIn(seq->seq[i], e).count() + RefsIn(seq->seq[i], out).count() != 0) return nullptr;
      last = seq->seq[j];
      deeper = true;
    }
  }

  // In it, E only loaded, in the stored value, at the store's indices.
  Refs e_last = RefsIn(last, e);
  Refs e_value(e);
  e_value.VisitExpr(store->value);
  if (!e_last.stores.empty() || e_last.loads.size() != e_value.loads.size()) return nullptr;
  // And E feeds the store: an E it never reads is scratch that merely has
  // O's shape (a row mean over 8 rows and its 8-lane tree step), whose
  // slices other iterations of an enclosing loop would overwrite in O.
  if (e_value.loads.empty()) return nullptr;
  for (const BufferLoadNode* l : e_value.loads)
    if (!SameIndices(l->indices, store->indices)) return nullptr;

  // Each element of O written once.
  std::vector<const ForNode*> loops;
  if (!LoopsTo(last, store, &loops) || !EachLoopOwnsADimension(loops, store->indices)) return nullptr;

  return Retarget(e, out).MutateStmt(alloc->body);
}

class Rewriter : public StmtExprMutator {
 public:
  Rewriter(std::vector<Buffer> outputs, Stmt func_body)
      : outputs_(std::move(outputs)), func_body_(std::move(func_body)) {}
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* alloc = As<AllocateNode>(m);
    if (alloc == nullptr) return m;
    for (const Buffer& out : outputs_) {
      if (taken_.count(out->data.get())) continue;
      // The function body as it is now: the conditions on O are about the
      // whole kernel, and an earlier rewrite may have moved O's store.
      Stmt aliased = TryAlias(alloc, out, func_body_);
      if (aliased) {
        taken_.insert(out->data.get());
        return aliased;
      }
    }
    return m;
  }

 private:
  std::vector<Buffer> outputs_;
  Stmt func_body_;
  std::unordered_set<const VarNode*> taken_;
};

}  // namespace

PrimFunc AliasOutputBuffers(const PrimFunc& func) {
  std::vector<Buffer> params;
  for (const auto& kv : func->buffer_map) params.push_back(kv.second);
  if (params.empty()) return func;
  Stmt body = Rewriter(params, func->body).MutateStmt(func->body);
  return body == func->body ? func : nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
