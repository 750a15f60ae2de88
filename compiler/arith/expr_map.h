// Rebuilding expressions: map a function over the direct children of a node,
// and substitute variables. Both return the very same node when nothing
// changed, so unchanged subtrees stay shared.
//
// Thread-safe: pure functions (the callback must be, if called concurrently).
#ifndef KILN_COMPILER_ARITH_EXPR_MAP_H_
#define KILN_COMPILER_ARITH_EXPR_MAP_H_

#include <functional>
#include <map>

#include "compiler/ir/tir.h"

namespace kiln {
namespace arith {

// `e` with each direct child c replaced by fn(c); `e` itself if every fn(c) is
// the same node as c. Leaves (Imm, Var) come back unchanged.
ir::PrimExpr MapChildren(const ir::PrimExpr& e, const std::function<ir::PrimExpr(const ir::PrimExpr&)>& fn);

// Replaces every occurrence of a Var in `vmap` (keyed by node) with its value.
// No simplification; see Simplify for that.
ir::PrimExpr Substitute(const ir::PrimExpr& e, const std::map<const ir::VarNode*, ir::PrimExpr>& vmap);

}  // namespace arith
}  // namespace kiln

#endif  // KILN_COMPILER_ARITH_EXPR_MAP_H_
