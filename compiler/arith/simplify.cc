#include "compiler/arith/simplify.h"

#include <memory>
#include <numeric>
#include <utility>

#include "compiler/arith/canonical_form.h"
#include "compiler/arith/expr_compare.h"

namespace kiln {
namespace arith {
namespace {

using namespace ir;

// Integer scalars take the canonical form; bools (uint1) are logic, not arithmetic.
bool IsIntScalar(DType t) { return t.is_int() && t.bits > 1 && t.lanes == 1; }

PrimExpr BoolImm(bool v) { return IntImm(DType::Bool(), v ? 1 : 0); }

// `v` as the dtype `t` holds it (two's complement wrap-around).
int64_t WrapToDType(int64_t v, DType t) {
  if (t == DType::Bool()) return v != 0;
  if (t.bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.code == kDLInt && (u >> (t.bits - 1)) != 0) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

// The original node when `rebuilt` is structurally the same, so unchanged
// subtrees stay shared.
PrimExpr Keep(const PrimExpr& original, PrimExpr rebuilt) {
  return StructuralEqual(original, rebuilt) ? original : rebuilt;
}

class Simplifier {
 public:
  explicit Simplifier(const VarBounds& bounds) : bounds_(bounds) {}

  PrimExpr Simplify(const PrimExpr& e) {
    if (!e.defined()) return e;
    PrimExpr r = IsIntScalar(e.dtype()) ? SumToExpr(ToSum(e)) : RewriteOther(e);
    return Keep(e, std::move(r));
  }

  // The canonical form of the integer expression `e`.
  SumOfMonomials ToSum(const PrimExpr& e) {
    SumOfMonomials s = ToSumImpl(e);
    s.dtype = e.dtype();
    return s;
  }

 private:
  SumOfMonomials ToSumImpl(const PrimExpr& e) {
    switch (e->kind()) {
      case TirKind::kIntImm: return SumOfMonomials::Const(e.dtype(), e.as<IntImmNode>()->value);
      case TirKind::kVar: return SumOfMonomials::Atom(e);
      case TirKind::kAdd:
      case TirKind::kSub:
      case TirKind::kMul: {
        const auto* n = static_cast<const BinaryNode*>(e.get());
        SumOfMonomials a = ToSum(n->a), b = ToSum(n->b);
        std::optional<SumOfMonomials> r = e->kind() == TirKind::kMul ? MulSums(a, b)
                                          : AddSums(a, b, e->kind() == TirKind::kAdd ? 1 : -1);
        if (r) return *r;
        // A coefficient overflowed: keep this node, with canonical operands.
        return SumOfMonomials::Atom(Keep(e, MakeBinary(e->kind(), SumToExpr(a), SumToExpr(b))));
      }
      case TirKind::kFloorDiv:
      case TirKind::kFloorMod: return DivMod(e);
      case TirKind::kDiv: return TruncDiv(e);
      case TirKind::kMin:
      case TirKind::kMax: return MinMax(e);
      case TirKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        PrimExpr cond = Simplify(n->cond);
        if (const auto* c = cond.as<IntImmNode>()) return ToSum(c->value ? n->true_value : n->false_value);
        SumOfMonomials t = ToSum(n->true_value), f = ToSum(n->false_value);
        std::optional<SumOfMonomials> diff = AddSums(t, f, -1);
        if (diff && diff->is_zero()) return t;
        return SumOfMonomials::Atom(
            Keep(e, PrimExpr(std::make_shared<SelectNode>(cond, SumToExpr(t), SumToExpr(f)))));
      }
      case TirKind::kCast: {
        const auto* n = e.as<CastNode>();
        PrimExpr v = Simplify(n->value);
        if (const auto* c = v.as<IntImmNode>()) return SumOfMonomials::Const(e.dtype(), WrapToDType(c->value, e.dtype()));
        if (v.dtype() == e.dtype()) return ToSum(v);
        return SumOfMonomials::Atom(Keep(e, Cast(e.dtype(), v)));
      }
      default:
        return SumOfMonomials::Atom(MapChildren(e, [this](const PrimExpr& c) { return Simplify(c); }));
    }
  }

  // floordiv / floormod. With a constant divisor c, a = c * q + r term by term
  // gives floordiv(a, c) = q + floordiv(r, c) and floormod(a, c) = floormod(r, c)
  // exactly; r then folds away when its bounds lie within one period, or
  // shrinks by the gcd g of its coefficients and c:
  // floordiv(g * x, g * d) = floordiv(x, d), floormod(g * x, g * d) = g * floormod(x, d).
  SumOfMonomials DivMod(const PrimExpr& e) {
    const bool is_div = e->kind() == TirKind::kFloorDiv;
    const auto* n = static_cast<const BinaryNode*>(e.get());
    SumOfMonomials a = ToSum(n->a), b = ToSum(n->b);
    auto atom = [&](const SumOfMonomials& x, const SumOfMonomials& y) {
      return SumOfMonomials::Atom(Keep(e, MakeBinary(e->kind(), SumToExpr(x), SumToExpr(y))));
    };
    if (!b.is_const() || b.constant == 0) return atom(a, b);
    const int64_t c = b.constant;
    if (a.is_const()) {
      if (a.constant == kNegInf && c == -1) return atom(a, b);  // overflows int64
      return SumOfMonomials::Const(e.dtype(), is_div ? FloorDiv(a.constant, c) : FloorMod(a.constant, c));
    }
    SumOfMonomials q, r;
    SplitByConstant(a, c, &q, &r);
    const IntBounds rb = SumBounds(r, bounds_);
    const bool one_period = c > 0 ? (rb.min >= 0 && rb.max < c) : (rb.min > c && rb.max <= 0);
    if (one_period) return is_div ? q : r;
    int64_t g = c > 0 ? std::gcd(r.CoefficientGcd(), c) : 1;
    SumOfMonomials r_reduced = r;
    if (g > 1) {
      for (auto& t : r_reduced.terms) t.second /= g;
      r_reduced.constant /= g;
    } else {
      g = 1;
    }
    SumOfMonomials divisor = SumOfMonomials::Const(b.dtype, c / g);
    SumOfMonomials inner = atom(r_reduced, divisor);
    std::optional<SumOfMonomials> out = is_div ? AddSums(q, inner) : ScaleSum(inner, g);
    return out ? *out : atom(a, b);
  }

  // Truncating integer division: folded on constants, and treated as floordiv
  // when the numerator is provably >= 0 and the divisor a positive constant.
  SumOfMonomials TruncDiv(const PrimExpr& e) {
    const auto* n = static_cast<const BinaryNode*>(e.get());
    SumOfMonomials a = ToSum(n->a), b = ToSum(n->b);
    if (b.is_const() && b.constant != 0) {
      if (a.is_const() && !(a.constant == kNegInf && b.constant == -1)) {
        return SumOfMonomials::Const(e.dtype(), a.constant / b.constant);
      }
      if (b.constant > 0 && SumBounds(a, bounds_).min >= 0) {
        return ToSum(MakeBinary(TirKind::kFloorDiv, SumToExpr(a), SumToExpr(b)));
      }
    }
    return SumOfMonomials::Atom(Keep(e, MakeBinary(TirKind::kDiv, SumToExpr(a), SumToExpr(b))));
  }

  // min / max fold when the sign of a - b is known; otherwise the operands are
  // put in canonical order (both are commutative).
  SumOfMonomials MinMax(const PrimExpr& e) {
    const bool is_min = e->kind() == TirKind::kMin;
    const auto* n = static_cast<const BinaryNode*>(e.get());
    SumOfMonomials a = ToSum(n->a), b = ToSum(n->b);
    if (std::optional<SumOfMonomials> diff = AddSums(a, b, -1)) {
      const IntBounds d = SumBounds(*diff, bounds_);
      if (d.max <= 0) return is_min ? a : b;  // a <= b
      if (d.min >= 0) return is_min ? b : a;  // a >= b
    }
    PrimExpr x = SumToExpr(a), y = SumToExpr(b);
    if (CompareExpr(y, x) < 0) std::swap(x, y);
    return SumOfMonomials::Atom(Keep(e, MakeBinary(e->kind(), x, y)));
  }

  // Comparisons of integers fold when the bounds of a - b decide them.
  PrimExpr Compare(const PrimExpr& e) {
    const auto* n = static_cast<const BinaryNode*>(e.get());
    SumOfMonomials a = ToSum(n->a), b = ToSum(n->b);
    if (std::optional<SumOfMonomials> diff = AddSums(a, b, -1)) {
      const IntBounds d = SumBounds(*diff, bounds_);
      // a - b = g * x + k can be 0 only if g divides k.
      SumOfMonomials terms_only = *diff;
      terms_only.constant = 0;
      const int64_t g = terms_only.CoefficientGcd();
      const bool never_zero = d.min > 0 || d.max < 0 || (g > 1 && diff->constant % g != 0);
      const bool always_zero = diff->is_zero();
      switch (e->kind()) {
        case TirKind::kEQ:
          if (always_zero || never_zero) return BoolImm(always_zero);
          break;
        case TirKind::kNE:
          if (always_zero || never_zero) return BoolImm(never_zero);
          break;
        case TirKind::kLT:
          if (d.max < 0 || d.min >= 0) return BoolImm(d.max < 0);
          break;
        case TirKind::kLE:
          if (d.max <= 0 || d.min > 0) return BoolImm(d.max <= 0);
          break;
        case TirKind::kGT:
          if (d.min > 0 || d.max <= 0) return BoolImm(d.min > 0);
          break;
        case TirKind::kGE:
          if (d.min >= 0 || d.max < 0) return BoolImm(d.min >= 0);
          break;
        default: break;
      }
    }
    return Keep(e, NormalizedComparison(e->kind(), a, b));
  }

  // a cmp b as p cmp q, where p - q = a - b and p, q have only positive
  // coefficients: common terms cancel and equal comparisons look the same
  // ("n + 1 < m + 1" and "n - m < 0" both become "n < m").
  static PrimExpr NormalizedComparison(TirKind kind, const SumOfMonomials& a, const SumOfMonomials& b) {
    std::optional<SumOfMonomials> diff = AddSums(a, b, -1);
    if (!diff || diff->constant == kNegInf) return MakeBinary(kind, SumToExpr(a), SumToExpr(b));
    SumOfMonomials p = SumOfMonomials::Const(a.dtype, 0), q = SumOfMonomials::Const(a.dtype, 0);
    for (const auto& t : diff->terms) {
      if (t.second == kNegInf) return MakeBinary(kind, SumToExpr(a), SumToExpr(b));
      if (t.second > 0) p.terms.insert(t);
      else q.terms.emplace(t.first, -t.second);
    }
    if (diff->constant > 0) p.constant = diff->constant;
    else q.constant = -diff->constant;
    return MakeBinary(kind, SumToExpr(p), SumToExpr(q));
  }

  // Expressions that are not integer scalars: logic, comparisons, floats.
  PrimExpr RewriteOther(const PrimExpr& e) {
    auto simplify = [this](const PrimExpr& c) { return Simplify(c); };
    switch (e->kind()) {
      case TirKind::kEQ:
      case TirKind::kNE:
      case TirKind::kLT:
      case TirKind::kLE:
      case TirKind::kGT:
      case TirKind::kGE:
        if (IsIntScalar(static_cast<const BinaryNode*>(e.get())->a.dtype())) return Compare(e);
        return MapChildren(e, simplify);
      case TirKind::kAnd:
      case TirKind::kOr: {
        const bool is_and = e->kind() == TirKind::kAnd;
        const auto* n = static_cast<const BinaryNode*>(e.get());
        PrimExpr a = Simplify(n->a), b = Simplify(n->b);
        const IntImmNode* ca = a.as<IntImmNode>();
        const IntImmNode* cb = b.as<IntImmNode>();
        // x && false = false, x && true = x; x || true = true, x || false = x.
        if (ca) return (ca->value != 0) == is_and ? b : BoolImm(!is_and);
        if (cb) return (cb->value != 0) == is_and ? a : BoolImm(!is_and);
        return MapChildren(e, simplify);
      }
      case TirKind::kNot: {
        PrimExpr a = Simplify(e.as<NotNode>()->a);
        if (const auto* c = a.as<IntImmNode>()) return BoolImm(c->value == 0);
        if (const auto* inner = a.as<NotNode>()) return inner->a;
        return a.same_as(e.as<NotNode>()->a) ? e : PrimExpr(std::make_shared<NotNode>(a));
      }
      case TirKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        PrimExpr cond = Simplify(n->cond);
        if (const auto* c = cond.as<IntImmNode>()) return Simplify(c->value ? n->true_value : n->false_value);
        return MapChildren(e, simplify);
      }
      case TirKind::kCast: {
        const auto* n = e.as<CastNode>();
        PrimExpr v = Simplify(n->value);
        if (const auto* c = v.as<IntImmNode>()) {
          if (e.dtype() == DType::Bool()) return BoolImm(c->value != 0);
          if (e.dtype().code == kDLFloat && e.dtype().lanes == 1) return FloatImm(e.dtype(), static_cast<double>(c->value));
        }
        return v.same_as(n->value) ? e : Cast(e.dtype(), v);
      }
      default:
        return MapChildren(e, simplify);
    }
  }

  const VarBounds& bounds_;
};

const VarBounds& NoBounds() {
  static const VarBounds* none = new VarBounds();
  return *none;
}

}  // namespace

PrimExpr Simplify(const PrimExpr& e) { return Simplify(e, NoBounds()); }

PrimExpr Simplify(const PrimExpr& e, const VarBounds& bounds) { return Simplifier(bounds).Simplify(e); }

bool CanProveEqual(const PrimExpr& a, const PrimExpr& b) { return CanProveEqual(a, b, NoBounds()); }

bool CanProveEqual(const PrimExpr& a, const PrimExpr& b, const VarBounds& bounds) {
  if (!a.defined() || !b.defined()) return false;
  Simplifier s(bounds);
  if (IsIntScalar(a.dtype()) && IsIntScalar(b.dtype())) {
    std::optional<SumOfMonomials> diff = AddSums(s.ToSum(a), s.ToSum(b), -1);
    if (!diff) return false;
    return diff->is_zero() || SumBounds(*diff, bounds) == IntBounds::Const(0);
  }
  return StructuralEqual(s.Simplify(a), s.Simplify(b));
}

bool CanProve(const PrimExpr& cond) { return CanProve(cond, NoBounds()); }

bool CanProve(const PrimExpr& cond, const VarBounds& bounds) {
  if (!cond.defined()) return false;
  PrimExpr r = Simplify(cond, bounds);
  const auto* c = r.as<IntImmNode>();
  return c != nullptr && c->value != 0;
}

std::optional<int64_t> AsConstInt(const PrimExpr& e) {
  if (!e.defined()) return std::nullopt;
  if (const auto* c = e.as<IntImmNode>()) return c->value;
  if (!IsIntScalar(e.dtype())) return std::nullopt;
  SumOfMonomials s = Simplifier(NoBounds()).ToSum(e);
  if (!s.is_const()) return std::nullopt;
  return s.constant;
}

VarBounds LowerBounds(const std::vector<Var>& vars, int64_t min_value) {
  VarBounds b;
  for (const Var& v : vars) b[v.get()] = IntBounds::AtLeast(min_value);
  return b;
}

}  // namespace arith
}  // namespace kiln
