#include "compiler/tir/parallel_work.h"

#include <unordered_set>

#include "compiler/arith/simplify.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using ir::PrimExpr;
using ir::TirKind;

constexpr int64_t kCallWork = 8;
constexpr int64_t kVectorLanes = 16;

// Loads, arithmetic nodes and calls of an expression, weighted as in the
// header. Index arithmetic inside loads is not counted (address generation
// overlaps the arithmetic).
int64_t ExprWork(const PrimExpr& e) {
  if (!e.defined()) return 0;
  const ir::PrimExprNode* n = e.get();
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    return 1 + ExprWork(b->a) + ExprWork(b->b);
  }
  switch (n->kind()) {
    case TirKind::kNot: return 1 + ExprWork(static_cast<const ir::NotNode*>(n)->a);
    case TirKind::kCast: return 1 + ExprWork(static_cast<const ir::CastNode*>(n)->value);
    case TirKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(n);
      return 1 + ExprWork(s->cond) + ExprWork(s->true_value) + ExprWork(s->false_value);
    }
    case TirKind::kBufferLoad: return 1;
    case TirKind::kCall: {
      int64_t w = kCallWork;
      for (const auto& a : static_cast<const ir::CallNode*>(n)->args) w += ExprWork(a);
      return w;
    }
    default: return 0;
  }
}

// Whether `e` reads a variable of `bound` or loaded data.
bool DependsOn(const PrimExpr& e, const std::unordered_set<const ir::VarNode*>& bound) {
  if (!e.defined()) return false;
  const ir::PrimExprNode* n = e.get();
  if (n->kind() == TirKind::kVar) return bound.count(static_cast<const ir::VarNode*>(n)) > 0;
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    return DependsOn(b->a, bound) || DependsOn(b->b, bound);
  }
  switch (n->kind()) {
    case TirKind::kNot: return DependsOn(static_cast<const ir::NotNode*>(n)->a, bound);
    case TirKind::kCast: return DependsOn(static_cast<const ir::CastNode*>(n)->value, bound);
    case TirKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(n);
      return DependsOn(s->cond, bound) || DependsOn(s->true_value, bound) || DependsOn(s->false_value, bound);
    }
    case TirKind::kCall:
      for (const auto& a : static_cast<const ir::CallNode*>(n)->args)
        if (DependsOn(a, bound)) return true;
      return false;
    case TirKind::kBufferLoad: return true;
    default: return false;
  }
}

bool IsNonNegativeConst(const PrimExpr& e) {
  const auto* imm = e.as<ir::IntImmNode>();
  return imm != nullptr && imm->value >= 0;
}

bool IsPositiveConst(const PrimExpr& e) {
  const auto* imm = e.as<ir::IntImmNode>();
  return imm != nullptr && imm->value > 0;
}

// Bounds of `e` by expressions free of the variables in `bound` (evaluated
// where the loop launches), for the extents a split reduction gives its
// parts: max(min(C, n - k * C), 0) // 64, (x - x // 64 * 64) // 16, x % 16,
// with k the parallel loop's variable. Undefined when no such bound is found.
PrimExpr LowerBound(const PrimExpr& e, const std::unordered_set<const ir::VarNode*>& bound);

PrimExpr UpperBound(const PrimExpr& e, const std::unordered_set<const ir::VarNode*>& bound) {
  if (!DependsOn(e, bound)) return e;
  const ir::PrimExprNode* n = e.get();
  if (!ir::IsBinary(n->kind())) return PrimExpr();
  const auto* b = static_cast<const ir::BinaryNode*>(n);
  switch (n->kind()) {
    case TirKind::kMin: {
      PrimExpr ua = UpperBound(b->a, bound), ub = UpperBound(b->b, bound);
      if (ua.defined() && ub.defined()) return ir::MakeBinary(TirKind::kMin, ua, ub);
      return ua.defined() ? ua : ub;
    }
    case TirKind::kMax:
    case TirKind::kAdd: {
      PrimExpr ua = UpperBound(b->a, bound), ub = UpperBound(b->b, bound);
      if (!ua.defined() || !ub.defined()) return PrimExpr();
      return ir::MakeBinary(n->kind(), ua, ub);
    }
    case TirKind::kSub: {
      PrimExpr ua = UpperBound(b->a, bound), lb = LowerBound(b->b, bound);
      if (!ua.defined() || !lb.defined()) return PrimExpr();
      return ua - lb;
    }
    case TirKind::kMul: {
      // Only by a non-negative constant: the bound keeps its direction.
      if (IsNonNegativeConst(b->b) || IsNonNegativeConst(b->a)) {
        bool left = IsNonNegativeConst(b->a);
        PrimExpr ua = UpperBound(left ? b->b : b->a, bound);
        return ua.defined() ? ua * (left ? b->a : b->b) : PrimExpr();
      }
      return PrimExpr();
    }
    case TirKind::kFloorDiv: {
      if (!IsPositiveConst(b->b)) return PrimExpr();
      PrimExpr ua = UpperBound(b->a, bound);
      return ua.defined() ? ir::MakeBinary(TirKind::kFloorDiv, ua, b->b) : PrimExpr();
    }
    case TirKind::kFloorMod:
      return IsPositiveConst(b->b) ? b->b - PrimExpr(int64_t{1}) : PrimExpr();
    default:
      return PrimExpr();
  }
}

PrimExpr LowerBound(const PrimExpr& e, const std::unordered_set<const ir::VarNode*>& bound) {
  if (!DependsOn(e, bound)) return e;
  const ir::PrimExprNode* n = e.get();
  if (!ir::IsBinary(n->kind())) return PrimExpr();
  const auto* b = static_cast<const ir::BinaryNode*>(n);
  switch (n->kind()) {
    case TirKind::kMax: {
      PrimExpr la = LowerBound(b->a, bound), lb = LowerBound(b->b, bound);
      if (la.defined() && lb.defined()) return ir::MakeBinary(TirKind::kMax, la, lb);
      return la.defined() ? la : lb;
    }
    case TirKind::kMin:
    case TirKind::kAdd: {
      PrimExpr la = LowerBound(b->a, bound), lb = LowerBound(b->b, bound);
      if (!la.defined() || !lb.defined()) return PrimExpr();
      return ir::MakeBinary(n->kind(), la, lb);
    }
    case TirKind::kMul: {
      if (IsNonNegativeConst(b->b) || IsNonNegativeConst(b->a)) {
        bool left = IsNonNegativeConst(b->a);
        PrimExpr la = LowerBound(left ? b->b : b->a, bound);
        return la.defined() ? la * (left ? b->a : b->b) : PrimExpr();
      }
      return PrimExpr();
    }
    case TirKind::kFloorDiv: {
      if (!IsPositiveConst(b->b)) return PrimExpr();
      PrimExpr la = LowerBound(b->a, bound);
      return la.defined() ? ir::MakeBinary(TirKind::kFloorDiv, la, b->b) : PrimExpr();
    }
    case TirKind::kFloorMod:
      return IsPositiveConst(b->b) ? PrimExpr(int64_t{0}) : PrimExpr();
    default:
      return PrimExpr();
  }
}

// The fma calls of an expression: a convolution's or matmul's multiply-adds,
// one per lane.
int64_t FmaCount(const PrimExpr& e) {
  if (!e.defined()) return 0;
  const ir::PrimExprNode* n = e.get();
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    return FmaCount(b->a) + FmaCount(b->b);
  }
  switch (n->kind()) {
    case TirKind::kNot: return FmaCount(static_cast<const ir::NotNode*>(n)->a);
    case TirKind::kCast: return FmaCount(static_cast<const ir::CastNode*>(n)->value);
    case TirKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(n);
      return FmaCount(s->cond) + FmaCount(s->true_value) + FmaCount(s->false_value);
    }
    case TirKind::kCall: {
      const auto* c = static_cast<const ir::CallNode*>(n);
      int64_t k = c->op == "fma" ? 1 : 0;
      for (const auto& a : c->args) k += FmaCount(a);
      return k;
    }
    default: return 0;
  }
}

PrimExpr AsInt64(const PrimExpr& e) {
  return e.dtype() == DType::Int64() ? e : ir::Cast(DType::Int64(), e);
}

class WorkCounter {
 public:
  bool ok = true;

  enum class Measure { kOperations, kMacs, kIterations };
  WorkCounter(const ir::VarNode* outer, Measure m) : measure_(m) { bound_.insert(outer); }

  // The work of `s`, run `trips` times.
  PrimExpr Count(const ir::Stmt& s, const PrimExpr& trips) {
    if (!s || !ok) return PrimExpr(int64_t{0});
    switch (s->kind()) {
      case TirKind::kBufferStore: {
        const auto* st = ir::As<ir::BufferStoreNode>(s);
        return trips * PrimExpr(Of(st->value));
      }
      case TirKind::kEvaluate: return trips * PrimExpr(Of(ir::As<ir::EvaluateNode>(s)->value));
      case TirKind::kFor: {
        const auto* f = ir::As<ir::ForNode>(s);
        // An extent that depends on the iteration (a split reduction's
        // part, shorter for the last) counts as its bound over all
        // iterations when one is found; a triangular nest has none.
        PrimExpr extent = DependsOn(f->extent, bound_) ? UpperBound(f->extent, bound_) : f->extent;
        if (!extent.defined()) {
          ok = false;
          return PrimExpr(int64_t{0});
        }
        // A vectorized loop runs as vectors of kVectorLanes (the codegen's
        // chunk, vector_loop.cc): an operation counts once per vector.
        PrimExpr n = AsInt64(extent);
        if (f->for_kind == ir::ForKind::kVectorized && measure_ == Measure::kOperations) {
          n = ir::MakeBinary(TirKind::kFloorDiv, n + PrimExpr(kVectorLanes - 1), PrimExpr(kVectorLanes));
        }
        bound_.insert(f->loop_var.get());
        PrimExpr w = Count(f->body, trips * n);
        bound_.erase(f->loop_var.get());
        return w;
      }
      case TirKind::kSeqStmt: {
        PrimExpr sum(int64_t{0});
        for (const auto& x : ir::As<ir::SeqStmtNode>(s)->seq) sum = sum + Count(x, trips);
        return sum;
      }
      case TirKind::kIfThenElse: {
        const auto* i = ir::As<ir::IfThenElseNode>(s);
        PrimExpr then_work = Count(i->then_case, trips), else_work = Count(i->else_case, trips);
        // A condition on sizes alone (a symbolic schedule's cases: "the
        // width is 1", "2", ...) is decided before the loop runs: the work
        // is that of the branch taken. Adding every case's work made a
        // kernel with seven width cases look seven times its size, so tiny
        // symbolic kernels woke the workers where the pinned ones did not.
        if (!DependsOn(i->cond, bound_)) {
          return PrimExpr(std::make_shared<const ir::SelectNode>(i->cond, then_work, else_work));
        }
        // Decided per iteration: the larger branch bounds it.
        return ir::MakeBinary(TirKind::kMax, then_work, else_work);
      }
      case TirKind::kLetStmt: {
        const auto* l = ir::As<ir::LetStmtNode>(s);
        bound_.insert(l->var.get());
        PrimExpr w = Count(l->body, trips);
        bound_.erase(l->var.get());
        return w;
      }
      case TirKind::kAllocate: return Count(ir::As<ir::AllocateNode>(s)->body, trips);
      default:
        ok = false;  // not lowered
        return PrimExpr(int64_t{0});
    }
  }

 private:
  // What one store or call of value `v` counts for.
  int64_t Of(const PrimExpr& v) const {
    switch (measure_) {
      case Measure::kMacs: return FmaCount(v);
      case Measure::kIterations: return 1;
      default: return 1 + ExprWork(v);
    }
  }

  Measure measure_;
  std::unordered_set<const ir::VarNode*> bound_;
};

std::optional<PrimExpr> Measured(const ir::ForNode& loop, WorkCounter::Measure m) {
  WorkCounter counter(loop.loop_var.get(), m);
  PrimExpr w = counter.Count(loop.body, PrimExpr(int64_t{1}));
  if (!counter.ok) return std::nullopt;
  return arith::Simplify(w);
}

}  // namespace

std::optional<PrimExpr> ParallelIterationWork(const ir::ForNode& loop) {
  return Measured(loop, WorkCounter::Measure::kOperations);
}

std::optional<StaticRuleWork> ParallelStaticRuleWork(const ir::ForNode& loop) {
  struct FmaFinder : StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<ir::CallNode>(); c != nullptr && c->op == "fma") found = true;
      if (!found) StmtExprVisitor::VisitExpr(e);
    }
  } finder;
  finder.VisitStmt(loop.body);
  const bool macs = finder.found;
  std::optional<PrimExpr> w =
      Measured(loop, macs ? WorkCounter::Measure::kMacs : WorkCounter::Measure::kIterations);
  if (!w) return std::nullopt;
  return StaticRuleWork{*w, macs ? kMinParallelMacs : kMinParallelWork};
}

}  // namespace tir
}  // namespace kiln
