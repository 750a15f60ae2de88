// A structural total order on PrimExprs. The canonical form sorts the factors
// and terms of a sum of monomials with it, and the simplifier uses it to find
// equal subexpressions that are different nodes (`n // 3` built twice).
//
// Order: variables first (by name, then by node address, since two Vars named
// "n" are different variables), then other nodes by kind, dtype, and fields or
// children in order. Thread-safe: pure functions.
#ifndef KILN_COMPILER_ARITH_EXPR_COMPARE_H_
#define KILN_COMPILER_ARITH_EXPR_COMPARE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

// <0, 0 or >0. Two expressions compare 0 exactly when they are structurally
// equal (same kinds, dtypes, values and the same Var nodes). Undefined
// expressions sort first.
int CompareExpr(const ir::PrimExpr& a, const ir::PrimExpr& b);

inline bool StructuralEqual(const ir::PrimExpr& a, const ir::PrimExpr& b) { return CompareExpr(a, b) == 0; }

struct ExprLess {
  bool operator()(const ir::PrimExpr& a, const ir::PrimExpr& b) const { return CompareExpr(a, b) < 0; }
};

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_EXPR_COMPARE_H_
