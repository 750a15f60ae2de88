#include "compiler/tir/conv1d_lift.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// How the accesses of one buffer become accesses of its view: a rank-3
// buffer gains a unit axis at position 2 (`index`, a conv1d lifted to a
// conv2d of height 1), or a rank-4 buffer one column wide has its last two
// axes swapped (`index` empty: a conv2d of width 1 turned to height 1).
struct Lift {
  Buffer view;
  std::function<PrimExpr()> index;  // the index inserted at axis 2
};

std::vector<PrimExpr> Reindex(const Lift& lift, std::vector<PrimExpr> idx) {
  if (lift.index) {
    idx.insert(idx.begin() + 2, lift.index());
  } else {
    std::swap(idx[2], idx[3]);
  }
  return idx;
}

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
    return Load(it->second.view, Reindex(it->second, l->indices));
  }

  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* st = As<BufferStoreNode>(m);
    if (st == nullptr) return m;
    auto it = lifts_.find(st->buffer.get());
    if (it == lifts_.end()) return m;
    return std::make_shared<BufferStoreNode>(it->second.view, st->value, Reindex(it->second, st->indices));
  }

 private:
  const std::unordered_map<const BufferNode*, Lift>& lifts_;
};

bool Rank3Float(const Buffer& b) { return b->dtype == DType::Float32() && b->strides.empty() && b->shape.size() == 3; }

// A float rank-4 buffer whose last axis is 1: the column maps of a
// convolution along H only.
bool ColumnFloat(const Buffer& b) {
  if (b->dtype != DType::Float32() || !b->strides.empty() || b->shape.size() != 4) return false;
  const int64_t* w = ConstInt(b->shape[3]);
  return w != nullptr && *w == 1;
}

bool UnitExtent(const ForNode* f) {
  const int64_t* e = ConstInt(f->extent);
  return e != nullptr && *e == 1;
}

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

  // `b` with its last two axes swapped (it is one column wide: the same
  // memory).
  Buffer ColumnViewOf(const Buffer& b) {
    auto it = views_.find(b.get());
    if (it != views_.end()) return it->second;
    auto v = std::make_shared<BufferNode>(*b);
    std::swap(v->shape[2], v->shape[3]);
    views_[b.get()] = v;
    column_views_.insert(b.get());
    return v;
  }

  // A conv2d nest (n, o, y, x, c, ky, kx) over maps one column wide with a
  // kernel one wide (Keras' Conv1D as tf2onnx exports it: Unsqueeze ->
  // Conv(k x 1) -> Squeeze) as the nest (n, o, x, y, c, kx, ky) over views
  // whose last two axes are swapped, so the conv schedules' vector columns
  // run along H instead of over a width of 1. Only for nests with a symbolic
  // extent: with static ones the static schedule packs the weights and
  // vectorizes over output channels, which does not care about the width
  // (Magika's 256 -> 512 kernel-5 convolution: 3 GFLOP/s symbolic, 36
  // pinned, before this).
  Stmt TryColumnConv(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 7 || !UnitExtent(L[3]) || !UnitExtent(L[6]) || UnitExtent(L[2])) return nullptr;
    bool symbolic = false;
    for (const ForNode* f : L) symbolic |= ConstInt(f->extent) == nullptr;
    if (!symbolic) return nullptr;
    const auto* seq = As<SeqStmtNode>(body);
    if (seq == nullptr || seq->seq.size() != 2 || !As<IfThenElseNode>(seq->seq[0])) return nullptr;
    const auto* update = As<BufferStoreNode>(seq->seq[1]);
    if (update == nullptr || !ColumnFloat(update->buffer)) return nullptr;
    for (size_t d = 0; d < 4; ++d)
      if (!AtLoop(update->indices[d], L[d])) return nullptr;
    std::vector<const BufferLoadNode*> loads;
    LoadsOf(update->value, &loads);
    Buffer out = update->buffer, data, weight;
    for (const BufferLoadNode* l : loads) {
      if (l->buffer == out) continue;
      if (!ColumnFloat(l->buffer)) return nullptr;
      bool is_w = IsVar(l->indices[1], L[4]->loop_var.get()) && IsVar(l->indices[2], L[5]->loop_var.get());
      Buffer& slot = is_w && !weight ? weight : data;
      if (slot && slot != l->buffer) return nullptr;
      slot = l->buffer;
    }
    if (!data || !weight || data == weight) return nullptr;
    for (const Buffer& b : {out, data, weight})
      if (views_.count(b.get()) && !column_views_.count(b.get())) return nullptr;
    std::unordered_map<const BufferNode*, Lift> lifts;
    for (const Buffer& b : {out, data, weight}) lifts[b.get()] = {ColumnViewOf(b), nullptr};
    outputs_.push_back(out->data.get());
    AccessLifter lifter(lifts);
    Stmt b = lifter.MutateStmt(body);
    for (int d : {5, 6, 4, 2, 3, 1, 0}) b = Rebuild(L[d], b);
    return b;
  }

  // A 4-deep elementwise nest storing a column map at the loop point and
  // reading a swapped one there: the same over the views, the two last
  // loops swapped.
  Stmt TryColumnStage(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 4 || !UnitExtent(L[3])) return nullptr;
    const auto* st = As<BufferStoreNode>(body);
    if (st == nullptr || !ColumnFloat(st->buffer) || !AtLoopPoint(st->indices, L)) return nullptr;
    if (views_.count(st->buffer.get()) && !column_views_.count(st->buffer.get())) return nullptr;
    std::vector<const BufferLoadNode*> loads;
    LoadsOf(st->value, &loads);
    bool reads_swapped = false;
    for (const BufferLoadNode* l : loads) {
      if (l->buffer == st->buffer) return nullptr;
      if (column_views_.count(l->buffer.get()) && AtLoopPoint(l->indices, L)) reads_swapped = true;
    }
    if (!reads_swapped) return nullptr;
    std::unordered_map<const BufferNode*, Lift> lifts;
    lifts[st->buffer.get()] = {ColumnViewOf(st->buffer), nullptr};
    for (const BufferLoadNode* l : loads) {
      if (!ColumnFloat(l->buffer) || !AtLoopPoint(l->indices, L)) continue;
      if (views_.count(l->buffer.get()) && !column_views_.count(l->buffer.get())) return nullptr;
      lifts[l->buffer.get()] = {ColumnViewOf(l->buffer), nullptr};
    }
    for (const BufferLoadNode* l : loads)
      if (lifts.count(l->buffer.get()) && !AtLoopPoint(l->indices, L)) return nullptr;
    AccessLifter lifter(lifts);
    Stmt b = lifter.MutateStmt(body);
    for (int d : {2, 3, 1, 0}) b = Rebuild(L[d], b);
    return b;
  }

  // The 5-deep conv1d nest (n, o, x, c, kx) as the 7-deep conv2d one.
  Stmt TryConv(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 5) return nullptr;
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
    conv_data_.insert(data.get());
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
  // reading a lifted one there, or storing the input of a lifted
  // convolution (a producer fused before it: the reflect Pad before Silero
  // VAD's STFT convolution, which kept the whole function unlifted): the
  // same over the views, with a unit loop. A producer may read anything
  // but a lifted buffer; it is only re-indexed where it stores.
  Stmt TryStage(const Stmt& s) {
    Stmt body;
    std::vector<const ForNode*> L = PeelNest(s, &body);
    if (L.size() != 3) return nullptr;
    const auto* st = As<BufferStoreNode>(body);
    if (st == nullptr || !Rank3Float(st->buffer) || !AtLoopPoint(st->indices, L)) return nullptr;
    std::vector<const BufferLoadNode*> loads;
    LoadsOf(st->value, &loads);
    bool reads_lifted = false, reads_any_lifted = false;
    for (const BufferLoadNode* l : loads) {
      if (l->buffer == st->buffer) return nullptr;
      if (views_.count(l->buffer.get()) && AtLoopPoint(l->indices, L)) reads_lifted = true;
      reads_any_lifted |= views_.count(l->buffer.get()) != 0;
    }
    const bool producer = conv_data_.count(st->buffer.get()) != 0 && !reads_any_lifted;
    if (!reads_lifted && !producer) return nullptr;
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
    // The 1-D convolutions first, so that the stages before them that
    // produce their inputs are known as such.
    std::vector<Stmt> convs(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (As<ForNode>(in[i])) convs[i] = TryConv(in[i]);
    std::vector<Stmt> out;
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      const Stmt& s = in[i];
      Stmt lifted = convs[i];
      if (!lifted && As<ForNode>(s)) {
        lifted = TryColumnConv(s);
        if (!lifted && !column_views_.empty()) lifted = TryColumnStage(s);
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
  std::unordered_set<const BufferNode*> column_views_;  // those of views_ that swap axes
  std::unordered_set<const BufferNode*> conv_data_;     // inputs of the lifted 1-D convolutions

 public:
  const std::unordered_map<const BufferNode*, Buffer>& views() const { return views_; }
  std::vector<const VarNode*> outputs_;  // data of the lifted convolutions' outputs
};

using ViewMap = std::unordered_map<const BufferNode*, Buffer>;

// Allocations of lifted buffers declare their views.
class AllocationLifter : public StmtExprMutator {
 public:
  explicit AllocationLifter(const ViewMap& views) : views_(views) {}
  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);
    const auto* a = As<AllocateNode>(m);
    if (a == nullptr) return m;
    auto it = views_.find(a->buffer.get());
    if (it == views_.end()) return m;
    return std::make_shared<AllocateNode>(it->second, a->body);
  }

 private:
  const ViewMap& views_;
};

// Whether a buffer that has a view is still loaded or stored through itself.
bool HasUnliftedAccess(const Stmt& body, const ViewMap& views) {
  struct V : StmtExprVisitor {
    const ViewMap* views;
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) found |= views->count(l->buffer.get()) != 0;
      StmtExprVisitor::VisitExpr(e);
    }
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s)) found |= views->count(st->buffer.get()) != 0;
      StmtExprVisitor::VisitStmt(s);
    }
  } v;
  v.views = &views;
  v.VisitStmt(body);
  return v.found;
}

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
  if (outputs != nullptr) outputs->clear();
  if (!lifter.changed) return func;
  // An intermediate output (the convolution before an epilogue it was not
  // fused with) is allocated in the function: the allocation declares the
  // view, or buffer compaction sizes it by the old rank while the lifted
  // nests index the new one (Silero VAD's stride-2 convolutions with a
  // symbolic batch: "accessed with 3 indices but has 2 dimensions").
  AllocationLifter alloc(lifter.views());
  body = alloc.MutateStmt(body);
  // A lifted buffer still accessed in its old rank somewhere (a stage the
  // lifter did not take) would mix both forms: keep the function as it was.
  if (HasUnliftedAccess(body, lifter.views())) return func;
  if (outputs != nullptr) *outputs = lifter.outputs_;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
