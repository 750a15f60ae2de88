#include "compiler/tune/features.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "compiler/arith/simplify.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tune {

using namespace ir;  // NOLINT

namespace {

struct Loop {
  const ForNode* f;
  double extent;
};

// Walks the statement tree with the loops around the current statement.
class Extractor : public tir::StmtExprVisitor {
 public:
  double ops = 0, loaded = 0, stored = 0, vec_ops = 0, unroll_ops = 0;
  double loops = 0, depth = 0, parallel = 0, vector = 0, unrolled = 0;
  double loads_reuse = 0, loads_contig = 0, loads_strided = 0;
  double inner_weighted = 0, local_bytes = 0, stores = 0, outer_iters = 0, conds = 0, serial_max = 0;

  void Walk(const Stmt& s) {
    if (!s) return;
    switch (s->kind()) {
      case TirKind::kFor: {
        const auto* f = static_cast<const ForNode*>(s.get());
        std::optional<int64_t> e = arith::AsConstInt(f->extent);
        double ext = e ? static_cast<double>(std::max<int64_t>(*e, 1)) : 1.0;
        if (stack_.empty()) outer_iters += ext;
        stack_.push_back({f, ext});
        loops += 1;
        depth = std::max(depth, static_cast<double>(stack_.size()));
        if (f->for_kind == ForKind::kParallel) parallel = std::max(parallel, ext);
        if (f->for_kind == ForKind::kVectorized) vector = std::max(vector, ext);
        if (f->for_kind == ForKind::kSerial) serial_max = std::max(serial_max, ext);
        double unroll_run = 1;
        for (const Loop& l : stack_)
          if (l.f->for_kind == ForKind::kUnrolled) unroll_run *= l.extent;
        if (unroll_run > 1) unrolled = std::max(unrolled, unroll_run);
        Walk(f->body);
        stack_.pop_back();
        return;
      }
      case TirKind::kSeqStmt:
        for (const auto& x : static_cast<const SeqStmtNode*>(s.get())->seq) Walk(x);
        return;
      case TirKind::kIfThenElse: {
        const auto* n = static_cast<const IfThenElseNode*>(s.get());
        conds += Runs();
        Walk(n->then_case);
        Walk(n->else_case);
        return;
      }
      case TirKind::kLetStmt:
        Walk(static_cast<const LetStmtNode*>(s.get())->body);
        return;
      case TirKind::kAllocate: {
        const auto* n = static_cast<const AllocateNode*>(s.get());
        double bytes = n->buffer->dtype.bytes();
        for (const auto& d : n->buffer->shape) {
          std::optional<int64_t> e = arith::AsConstInt(d);
          bytes *= e ? static_cast<double>(*e) : 1.0;
        }
        local_bytes += bytes;
        Walk(n->body);
        return;
      }
      case TirKind::kBufferStore: {
        const auto* n = static_cast<const BufferStoreNode*>(s.get());
        stores += 1;
        double runs = Runs();
        stored += runs * n->buffer->dtype.bytes();
        double before = ops;
        run_ = runs;
        VisitExpr(n->value);
        double added = ops - before;
        if (InKind(ForKind::kVectorized)) vec_ops += added;
        if (InKind(ForKind::kUnrolled)) unroll_ops += added;
        if (!stack_.empty()) inner_weighted += added * std::log2(1 + stack_.back().extent);
        return;
      }
      default:
        return;
    }
  }

  void VisitExpr(const PrimExpr& e) override {
    if (!e.defined()) return;
    TirKind k = e->kind();
    if (k == TirKind::kBufferLoad) {
      const auto* l = e.as<BufferLoadNode>();
      loaded += run_ * l->buffer->dtype.bytes();
      Classify(l->indices);
      return;  // index arithmetic is address math, not counted
    }
    bool arith = k == TirKind::kAdd || k == TirKind::kSub || k == TirKind::kMul || k == TirKind::kDiv ||
                 k == TirKind::kMin || k == TirKind::kMax || k == TirKind::kCall || k == TirKind::kSelect;
    if (arith && e->dtype.is_float()) ops += run_;
    tir::StmtExprVisitor::VisitExpr(e);
  }

 private:
  double Runs() const {
    double r = 1;
    for (const Loop& l : stack_) r *= l.extent;
    return r;
  }
  bool InKind(ForKind kind) const {
    for (const Loop& l : stack_)
      if (l.f->for_kind == kind) return true;
    return false;
  }
  void Classify(const std::vector<PrimExpr>& idx) {
    if (stack_.empty()) {
      loads_reuse += run_;
      return;
    }
    const VarNode* v = stack_.back().f->loop_var.get();
    bool last = !idx.empty() && tir::sched::UsesVar(idx.back(), v);
    bool other = false;
    for (size_t d = 0; d + 1 < idx.size(); ++d) other = other || tir::sched::UsesVar(idx[d], v);
    if (other) loads_strided += run_;
    else if (last) loads_contig += run_;
    else loads_reuse += run_;
  }

  std::vector<Loop> stack_;
  double run_ = 1;
};

float L(double x) { return static_cast<float>(std::log2(1 + std::max(0.0, x))); }

}  // namespace

std::vector<float> ExtractFeatures(const PrimFunc& lowered) {
  Extractor x;
  x.Walk(lowered->body);
  double loads = x.loads_reuse + x.loads_contig + x.loads_strided;
  auto share = [](double part, double whole) { return whole > 0 ? static_cast<float>(part / whole) : 0.0f; };
  std::vector<float> f = {
      L(x.ops),
      L(x.loaded),
      L(x.stored),
      share(x.ops, x.loaded + x.stored),
      L(x.loops),
      static_cast<float>(x.depth),
      L(x.parallel),
      L(x.vector),
      share(x.vec_ops, x.ops),
      L(x.unrolled),
      share(x.loads_reuse, loads),
      share(x.loads_contig, loads),
      share(x.loads_strided, loads),
      x.ops > 0 ? static_cast<float>(x.inner_weighted / x.ops) : 0.0f,
      L(x.local_bytes),
      static_cast<float>(x.stores),
      L(x.outer_iters),
      L(x.conds),
      share(x.unroll_ops, x.ops),
      L(x.serial_max),
  };
  return f;
}

}  // namespace tune
}  // namespace kiln
