// Pass: inline-functions — a private Relax function that exactly one call
// names, a call at the top level of another function, is inlined there.
//
//   r = cls.f(a, s)                    <f's bindings, its parameters read a
//   y: <annotation> = r          =>     and s, its symbolic variables the
//   ... uses of r and y                 caller's expressions for them>
//                                      ... uses of r and y read f's result
//
// Why: a call of a Relax function checks each argument again on entry
// (check_tensor, match_shape), builds its own shape values and frame, and
// fusion, which works within one dataflow block of one function, cannot join
// kernels across it. After guard-raise-arms, silero-vad's decoder is two such
// calls (the squeeze of the If's branch, then the tail after the If).
//
// Only when nothing is lost: the callee's symbolic variables are bound by
// matching each parameter's struct info against its argument's (a variable
// takes the argument's dimension; a compound dimension matches a dimension of
// the same form), every dimension of every parameter is then provably equal
// to the argument's (so each entry check the call made could never fail),
// and the expressions the variables take use only the caller's own symbolic
// variables (those of its parameters and match_casts). A call that is an
// If arm's binding (an imported If's branch, lifted into a function of its
// own) is inlined into the arm the same way: the VM then runs the branch's
// kernels in the caller's frame, under a branch, instead of calling a
// function that checks each argument again, plans an arena of its own and
// returns a tuple to take apart (fusion and memory planning work in arms).
// Calls from dataflow blocks, recursive calls, and functions named anywhere
// else (a loop body) are left alone.
//
// The call's result variable, and aliases of it (`y = r`, which may carry the
// callee's declared result type), are replaced by the inlined result, whose
// struct info is in the caller's variables. The caller's top-level bindings
// are then regrouped (RegroupDataflow) and the inlined function removed.
//
// Pre: normalized. Post: normalized. No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_INLINE_FUNCTIONS_H_
#define KILN_COMPILER_TRANSFORM_INLINE_FUNCTIONS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> InlineFunctions(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_INLINE_FUNCTIONS_H_
