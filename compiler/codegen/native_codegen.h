// Native code generation: lowered TIR PrimFuncs -> one ELF shared object that
// follows kernels/kiln_kernel_abi.h.
//
// Pre: every PrimFunc is lowered (tir::LowerBlocks; tir::ApplyDefaultSchedule
// optional). Each PrimFunc becomes an exported function with its name and the
// kiln_kernel_fn signature; the library exports `kiln_kernel_query`, which
// returns a static kiln_kernel_library (names, function pointers, num_args,
// target triple/cpu/features) or NULL for an ABI version other than
// KILN_KERNEL_ABI_VERSION.
//
// What a kernel checks on entry, reporting through env->set_error and
// returning 1: num_args; per tensor argument: non-null, ndim, dtype, strides ==
// NULL (compact row-major only), data + byte_offset 64-byte aligned, every
// dimension (a constant dim or an already bound variable must match; an unbound
// variable is bound from it), e.g.
//   "linear0: argument X, dimension 1: expected 784, got 100".
// Tensor arguments are assumed not to alias each other (noalias), like TVM.
// Integer scalar params read args[i].i64, float scalars args[i].f64; they are
// bound before the tensors, so a dimension naming a scalar param is checked
// against its value.
//
// Generated code calls nothing outside itself and the env: the library has no
// DT_NEEDED entry and is linked with `-z defs` and `-Bsymbolic` (its kernel
// table binds to its own kernels even when a kernel is named like a libc
// function). Library calls are disabled in the optimizer (no memset/memcpy
// idioms). Math intrinsics (exp, exp2, log, log2, log10, tanh, sigmoid, erf,
// sin, cos, pow, sqrt, rsqrt, floor, ceil, trunc, round) are emitted inline
// by vector_math.h (errors stated there), so vectorized loops stay vector code
// and no libm is needed on any target; float16 math computes in float32.
// Other intrinsics: if_then_else (lazy), isnan, isinf, isfinite, abs/fabs,
// fma; "tir."-prefixed names are accepted. Semantics chosen where C leaves
// them open: float -> int saturates (NaN -> 0) then wraps into narrow types;
// integer x / 0 and x % 0 give 0 and x / -1 gives -x (no trap); float min/max
// propagate NaN (numpy).
//
// Parallel loops are outlined into task functions run through
// env->parallel_for with min(extent, env->num_threads) contiguous chunks.
// Vectorized loops carry llvm.loop.vectorize.enable. Allocations of at most
// 64 KiB with a static size live on the stack; others use
// env->workspace_alloc/free.
//
// Before emission every kernel loses the if/else arms that the run-time
// tests around them rule out (tir/prune_guarded_branches.h): a version's
// ladder arms that its enclosing version tests exclude. LLVM cannot drop them
// itself once the parallel loop holding them is outlined. With
// KILN_KERNEL_TIMES=1 (or a part of kernels' names) each kernel is also
// compiled alone and its optimizer / instruction-selection milliseconds are
// printed to stderr (a diagnostic: it doubles the codegen time).
//
// A large library is compiled in parts, each an LLVM module of its own, on up
// to `jobs` threads, and the parts' objects linked together
// (kernel_partition.h); the threads end before BuildNativeLibrary returns.
// EmitLLVMIR and EmitAssembly show one module with every kernel.
//
// Thread-safe: calls may run concurrently (each uses its own LLVMContext; the
// in-process lld link is serialized internally).
#ifndef KILN_COMPILER_CODEGEN_NATIVE_CODEGEN_H_
#define KILN_COMPILER_CODEGEN_NATIVE_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace codegen {

struct CodegenOptions {
  // Empty triple: the host's. Empty cpu: the host CPU (detected) for a host
  // triple, "generic" otherwise. Empty features with a detected host CPU: the
  // host's features; otherwise only what `cpu` implies.
  std::string triple, cpu, features;
  int opt_level = 3;  // 0..3
  // Threads that compile a library's parts (kernel_partition.h) at once; 0:
  // this machine's cores. The library is the same for every value.
  int jobs = 0;
};

struct NativeLibraryBuild {
  std::vector<uint8_t> shared_object;     // ELF .so bytes
  std::vector<std::string> kernel_names;  // in input order
  std::string triple, cpu, features;      // what the code was built for
};

// Failures: kUnimplemented for TIR the codegen does not handle (a BlockRealize
// left in, an unknown intrinsic, strided buffers, vector dtypes), with the
// PrimFunc's name; kInvalidArgument for bad options (unknown triple) or
// duplicate kernel names; kInternal when LLVM or lld fail.
Result<NativeLibraryBuild> BuildNativeLibrary(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options);
// The target `options` resolve to, as "TRIPLE -mcpu=CPU" (host detection as
// BuildNativeLibrary does it): the key tuning records are stored under.
Result<std::string> ResolvedTargetName(const CodegenOptions& options);
// The optimized LLVM IR (after the opt_level pipeline) as text.
Result<std::string> EmitLLVMIR(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options);
// The target assembly as text.
Result<std::string> EmitAssembly(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_NATIVE_CODEGEN_H_
