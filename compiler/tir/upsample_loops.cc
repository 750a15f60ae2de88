#include "compiler/tir/upsample_loops.h"

#include <memory>
#include <utility>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

// The constant s of an extent `e * s` (or `s * e`), s >= 2, and e; 0 when
// the extent has no such form or is a constant (static loops are the
// emitter's: vector_loop.h).
int64_t UpsampleFactor(const PrimExpr& extent, PrimExpr* outer) {
  if (!extent.defined() || extent->kind() != TirKind::kMul) return 0;
  const auto* mul = static_cast<const BinaryNode*>(extent.get());
  const auto* ib = mul->b.as<IntImmNode>();
  const auto* ia = mul->a.as<IntImmNode>();
  if (ib != nullptr && ia == nullptr && ib->value >= 2) {
    *outer = mul->a;
    return ib->value;
  }
  if (ia != nullptr && ib == nullptr && ia->value >= 2) {
    *outer = mul->b;
    return ia->value;
  }
  return 0;
}

// Whether expression `e` is `var // s` or `var % s` (kind kFloorDiv /
// kFloorMod).
bool IsVarOp(const PrimExpr& e, TirKind kind, const VarNode* var, int64_t s) {
  if (!e.defined() || e->kind() != kind) return false;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  const auto* v = b->a.as<VarNode>();
  const auto* c = b->b.as<IntImmNode>();
  return v == var && c != nullptr && c->value == s;
}

// Counts the uses of `var`: inside var // s, and elsewhere in a division or
// modulo by anything else (which the rewrite would not keep exact).
class Uses : public StmtExprVisitor {
 public:
  Uses(const VarNode* var, int64_t s) : var_(var), s_(s) {}
  void VisitExpr(const PrimExpr& e) override {
    if (!e.defined()) return;
    if (IsVarOp(e, TirKind::kFloorDiv, var_, s_)) {
      ++divisions;
      return;
    }
    if (IsVarOp(e, TirKind::kFloorMod, var_, s_)) return;
    if (e->kind() == TirKind::kFloorDiv || e->kind() == TirKind::kFloorMod || e->kind() == TirKind::kDiv) {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      if (Mentions(b->a) || Mentions(b->b)) other = true;
    }
    StmtExprVisitor::VisitExpr(e);
  }
  int divisions = 0;
  bool other = false;

 private:
  bool Mentions(const PrimExpr& e) {
    bool found = false;
    struct Find : StmtExprVisitor {
      const VarNode* v;
      bool* found;
      void VisitExpr(const PrimExpr& x) override {
        if (x.defined() && x.as<VarNode>() == v) *found = true;
        StmtExprVisitor::VisitExpr(x);
      }
    } f;
    f.v = var_;
    f.found = &found;
    f.VisitExpr(e);
    return found;
  }
  const VarNode* var_;
  int64_t s_;
};

// var // s -> j, var % s -> r, var -> j * s + r.
class Replace : public StmtExprMutator {
 public:
  Replace(const VarNode* var, int64_t s, PrimExpr j, PrimExpr r) : var_(var), s_(s), j_(std::move(j)), r_(std::move(r)) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (!e.defined()) return e;
    if (IsVarOp(e, TirKind::kFloorDiv, var_, s_)) return j_;
    if (IsVarOp(e, TirKind::kFloorMod, var_, s_)) return r_;
    if (e.as<VarNode>() == var_) return j_ * IntImm(e.dtype(), s_) + r_;
    return StmtExprMutator::MutateExpr(e);
  }

 private:
  const VarNode* var_;
  int64_t s_;
  PrimExpr j_, r_;
};

// The constant c of the first `var // c` in `s` (0: none).
int64_t FirstDivisor(const Stmt& s, const VarNode* var) {
  struct Find : StmtExprVisitor {
    const VarNode* v;
    int64_t c = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (c != 0 || !e.defined()) return;
      if (e->kind() == TirKind::kFloorDiv) {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        const auto* k = b->b.as<IntImmNode>();
        if (b->a.as<VarNode>() == v && k != nullptr && k->value >= 2) {
          c = k->value;
          return;
        }
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } f;
  f.v = var;
  f.VisitStmt(s);
  return f.c;
}

class Splitter : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    Stmt st = StmtExprMutator::MutateStmt(s);
    const auto* loop = As<ForNode>(st);
    if (loop == nullptr || loop->for_kind != ForKind::kVectorized) return st;
    const auto* zero = loop->min.as<IntImmNode>();
    if (zero == nullptr || zero->value != 0) return st;
    PrimExpr outer;
    int64_t f = UpsampleFactor(loop->extent, &outer);
    if (f == 0) return st;
    // An extent e * m read at x // s with s dividing m (an upsampling by s
    // written into a concatenation whose size is another map's, times m):
    // e * (m / s) source columns.
    const int64_t s_used = FirstDivisor(loop->body, loop->loop_var.get());
    if (s_used != 0 && s_used != f && f % s_used == 0) {
      outer = outer * IntImm(outer.dtype(), f / s_used);
      f = s_used;
    }
    Uses uses(loop->loop_var.get(), f);
    uses.VisitStmt(loop->body);
    if (uses.divisions == 0 || uses.other) return st;
    const DType t = loop->loop_var->dtype;
    Var j = MakeVar(loop->loop_var->name + "_src", t), r = MakeVar(loop->loop_var->name + "_rep", t);
    Replace rep(loop->loop_var.get(), f, PrimExpr(j), PrimExpr(r));
    Stmt body = rep.MutateStmt(loop->body);
    Stmt inner = std::make_shared<ForNode>(r, IntImm(t, 0), IntImm(t, f), ForKind::kVectorized, body);
    return std::make_shared<ForNode>(j, IntImm(t, 0), outer, ForKind::kSerial, inner);
  }
};

}  // namespace

PrimFunc SplitUpsampleLoops(const PrimFunc& f) {
  if (!f || !f->body) return f;
  Splitter s;
  Stmt body = s.MutateStmt(f->body);
  if (body == f->body) return f;
  auto nf = std::make_shared<PrimFuncNode>(*f);
  nf->body = body;
  return nf;
}

}  // namespace tir
}  // namespace kiln
