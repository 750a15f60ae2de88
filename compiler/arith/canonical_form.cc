#include "compiler/arith/canonical_form.h"

#include <algorithm>
#include <numeric>

namespace kiln {
namespace arith {

using ir::PrimExpr;

bool MonomialLess::operator()(const Monomial& a, const Monomial& b) const {
  // Lexicographic by atom; a proper prefix (lower degree) comes first.
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int c = CompareExpr(a[i], b[i]);
    if (c != 0) return c < 0;
  }
  return a.size() < b.size();
}

SumOfMonomials SumOfMonomials::Const(DType t, int64_t v) {
  SumOfMonomials s;
  s.dtype = t;
  s.constant = v;
  return s;
}

SumOfMonomials SumOfMonomials::Atom(const PrimExpr& atom) {
  SumOfMonomials s;
  s.dtype = atom.dtype();
  s.terms[Monomial{atom}] = 1;
  return s;
}

int64_t SumOfMonomials::CoefficientGcd() const {
  // std::gcd of int64 values whose magnitude fits; INT64_MIN would not, and a
  // gcd of 1 is always a safe answer.
  auto mag = [](int64_t v) -> int64_t { return v == kNegInf ? 1 : (v < 0 ? -v : v); };
  int64_t g = mag(constant);
  for (const auto& t : terms) g = std::gcd(g, mag(t.second));
  return g;
}

namespace {

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// Adds coef * m to s; false on overflow.
bool AddTerm(SumOfMonomials* s, const Monomial& m, int64_t coef) {
  if (coef == 0) return true;
  if (m.empty()) return CheckedAdd(s->constant, coef, &s->constant);
  auto it = s->terms.find(m);
  if (it == s->terms.end()) {
    s->terms.emplace(m, coef);
    return true;
  }
  if (!CheckedAdd(it->second, coef, &it->second)) return false;
  if (it->second == 0) s->terms.erase(it);
  return true;
}

Monomial MulMonomials(const Monomial& a, const Monomial& b) {
  Monomial m;
  m.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(m), ExprLess());
  return m;
}

}  // namespace

std::optional<SumOfMonomials> AddSums(const SumOfMonomials& a, const SumOfMonomials& b, int64_t b_scale) {
  SumOfMonomials r = a;
  for (const auto& t : b.terms) {
    int64_t c;
    if (!CheckedMul(t.second, b_scale, &c) || !AddTerm(&r, t.first, c)) return std::nullopt;
  }
  int64_t c;
  if (!CheckedMul(b.constant, b_scale, &c) || !AddTerm(&r, Monomial{}, c)) return std::nullopt;
  return r;
}

std::optional<SumOfMonomials> MulSums(const SumOfMonomials& a, const SumOfMonomials& b) {
  SumOfMonomials r = SumOfMonomials::Const(a.dtype, 0);
  // Each side as a list of (monomial, coefficient), the constant as the empty monomial.
  auto terms_of = [](const SumOfMonomials& s) {
    std::vector<std::pair<Monomial, int64_t>> v(s.terms.begin(), s.terms.end());
    if (s.constant != 0) v.emplace_back(Monomial{}, s.constant);
    return v;
  };
  for (const auto& x : terms_of(a)) {
    for (const auto& y : terms_of(b)) {
      int64_t c;
      if (!CheckedMul(x.second, y.second, &c) || !AddTerm(&r, MulMonomials(x.first, y.first), c)) return std::nullopt;
    }
  }
  return r;
}

std::optional<SumOfMonomials> ScaleSum(const SumOfMonomials& a, int64_t k) {
  return AddSums(SumOfMonomials::Const(a.dtype, 0), a, k);
}

void SplitByConstant(const SumOfMonomials& a, int64_t c, SumOfMonomials* quotient, SumOfMonomials* remainder) {
  KILN_CHECK(c != 0, "SplitByConstant by zero");
  *quotient = SumOfMonomials::Const(a.dtype, 0);
  *remainder = SumOfMonomials::Const(a.dtype, 0);
  auto split = [&](const Monomial& m, int64_t coef) {
    // FloorDiv(INT64_MIN, -1) overflows; keep such a coefficient whole in the remainder.
    if (coef == kNegInf && c == -1) {
      AddTerm(remainder, m, coef);
      return;
    }
    AddTerm(quotient, m, FloorDiv(coef, c));
    AddTerm(remainder, m, FloorMod(coef, c));
  };
  for (const auto& t : a.terms) split(t.first, t.second);
  split(Monomial{}, a.constant);
}

IntBounds SumBounds(const SumOfMonomials& s, const VarBounds& vars) {
  IntBounds r = IntBounds::Const(s.constant);
  for (const auto& t : s.terms) {
    IntBounds term = IntBounds::Const(t.second);
    for (const PrimExpr& atom : t.first) term = BoundsMul(term, ConstIntBound(atom, vars));
    r = BoundsAdd(r, term);
  }
  return r;
}

PrimExpr SumToExpr(const SumOfMonomials& s) {
  using ir::TirKind;
  auto imm = [&](int64_t v) { return ir::IntImm(s.dtype, v); };
  if (s.terms.size() == 1 && s.constant == 0) {
    const auto& t = *s.terms.begin();
    if (t.first.size() == 1 && t.second == 1) return t.first[0];
  }
  PrimExpr result;
  for (const auto& t : s.terms) {
    int64_t coef = t.second;
    // After the first term a negative coefficient reads better as subtraction.
    const bool subtract = result.defined() && coef < 0 && coef != kNegInf;
    if (subtract) coef = -coef;
    PrimExpr term = t.first[0];
    for (size_t i = 1; i < t.first.size(); ++i) term = ir::MakeBinary(TirKind::kMul, term, t.first[i]);
    if (coef != 1) term = ir::MakeBinary(TirKind::kMul, term, imm(coef));
    if (!result.defined()) result = term;
    else result = ir::MakeBinary(subtract ? TirKind::kSub : TirKind::kAdd, result, term);
  }
  if (!result.defined()) return imm(s.constant);
  if (s.constant > 0) result = ir::MakeBinary(TirKind::kAdd, result, imm(s.constant));
  if (s.constant < 0) {
    result = s.constant == kNegInf ? ir::MakeBinary(TirKind::kAdd, result, imm(s.constant))
                                   : ir::MakeBinary(TirKind::kSub, result, imm(-s.constant));
  }
  return result;
}

}  // namespace arith
}  // namespace kiln
