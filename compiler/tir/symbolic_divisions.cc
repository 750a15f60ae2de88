#include "compiler/tir/symbolic_divisions.h"

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using nest::ConstInt;
using nest::I64;

struct Term {
  int64_t coef = 1;
  std::vector<PrimExpr> factors;  // non-constant factors
};

// The product's constant and other factors.
bool Factor(const PrimExpr& e, Term* t) {
  if (const auto* m = e.as<MulNode>()) return Factor(m->a, t) && Factor(m->b, t);
  if (const int64_t* c = ConstInt(e)) {
    // Overflow guard: coefficients of indices are far below this.
    if (*c != 0 && (t->coef > (int64_t(1) << 40) || *c > (int64_t(1) << 20) || *c < -(int64_t(1) << 20)))
      return false;
    t->coef *= *c;
    return true;
  }
  t->factors.push_back(e);
  return true;
}

// The sum's terms (a + b, a - b).
bool Terms(const PrimExpr& e, int64_t sign, std::vector<Term>* out) {
  if (const auto* a = e.as<AddNode>()) return Terms(a->a, sign, out) && Terms(a->b, sign, out);
  if (const auto* s = e.as<SubNode>()) return Terms(s->a, sign, out) && Terms(s->b, -sign, out);
  Term t;
  t.coef = sign;
  if (!Factor(e, &t)) return false;
  out->push_back(std::move(t));
  return true;
}

bool SameAtom(const PrimExpr& a, const PrimExpr& b) {
  return a.get() == b.get() || (a->dtype == b->dtype && arith::CanProveEqual(a, b));
}

// t / d when d's factors are among t's and d's constant divides t's.
bool DivideTerm(const Term& t, const Term& d, Term* q) {
  if (d.coef == 0 || t.coef % d.coef != 0) return false;
  std::vector<PrimExpr> left = t.factors;
  for (const PrimExpr& f : d.factors) {
    bool found = false;
    for (size_t i = 0; i < left.size() && !found; ++i) {
      if (SameAtom(left[i], f)) {
        left.erase(left.begin() + i);
        found = true;
      }
    }
    if (!found) return false;
  }
  q->coef = t.coef / d.coef;
  q->factors = std::move(left);
  return true;
}

PrimExpr TermExpr(const Term& t, DType dtype) {
  PrimExpr e;
  for (const PrimExpr& f : t.factors) e = e.defined() ? e * f : f;
  if (!e.defined()) return IntImm(dtype, t.coef);
  return t.coef == 1 ? e : e * IntImm(dtype, t.coef);
}

class Rewriter : public StmtExprMutator {
 public:
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f == nullptr || !nest::IsZero(f->min)) return StmtExprMutator::MutateStmt(s);
    extents_[f->loop_var.get()] = f->extent;
    const int64_t* ext = ConstInt(f->extent);
    bounds_[f->loop_var.get()] = ext ? arith::IntBounds::Range(0, *ext - 1) : arith::IntBounds::AtLeast(0);
    Stmt out = StmtExprMutator::MutateStmt(s);
    extents_.erase(f->loop_var.get());
    bounds_.erase(f->loop_var.get());
    return out;
  }

  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    if (!m.defined()) return m;
    if (PrimExpr r = DropClamp(m); r.defined()) {
      changed = true;
      return r;
    }
    bool is_div = m.as<FloorDivNode>() != nullptr, is_mod = m.as<FloorModNode>() != nullptr;
    if (!is_div && !is_mod) return m;
    const auto* b = static_cast<const BinaryNode*>(m.get());
    if (ConstInt(b->b) != nullptr) {
      // By a constant: the simplifier, knowing the loop variables' ranges.
      if (!UsesLoopVar(b->a)) return m;
      PrimExpr s = arith::Simplify(m, bounds_);
      changed |= s.get() != m.get();
      return s;
    }
    Term d;
    std::vector<Term> terms;
    if (!Factor(b->b, &d) || d.factors.empty() || d.coef <= 0 || !Terms(b->a, 1, &terms)) return m;
    std::vector<Term> quotient, rest;
    for (const Term& t : terms) {
      Term q;
      if (DivideTerm(t, d, &q)) {
        quotient.push_back(q);
      } else {
        rest.push_back(t);
      }
    }
    // What d does not divide: r, with floordiv(Q * d + r, d) = Q + floordiv(r, d)
    // and floormod(Q * d + r, d) = floormod(r, d) for every integer r (d > 0:
    // an extent). When 0 <= r < d those are Q and r; otherwise the division
    // stays, on r alone (a reshape's flat index then keeps one division by
    // the row length instead of several, and the next division of its
    // result, e.g. floormod(i // w, h) with i over [0, h * w), folds).
    PrimExpr r;
    for (const Term& t : rest) {
      PrimExpr te = TermExpr(t, m->dtype);
      r = r.defined() ? r + te : te;
    }
    const bool r_in_range = !r.defined() || InZeroToD(r, b->b);
    if (!r_in_range && quotient.empty()) return m;
    changed = true;
    if (is_mod) {
      if (!r.defined()) return IntImm(m->dtype, 0);
      return r_in_range ? r : MakeBinary(TirKind::kFloorMod, r, b->b);
    }
    PrimExpr q;
    for (const Term& t : quotient) {
      PrimExpr te = TermExpr(t, m->dtype);
      q = q.defined() ? q + te : te;
    }
    if (!r_in_range) {
      PrimExpr rd = MakeBinary(TirKind::kFloorDiv, r, b->b);
      q = q.defined() ? q + rd : rd;
    }
    return q.defined() ? q : IntImm(m->dtype, 0);
  }

 private:
  // min(max(v // k, 0), n - 1) with v a loop variable over [0, n * k): the
  // clamp cannot bite.
  PrimExpr DropClamp(const PrimExpr& e) const {
    const auto* mn = e.as<MinNode>();
    if (mn == nullptr) return PrimExpr();
    const auto* mx = mn->a.as<MaxNode>();
    if (mx == nullptr || !nest::IsZero(mx->b)) return PrimExpr();
    const auto* div = mx->a.as<FloorDivNode>();
    if (div == nullptr) return PrimExpr();
    const auto* v = div->a.as<VarNode>();
    const int64_t* k = ConstInt(div->b);
    if (v == nullptr || k == nullptr || *k <= 0) return PrimExpr();
    auto it = extents_.find(v);
    if (it == extents_.end()) return PrimExpr();
    PrimExpr n = mn->b + IntImm(mn->b->dtype, 1);
    if (!arith::CanProveEqual(it->second, n * IntImm(n->dtype, *k))) return PrimExpr();
    return mx->a;
  }

  // 0 <= x < d: a loop variable running over [0, d), floormod(_, d), or
  // floordiv(v, c) with v over [0, d * c).
  bool InZeroToD(const PrimExpr& x, const PrimExpr& d) const {
    if (const auto* v = x.as<VarNode>()) {
      auto it = extents_.find(v);
      return it != extents_.end() && SameAtom(it->second, d);
    }
    if (const auto* mod = x.as<FloorModNode>()) return SameAtom(mod->b, d);
    // floordiv(v, c) with v over [0, d * c) (a reshape's index after a
    // dimension of c was divided out).
    // The divisor may be symbolic: floordiv(i, w) with i over [0, h * w) is
    // below h.
    if (const auto* div = x.as<FloorDivNode>()) {
      const auto* v = div->a.as<VarNode>();
      if (v == nullptr) return false;
      const int64_t* c = ConstInt(div->b);
      if (c != nullptr && *c <= 0) return false;
      auto it = extents_.find(v);
      return it != extents_.end() && arith::CanProveEqual(it->second, d * div->b);
    }
    return false;
  }

  bool UsesLoopVar(const PrimExpr& e) const {
    struct Finder : StmtExprVisitor {
      const std::unordered_map<const VarNode*, PrimExpr>* loops;
      bool found = false;
      void VisitExpr(const PrimExpr& x) override {
        if (const auto* v = x.as<VarNode>()) found |= loops->count(v) > 0;
        StmtExprVisitor::VisitExpr(x);
      }
    } f;
    f.loops = &extents_;
    f.VisitExpr(e);
    return f.found;
  }

  std::unordered_map<const VarNode*, PrimExpr> extents_;
  arith::VarBounds bounds_;
};

// Splits `for i in [0, E)` into `for i_o in [0, h): for i_i in [0, d)`,
// i = i_o * d + i_i, when the body divides i by a symbolic d
// (floordiv(i, d), floormod(i, d): a reshape that flattened two symbolic
// dimensions, read back as rows and columns) and E = h * d structurally.
// Those become i_o and i_i: no division per element, and the inner loop
// reads rows contiguously (a vector loop) where a flat loop would divide
// each lane's index.
class LoopSplitter : public StmtExprMutator {
 public:
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    Stmt m = StmtExprMutator::MutateStmt(s);  // inner loops first
    const auto* f = As<ForNode>(m);
    if (f == nullptr || f->for_kind != ForKind::kSerial || !nest::IsZero(f->min)) return m;
    PrimExpr d;
    if (!OneDivisor(f->body, f->loop_var.get(), &d)) return m;
    Term e, dt, h;
    if (!Factor(f->extent, &e) || !Factor(d, &dt) || dt.coef <= 0 || e.coef <= 0 || !DivideTerm(e, dt, &h)) return m;
    const VarNode* v = f->loop_var.get();
    Var outer = MakeVar(v->name + "_o", v->dtype), inner = MakeVar(v->name + "_i", v->dtype);
    struct Replace : StmtExprMutator {
      const VarNode* v;
      PrimExpr d, outer, inner;
      PrimExpr MutateExpr(const PrimExpr& x) override {
        if (x.as<FloorDivNode>() || x.as<FloorModNode>()) {
          const auto* b = static_cast<const BinaryNode*>(x.get());
          if (nest::IsVar(b->a, v) && SameAtom(b->b, d)) return x.as<FloorDivNode>() ? outer : inner;
        }
        return StmtExprMutator::MutateExpr(x);
      }
    } rep;
    rep.v = v;
    rep.d = d;
    rep.outer = PrimExpr(outer);
    rep.inner = PrimExpr(inner);
    VarMap flat;
    flat[v] = rep.outer * d + rep.inner;
    // o + (i_o * d + i_i), i at an offset o (a slice of a split
    // concatenation, split_concat.h), as (o + i_o * d) + i_i: the schedules
    // take an invariant offset plus the loop variable as one element per
    // iteration (default_schedule.cc), so the inner loop still vectorizes.
    struct Reassociate : StmtExprMutator {
      const VarNode* inner;
      PrimExpr MutateExpr(const PrimExpr& x) override {
        PrimExpr m = StmtExprMutator::MutateExpr(x);
        const auto* add = m.as<AddNode>();
        const auto* rest = add ? add->b.as<AddNode>() : nullptr;
        if (rest == nullptr || !nest::IsVar(rest->b, inner)) return m;
        return (add->a + rest->a) + rest->b;
      }
    } assoc;
    assoc.inner = inner.get();
    Stmt body = assoc.MutateStmt(Substitute(rep.MutateStmt(f->body), flat));
    changed = true;
    Stmt in = std::make_shared<ForNode>(inner, I64(0), d, ForKind::kSerial, body);
    auto out = std::make_shared<ForNode>(outer, I64(0), TermExpr(h, v->dtype), ForKind::kSerial, in);
    out->span = f->span;
    return out;
  }

 private:
  // The divisor of every floordiv / floormod of v in s, when there is at
  // least one, all divide by the same symbolic d.
  static bool OneDivisor(const Stmt& s, const VarNode* v, PrimExpr* d) {
    struct Finder : StmtExprVisitor {
      const VarNode* v;
      PrimExpr d;
      bool mixed = false;
      void VisitExpr(const PrimExpr& x) override {
        if (x.as<FloorDivNode>() || x.as<FloorModNode>()) {
          const auto* b = static_cast<const BinaryNode*>(x.get());
          if (nest::IsVar(b->a, v)) {
            if (ConstInt(b->b) != nullptr || (d.defined() && !SameAtom(d, b->b))) {
              mixed = true;
            } else if (!d.defined()) {
              d = b->b;
            }
          }
        }
        StmtExprVisitor::VisitExpr(x);
      }
    } finder;
    finder.v = v;
    finder.VisitStmt(s);
    if (finder.mixed || !finder.d.defined()) return false;
    *d = finder.d;
    return true;
  }
};

}  // namespace

PrimFunc SimplifySymbolicDivisions(const PrimFunc& func) {
  // Static kernels are left as they are (their divisions fold already).
  bool symbolic = false;
  for (const auto& kv : func->buffer_map)
    for (const PrimExpr& d : kv.second->shape) symbolic |= ConstInt(d) == nullptr;
  if (!symbolic) return func;
  Rewriter r;
  Stmt body = r.MutateStmt(func->body);
  LoopSplitter split;
  body = split.MutateStmt(body);
  if (!r.changed && !split.changed) return func;
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
