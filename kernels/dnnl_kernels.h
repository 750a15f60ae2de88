// oneDNN library kernels (built only with KILN_WITH_DNNL; link kiln_kernels_dnnl
// or kiln_kernels_all, which define KILN_HAVE_DNNL_KERNELS for their users).
//
//   kiln.dnnl.matmul(A, B, Out)   same contract as kiln.ref.matmul: float32,
//                                 compact, A [..., M, K], B [K, N], Out [..., M, N];
//                                 unlike the reference, Out must not overlap A or B
//   kiln.dnnl.conv2d(X, W, Attrs, Out)
//                                 float32, compact: X [N, C, H, W], W [O, C/groups,
//                                 KH, KW], Attrs int64 [9] (DnnlConvAttrs, what
//                                 the compiler's library dispatch passes as a
//                                 constant), Out [N, O, OH, OW]
//
// oneDNN is used through its C API only, so no C++ exception can cross into
// Kiln; every oneDNN failure becomes a Status naming the call that failed.
//
// Primitives are created once per (rows, K, N) and kept in a process-wide,
// thread-safe cache (creation costs far more than a small matmul). Any number
// of threads may call concurrently; each call uses its own stream, memory
// objects and scratchpad, so executions share only the immutable primitive.
// oneDNN parallelizes inside a call with its own (OpenMP) threads, not with the
// Kiln ThreadPool, but with the thread count of the calling session's pool,
// whose idle workers are parked first (kernels/dnnl_threads.h); primitives are
// cached per thread count too.
#ifndef KILN_KERNELS_DNNL_KERNELS_H_
#define KILN_KERNELS_DNNL_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "runtime/any.h"
#include "runtime/status.h"

namespace kiln {
namespace kernels {

Status DnnlMatmul(Span<const Any> args, Any* ret);

// Number of matmul primitives in the cache (for tests and diagnostics). The
// cache holds at most kDnnlMatmulCacheCapacity; when full it is emptied
// (dynamic batch sizes could otherwise grow it without bound).
constexpr size_t kDnnlMatmulCacheCapacity = 256;
size_t DnnlMatmulCacheSize();

// The Attrs tensor of kiln.dnnl.conv2d, in this order (int64 each).
struct DnnlConvAttrs {
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t dilation_h, dilation_w;
  int64_t groups;
};
constexpr int64_t kDnnlConvAttrCount = 9;
static_assert(sizeof(DnnlConvAttrs) == kDnnlConvAttrCount * sizeof(int64_t), "Attrs is 9 packed int64");

Status DnnlConv2d(Span<const Any> args, Any* ret);

constexpr size_t kDnnlConvCacheCapacity = 256;
size_t DnnlConvCacheSize();

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_DNNL_KERNELS_H_
