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
  // The target masks vector lanes in registers (x86 with AVX-512 F and VL:
  // a masked load or store of up to 16 floats is one instruction costing
  // about a plain one). Explicit vectors of 3, 5-7 and 9-15 lanes are then
  // computed as 4, 8 or 16 lanes with masked memory accesses, instead of
  // LLVM's legalization into power-of-two pieces (14 lanes: 8 + 4 + 2, each
  // piece its own load, operation and store).
  bool masked_vectors = false;
};

// What EmitKernelModule puts in the module: the kernels and the query table
// that lists them, or (for a library compiled in parts, kernel_partition.h)
// only the kernels, or only the table, which then declares the kernels.
enum class KernelModuleParts { kKernelsAndQuery, kKernels, kQuery };

// `module` must have its target triple and data layout set (64-bit pointers).
// Every function gets target-cpu/target-features attributes from `target`.
// Fails with the PrimFunc's name on TIR the emitter does not support.
Status EmitKernelModule(const std::vector<ir::PrimFunc>& funcs, const TargetDesc& target, llvm::Module* module,
                        KernelModuleParts parts = KernelModuleParts::kKernelsAndQuery);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_KERNEL_EMITTER_H_
