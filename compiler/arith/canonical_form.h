// The canonical form of integer expressions: a sum of monomials with int64
// coefficients plus a constant,
//
//     c_1 * m_1 + c_2 * m_2 + ... + c_0,
//
// where each monomial m_i is a product of atoms (Vars, or subexpressions the
// form cannot look into, such as `floordiv(n + 3, 4)` or `min(n, m)`), sorted
// with CompareExpr: variables by name, then by node. Two integer expressions
// whose canonical forms are equal are equal for every value of their variables.
//
// Internal to the simplifier (simplify.cc); thread-compatible values.
#ifndef KILN_COMPILER_ARITH_CANONICAL_FORM_H_
#define KILN_COMPILER_ARITH_CANONICAL_FORM_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/int_bounds.h"
#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

// A product of atoms, sorted; a repeated atom is a power. Empty: the constant 1.
using Monomial = std::vector<ir::PrimExpr>;

struct MonomialLess {
  bool operator()(const Monomial& a, const Monomial& b) const;
};

struct SumOfMonomials {
  DType dtype = DType::Int64();
  std::map<Monomial, int64_t, MonomialLess> terms;  // no zero coefficients
  int64_t constant = 0;

  static SumOfMonomials Const(DType t, int64_t v);
  static SumOfMonomials Atom(const ir::PrimExpr& atom);

  bool is_const() const { return terms.empty(); }
  bool is_zero() const { return terms.empty() && constant == 0; }
  // gcd of every coefficient and the constant (0 for the zero sum).
  int64_t CoefficientGcd() const;
};

// Exact arithmetic; nullopt when a coefficient would overflow int64.
std::optional<SumOfMonomials> AddSums(const SumOfMonomials& a, const SumOfMonomials& b, int64_t b_scale = 1);
std::optional<SumOfMonomials> MulSums(const SumOfMonomials& a, const SumOfMonomials& b);
std::optional<SumOfMonomials> ScaleSum(const SumOfMonomials& a, int64_t k);

// Splits a = c * quotient + remainder term by term, with floor semantics on
// each coefficient and the constant (so each remainder coefficient lies between
// 0 and c, c excluded). Exact for any integer value of the atoms. c != 0.
void SplitByConstant(const SumOfMonomials& a, int64_t c, SumOfMonomials* quotient, SumOfMonomials* remainder);

// Bounds of the sum, given bounds of the variables (atoms are bounded with
// ConstIntBound).
IntBounds SumBounds(const SumOfMonomials& s, const VarBounds& vars);

// The expression: terms in order, each as "atom * atom * coef" (coefficient 1
// omitted), negative coefficients after the first term as subtraction, then
// the constant. A single atom with coefficient 1 comes back as that very node.
ir::PrimExpr SumToExpr(const SumOfMonomials& s);

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_CANONICAL_FORM_H_
