// Pass: wrap-tir-module — make a module of T.prim_funcs alone callable.
//
// TVM builds a module that has no Relax function (MyModuleMatmul and the
// other modules of the MLC course's scheduling lessons) into kernels that
// Python calls in destination-passing style: main(a, b, c) fills c. Kiln's
// tools and runtime call Relax functions, so each exported PrimFunc `f` of
// such a module moves to a fresh name (f_tir, f_tir1, ...) and `f` becomes
// the Relax function that allocates its outputs and calls it:
//
//   @T.prim_func                          @R.function
//   def main(A: T.Buffer((8,)),     ->    def main(A: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
//            B: T.Buffer((8,))):              B = R.call_tir(cls.main_tir, (A,), out_sinfo=R.Tensor((8,), "float32"))
//       B[i] = A[i] + 1                       return B
//
// The outputs are the trailing buffer parameters the function stores into
// (several make a tuple result); the others are its inputs, in order.
// Symbolic dimensions of the outputs must appear in the inputs' shapes.
//
// Pre: parsed. Post: not normalized. A module with a Relax function, and
// private PrimFuncs, are left as they are.
// Failures (kInvalidArgument, naming the function): a scalar parameter, no
// parameter stored into, an input stored into before an output that is not,
// an output dimension no input determines.
#ifndef KILN_COMPILER_TRANSFORM_WRAP_TIR_MODULE_H_
#define KILN_COMPILER_TRANSFORM_WRAP_TIR_MODULE_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> WrapTirModule(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WRAP_TIR_MODULE_H_
