// The symbolic arithmetic of Kiln: simplification to a canonical form, proofs
// of equalities and conditions, substitution. Shapes of Relax and the indices
// and extents of TIR are integer PrimExprs; passes use these to decide that
// `n * 2 * 2` and `n * 4` are the same dimension, or to fold a fully static
// shape to constants.
//
// Simplify rewrites integer expressions into a sum of monomials with int64
// coefficients plus a constant (see canonical_form.h), e.g.
//   (n * 2) * 2        -> n * 4
//   n + n - n          -> n
//   (n * 4) // 2       -> n * 2        (n * 4 + 3) // 2 -> n * 2 + 1
//   (n * 4) % 2        -> 0            (n * 6 + 5) % 4  -> (n * 2 + 1) % 4
//   min(n + 1, n)      -> n            784 != 785       -> true
// floordiv/floormod by a constant pull out the exact multiples and reduce by
// common factors; min/max fold when one side is provably not larger;
// comparisons fold when the difference of the sides has a known sign; And, Or,
// Not, Select and Cast fold on constants. Everything else stays as an atom with
// simplified children. Non-integer expressions keep their structure, with their
// integer subexpressions (indices, casts) simplified.
//
// Semantics are exact integer semantics: variables range over all int64 values
// unless bounds say otherwise (a shape variable is NOT assumed >= 0; pass
// VarBounds for that). Overflow of a coefficient abandons that rewrite.
//
// Simplify returns the very same node when the canonical form equals the input
// structurally. Thread-safe: pure functions.
#ifndef KILN_COMPILER_ARITH_SIMPLIFY_H_
#define KILN_COMPILER_ARITH_SIMPLIFY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/expr_map.h"
#include "compiler/arith/int_bounds.h"
#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

ir::PrimExpr Simplify(const ir::PrimExpr& e);
// Same, using known bounds of variables (e.g. shape variables >= 0 or >= 1).
ir::PrimExpr Simplify(const ir::PrimExpr& e, const VarBounds& bounds);

// True only if a == b for every value of the variables (within `bounds`).
// False means "could not prove", not "different".
bool CanProveEqual(const ir::PrimExpr& a, const ir::PrimExpr& b);
bool CanProveEqual(const ir::PrimExpr& a, const ir::PrimExpr& b, const VarBounds& bounds);

// True only if the boolean `cond` holds for every value of the variables.
bool CanProve(const ir::PrimExpr& cond);
bool CanProve(const ir::PrimExpr& cond, const VarBounds& bounds);

// The value of an integer expression that simplifies to a constant.
std::optional<int64_t> AsConstInt(const ir::PrimExpr& e);

// Bounds where every listed variable is >= min_value (shape variables: 0).
VarBounds LowerBounds(const std::vector<ir::Var>& vars, int64_t min_value = 0);

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_SIMPLIFY_H_
