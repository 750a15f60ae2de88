// Calling generated kernels (kernels/kiln_kernel_abi.h) from the runtime: the
// one place that builds a kiln_kernel_env, shared by the VM and the graph
// executor.
//
// Thread-safe: CallKernel keeps its state on the caller's stack; several
// threads may call kernels at once (see runtime/thread_pool.h for how their parallel launches share a pool).
#ifndef KILN_RUNTIME_KERNEL_CALL_H_
#define KILN_RUNTIME_KERNEL_CALL_H_

#include <dlpack/dlpack.h>

#include <cstddef>
#include <string>

#include "kernels/kiln_kernel_abi.h"
#include "runtime/status.h"

namespace kiln {

class ThreadPool;

// A runtime DLTensor is passed to kernels as is: the ABI's kiln_dltensor has
// DLTensor's exact layout.
static_assert(sizeof(kiln_dltensor) == sizeof(DLTensor), "kiln_dltensor must match DLTensor");
static_assert(offsetof(kiln_dltensor, data) == offsetof(DLTensor, data), "layout");
static_assert(offsetof(kiln_dltensor, device_type) == offsetof(DLTensor, device), "layout");
static_assert(offsetof(kiln_dltensor, ndim) == offsetof(DLTensor, ndim), "layout");
static_assert(offsetof(kiln_dltensor, dtype_code) == offsetof(DLTensor, dtype), "layout");
static_assert(offsetof(kiln_dltensor, shape) == offsetof(DLTensor, shape), "layout");
static_assert(offsetof(kiln_dltensor, strides) == offsetof(DLTensor, strides), "layout");
static_assert(offsetof(kiln_dltensor, byte_offset) == offsetof(DLTensor, byte_offset), "layout");

inline kiln_dltensor* AsKernelTensor(DLTensor* t) { return reinterpret_cast<kiln_dltensor*>(t); }

// Runs `fn(env, args, num_args)`. The env's parallel_for launches on `pool`
// (nullptr: serially on this thread); a message the kernel passes to
// set_error becomes the returned Status ("kernel 'add': <message>"). Does not
// allocate unless the kernel fails or asks for workspace.
Status CallKernel(kiln_kernel_fn fn, const std::string& name, const kiln_kernel_arg* args, int32_t num_args,
                  ThreadPool* pool);

}  // namespace kiln

#endif  // KILN_RUNTIME_KERNEL_CALL_H_
