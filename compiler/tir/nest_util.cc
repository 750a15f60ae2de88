#include "compiler/tir/nest_util.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "compiler/arith/simplify.h"

namespace kiln {
namespace tir {
namespace nest {

using namespace ir;  // NOLINT

const int64_t* ConstInt(const PrimExpr& e) {
  const auto* imm = e.as<IntImmNode>();
  return imm ? &imm->value : nullptr;
}

PrimExpr I64(int64_t v) { return IntImm(DType::Int64(), v); }

PrimExpr Fma(PrimExpr a, PrimExpr b, PrimExpr c) {
  DType t = c.dtype();
  return PrimExpr(std::make_shared<const CallNode>(t, "fma", std::vector<PrimExpr>{std::move(a), std::move(b), std::move(c)}));
}

std::vector<int64_t> ChunkStarts(int64_t n, int64_t lanes) {
  std::vector<int64_t> starts;
  for (int64_t p = 0; p < n; p += lanes) starts.push_back(std::min(p, n - lanes));
  return starts;
}

Buffer Float32Buffer(const std::string& name, std::vector<PrimExpr> shape, const std::string& scope) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = DType::Float32();
  node->shape = std::move(shape);
  node->scope = scope;
  return node;
}

bool SameStaticShape(const Buffer& a, const Buffer& b) {
  if (a->shape.size() != b->shape.size() || a->dtype != b->dtype) return false;
  for (size_t d = 0; d < a->shape.size(); ++d) {
    const int64_t *x = ConstInt(a->shape[d]), *y = ConstInt(b->shape[d]);
    if (x == nullptr || y == nullptr || *x != *y) return false;
  }
  return true;
}

PrimFunc WithBody(const PrimFunc& f, Stmt body) {
  if (body == f->body) return f;
  auto copy = std::make_shared<PrimFuncNode>(*f);
  copy->body = std::move(body);
  return copy;
}

bool IsVar(const PrimExpr& e, const VarNode* v) { return e.get() == v; }

bool IsZero(const PrimExpr& e) {
  const int64_t* c = ConstInt(e);
  return c != nullptr && *c == 0;
}

bool IsFloatZero(const PrimExpr& e) {
  const auto* f = e.as<FloatImmNode>();
  return f != nullptr && f->value == 0.0;
}

bool SameExtent(const PrimExpr& a, const PrimExpr& b) {
  if (a.get() == b.get()) return true;
  const int64_t *ca = ConstInt(a), *cb = ConstInt(b);
  return ca != nullptr && cb != nullptr && *ca == *cb;
}

namespace {
class VarUses : public StmtExprVisitor {
 public:
  std::unordered_set<const VarNode*> vars;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<VarNode>()) vars.insert(v);
    StmtExprVisitor::VisitExpr(e);
  }
};
}  // namespace

bool Uses(const PrimExpr& e, const std::unordered_set<const VarNode*>& vars) {
  VarUses u;
  u.VisitExpr(e);
  for (const VarNode* v : vars)
    if (u.vars.count(v)) return true;
  return false;
}

bool ProvenSameExtent(const PrimExpr& a, const PrimExpr& b) { return SameExtent(a, b) || arith::CanProveEqual(a, b); }

bool ProveAtMost(const PrimExpr& a, const PrimExpr& b) {
  const int64_t *ca = ConstInt(a), *cb = ConstInt(b);
  if (ca != nullptr && cb != nullptr) return *ca <= *cb;
  VarUses u;
  u.VisitExpr(a);
  u.VisitExpr(b);
  arith::VarBounds bounds;
  for (const VarNode* v : u.vars) bounds[v] = arith::IntBounds::AtLeast(0);
  return arith::CanProve(MakeBinary(TirKind::kLE, a, b), bounds);
}

void BufferRefs::VisitExpr(const PrimExpr& e) {
  if (const auto* l = e.as<BufferLoadNode>()) {
    ++loads[l->buffer->data.get()];
    load_nodes.push_back(l);
  }
  StmtExprVisitor::VisitExpr(e);
}

void BufferRefs::VisitStmt(const Stmt& s) {
  if (const auto* st = As<BufferStoreNode>(s)) ++stores[st->buffer->data.get()];
  StmtExprVisitor::VisitStmt(s);
}

void Conjuncts(const PrimExpr& e, std::vector<PrimExpr>* out) {
  if (const auto* a = e.as<AndNode>()) {
    Conjuncts(a->a, out);
    Conjuncts(a->b, out);
  } else {
    out->push_back(e);
  }
}

bool IsInitGuard(const PrimExpr& cond, const std::vector<const ForNode*>& loops, size_t first) {
  std::vector<PrimExpr> terms;
  Conjuncts(cond, &terms);
  std::unordered_set<const VarNode*> zeroed;
  for (const PrimExpr& t : terms) {
    const auto* eq = t.as<EQNode>();
    if (eq == nullptr || !IsZero(eq->b)) return false;
    bool found = false;
    for (size_t d = first; d < loops.size(); ++d) found |= IsVar(eq->a, loops[d]->loop_var.get());
    if (!found) return false;
    zeroed.insert(static_cast<const VarNode*>(eq->a.get()));
  }
  for (size_t d = first; d < loops.size(); ++d) {
    const int64_t* ext = ConstInt(loops[d]->extent);
    if ((ext == nullptr || *ext > 1) && !zeroed.count(loops[d]->loop_var.get())) return false;
  }
  return true;
}

int BufferRefs::Refs(const VarNode* v) const {
  auto l = loads.find(v);
  auto s = stores.find(v);
  return (l == loads.end() ? 0 : l->second) + (s == stores.end() ? 0 : s->second);
}

void BufferAccesses::VisitExpr(const PrimExpr& e) {
  if (const auto* load = e.as<BufferLoadNode>()) by_buffer[load->buffer->data.get()].indices.push_back(&load->indices);
  StmtExprVisitor::VisitExpr(e);
}

void BufferAccesses::VisitStmt(const Stmt& s) {
  if (const auto* store = As<BufferStoreNode>(s)) {
    Info& info = by_buffer[store->buffer->data.get()];
    info.indices.push_back(&store->indices);
    info.stored = true;
    stores.push_back(store);
  } else if (const auto* alloc = As<AllocateNode>(s)) {
    allocated.insert(alloc->buffer->data.get());
  }
  StmtExprVisitor::VisitStmt(s);
}

BufferRefs RefsOf(const Stmt& s) {
  BufferRefs r;
  r.VisitStmt(s);
  return r;
}

PrimExpr ReplaceLoads::MutateExpr(const PrimExpr& e) {
  if (const auto* l = e.as<BufferLoadNode>()) {
    if (l->buffer->data.get() == data_) return with_;
  }
  return StmtExprMutator::MutateExpr(e);
}

std::vector<const ForNode*> PeelNest(const Stmt& s, Stmt* body) {
  std::vector<const ForNode*> loops;
  Stmt cur = s;
  while (const auto* f = As<ForNode>(cur)) {
    loops.push_back(f);
    cur = f->body;
  }
  *body = cur;
  return loops;
}

namespace {
class DeadAllocationDropper : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s)) {
      Stmt body = MutateStmt(a->body);
      if (RefsOf(body).Refs(a->buffer->data.get()) == 0) return body;
      if (body == a->body) return s;
      return std::make_shared<AllocateNode>(a->buffer, body);
    }
    return StmtExprMutator::MutateStmt(s);
  }
};
}  // namespace

Stmt DropDeadAllocations(const Stmt& s) { return DeadAllocationDropper().MutateStmt(s); }

namespace {

// An index list at the loop point of `loops`: each index the loop's variable,
// or 0 for a loop of extent 1 (how lowering writes the unit batch dimension
// of a [1, M, N] tensor).
bool AtOutputPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops) {
  if (idx.size() != loops.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (IsVar(idx[d], loops[d]->loop_var.get())) continue;
    const int64_t* ext = ConstInt(loops[d]->extent);
    if (ext == nullptr || *ext != 1 || !IsZero(idx[d])) return false;
  }
  return true;
}

}  // namespace

bool MatchEpilogueStage(const Stmt& s, const std::unordered_set<const VarNode*>& chain,
                        const std::vector<const ForNode*>& out_loops, EpilogueStage* e) {
  Stmt body;
  e->loops = PeelNest(s, &body);
  if (e->loops.size() != out_loops.size()) return false;
  for (size_t d = 0; d < out_loops.size(); ++d) {
    if (!IsZero(e->loops[d]->min) || !SameExtent(e->loops[d]->extent, out_loops[d]->extent)) return false;
  }
  const auto* st = As<BufferStoreNode>(body);
  if (st == nullptr || !AtOutputPoint(st->indices, e->loops)) return false;
  if (chain.count(st->buffer->data.get()) || !st->buffer->strides.empty() || st->buffer->dtype != DType::Float32()) {
    return false;
  }
  BufferRefs refs;
  refs.VisitExpr(st->value);
  if (refs.loads.count(st->buffer->data.get())) return false;
  e->reads.clear();
  for (const auto& kv : refs.loads)
    if (chain.count(kv.first)) e->reads.push_back(kv.first);
  if (e->reads.empty()) return false;
  for (const BufferLoadNode* l : refs.load_nodes) {
    if (chain.count(l->buffer->data.get()) && !AtOutputPoint(l->indices, e->loops)) return false;
  }
  e->dst = st->buffer;
  e->value = st->value;
  return true;
}

}  // namespace nest
}  // namespace tir
}  // namespace kiln
