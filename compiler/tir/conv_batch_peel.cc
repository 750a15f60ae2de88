#include "compiler/tir/conv_batch_peel.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_channel_lanes.h"
#include "compiler/tir/conv_schedule.h"
#include "compiler/tir/depthwise_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/matmul_schedule.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using nest::ConstInt;
using nest::I64;
using nest::IsVar;
using nest::IsZero;

// Whether `b` is static but for a first extent that is the variable `n`
// (set from the first such buffer when *n is null).
enum class Shape { kStatic, kBatched, kOther };
Shape ShapeOf(const Buffer& b, const VarNode** n) {
  if (!b->strides.empty()) return Shape::kOther;
  for (size_t d = 1; d < b->shape.size(); ++d)
    if (ConstInt(b->shape[d]) == nullptr) return Shape::kOther;
  if (b->shape.empty() || ConstInt(b->shape[0]) != nullptr) return Shape::kStatic;
  const auto* v = b->shape[0].as<VarNode>();
  if (v == nullptr || (*n != nullptr && v != *n)) return Shape::kOther;
  *n = v;
  return Shape::kBatched;
}

// The conditions of the header: image-by-image work over the batch `n`.
class BatchCheck : public StmtExprVisitor {
 public:
  BatchCheck(const VarNode* n, std::unordered_set<const VarNode*>* batched) : n_(n), batched_(batched) {}
  bool ok = true;

  void VisitExpr(const PrimExpr& e) override {
    if (!ok || !e.defined()) return;
    if (const auto* v = e.as<VarNode>()) {
      // N or a batch loop's variable anywhere but a first index.
      if (v == n_ || batch_vars_.count(v)) ok = false;
      return;
    }
    if (const auto* l = e.as<BufferLoadNode>()) {
      Access(l->buffer, l->indices);
      return;
    }
    StmtExprVisitor::VisitExpr(e);
  }

  void VisitStmt(const Stmt& s) override {
    if (!ok || !s) return;
    if (const auto* f = As<ForNode>(s)) {
      if (!IsZero(f->min)) ok = false;
      if (ConstInt(f->extent) != nullptr) {
        VisitStmt(f->body);
        return;
      }
      // A loop over the images: not inside another one.
      if (!IsVar(f->extent, n_) || loop_ != nullptr) {
        ok = false;
        return;
      }
      batch_vars_.insert(f->loop_var.get());
      loop_ = f->loop_var.get();
      VisitStmt(f->body);
      loop_ = nullptr;
      return;
    }
    if (const auto* st = As<BufferStoreNode>(s)) {
      Access(st->buffer, st->indices);
      VisitExpr(st->value);
      return;
    }
    if (const auto* a = As<AllocateNode>(s)) {
      const VarNode* n = n_;
      Shape sh = ShapeOf(a->buffer, &n);
      if (sh == Shape::kOther) ok = false;
      if (sh == Shape::kBatched) batched_->insert(a->buffer->data.get());
      VisitStmt(a->body);
      return;
    }
    if (As<BlockRealizeNode>(s)) {
      ok = false;
      return;
    }
    StmtExprVisitor::VisitStmt(s);
  }

 private:
  void Access(const Buffer& b, const std::vector<PrimExpr>& idx) {
    size_t first = 0;
    if (batched_->count(b->data.get())) {
      // Image i of a batched buffer only inside the loop over i.
      if (idx.empty() || loop_ == nullptr || !IsVar(idx[0], loop_)) {
        ok = false;
        return;
      }
      first = 1;
    }
    for (size_t d = first; d < idx.size(); ++d) VisitExpr(idx[d]);
  }

  const VarNode* n_;
  std::unordered_set<const VarNode*>* batched_;
  std::unordered_set<const VarNode*> batch_vars_;
  const VarNode* loop_ = nullptr;  // the enclosing batch loop's variable
};

// Step 0: what the lowering of reshapes and pads leaves around the image
// index, written the way BatchCheck recognizes. Inside a loop `for b in
// [0, N)`:
// - a first index that is b once the variables of loops of one iteration
//   are 0 (a reshape of [N, ..] to [N, 1, ..] reads image i0 + i1) becomes b;
// - a comparison of b or N that holds for every b in [0, N) (a pad's
//   `b >= 0 and b < N` along the batch) becomes true, and the conditions
//   and selects it decided fold away.
// Both are exact rewrites, of the values the loops give those variables.
class NormalizeImages : public StmtExprMutator {
 public:
  explicit NormalizeImages(PrimExpr n) : n_expr_(std::move(n)), n_(n_expr_.as<VarNode>()) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (image_ == nullptr || !e.defined()) return StmtExprMutator::MutateExpr(e);
    if (const auto* l = e.as<BufferLoadNode>()) {
      std::vector<PrimExpr> idx;
      bool changed = MutateExprs(l->indices, &idx);
      changed |= First(&idx);
      return changed ? Load(l->buffer, idx) : e;
    }
    switch (e->kind()) {
      case TirKind::kLT:
      case TirKind::kLE:
      case TirKind::kGT:
      case TirKind::kGE: {
        PrimExpr cmp = StmtExprMutator::MutateExpr(e);
        return AlwaysHolds(cmp) ? True() : cmp;
      }
      case TirKind::kAnd: {
        const auto* a = static_cast<const BinaryNode*>(e.get());
        PrimExpr x = MutateExpr(a->a), y = MutateExpr(a->b);
        if (IsTrue(x)) return y;
        if (IsTrue(y)) return x;
        return x.get() == a->a.get() && y.get() == a->b.get() ? e : MakeBinary(TirKind::kAnd, x, y);
      }
      default:
        break;
    }
    PrimExpr out = StmtExprMutator::MutateExpr(e);
    if (const auto* c = out.as<CallNode>(); c != nullptr && c->op == "if_then_else" && IsTrue(c->args[0]))
      return c->args[1];
    if (const auto* c = out.as<SelectNode>(); c != nullptr && IsTrue(c->cond)) return c->true_value;
    return out;
  }

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      const int64_t* ext = ConstInt(f->extent);
      const bool images = IsVar(f->extent, n_) && IsZero(f->min) && image_ == nullptr;
      const bool unit = ext != nullptr && *ext == 1 && IsZero(f->min);
      if (images) image_ = f->loop_var.get();
      if (unit) unit_[f->loop_var.get()] = I64(0);
      Stmt out = StmtExprMutator::MutateStmt(s);
      if (images) image_ = nullptr;
      if (unit) unit_.erase(f->loop_var.get());
      return out;
    }
    if (image_ == nullptr) return StmtExprMutator::MutateStmt(s);
    if (const auto* st = As<BufferStoreNode>(s)) {
      std::vector<PrimExpr> idx;
      bool changed = MutateExprs(st->indices, &idx);
      changed |= First(&idx);
      PrimExpr v = MutateExpr(st->value);
      return changed || v.get() != st->value.get() ? Store(st->buffer, v, idx) : s;
    }
    if (const auto* i = As<IfThenElseNode>(s)) {
      if (IsTrue(MutateExpr(i->cond))) return MutateStmt(i->then_case);
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  static PrimExpr True() { return IntImm(DType::Bool(), 1); }
  static bool IsTrue(const PrimExpr& e) {
    const int64_t* c = e.defined() && e.dtype() == DType::Bool() ? ConstInt(e) : nullptr;
    return c != nullptr && *c != 0;
  }

  // idx[0] := the image variable when it is that with the unit loops at 0.
  bool First(std::vector<PrimExpr>* idx) const {
    if (idx->empty() || (*idx)[0]->kind() == TirKind::kVar || ConstInt((*idx)[0]) != nullptr) return false;
    PrimExpr zeroed = arith::Simplify(Substitute((*idx)[0], unit_));
    if (!IsVar(zeroed, image_)) return false;
    (*idx)[0] = zeroed;
    return true;
  }

  // Whether comparison `cmp` of the image variable b (or N) holds for every
  // b in [0, N) (the unit loops' variables 0): it holds for b >= 0, or for
  // b = N - 1 - t, t >= 0.
  bool AlwaysHolds(const PrimExpr& cmp) const {
    const auto* c = static_cast<const BinaryNode*>(cmp.get());
    if (c->a.dtype().code != kDLInt || !nest::Uses(cmp, {image_, n_})) return false;
    PrimExpr e = unit_.empty() ? cmp : Substitute(cmp, unit_);
    arith::VarBounds from_zero{{image_, arith::IntBounds::AtLeast(0)}};
    if (arith::CanProve(e, from_zero)) return true;
    Var t = MakeVar("t");
    VarMap last{{image_, n_expr_ - I64(1) - PrimExpr(t)}};
    return arith::CanProve(Substitute(e, last), {{t.get(), arith::IntBounds::AtLeast(0)}});
  }

  PrimExpr n_expr_;
  const VarNode* n_;
  const VarNode* image_ = nullptr;  // the enclosing loop over the images
  VarMap unit_;                     // variables of enclosing loops of extent 1, to 0
};

Buffer WithFirstExtent(const Buffer& b, PrimExpr extent) {
  auto v = std::make_shared<BufferNode>(*b);
  v->shape[0] = std::move(extent);
  return v;
}

// Step 1: batch loops of extent 1, batched buffers viewed with first extent 1.
class Peel : public StmtExprMutator {
 public:
  Peel(const VarNode* n, const std::unordered_set<const VarNode*>& batched) : n_(n), batched_(batched) {}

  Buffer View(const Buffer& b) {
    if (!batched_.count(b->data.get())) return b;
    auto it = views_.find(b.get());
    if (it != views_.end()) return it->second;
    return views_[b.get()] = WithFirstExtent(b, I64(1));
  }

  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      std::vector<PrimExpr> idx;
      MutateExprs(l->indices, &idx);
      return Load(View(l->buffer), idx);
    }
    return StmtExprMutator::MutateExpr(e);
  }

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      std::vector<PrimExpr> idx;
      MutateExprs(st->indices, &idx);
      return Store(View(st->buffer), MutateExpr(st->value), idx);
    }
    if (const auto* a = As<AllocateNode>(s)) return std::make_shared<AllocateNode>(View(a->buffer), MutateStmt(a->body));
    if (const auto* f = As<ForNode>(s); f != nullptr && IsVar(f->extent, n_)) {
      // One image: no parallel region of one task; the loop inside it, when
      // static and serial, takes the parallelism instead.
      Stmt body = MutateStmt(f->body);
      ForKind kind = f->for_kind;
      if (kind == ForKind::kParallel) {
        kind = ForKind::kSerial;
        const auto* inner = As<ForNode>(body);
        const int64_t* ext = inner != nullptr ? ConstInt(inner->extent) : nullptr;
        if (ext != nullptr && *ext >= 2 && inner->for_kind == ForKind::kSerial) {
          body = std::make_shared<ForNode>(inner->loop_var, inner->min, inner->extent, ForKind::kParallel, inner->body,
                                           inner->thread_tag);
        }
      }
      return std::make_shared<ForNode>(f->loop_var, f->min, I64(1), kind, body, f->thread_tag);
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  const VarNode* n_;
  const std::unordered_set<const VarNode*>& batched_;
  std::unordered_map<const BufferNode*, Buffer> views_;
};

// Step 3: accesses to the batched parameters at image index + b, through
// buffers of first extent N again.
class Unpeel : public StmtExprMutator {
 public:
  Unpeel(const std::unordered_set<const VarNode*>& params, PrimExpr n, Var b,
         const std::unordered_map<const VarNode*, Buffer>& originals)
      : params_(params), n_(std::move(n)), b_(std::move(b)), originals_(originals) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      std::vector<PrimExpr> idx;
      const bool changed = MutateExprs(l->indices, &idx);
      if (!params_.count(l->buffer->data.get())) return changed ? Load(l->buffer, idx) : e;
      return Load(Full(l->buffer), Shift(idx));
    }
    return StmtExprMutator::MutateExpr(e);
  }

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* st = As<BufferStoreNode>(s)) {
      std::vector<PrimExpr> idx;
      MutateExprs(st->indices, &idx);
      PrimExpr v = MutateExpr(st->value);
      if (!params_.count(st->buffer->data.get())) return Store(st->buffer, v, idx);
      return Store(Full(st->buffer), v, Shift(idx));
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  std::vector<PrimExpr> Shift(std::vector<PrimExpr> idx) const {
    idx[0] = IsZero(idx[0]) ? PrimExpr(b_) : idx[0] + PrimExpr(b_);
    return idx;
  }
  // The parameter itself, or (a view the kernel made) that view with first extent N.
  Buffer Full(const Buffer& b) {
    auto o = originals_.find(b->data.get());
    if (o != originals_.end() && o->second->shape.size() == b->shape.size()) {
      bool same = true;
      for (size_t d = 1; d < b->shape.size(); ++d) same = same && nest::SameExtent(b->shape[d], o->second->shape[d]);
      if (same) return o->second;
    }
    auto it = full_.find(b.get());
    if (it != full_.end()) return it->second;
    return full_[b.get()] = WithFirstExtent(b, n_);
  }

  const std::unordered_set<const VarNode*>& params_;
  PrimExpr n_;
  Var b_;
  const std::unordered_map<const VarNode*, Buffer>& originals_;
  std::unordered_map<const BufferNode*, Buffer> full_;
};

// A store B[i..] = B[i..] + .. to a buffer other than the kernels' local
// accumulators: a reduction nest left naive.
bool HasNaiveReduction(const Stmt& body) {
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = As<BufferStoreNode>(s); st != nullptr && st->buffer->scope != "local") {
        if (const auto* add = st->value.as<AddNode>()) {
          for (const PrimExpr& side : {add->a, add->b}) {
            const auto* l = side.as<BufferLoadNode>();
            found |= l != nullptr && l->buffer->data.get() == st->buffer->data.get();
          }
        }
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

// Whether some convolution-like nest (seven perfectly nested loops) has a
// window of more than kMaxPeeledTaps taps over more than one input channel
// (LargeWindowKeepsSymbolic).
bool HasLargeWindow(const Stmt& body) {
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& s) override {
      if (As<ForNode>(s) != nullptr) {
        Stmt inner;
        std::vector<const ForNode*> loops = nest::PeelNest(s, &inner);
        if (loops.size() >= 7) {
          const int64_t* kh = ConstInt(loops[loops.size() - 2]->extent);
          const int64_t* kw = ConstInt(loops[loops.size() - 1]->extent);
          const int64_t* ci = ConstInt(loops[loops.size() - 3]->extent);
          found |= kh == nullptr || kw == nullptr || ci == nullptr || LargeWindowKeepsSymbolic(*ci, *kh * *kw);
        }
      }
      StmtExprVisitor::VisitStmt(s);
    }
  } f;
  f.VisitStmt(body);
  return f.found;
}

}  // namespace

PrimFunc ScheduleConvsPeelingBatch(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  const VarNode* n = nullptr;
  std::unordered_set<const VarNode*> batched, params;
  std::unordered_map<const VarNode*, Buffer> originals;
  for (const auto& kv : func->buffer_map) {
    Shape sh = ShapeOf(kv.second, &n);
    if (sh == Shape::kOther) return func;
    if (sh == Shape::kBatched) {
      batched.insert(kv.second->data.get());
      params.insert(kv.second->data.get());
    }
  }
  for (const Var& p : func->params)
    if (p->dtype != HandleType()) return func;  // a scalar parameter (a symbolic value elsewhere)
  if (n == nullptr) return func;
  PrimExpr n_of_shape;
  for (const auto& kv : func->buffer_map)
    if (batched.count(kv.second->data.get())) n_of_shape = kv.second->shape[0];
  Stmt normal = NormalizeImages(n_of_shape).MutateStmt(func->body);
  BatchCheck check(n, &batched);
  check.VisitStmt(normal);
  if (!check.ok || HasLargeWindow(normal)) return func;
  // A matmul nest is the matmul schedule's, as when the batch is pinned (it
  // folds a symbolic batch into its rows). Peeled, a dense layer of K <= 64
  // (kMaxWindowTaps) went to the window reductions, which unrolled its sum
  // into one expression reading the weight across lanes: plcmos_v2's
  // [1, 64] x [64, 128] + bias + LeakyReLU took 14.8 us against 1.4 pinned.
  if (ScheduleMatmuls(func, num_threads_hint, knobs).get() != func.get()) return func;

  Peel peel(n, batched);
  auto peeled = std::make_shared<PrimFuncNode>(*func);
  peeled->body = peel.MutateStmt(normal);
  PrimExpr n_expr;
  for (auto& kv : peeled->buffer_map) {
    if (!batched.count(kv.second->data.get())) continue;
    if (!n_expr.defined()) n_expr = kv.second->shape[0];
    originals[kv.second->data.get()] = kv.second;
    kv.second = peel.View(kv.second);
  }
  // Depthwise convolutions the conv schedule declines (strided, small
  // planes) take the static schedules, as when pinned: strided depthwise's
  // phase planes (depthwise_schedule.h), else window reductions.
  // Small planes with weights packed for it: the channel-lane kernel.
  PrimFunc scheduled = ScheduleWindowReductions(
      ScheduleConvs(ScheduleChannelLaneConvs(ScheduleStridedDepthwise(peeled, knobs), num_threads_hint, knobs),
                    num_threads_hint, knobs),
      knobs);
  if (scheduled.get() == peeled.get() || HasNaiveReduction(scheduled->body)) return func;
  // The epilogue into the schedules' plain stores, as when pinned: after the
  // image loop wraps the body, the pipeline's own InlineElementwise no
  // longer sees top-level allocations, and a depthwise conv's BN and
  // hard-swish ran as two more passes over two image-sized intermediates.
  scheduled = InlineElementwise(scheduled, /*after_schedule=*/true);

  Var b = MakeVar("image");
  Unpeel unpeel(params, n_expr, b, originals);
  Stmt body = unpeel.MutateStmt(scheduled->body);
  // The images in parallel: each thread runs whole images through the
  // kernel's phases, its intermediates its own (allocated inside the loop).
  // The kernel's own parallel loops stay: at batch 1 the launch over one
  // image runs on the caller and they split that image; at larger batches
  // they run inside a task, where a launch runs inline. Parallel inside a
  // serial image loop instead, deepcut's 1-D convolutions (8 tiles an image:
  // 4 of 24 channels, 4 of 1) ran no faster at 2 threads than at 1. Batches
  // of 2 to threads - 1 images would leave threads idle that way: with more
  // than two threads they keep the serial image loop (a run-time test).
  if (num_threads_hint <= 1) {
    body = std::make_shared<ForNode>(b, I64(0), n_expr, ForKind::kSerial, body);
  } else {
    Stmt images = std::make_shared<ForNode>(b, I64(0), n_expr, ForKind::kParallel, body);
    if (num_threads_hint > 2) {
      PrimExpr enough = MakeBinary(TirKind::kGE, n_expr, I64(num_threads_hint));
      images = std::make_shared<IfThenElseNode>(enough, images,
                                                std::make_shared<ForNode>(b, I64(0), n_expr, ForKind::kSerial, body));
    }
    body = images;
  }
  auto out = std::make_shared<PrimFuncNode>(*scheduled);
  out->buffer_map = func->buffer_map;
  out->body = body;
  return out;
}

}  // namespace tir
}  // namespace kiln
