// Pass: dead code elimination.
//
// Removes, in every Relax function, bindings whose variable is never used:
// any binding inside a dataflow block (dataflow is pure by definition), and
// outside dataflow blocks the bindings whose value IsPureValue (so
// R.call_packed, packed and Relax function calls, if/else and match_cast
// checks outside dataflow stay). Repeats until nothing changes, so chains of
// dead values go at once; emptied blocks go away. Then removes functions not
// reachable from an exported (non-private) Relax function
// (relax::RemoveUnusedFunctions: unused PrimFuncs and private functions).
//
// Pre: none. Post: struct info of kept nodes is unchanged.
// Never fails.
#ifndef KILN_COMPILER_TRANSFORM_DEAD_CODE_ELIMINATION_H_
#define KILN_COMPILER_TRANSFORM_DEAD_CODE_ELIMINATION_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> EliminateDeadCode(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_DEAD_CODE_ELIMINATION_H_
