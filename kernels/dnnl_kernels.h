// oneDNN library kernels (built only with KILN_WITH_DNNL; link kiln_kernels_dnnl
// or kiln_kernels_all, which define KILN_HAVE_DNNL_KERNELS for their users).
//
//   kiln.dnnl.matmul(A, B, Out)   same contract as kiln.ref.matmul: float32,
//                                 compact, A [..., M, K], B [K, N], Out [..., M, N];
//                                 unlike the reference, Out must not overlap A or B
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

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_DNNL_KERNELS_H_
