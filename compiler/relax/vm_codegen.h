// Pass: VM code generation — Relax functions to register-VM bytecode.
//
// Pre: LegalizeOps ran: every call is call_tir, call_dps_packed, a packed call
//      (R.call_packed), or a call to another Relax function.
// Post: `program` holds one FunctionInfo per Relax function (module order), the
//      callables (builtins, kernels named after PrimFuncs, packed functions,
//      functions), and the constants (tensors, error-context strings).
//
// Shape lowering, in short: each function starts by checking every tensor
// argument (vm.builtin.check_tensor) and matching its shape
// (vm.builtin.match_shape): the first plain occurrence of a symbolic variable
// stores the actual dimension into a shape-heap slot, every later occurrence
// and every constant dimension is checked. Shapes of results are built with
// vm.builtin.make_shape from constants and heap slots; composite dimensions
// (n * 4) are computed into temporary slots by vm.builtin.shape_arith first.
// Outputs of kernels are passed last (destination-passing style). With memory
// planning (the default; compiler/memory/plan_memory.h) an output the plan
// places in a storage becomes vm.builtin.alloc_storage (the Context keeps the
// storage across calls) + vm.builtin.tensor_view at its offset; the others —
// function results and tensors that escape — are vm.builtin.alloc_tensor,
// fresh on every call, so the caller owns what it gets back.
#ifndef KILN_COMPILER_RELAX_VM_CODEGEN_H_
#define KILN_COMPILER_RELAX_VM_CODEGEN_H_

#include "compiler/ir/module.h"
#include "compiler/memory/plan_memory.h"
#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

struct VMCodegenOptions {
  // Place intermediates in planned storage; false: alloc_tensor on every call.
  bool plan_memory = true;
  // Upper bounds of symbolic variables (kiln-compile --bound n=128).
  memory::PlanOptions memory;
};

// Fails on what the VM cannot run yet (kUnimplemented, with the location) and
// on invalid upper bounds (PlanMemory's errors).
Status GenerateVMCode(const ir::IRModule& mod, compiler::VmfbProgram* program, const VMCodegenOptions& options = {});

// Encodes one operand word (vm/opcodes.def): kind in the top 8 bits.
enum class ArgKind : int64_t { kRegister = 0, kImmediate = 1, kConstant = 2, kCallable = 3 };
int64_t EncodeArg(ArgKind kind, int64_t value);

// Adds (or finds) a callable of the program, returning its index.
uint32_t InternCallable(compiler::VmfbProgram* program, compiler::CallableKind kind, const std::string& name,
                        int32_t num_args = -1, uint32_t function_index = 0);

// Adds (or finds) a tensor constant of the program, returning its index.
uint32_t InternTensorConstant(compiler::VmfbProgram* program, const ir::ConstantExpr& c);

// Describes struct info for the file's function signatures.
compiler::ValueInfo MakeValueInfo(const std::string& name, const ir::StructInfo& sinfo);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_VM_CODEGEN_H_
