// Pass: normalize — infer the struct info of every Relax expression.
//
// Pre: the module is well formed (every Var is bound before use; the parser and
//      the builder guarantee it).
// Post: every expression of every Relax function has `struct_info`; every
//      FunctionExpr has `ret_sinfo`. Static contradictions (784 vs 785, a rank
//      or dtype mismatch with an annotation, an unknown operator, a call_tir to
//      a missing PrimFunc) are errors with file:line:col.
// Idempotent: running it again recomputes the same information.
#ifndef KILN_COMPILER_RELAX_INFER_STRUCT_INFO_H_
#define KILN_COMPILER_RELAX_INFER_STRUCT_INFO_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

Result<ir::IRModule> InferStructInfo(const ir::IRModule& mod);

// The struct info of one expression in the context of `mod` (the PrimFuncs
// and Relax functions it calls), setting it on `e` and its sub-expressions.
// Every free Var of `e` must already carry struct_info (the block builder
// sets it on each Var it emits). `mod` is not changed.
Result<ir::StructInfo> InferExprStructInfo(const ir::IRModule& mod, const ir::Expr& e);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_INFER_STRUCT_INFO_H_
