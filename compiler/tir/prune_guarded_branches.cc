#include "compiler/tir/prune_guarded_branches.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/int_bounds.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT: the IR vocabulary is what this file is about

namespace {

using arith::IntBounds;
using arith::kNegInf;
using arith::kPosInf;

// Whether `e` is built of variables, integer constants and integer / logical
// operators only: its value cannot change inside the arm it guards.
bool IsPure(const PrimExpr& e) {
  switch (e->kind()) {
    case TirKind::kIntImm:
    case TirKind::kVar: return true;
    case TirKind::kNot: return IsPure(e.as<NotNode>()->a);
    case TirKind::kCast: return IsPure(e.as<CastNode>()->value);
    default: break;
  }
  if (!IsBinary(e->kind())) return false;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  return IsPure(b->a) && IsPure(b->b);
}

bool Mentions(const PrimExpr& e, const VarNode* v) {
  if (const auto* var = e.as<VarNode>()) return var == v;
  if (const auto* n = e.as<NotNode>()) return Mentions(n->a, v);
  if (const auto* c = e.as<CastNode>()) return Mentions(c->value, v);
  if (!IsBinary(e->kind())) return false;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  return Mentions(b->a, v) || Mentions(b->b, v);
}

// `e OP c` (or `c OP e`) as e's interval where it holds; nullopt for anything
// else (NE included: its truth set is not an interval).
struct Atom {
  PrimExpr e;
  IntBounds holds;   // e's values where the atom is true
  IntBounds fails;   // ... where it is false, when that is one interval
  bool fails_is_interval = false;
};

std::optional<Atom> AsAtom(const PrimExpr& cond) {
  TirKind k = cond->kind();
  if (k != TirKind::kLT && k != TirKind::kLE && k != TirKind::kGT && k != TirKind::kGE && k != TirKind::kEQ) {
    return std::nullopt;
  }
  const auto* b = static_cast<const BinaryNode*>(cond.get());
  PrimExpr e = b->a;
  const auto* c = b->b.as<IntImmNode>();
  if (c == nullptr) {
    // c OP e: mirror the operator.
    c = b->a.as<IntImmNode>();
    if (c == nullptr) return std::nullopt;
    e = b->b;
    k = k == TirKind::kLT ? TirKind::kGT : k == TirKind::kLE ? TirKind::kGE : k == TirKind::kGT ? TirKind::kLT
        : k == TirKind::kGE                                                                    ? TirKind::kLE
                                                                                               : k;
  }
  if (!e.dtype().is_int() || !IsPure(e)) return std::nullopt;
  const int64_t v = c->value;
  // Limits keep v +- 1 in range; an atom at the very edge is just not used.
  if (v == kNegInf || v == kPosInf || v == kNegInf + 1 || v == kPosInf - 1) return std::nullopt;
  Atom a{e, {}, {}, true};
  switch (k) {
    case TirKind::kLT: a.holds = IntBounds::Range(kNegInf, v - 1), a.fails = IntBounds::AtLeast(v); break;
    case TirKind::kLE: a.holds = IntBounds::Range(kNegInf, v), a.fails = IntBounds::AtLeast(v + 1); break;
    case TirKind::kGT: a.holds = IntBounds::AtLeast(v + 1), a.fails = IntBounds::Range(kNegInf, v); break;
    case TirKind::kGE: a.holds = IntBounds::AtLeast(v), a.fails = IntBounds::Range(kNegInf, v - 1); break;
    default: a.holds = IntBounds::Const(v), a.fails_is_interval = false; break;
  }
  return a;
}

bool Disjoint(IntBounds a, IntBounds b) { return a.max < b.min || b.max < a.min; }
bool Inside(IntBounds a, IntBounds outer) { return a.min >= outer.min && a.max <= outer.max; }

bool IsEmpty(const Stmt& s) {
  const auto* seq = As<SeqStmtNode>(s);
  return seq != nullptr && seq->seq.empty();
}

// A loop, let or allocation whose body was pruned away does nothing: it goes
// too, so that no loop reaches the codegen with an empty body.
Stmt DropIfHollow(const Stmt& s) {
  if (const auto* f = As<ForNode>(s); f != nullptr && IsEmpty(f->body)) return Seq({});
  if (const auto* l = As<LetStmtNode>(s); l != nullptr && IsEmpty(l->body)) return Seq({});
  if (const auto* a = As<AllocateNode>(s); a != nullptr && IsEmpty(a->body)) return Seq({});
  return s;
}

class Pruner : public StmtExprMutator {
 public:
  Stmt MutateStmt(const Stmt& s) override {
    if (!s) return s;
    switch (s->kind()) {
      case TirKind::kIfThenElse: return MutateIf(As<IfThenElseNode>(s), s);
      case TirKind::kFor: return DropIfHollow(WithoutFactsOf(As<ForNode>(s)->loop_var.get(), s));
      case TirKind::kLetStmt: return DropIfHollow(WithoutFactsOf(As<LetStmtNode>(s)->var.get(), s));
      case TirKind::kAllocate: return DropIfHollow(StmtExprMutator::MutateStmt(s));
      case TirKind::kBlockRealize: {
        // Block iteration variables are bound here: no fact crosses.
        Facts saved = std::move(facts_);
        facts_ = {};
        Stmt r = StmtExprMutator::MutateStmt(s);
        facts_ = std::move(saved);
        return r;
      }
      default: return StmtExprMutator::MutateStmt(s);
    }
  }

 private:
  struct Facts {
    std::vector<std::pair<PrimExpr, IntBounds>> bounds;  // e lies in the interval
    std::vector<std::pair<PrimExpr, bool>> conds;        // a condition known true / false
  };
  enum class Truth { kFalse, kTrue, kUnknown };

  Stmt WithoutFactsOf(const VarNode* v, const Stmt& s) {
    Facts saved = facts_;
    auto drop = [&](const PrimExpr& e) { return Mentions(e, v); };
    facts_.bounds.erase(std::remove_if(facts_.bounds.begin(), facts_.bounds.end(),
                                       [&](const auto& f) { return drop(f.first); }),
                        facts_.bounds.end());
    facts_.conds.erase(std::remove_if(facts_.conds.begin(), facts_.conds.end(),
                                      [&](const auto& f) { return drop(f.first); }),
                       facts_.conds.end());
    Stmt r = StmtExprMutator::MutateStmt(s);
    facts_ = std::move(saved);
    return r;
  }

  // e's interval from the facts about e and, through + - * // % min max
  // by interval arithmetic, about its parts.
  IntBounds Known(const PrimExpr& e) const {
    IntBounds b = IntBounds::Everything();
    for (const auto& f : facts_.bounds) {
      if (arith::StructuralEqual(f.first, e)) b = arith::BoundsIntersect(b, f.second);
    }
    if (const auto* imm = e.as<IntImmNode>()) return IntBounds::Const(imm->value);
    if (!IsBinary(e->kind())) return b;
    const auto* n = static_cast<const BinaryNode*>(e.get());
    const auto* c = n->b.as<IntImmNode>();
    IntBounds parts = IntBounds::Everything();
    switch (e->kind()) {
      case TirKind::kAdd: parts = arith::BoundsAdd(Known(n->a), Known(n->b)); break;
      case TirKind::kSub: parts = arith::BoundsAdd(Known(n->a), arith::BoundsNeg(Known(n->b))); break;
      case TirKind::kMul: parts = arith::BoundsMul(Known(n->a), Known(n->b)); break;
      case TirKind::kFloorDiv:
        if (c != nullptr && c->value != 0) parts = arith::BoundsFloorDivConst(Known(n->a), c->value);
        break;
      case TirKind::kFloorMod:
        if (c != nullptr && c->value != 0) parts = arith::BoundsFloorModConst(Known(n->a), c->value);
        break;
      case TirKind::kMin: {
        IntBounds x = Known(n->a), y = Known(n->b);
        parts = IntBounds::Range(std::min(x.min, y.min), std::min(x.max, y.max));
        break;
      }
      case TirKind::kMax: {
        IntBounds x = Known(n->a), y = Known(n->b);
        parts = IntBounds::Range(std::max(x.min, y.min), std::max(x.max, y.max));
        break;
      }
      default: break;
    }
    return arith::BoundsIntersect(b, parts);
  }

  Truth Eval(const PrimExpr& c) const {
    for (const auto& f : facts_.conds) {
      if (arith::StructuralEqual(f.first, c)) return f.second ? Truth::kTrue : Truth::kFalse;
    }
    switch (c->kind()) {
      case TirKind::kAnd: {
        const auto* b = static_cast<const BinaryNode*>(c.get());
        Truth x = Eval(b->a), y = Eval(b->b);
        if (x == Truth::kFalse || y == Truth::kFalse) return Truth::kFalse;
        return x == Truth::kTrue && y == Truth::kTrue ? Truth::kTrue : Truth::kUnknown;
      }
      case TirKind::kOr: {
        const auto* b = static_cast<const BinaryNode*>(c.get());
        Truth x = Eval(b->a), y = Eval(b->b);
        if (x == Truth::kTrue || y == Truth::kTrue) return Truth::kTrue;
        return x == Truth::kFalse && y == Truth::kFalse ? Truth::kFalse : Truth::kUnknown;
      }
      case TirKind::kNot: {
        Truth x = Eval(c.as<NotNode>()->a);
        return x == Truth::kTrue ? Truth::kFalse : x == Truth::kFalse ? Truth::kTrue : Truth::kUnknown;
      }
      default: break;
    }
    std::optional<Atom> a = AsAtom(c);
    if (!a) return Truth::kUnknown;
    IntBounds k = Known(a->e);
    if (k.min == kNegInf && k.max == kPosInf) return Truth::kUnknown;
    if (Inside(k, a->holds)) return Truth::kTrue;
    if (Disjoint(k, a->holds)) return Truth::kFalse;
    return Truth::kUnknown;
  }

  // What `c` being `value` tells about the arm it guards.
  void Learn(const PrimExpr& c, bool value) {
    if (!IsPure(c)) return;
    facts_.conds.emplace_back(c, value);
    if ((value && c->kind() == TirKind::kAnd) || (!value && c->kind() == TirKind::kOr)) {
      const auto* b = static_cast<const BinaryNode*>(c.get());
      Learn(b->a, value);
      Learn(b->b, value);
      return;
    }
    if (c->kind() == TirKind::kNot) {
      Learn(c.as<NotNode>()->a, !value);
      return;
    }
    std::optional<Atom> a = AsAtom(c);
    if (!a) return;
    if (value) {
      facts_.bounds.emplace_back(a->e, a->holds);
    } else if (a->fails_is_interval) {
      facts_.bounds.emplace_back(a->e, a->fails);
    }
  }

  Stmt Arm(const Stmt& arm, const PrimExpr& cond, bool value) {
    if (!arm) return arm;
    Facts saved = facts_;
    Learn(cond, value);
    Stmt r = MutateStmt(arm);
    facts_ = std::move(saved);
    return r;
  }

  Stmt MutateIf(const IfThenElseNode* x, const Stmt& s) {
    switch (Eval(x->cond)) {
      case Truth::kTrue: return MutateStmt(x->then_case);
      case Truth::kFalse: return x->else_case ? MutateStmt(x->else_case) : Seq({});
      case Truth::kUnknown: break;
    }
    Stmt t = Arm(x->then_case, x->cond, true);
    Stmt f = Arm(x->else_case, x->cond, false);
    if (t == x->then_case && f == x->else_case) return s;
    if (IsEmpty(t) && (!f || IsEmpty(f))) return Seq({});
    auto n = std::make_shared<IfThenElseNode>(x->cond, t, f);
    n->span = s->span;
    return n;
  }

  Facts facts_;
};

}  // namespace

Stmt PruneGuardedBranches(const Stmt& body) { return Pruner().MutateStmt(body); }

PrimFunc PruneGuardedBranches(const PrimFunc& func) {
  if (func == nullptr) return func;
  Stmt body = PruneGuardedBranches(func->body);
  if (body == func->body) return func;
  auto f = std::make_shared<PrimFuncNode>(*func);
  f->body = body;
  return f;
}

}  // namespace tir
}  // namespace kiln
