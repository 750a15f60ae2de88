// Argument checking shared by the library kernels (reference, oneDNN, ...).
//
// Library kernels are packed functions in destination-passing style: the
// inputs come first, the preallocated outputs last, and `ret` stays None. Every
// check here turns a caller's mistake into an InvalidArgument Status whose
// message starts with the function name and names the argument and the numbers,
// e.g. "kiln.dnnl.matmul: A has K=784 but B has K=785".
//
// Thread-safe: free functions without state.
#ifndef KILN_KERNELS_KERNEL_ARGS_H_
#define KILN_KERNELS_KERNEL_ARGS_H_

#include <cstdint>
#include <vector>

#include "runtime/any.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace kernels {

// Fails unless args.size() == count; `signature` is shown to the caller, e.g.
// "(A, B, Out)".
Status CheckArgCount(const char* fn, Span<const Any> args, size_t count, const char* signature);

// Argument `index` (named `name`) as a CPU tensor; fails for non-tensors and
// tensors on another device.
Result<Tensor> TensorArg(const char* fn, Span<const Any> args, size_t index, const char* name);

// Fails unless `t` has dtype `dtype`.
Status CheckDType(const char* fn, const char* name, const Tensor& t, DType dtype);

// Fails unless `t` is compact row-major: no strides, or strides equal to the
// row-major ones (dimensions of extent 1 may have any stride).
Status CheckCompact(const char* fn, const char* name, const Tensor& t);
bool IsCompactRowMajor(const Tensor& t);

// Fails unless `t` has exactly `shape`.
Status CheckShape(const char* fn, const char* name, const Tensor& t, Span<const int64_t> shape);

// The problem of a matmul A [..., M, K] x B [K, N] -> Out [..., M, N], with the
// batch dimensions of A flattened into the rows: rows = prod(batch) * M.
struct MatmulDims {
  int64_t rows = 0;
  int64_t k = 0;
  int64_t n = 0;
};

// Checks (A, B, Out) of a float32 compact matmul and returns its dimensions.
// Fills `a`, `b`, `out` with the tensors.
Result<MatmulDims> CheckMatmulArgs(const char* fn, Span<const Any> args, Tensor* a, Tensor* b, Tensor* out);

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_KERNEL_ARGS_H_
