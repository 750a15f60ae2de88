// Pass: common subexpression elimination inside dataflow blocks.
//
// Two bindings of one dataflow block whose values are the same pure call
// (IsPureValue: the same operator or call_tir callee, the same argument
// variables/constants, equal attributes and out struct info) compute once:
// the later variable becomes a use of the earlier one. When the later one is
// an output of the block, it is kept as an alias (`gv = lv`) for
// canonicalize-bindings to fold. Calls nested in arguments are compared
// structurally as well. Bindings with match_cast are left alone.
//
// Pre: none. Post: struct info of kept nodes is unchanged. Never fails.
#ifndef KILN_COMPILER_TRANSFORM_COMMON_SUBEXPR_ELIMINATION_H_
#define KILN_COMPILER_TRANSFORM_COMMON_SUBEXPR_ELIMINATION_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> EliminateCommonSubexpressions(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_COMMON_SUBEXPR_ELIMINATION_H_
