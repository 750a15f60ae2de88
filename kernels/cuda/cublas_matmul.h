// kiln.cublas.matmul and its epilogue variants: float32 matmuls on a CUDA
// device through cuBLASLt (cublaslt_api.h; opened at first use).
//
// Destination-passing packed functions with kiln.dnnl.matmul's convention,
// plus a bias for the _bias variants:
//   kiln.cublas.matmul(A, B, Out)                 Out = A @ B
//   kiln.cublas.matmul_relu(A, B, Out)            Out = relu(A @ B)
//   kiln.cublas.matmul_gelu(A, B, Out)            Out = gelu(A @ B)
//   kiln.cublas.matmul_bias(A, B, Bias, Out)      Out = A @ B + Bias
//   kiln.cublas.matmul_bias_relu(A, B, Bias, Out)
//   kiln.cublas.matmul_bias_gelu(A, B, Bias, Out)
// Shapes: A [..., M, K] with B [K, N] (A's leading dimensions are rows of
// one matmul), or A [b..., M, K] / [M, K] with B [b..., K, N] (a strided
// batch of prod(b) matmuls; a rank-2 A is shared by all of them); Bias [N];
// Out [b..., M, N]. Every tensor float32 and compact row-major, in memory
// the device reaches (the VM's CUDA managed memory on the GPU path).
// gelu is cuBLASLt's CUBLASLT_EPILOGUE_GELU (the compiler dispatches only
// R.nn.gelu_tanh to it; see docs/gpu.md).
//
// The math is float32 throughout (CUBLAS_COMPUTE_32F): TF32 tensor cores
// only with KILN_CUBLAS_TF32=1 in the environment (read once per binding).
//
// The functions are device functions (runtime/cuda/device_functions.h): a
// GPU program's call resolves at load to the function bound to the linker's
// device, and runs on its stream. Binding opens cuBLASLt ("cuBLAS not found:
// ..." when it cannot) and creates a cuBLASLt handle; each distinct problem
// (shape, epilogue, pointer alignments) gets its descriptors and the
// heuristic's best algorithm once, cached per binding.
//
// Thread-safe: one binding's calls are serialized by a mutex (they share
// the stream and the descriptors).
#ifndef KILN_KERNELS_CUDA_CUBLAS_MATMUL_H_
#define KILN_KERNELS_CUDA_CUBLAS_MATMUL_H_

#include <cstdint>
#include <string>

#include "runtime/any.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace cuda {
class CudaDevice;
}  // namespace cuda

namespace kernels {
namespace cuda {

enum class CublasEpilogue { kNone, kRelu, kGelu, kBias, kBiasRelu, kBiasGelu };

bool EpilogueHasBias(CublasEpilogue e);
// "kiln.cublas.matmul", "kiln.cublas.matmul_bias_relu", ...
const char* CublasMatmulName(CublasEpilogue e);

// One call's problem in row-major terms: `batch` matmuls of
// [m, k] x [k, n]; a_batch_stride is 0 when A is shared by the batch.
struct CublasMatmulProblem {
  int64_t batch = 1;
  int64_t m = 0, k = 0, n = 0;
  int64_t a_batch_stride = 0, b_batch_stride = 0, out_batch_stride = 0;  // in elements
};

// The arguments of CublasMatmulName(e), checked on the host (no device, no
// library): counts, tensors, dtypes, compactness, ranks and shapes. Fills
// a, b, out and, for a bias variant, bias. InvalidArgument naming the
// function and the argument, e.g. "kiln.cublas.matmul: A has K=784 but B
// has K=785".
Result<CublasMatmulProblem> CheckCublasMatmulArgs(CublasEpilogue e, Span<const Any> args, Tensor* a, Tensor* b,
                                                  Tensor* bias, Tensor* out);

// The packed function CublasMatmulName(e) bound to `device` (what the
// device function registry hands CudaGpuLinker). Fails with cuBLASLt's
// load error, or the handle's creation error.
Result<PackedFunc> BindCublasMatmul(CublasEpilogue e, ::kiln::cuda::CudaDevice* device);

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_CUDA_CUBLAS_MATMUL_H_
