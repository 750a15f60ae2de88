// Counting uses of Relax variables (a helper of the transform passes).
#ifndef KILN_COMPILER_TRANSFORM_VAR_USES_H_
#define KILN_COMPILER_TRANSFORM_VAR_USES_H_

#include <unordered_map>

#include "compiler/ir/relax.h"

namespace kiln {
namespace transform {

using UseCounts = std::unordered_map<const ir::VarExpr*, int>;

// Adds one count per use of each variable in `e` (binding values, results,
// nested if branches; definitions are not uses).
void CountUses(const ir::Expr& e, UseCounts* uses);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_VAR_USES_H_
