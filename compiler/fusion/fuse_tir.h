// Pass: fuse-tir — turn each fused Relax function (fuse_ops.h) into one
// PrimFunc and its calls into R.call_tir of it.
//
// For a fused function F (attribute "Primitive") whose body is one or more
// blocks of `R.call_tir(cls.k, (vars...), out_sinfo=R.Tensor(...))` bindings
// and whose result is one of their variables, the PrimFunc named like F has:
// - one buffer parameter per parameter of F, then one for the result, named
//   after the Relax variables; shapes are F's, with F's symbolic variables
//   replaced by PrimFunc-local variables (bound from the buffers at run time);
// - a root block allocating (T.alloc_buffer) one buffer per other binding and
//   the buffers the kernels' own root blocks allocated;
// - the kernels' bodies in binding order, each with its parameter buffers
//   replaced by the group's buffers and its shape variables unified with the
//   group's dimensions (prim_func_instance.h);
// - "tir.noalias": True and "op_pattern": the least fusable of the kernels'.
// Callers' `cls.F(args)` bindings become `R.call_tir(cls.F, (args),
// out_sinfo=...)`, the result's shape being F's with F's symbolic variables
// replaced by the caller's dimensions. The Relax function F is replaced by the
// PrimFunc (same name, same place); the kernels it called stay in the module
// (remove-unused drops those nothing calls any more).
//
// Pre: InferStructInfo ran (arguments carry struct info).
// Post: no Relax function has "Primitive". Fails (InvalidArgument or
//       Unimplemented, naming the function) when a fused function holds
//       anything else than such calls, passes a constant or a scalar, has a
//       symbolic variable that is not a plain dimension of a parameter or of
//       the result, or calls a kernel with buffers of another shape or dtype.
#ifndef KILN_COMPILER_FUSION_FUSE_TIR_H_
#define KILN_COMPILER_FUSION_FUSE_TIR_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace fusion {

Result<ir::IRModule> FuseTIR(const ir::IRModule& mod);

// The PrimFunc of one fused function (named `name`); used by FuseTIR.
Result<ir::PrimFunc> BuildFusedPrimFunc(const ir::IRModule& mod, const ir::FunctionExpr& fused, const std::string& name);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_FUSE_TIR_H_
