// Pass: flatten-calls — bring every binding to A-normal form, as TVM's
// normalizer does: the arguments of a call are leaves (variables, constants,
// shapes, prim values, names, or tuples of leaves), so each operator call has
// a binding of its own that fusion and memory planning can see.
//
//   gv = R.add(R.matmul(x, w), b)      lv = R.matmul(x, w)
//                                 ->   gv = R.add(lv, b)
//
// Nested calls, tuple element reads (t[0]) and if-expressions used as
// arguments are bound first, innermost first, to fresh variables named
// "lv", "lv1", ... (unused in the function); inside a dataflow block they are
// dataflow variables. A function's final result expression is left as it is.
//
// Pre: normalized (InferStructInfo): the new variables take the struct info
//      of the expressions they bind.
// Post: every binding's value has leaf arguments; results are unchanged.
#ifndef KILN_COMPILER_TRANSFORM_FLATTEN_NESTED_CALLS_H_
#define KILN_COMPILER_TRANSFORM_FLATTEN_NESTED_CALLS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> FlattenNestedCalls(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_FLATTEN_NESTED_CALLS_H_
