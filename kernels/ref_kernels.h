// Portable reference kernels: plain, obviously correct C++ loops. They are the
// oracle every other kernel (oneDNN, generated code) is tested against, and the
// fallback when nothing faster is available. Single-threaded on purpose.
//
// Registered as packed functions in destination-passing style (outputs last,
// preallocated by the caller, `ret` left None):
//   kiln.ref.matmul(A, B, Out)        A [..., M, K] float32, B [K, N], Out [..., M, N]
//   kiln.ref.add(A, B, Out)           numpy broadcasting; Out has the broadcast shape
//   kiln.ref.relu(A, Out)             Out = max(A, 0), same shape
//   kiln.ref.permute_dims(A, Out)     reverses the axes
//   kiln.ref.permute_dims(A, axes, Out)  axes: a shape value, Out[i...] = A[i permuted]
// add, relu and permute_dims take float32, float64, int32 and int64 (permute_dims
// any dtype of 1, 2, 4 or 8 bytes); all tensors must be compact CPU tensors.
// Out may be the same tensor as A for add, relu and ref matmul (in place); it must
// not overlap an input in any other way.
//
// The C++ entry points below are what the packed functions call; they are
// public so tests and benchmarks can call them without the registry.
// Thread-safe: no shared state.
#ifndef KILN_KERNELS_REF_KERNELS_H_
#define KILN_KERNELS_REF_KERNELS_H_

#include <vector>

#include "runtime/any.h"
#include "runtime/status.h"

namespace kiln {
namespace kernels {

Status RefMatmul(Span<const Any> args, Any* ret);
Status RefAdd(Span<const Any> args, Any* ret);
Status RefRelu(Span<const Any> args, Any* ret);
Status RefPermuteDims(Span<const Any> args, Any* ret);

// The numpy broadcast of two shapes, or an InvalidArgument naming `fn`.
Result<std::vector<int64_t>> BroadcastShapes(const char* fn, Span<const int64_t> a, Span<const int64_t> b);

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_REF_KERNELS_H_
