#include "compiler/tir/symbolic_parallel.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/parallel_work.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using nest::ConstInt;

// v, or c + v with c a constant (a slice of a split concatenation,
// split_concat.h).
bool VarOrConstOffset(const PrimExpr& e, const VarNode* v) {
  const auto* add = e.as<AddNode>();
  return nest::IsVar(e, v) || (add != nullptr && ConstInt(add->a) != nullptr && nest::IsVar(add->b, v));
}

// Every buffer stored in the loop (and not allocated inside it) is indexed
// by the loop variable itself (or it plus a constant, the same expression)
// in one dimension of all its accesses.
bool Independent(const ForNode* loop) {
  nest::BufferAccesses c;
  c.VisitStmt(loop->body);
  for (const auto& kv : c.by_buffer) {
    if (!kv.second.stored || c.allocated.count(kv.first)) continue;
    const auto& lists = kv.second.indices;
    const size_t ndim = lists.front()->size();
    bool found = false;
    for (size_t d = 0; d < ndim && !found; ++d) {
      const PrimExpr& first = (*lists.front())[d];
      bool all = VarOrConstOffset(first, loop->loop_var.get());
      for (const auto* idx : lists) all = all && idx->size() == ndim && (*idx)[d].get() == first.get();
      found = all;
    }
    if (!found) return false;
  }
  return true;
}

bool HasParallel(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st); f != nullptr && f->for_kind == ForKind::kParallel) found = true;
      if (!found) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

Stmt Rebuilt(const ForNode* f, ForKind kind, Stmt body) {
  auto n = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, std::move(body));
  n->span = f->span;
  return n;
}

// A serial loop starting at 0 that may run in parallel.
bool CanRunParallel(const ForNode* f) {
  return f->for_kind == ForKind::kSerial && nest::IsZero(f->min) && !HasParallel(f->body) && Independent(f);
}

// The static iteration count of the loops in `s` (sums over sequences),
// nullopt when a loop's extent is not static or `s` holds anything but
// loops, sequences, stores and calls: an allocation in particular, since the
// nest is then copied into two branches and a buffer must be defined once.
std::optional<int64_t> StaticIterations(const Stmt& s) {
  if (const auto* f = As<ForNode>(s)) {
    const int64_t* e = ConstInt(f->extent);
    std::optional<int64_t> inner = StaticIterations(f->body);
    if (e == nullptr || !inner) return std::nullopt;
    return *e * *inner;
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    int64_t total = 0;
    for (const Stmt& c : seq->seq) {
      std::optional<int64_t> n = StaticIterations(c);
      if (!n) return std::nullopt;
      total += *n;
    }
    return total;
  }
  if (As<BufferStoreNode>(s) != nullptr || As<EvaluateNode>(s) != nullptr) return 1;
  return std::nullopt;
}

// Iterations of a fused loop's body up to which its t // C and t % C are
// worth a second, unfused copy of the nest for large batches.
constexpr int64_t kMaxSplitBodyIterations = 1024;

class Spreader : public StmtExprMutator {
 public:
  explicit Spreader(int threads) : threads_(threads) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f == nullptr || f->for_kind != ForKind::kParallel) return StmtExprMutator::MutateStmt(s);
    // (Static once simplified: a schedule's `60 * 1` is no batch.)
    if (arith::AsConstInt(arith::Simplify(f->extent)) || !nest::IsZero(f->min)) return s;
    // The loops of extent 1 between n and what it runs.
    std::vector<const ForNode*> units;
    Stmt inner = f->body;
    while (const auto* u = As<ForNode>(inner)) {
      const int64_t* e = ConstInt(u->extent);
      if (e == nullptr || *e != 1) break;
      units.push_back(u);
      inner = u->body;
    }
    if (const auto* c = As<ForNode>(inner)) {
      const bool uses_n = nest::Uses(c->extent, {f->loop_var.get()});
      if (uses_n || !CanRunParallel(c)) return s;
      if (ConstInt(c->extent) == nullptr) {
        // C symbolic too: n serial, c parallel (t // C would divide by a
        // run-time value in every iteration).
        Stmt body = Rebuilt(c, ForKind::kParallel, c->body);
        for (auto it = units.rbegin(); it != units.rend(); ++it) body = Rebuilt(*it, (*it)->for_kind, body);
        changed = true;
        return Rebuilt(f, ForKind::kSerial, body);
      }
      // Images too small for a launch below the thread count: the fused
      // loop runs in parallel only where N * W reaches kMinParallelWork
      // (parallel_work.h; W one image's work), and at N >= threads the
      // batch loop alone feeds every thread. When (threads - 1) * W (W
      // without a hint) is below it, fusing only adds t // C and t % C to
      // every element and keeps the inner loop from a contiguous vector
      // copy: romanizer_decoder's gather of 256-float rows at batch 1 ran
      // 6.5k instructions fused against 0.17k for its pinned build's copy.
      // The batch loop stays as it was.
      if (std::optional<PrimExpr> work = ParallelIterationWork(*f)) {
        std::optional<int64_t> w = arith::AsConstInt(arith::Simplify(*work));
        if (w && *w * std::max(threads_ - 1, 1) < kMinParallelWork) return s;
      }
      // for t in parallel(N * C): n = t // C, c = t % C.
      Var t = MakeVar(f->loop_var->name + "_" + c->loop_var->name, f->loop_var->dtype);
      VarMap map;
      map[f->loop_var.get()] = MakeBinary(TirKind::kFloorDiv, PrimExpr(t), c->extent);
      map[c->loop_var.get()] = MakeBinary(TirKind::kFloorMod, PrimExpr(t), c->extent);
      Stmt body = Substitute(c->body, map);
      for (auto it = units.rbegin(); it != units.rend(); ++it) body = Rebuilt(*it, (*it)->for_kind, body);
      changed = true;
      auto fused = std::make_shared<ForNode>(t, nest::I64(0), arith::Simplify(f->extent * c->extent),
                                             ForKind::kParallel, body);
      fused->span = f->span;
      std::optional<int64_t> small = StaticIterations(c->body);
      if (threads_ < 2 || !small || *small > kMaxSplitBodyIterations) return fused;
      // A batch of at least the thread count keeps its own loop (header).
      PrimExpr enough = MakeBinary(TirKind::kGE, f->extent, IntImm(f->extent.dtype(), threads_));
      return std::make_shared<IfThenElseNode>(enough, s, Stmt(fused));
    }
    const auto* seq = As<SeqStmtNode>(inner);
    if (seq == nullptr) return s;
    std::vector<Stmt> parts;
    bool any = false;
    for (const Stmt& st : seq->seq) {
      const auto* c = As<ForNode>(st);
      const int64_t* e = c != nullptr ? ConstInt(c->extent) : nullptr;
      if (c != nullptr && (e == nullptr || *e >= 2) && CanRunParallel(c)) {
        parts.push_back(Rebuilt(c, ForKind::kParallel, c->body));
        any = true;
      } else {
        parts.push_back(st);
      }
    }
    if (!any) return s;
    changed = true;
    Stmt body = Seq(parts);
    for (auto it = units.rbegin(); it != units.rend(); ++it) body = Rebuilt(*it, (*it)->for_kind, body);
    return Rebuilt(f, ForKind::kSerial, body);
  }

 private:
  int threads_;
};

}  // namespace

PrimFunc SpreadSymbolicParallel(const PrimFunc& func, int num_threads_hint) {
  Spreader s(num_threads_hint);
  Stmt body = s.MutateStmt(func->body);
  if (!s.changed) return func;
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
