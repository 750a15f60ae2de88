#include "compiler/tir/fuse_symbolic_parallel.h"

#include <memory>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using nest::ConstInt;
using nest::I64;
using nest::IsZero;

// Whether distinct iterations of `loop` store distinct elements: every
// buffer it stores and does not allocate is accessed everywhere inside it
// with the loop variable itself as the index in one same position.
bool IterationsIndependent(const ForNode* loop) {
  nest::BufferAccesses c;
  c.VisitStmt(loop->body);
  for (const auto& kv : c.by_buffer) {
    if (!kv.second.stored || c.allocated.count(kv.first)) continue;
    const auto& lists = kv.second.indices;
    const size_t ndim = lists.front()->size();
    bool found = false;
    for (size_t d = 0; d < ndim && !found; ++d) {
      bool all = true;
      for (const auto* idx : lists)
        all = all && idx->size() == ndim && (*idx)[d].get() == loop->loop_var.get();
      found = all;
    }
    if (!found) return false;
  }
  return true;
}

bool HasLoop(const Stmt& s) {
  struct Find : StmtExprVisitor {
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (As<ForNode>(st) != nullptr) found = true;
      if (!found) StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

// A serial loop of static extent >= 2 from 0 whose iterations are
// independent, around a loop of its own: the Fuser may take it. (An
// innermost loop stays a loop, for LLVM to vectorize or unroll.)
const ForNode* Takeable(const Stmt& s) {
  const auto* f = As<ForNode>(s);
  if (f == nullptr || f->for_kind != ForKind::kSerial || !IsZero(f->min)) return nullptr;
  const int64_t* e = ConstInt(f->extent);
  if (e == nullptr || *e < 2 || !HasLoop(f->body) || !IterationsIndependent(f)) return nullptr;
  return f;
}

class Fuser : public StmtExprMutator {
 public:
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    const auto* p = As<ForNode>(s);
    if (p == nullptr || p->for_kind != ForKind::kParallel || ConstInt(p->extent) != nullptr || !IsZero(p->min))
      return StmtExprMutator::MutateStmt(s);
    // The static loops to take, outermost first.
    std::vector<const ForNode*> taken;
    int64_t product = 1;
    Stmt body = p->body;
    while (product < kMinFusedIterations) {
      const ForNode* q = Takeable(body);
      if (q == nullptr) break;
      taken.push_back(q);
      product *= *ConstInt(q->extent);
      body = q->body;
    }
    if (taken.empty()) return s;
    changed = true;
    // fused = ((n * E1 + i1) * E2 + i2) ...: each variable from the fused
    // index by division and remainder, the innermost fastest.
    Var fused = MakeVar(p->loop_var->name + "_fused", p->loop_var->dtype);
    int64_t inner = 1;
    for (size_t k = taken.size(); k-- > 0;) {
      const ForNode* q = taken[k];
      const int64_t e = *ConstInt(q->extent);
      PrimExpr at = inner == 1 ? PrimExpr(fused) : MakeBinary(TirKind::kFloorDiv, PrimExpr(fused), I64(inner));
      body = std::make_shared<LetStmtNode>(q->loop_var, MakeBinary(TirKind::kFloorMod, at, I64(e)), body);
      inner *= e;
    }
    body = std::make_shared<LetStmtNode>(p->loop_var, MakeBinary(TirKind::kFloorDiv, PrimExpr(fused), I64(inner)),
                                         body);
    return std::make_shared<ForNode>(fused, I64(0), arith::Simplify(p->extent * I64(inner)), ForKind::kParallel,
                                     body, p->thread_tag);
  }
};

}  // namespace

PrimFunc FuseSymbolicParallelLoops(const PrimFunc& func) {
  Fuser fuser;
  Stmt body = fuser.MutateStmt(func->body);
  return fuser.changed ? nest::WithBody(func, body) : func;
}

}  // namespace tir
}  // namespace kiln
