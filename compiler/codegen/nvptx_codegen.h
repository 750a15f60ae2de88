// NVPTX code generation: GPU-scheduled TIR PrimFuncs -> PTX text for the CUDA
// driver's JIT (runtime/cuda/cuda_module.h).
//
// Pre: every PrimFunc went through tir::ScheduleForGpu: top-level Allocates
// (global workspaces) around items, each item a T.thread_binding nest: a
// blockIdx.x loop around one threadIdx.x loop, or around several in sequence
// (phases of the same extent, barriers between them: tvm_storage_sync)
// with the block's buffers allocated between: scope "shared" (static size,
// address space 3) and "local" (thread-private: first dimension the block's
// threads, indexed with the thread's variable). kiln.warp_shuffle_down
// (value, delta) is shfl.sync.down with a full mask, float32 or int32. Each
// item becomes one kernel, `<func>_k<i>`, launched in order on one stream
// (the split between host and device: the launches and the workspaces are
// the host's, GpuFunction says how).
//
// Every kernel of a function takes the same parameters, in this order:
//   - the data pointer (a global device address) of each buffer parameter,
//     in the PrimFunc's parameter order (GpuFunction::buffer_params);
//   - the data pointer of each workspace (GpuFunction::workspaces);
//   - each symbolic dimension and scalar parameter as an int64
//     (GpuFunction::dims), which the host reads from the call's tensors.
// Buffers are compact row-major and do not alias (noalias). Launch: grid.x
// from GpuKernel::grid_x (an expression of the dims), block.x from block_x.
//
// Code inside a thread follows the CPU codegen's semantics where they are
// cheap on the GPU (integer floor division, NaN-propagating float min/max,
// float -> int saturating); math intrinsics: exp, exp2, log, log2, sqrt,
// rsqrt, tanh, sigmoid, erf, pow, fabs/abs, floor, ceil, trunc, round, fma,
// isnan, if_then_else (lazy) in float32 (float16 computes in float32);
// exp/log use the hardware's approximations (ex2.approx, lg2.approx:
// relative error ~2^-22). Anything else is kUnimplemented naming the
// PrimFunc and the construct.
//
// Thread-safe: each call builds its own LLVMContext.
#ifndef KILN_COMPILER_CODEGEN_NVPTX_CODEGEN_H_
#define KILN_COMPILER_CODEGEN_NVPTX_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace codegen {

struct PtxOptions {
  std::string arch = "sm_80";  // sm_XY, X >= 5
  int opt_level = 3;           // 0..3
};

// Where the host finds a dimension's value: dimension `dim` of buffer
// parameter `param` (an index into PrimFunc::params), or the scalar
// parameter `param` itself when dim is -1.
struct GpuDim {
  ir::Var var;
  int32_t param = 0;
  int32_t dim = -1;
};

struct GpuWorkspace {
  std::string name;
  DType dtype;
  std::vector<ir::PrimExpr> shape;  // expressions of the dims
};

struct GpuKernel {
  std::string name;      // the PTX entry
  ir::PrimExpr grid_x;   // an expression of the dims
  int64_t block_x = 1;
};

struct GpuFunction {
  std::string name;
  std::vector<int32_t> buffer_params;  // indices into PrimFunc::params
  std::vector<GpuWorkspace> workspaces;
  std::vector<GpuDim> dims;
  std::vector<GpuKernel> kernels;      // launched in this order
};

struct PtxBuild {
  std::string ptx;
  std::string arch;
  std::vector<GpuFunction> functions;  // in input order
};

// Failures: kUnimplemented for TIR the GPU codegen does not handle, with the
// PrimFunc's name; kInvalidArgument for a bad arch or opt_level; kInternal
// when LLVM fails.
Result<PtxBuild> BuildPtx(const std::vector<ir::PrimFunc>& scheduled, const PtxOptions& options);
// The optimized LLVM IR of the same kernels, as text.
Result<std::string> EmitNvptxLLVMIR(const std::vector<ir::PrimFunc>& scheduled, const PtxOptions& options);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_NVPTX_CODEGEN_H_
