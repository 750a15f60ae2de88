#include "compiler/tir/conv1d_lift.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// How the accesses of one rank-3 buffer gain their unit axis (at position 2).
struct Lift {
  Buffer view;
  std::function<PrimExpr()> index;  // the index inserted at axis 2
};

// Rewrites the accesses of the buffers in `lifts` (keyed by buffer node).
class AccessLifter : public StmtExprMutator {
 public:
  explicit AccessLifter(const std::unordered_map<const BufferNode*, Lift>& lifts) : lifts_(lifts) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    const auto* l = m.as<BufferLoadNode>();
    if (l == nullptr) return m;
    auto it = lifts_.find(l->buffer.get());
    if (it == lifts_.end()) return m;
    std::vector<PrimExpr> idx = l->indices;
    idx.insert(idx.begin() + 2, it->second.index());
    return Load(it->second.view, std::move(idx));
  }

  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* st = As<BufferStoreNode>(m);
    if (st == nullptr) return m;
    auto it = lifts_.find(st->buffer.get());
    if (it == lifts_.end()) return m;
    std::vector<PrimExpr> idx = st->indices;
    idx.insert(idx.begin() + 2, it->second.index());
    return std::make_shared<BufferStoreNode>(it->second.view, st->value, std::move(idx));
  }

 private:
  const std::unordered_map<const BufferNode*, Lift>& lifts_;
};

bool Rank3Float(const Buffer& b) { return b->dtype == DType::Float32() && b->strides.empty() && b->shape.size() == 3; }

// Every buffer loaded in `e`.
void LoadsOf(const PrimExpr& e, std::vector<const BufferLoadNode*>* out) {
  struct V : StmtExprVisitor {
    std::vector<const BufferLoadNode*>* out;
    void VisitExpr(const PrimExpr& x) override {
      if (const auto* l = x.as<BufferLoadNode>()) out->push_back(l);
      StmtExprVisitor::VisitExpr(x);
    }
  } v;
  v.out = out;
  v.VisitExpr(e);
}

// An index at the loop point of `loop`: its variable, or 0 for a unit loop.
bool AtLoop(const PrimExpr& e, const ForNode* loop) {
  if (IsVar(e, loop->loop_var.get())) return true;
  const int64_t* ext = ConstInt(loop->extent);
  return ext != nullptr && *ext == 1 && IsZero(e);
}

bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& L) {
  if (idx.size() != L.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!AtLoop(idx[d], L[d])) return false;
  return true;
}

Stmt Rebuild(const ForNode* f, Stmt body) {
  return std::make_shared<ForNode>(f->loop_var, f->min, f->extent, f->for_kind, std::move(body));
}

Stmt UnitLoop(const Var& v, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), I64(1), ForKind::kSerial, std::move(body));
}

class Lifter : public StmtExprMutator {
 public:
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* seq = As<SeqStmtNode>(s)) return LiftSeq(seq->seq, s);
    if (As<ForNode>(s)) return LiftSeq({s}, s);
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  // The view of `b` with a unit axis at 2, one per buffer so that matchers
  // comparing buffers by identity see the same one.
  Buffer ViewOf(const Buffer& b) {
    auto it = views_.find(b.get());
    if (it != views_.end()) return it->second;
    auto v = std::make_shared<BufferNode>(*b);
    v->shape.insert(v->shape.begin() + 2, I64(1));
    views_[b.get()] = v;
    return v;
  }

  // The 5-deep conv1d nest (n, o, x, c, kx) as the 7-deep conv2d one.
  Stmt TryConv(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 5) return nullptr;
    // A static batch: with a symbolic one (Silero VAD's sequence of windows
    // is the batch) the lifted nest reached CompactLoopBuffers with a view
    // it did not rewrite ("accessed with 3 indices but has 2 dimensions").
    if (ConstInt(L[0]->extent) == nullptr) return nullptr;
    const auto* seq = As<SeqStmtNode>(body);
    if (seq == nullptr || seq->seq.size() != 2 || !As<IfThenElseNode>(seq->seq[0])) return nullptr;
    const auto* update = As<BufferStoreNode>(seq->seq[1]);
    if (update == nullptr || !Rank3Float(update->buffer)) return nullptr;
    for (size_t d = 0; d < 3; ++d)
      if (!IsVar(update->indices[d], L[d]->loop_var.get())) return nullptr;
    std::vector<const BufferLoadNode*> loads;
    LoadsOf(update->value, &loads);
    Buffer out = update->buffer, data, weight;
    for (const BufferLoadNode* l : loads) {
      if (l->buffer == out) continue;
      if (!Rank3Float(l->buffer)) return nullptr;
      bool is_w = IsVar(l->indices[1], L[3]->loop_var.get()) && IsVar(l->indices[2], L[4]->loop_var.get());
      Buffer& slot = is_w && !weight ? weight : data;
      if (slot && slot != l->buffer) return nullptr;
      slot = l->buffer;
    }
    if (!data || !weight || data == weight) return nullptr;
    Var y = MakeVar(L[2]->loop_var->name + "_y"), ky = MakeVar(L[4]->loop_var->name + "_y");
    std::unordered_map<const BufferNode*, Lift> lifts;
    lifts[out.get()] = {ViewOf(out), [&] { return PrimExpr(y); }};
    outputs_.push_back(out->data.get());
    lifts[data.get()] = {ViewOf(data), [&] { return PrimExpr(y) + PrimExpr(ky); }};
    lifts[weight.get()] = {ViewOf(weight), [&] { return PrimExpr(ky); }};
    AccessLifter lifter(lifts);
    Stmt b = lifter.MutateStmt(body);
    b = Rebuild(L[4], b);
    b = UnitLoop(ky, b);
    b = Rebuild(L[3], b);
    b = Rebuild(L[2], b);
    b = UnitLoop(y, b);
    b = Rebuild(L[1], b);
    return Rebuild(L[0], b);
  }

  // A 3-deep elementwise nest storing a rank-3 buffer at the loop point and
  // reading a lifted one there: the same over the views, with a unit loop.
  Stmt TryStage(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 3) return nullptr;
    const auto* st = As<BufferStoreNode>(body);
    if (st == nullptr || !Rank3Float(st->buffer) || !AtLoopPoint(st->indices, L)) return nullptr;
    std::vector<const BufferLoadNode*> loads;
    LoadsOf(st->value, &loads);
    bool reads_lifted = false;
    for (const BufferLoadNode* l : loads) {
      if (l->buffer == st->buffer) return nullptr;
      if (views_.count(l->buffer.get()) && AtLoopPoint(l->indices, L)) reads_lifted = true;
    }
    if (!reads_lifted) return nullptr;
    Var y = MakeVar(L[2]->loop_var->name + "_y");
    std::unordered_map<const BufferNode*, Lift> lifts;
    lifts[st->buffer.get()] = {ViewOf(st->buffer), [&] { return PrimExpr(y); }};
    // Other rank-3 buffers read at the loop point (a residual) follow.
    for (const BufferLoadNode* l : loads)
      if (Rank3Float(l->buffer) && AtLoopPoint(l->indices, L)) lifts[l->buffer.get()] = {ViewOf(l->buffer), [&] { return PrimExpr(y); }};
    // Only when every access of those buffers is at the loop point.
    for (const BufferLoadNode* l : loads)
      if (lifts.count(l->buffer.get()) && !AtLoopPoint(l->indices, L)) return nullptr;
    AccessLifter lifter(lifts);
    Stmt b = Rebuild(L[2], lifter.MutateStmt(body));
    b = UnitLoop(y, b);
    b = Rebuild(L[1], b);
    return Rebuild(L[0], b);
  }

  Stmt LiftSeq(const std::vector<Stmt>& in, const Stmt& orig) {
    std::vector<Stmt> out;
    bool any = false;
    for (const Stmt& s : in) {
      Stmt lifted;
      if (As<ForNode>(s)) {
        lifted = TryConv(s);
        if (!lifted && !views_.empty()) lifted = TryStage(s);
      }
      if (!lifted) lifted = As<ForNode>(s) ? s : StmtExprMutator::MutateStmt(s);
      any = any || lifted != s;
      out.push_back(lifted);
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  std::unordered_map<const BufferNode*, Buffer> views_;

 public:
  std::vector<const VarNode*> outputs_;  // data of the lifted convolutions' outputs
};

// Stores into one of `outputs` whose value loads the same buffer.
struct NaiveUpdates : StmtExprVisitor {
  std::vector<const VarNode*> outputs;
  bool found = false;
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      const VarNode* d = st->buffer->data.get();
      if (std::find(outputs.begin(), outputs.end(), d) != outputs.end()) {
        std::vector<const BufferLoadNode*> loads;
        LoadsOf(st->value, &loads);
        for (const BufferLoadNode* l : loads) found |= l->buffer->data.get() == d;
      }
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

}  // namespace

bool HasNaiveUpdate(const PrimFunc& func, const std::vector<const VarNode*>& outputs) {
  NaiveUpdates v;
  v.outputs = outputs;
  v.VisitStmt(func->body);
  return v.found;
}

PrimFunc LiftConv1dNests(const PrimFunc& func, std::vector<const VarNode*>* outputs) {
  Lifter lifter;
  Stmt body = lifter.MutateStmt(func->body);
  if (outputs != nullptr) *outputs = lifter.outputs_;
  if (!lifter.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
