// Pass: fold constants — evaluate at compile time what depends only on
// constants.
//
// - A variable bound to a constant is replaced by the constant at its uses
//   (the binding itself is left for dead code elimination).
// - An operator call (before legalization: R.permute_dims, R.add, ...) whose
//   arguments are all tensor constants, or an R.call_tir whose inputs are all
//   tensor constants, with one tensor result of static shape, is computed:
//   the operator is legalized (OpInfo::legalize) or the called PrimFunc taken
//   from the module, lowered, compiled for the host with compiler/codegen,
//   loaded in process (runtime/native_library.h) and run; the call becomes an
//   ir::ConstantExpr holding the result. Repeats until nothing folds, so
//   chains of constant computations fold entirely.
// - Calls that cannot be evaluated (non-tensor arguments, symbolic shapes,
//   TIR the code generator does not support yet) stay as they are.
//
// Pre: InferStructInfo ran. Post: the module is normalized.
// Failures: a kernel that reports an error while folding (e.g. a shape
// check in user TIR) fails the pass with its message, naming the call's
// location.
#ifndef KILN_COMPILER_TRANSFORM_FOLD_CONSTANT_H_
#define KILN_COMPILER_TRANSFORM_FOLD_CONSTANT_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> FoldConstant(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_FOLD_CONSTANT_H_
