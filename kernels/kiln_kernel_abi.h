/* The Kiln kernel ABI: the one C calling convention between generated kernels
 * (LLVM codegen in compiler/) and the runtime that calls them.
 *
 * Standalone and dependency-free on purpose: the compiler emits code against the
 * layouts below, and a runtime built years later must still call that code. The
 * layouts only grow at the end, guarded by KILN_KERNEL_ABI_VERSION.
 *
 * A native library exports exactly one symbol, KILN_KERNEL_QUERY_SYMBOL, of type
 * kiln_kernel_query_fn. It returns the library's table of kernels, or NULL when
 * it cannot serve the requested ABI version. Kernels rely on no global symbol of
 * the host process: everything they need from the runtime comes through
 * kiln_kernel_env, so a library loads from memory (memfd + dlopen) or links
 * statically into an edge binary.
 *
 * A kernel returns 0 on success; on failure it calls env->set_error (if it can
 * say why) and returns non-zero.
 */
#ifndef KILN_KERNELS_KILN_KERNEL_ABI_H_
#define KILN_KERNELS_KILN_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_KERNEL_ABI_VERSION 1u
#define KILN_KERNEL_QUERY_SYMBOL "kiln_kernel_query"

/* Laid out exactly like DLPack's DLTensor (checked by static_assert in the
 * runtime), so runtime tensors are passed without conversion. */
typedef struct kiln_dltensor {
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t dtype_code;  /* 0 int, 1 uint, 2 float, 4 bfloat */
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
  int64_t* shape;
  int64_t* strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} kiln_dltensor;

/* A parallel task: runs for task_id in [0, num_tasks). Returns 0 or an error. */
typedef int32_t (*kiln_task_fn)(int32_t task_id, int32_t num_tasks, void* closure);

typedef struct kiln_kernel_env {
  uint32_t abi_version; /* KILN_KERNEL_ABI_VERSION of the runtime */
  int32_t num_threads;  /* threads parallel_for may use, >= 1 */
  void* ctx;            /* opaque runtime state passed back to the callbacks */
  /* Runs fn(i, num_tasks, closure) for every i, on the runtime's thread pool,
   * and returns when all have finished: 0, or the first non-zero task result. */
  int32_t (*parallel_for)(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure);
  /* Scratch memory for the duration of the kernel call. */
  void* (*workspace_alloc)(void* ctx, uint64_t nbytes, uint64_t alignment);
  void (*workspace_free)(void* ctx, void* ptr);
  /* Records why the kernel is about to return non-zero. */
  void (*set_error)(void* ctx, const char* message);
} kiln_kernel_env;

/* One argument: a tensor, or a scalar. The kernel's entry states which. */
typedef union kiln_kernel_arg {
  kiln_dltensor* tensor;
  int64_t i64;
  double f64;
} kiln_kernel_arg;

typedef int32_t (*kiln_kernel_fn)(const kiln_kernel_env* env, const kiln_kernel_arg* args,
                                  int32_t num_args);

typedef struct kiln_kernel_entry {
  const char* name;
  kiln_kernel_fn fn;
  int32_t num_args;
  int32_t reserved;
} kiln_kernel_entry;

typedef struct kiln_kernel_library {
  uint32_t abi_version;
  uint32_t num_kernels;
  const kiln_kernel_entry* kernels;
  const char* target_triple;
  const char* target_cpu;
  const char* target_features; /* LLVM feature string the code was built for */
} kiln_kernel_library;

typedef const kiln_kernel_library* (*kiln_kernel_query_fn)(uint32_t abi_version);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* KILN_KERNELS_KILN_KERNEL_ABI_H_ */
