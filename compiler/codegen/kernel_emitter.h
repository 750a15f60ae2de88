// Internal to compiler/codegen: emits lowered PrimFuncs as LLVM IR functions
// following kernels/kiln_kernel_abi.h, plus the library's query table. See
// native_codegen.h for the contract of the generated code.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_EMITTER_H_
#define KILN_COMPILER_CODEGEN_KERNEL_EMITTER_H_

#include <string>
#include <vector>

#include "compiler/codegen/llvm_headers.h"
#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace codegen {

struct TargetDesc {
  std::string triple, cpu, features;
  // The target rounds floats to integers in one instruction (x86 with SSE4.1,
  // AArch64): floor/ceil/trunc/round use LLVM's intrinsics. Otherwise they are
  // emitted as arithmetic, since the intrinsics would become libm calls.
  bool native_rounding = false;
};

// `module` must have its target triple and data layout set (64-bit pointers).
// Every function gets target-cpu/target-features attributes from `target`.
// Fails with the PrimFunc's name on TIR the emitter does not support.
Status EmitKernelModule(const std::vector<ir::PrimFunc>& funcs, const TargetDesc& target, llvm::Module* module);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_KERNEL_EMITTER_H_
