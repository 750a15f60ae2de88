#include "compiler/tir/compact_loop_buffers.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// The accesses of one buffer's storage in a statement.
struct Accesses : StmtExprVisitor {
  explicit Accesses(const Buffer& b) : buffer(b) {}
  const Buffer& buffer;
  std::vector<const std::vector<PrimExpr>*> indices;
  bool other_shape = false;  // accessed through a view of another shape
  bool escapes = false;      // the handle itself is used (passed on)

  void Note(const Buffer& b, const std::vector<PrimExpr>& idx) {
    if (b->data.get() != buffer->data.get()) return;
    if (b != buffer && !nest::SameStaticShape(b, buffer)) other_shape = true;
    indices.push_back(&idx);
  }
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) Note(l->buffer, l->indices);
    if (e.get() == buffer->data.get()) escapes = true;
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) Note(st->buffer, st->indices);
    StmtExprVisitor::VisitStmt(s);
  }
};

size_t CountAccesses(const Stmt& s, const Buffer& b) {
  Accesses a(b);
  a.VisitStmt(s);
  return a.indices.size() + (a.escapes ? 1 : 0);
}

int64_t StaticBytes(const Buffer& b, const std::vector<bool>& dropped) {
  int64_t n = (b->dtype.bits * b->dtype.lanes + 7) / 8;
  for (size_t d = 0; d < b->shape.size(); ++d) {
    const int64_t* e = nest::ConstInt(b->shape[d]);
    if (e == nullptr) return -1;
    if (!dropped[d]) n *= *e;
  }
  return n;
}

// Rewrites the accesses of `from`'s storage to `to` with the dropped
// dimensions indexed 0, and wraps `at`'s body in the allocation of `to`.
class Compactor : public StmtExprMutator {
 public:
  Compactor(const Buffer& from, Buffer to, std::vector<bool> dropped, const ForNode* at)
      : from_(from->data.get()), to_(std::move(to)), dropped_(std::move(dropped)), at_(at) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* l = m.as<BufferLoadNode>();
    if (l == nullptr || l->buffer->data.get() != from_) return m;
    return Load(to_, Reindex(l->indices));
  }
  Stmt MutateStmt(const Stmt& s) override {
    if (s.get() == at_) {
      const auto* f = As<ForNode>(s);
      Stmt body = std::make_shared<AllocateNode>(to_, MutateStmt(f->body));
      return std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, body);
    }
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* st = As<BufferStoreNode>(m);
    if (st == nullptr || st->buffer->data.get() != from_) return m;
    return Store(to_, st->value, Reindex(st->indices));
  }

 private:
  std::vector<PrimExpr> Reindex(const std::vector<PrimExpr>& idx) const {
    std::vector<PrimExpr> out = idx;
    for (size_t d = 0; d < out.size() && d < dropped_.size(); ++d)
      if (dropped_[d]) out[d] = nest::I64(0);
    return out;
  }
  const VarNode* from_;
  Buffer to_;
  std::vector<bool> dropped_;
  const ForNode* at_;
};

// The statement with `alloc`'s buffer compacted into its loop, or null.
Stmt TryCompact(const AllocateNode* alloc) {
  const Buffer& b = alloc->buffer;
  if (b->scope != "global" || !b->strides.empty()) return nullptr;
  Accesses all(b);
  all.VisitStmt(alloc->body);
  if (all.indices.empty() || all.other_shape || all.escapes) return nullptr;
  const size_t total = all.indices.size();
  for (const auto* idx : all.indices)
    if (idx->size() != b->shape.size()) return nullptr;
  // Down the statements that hold every access, the loops passed through
  // whose variable is exactly one dimension's index in every access. The
  // first loop whose variable is not ends the walk: each of its iterations
  // could read slices an earlier one wrote.
  std::vector<bool> dropped(b->shape.size(), false);
  const ForNode* innermost = nullptr;
  Stmt cur = alloc->body;
  while (cur) {
    if (const auto* f = As<ForNode>(cur)) {
      int dim = -1;
      for (size_t d = 0; d < dropped.size() && dim < 0; ++d) {
        if (dropped[d]) continue;
        bool all_var = true;
        for (const auto* idx : all.indices) all_var = all_var && nest::IsVar((*idx)[d], f->loop_var.get());
        if (all_var) dim = static_cast<int>(d);
      }
      if (dim < 0) break;
      dropped[static_cast<size_t>(dim)] = true;
      innermost = f;
      cur = f->body;
    } else if (const auto* seq = As<SeqStmtNode>(cur)) {
      Stmt holder;
      for (const Stmt& c : seq->seq) {
        if (CountAccesses(c, b) == total) holder = c;
      }
      cur = holder;
    } else if (const auto* let = As<LetStmtNode>(cur)) {
      cur = let->body;
    } else if (const auto* inner = As<AllocateNode>(cur)) {
      cur = inner->body;
    } else {
      break;
    }
  }
  if (innermost == nullptr) return nullptr;
  int64_t bytes = StaticBytes(b, dropped);
  if (bytes < 0 || bytes > kMaxCompactedBytes) return nullptr;
  auto slice = std::make_shared<BufferNode>(*b);
  slice->data = MakeVar(b->name + "_data", HandleType());
  for (size_t d = 0; d < dropped.size(); ++d)
    if (dropped[d]) slice->shape[d] = nest::I64(1);
  return Compactor(b, slice, dropped, innermost).MutateStmt(alloc->body);
}

class Rewriter : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* alloc = As<AllocateNode>(m);
    if (alloc == nullptr) return m;
    Stmt compacted = TryCompact(alloc);
    return compacted ? compacted : m;
  }
};

}  // namespace

PrimFunc CompactLoopBuffers(const PrimFunc& func) {
  Stmt body = Rewriter().MutateStmt(func->body);
  return body == func->body ? func : nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
