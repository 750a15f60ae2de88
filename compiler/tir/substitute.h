// Variable substitution in TIR expressions and statements.
//
// Every use of a Var that is a key of `map` is replaced by the mapped
// expression (the replacement itself is not substituted again). Definitions
// (loop variables, LetStmt variables, block iteration variables) are not
// renamed. Returns the same node when nothing changed. Buffers (shapes, data
// handles) are left alone.
#ifndef KILN_COMPILER_TIR_SUBSTITUTE_H_
#define KILN_COMPILER_TIR_SUBSTITUTE_H_

#include <unordered_map>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

using VarMap = std::unordered_map<const ir::VarNode*, ir::PrimExpr>;

ir::PrimExpr Substitute(const ir::PrimExpr& e, const VarMap& map);
ir::Stmt Substitute(const ir::Stmt& s, const VarMap& map);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SUBSTITUTE_H_
