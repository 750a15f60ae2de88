// Pass: static graph generation — for functions whose shapes are all static,
// a flat list of kernel and packed-function calls over planned storage, run by
// graph_executor/ without the VM.
//
// Pre: LegalizeOps ran; GenerateVMCode ran (callables and constants are shared
//      with the VM code).
// Post: for each eligible function, `program->graphs` holds its graph.
//      Eligible: every parameter is a tensor of static shape, every binding is
//      call_tir / call_dps_packed with static outputs (or a Var / tuple of
//      them), and the result is a tensor or a tuple of tensors (each kernel
//      result at most once). Others are skipped (the VM runs them).
//
// Memory planning: each intermediate lives from the call that writes it to
// its last reader; intermediates whose lifetimes do not overlap share arena
// bytes (first fit in definition order, 64-byte aligned: compiler/memory/arena.h). Results are written
// straight into the caller's output tensors.
#ifndef KILN_COMPILER_RELAX_GRAPH_CODEGEN_H_
#define KILN_COMPILER_RELAX_GRAPH_CODEGEN_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

// Returns the names of the functions that got a graph.
Result<std::vector<std::string>> GenerateStaticGraphs(const ir::IRModule& mod, compiler::VmfbProgram* program);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_GRAPH_CODEGEN_H_
