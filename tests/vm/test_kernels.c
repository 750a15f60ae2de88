/* A tiny native kernel library for the VM and loader tests, built as a shared
 * object and embedded into hand-assembled .vmfb files. It follows the kernel
 * ABI exactly as generated code does: one exported query symbol, no use of
 * host-process symbols beyond libc. */
#include <stddef.h>

#include "kernels/kiln_kernel_abi.h"

static int64_t NumElements(const kiln_dltensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static float* F32(const kiln_dltensor* t) { return (float*)((char*)t->data + t->byte_offset); }

/* out = a + b (float32, same element count). */
static int32_t AddF32(const kiln_kernel_env* env, const kiln_kernel_arg* args, int32_t num_args) {
  const kiln_dltensor *a = args[0].tensor, *b = args[1].tensor, *out = args[2].tensor;
  int64_t n = NumElements(out);
  if (NumElements(a) != n || NumElements(b) != n) {
    env->set_error(env->ctx, "add_f32: element counts differ");
    return 1;
  }
  const float *pa = F32(a), *pb = F32(b);
  float* po = F32(out);
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  return 0;
}

struct ScaleClosure {
  const float* x;
  float* out;
  double factor;
  int64_t n;
};

static int32_t ScaleTask(int32_t task, int32_t num_tasks, void* closure) {
  struct ScaleClosure* c = (struct ScaleClosure*)closure;
  int64_t chunk = (c->n + num_tasks - 1) / num_tasks;
  int64_t begin = task * chunk, end = begin + chunk < c->n ? begin + chunk : c->n;
  for (int64_t i = begin; i < end; ++i) c->out[i] = (float)(c->x[i] * c->factor);
  return 0;
}

/* out = x * factor, split over env->parallel_for. Args: x, factor (f64), out. */
static int32_t ScaleParallel(const kiln_kernel_env* env, const kiln_kernel_arg* args, int32_t num_args) {
  struct ScaleClosure c;
  c.x = F32(args[0].tensor);
  c.factor = args[1].f64;
  c.out = F32(args[2].tensor);
  c.n = NumElements(args[2].tensor);
  return env->parallel_for(env->ctx, 4, ScaleTask, &c);
}

/* Always fails, with a message. */
static int32_t FailKernel(const kiln_kernel_env* env, const kiln_kernel_arg* args, int32_t num_args) {
  char message[32] = "bad input from the kernel";  /* on the stack: the runtime must copy it */
  env->set_error(env->ctx, message);
  return 7;
}

/* Each task writes num_tasks into its own slot out[1 + task]. */
static int32_t ProbeTask(int32_t task, int32_t num_tasks, void* closure) {
  float* out = (float*)closure;
  out[1 + task] = (float)num_tasks;
  return 0;
}

/* Reports the thread count the runtime offers: out[0] = env->num_threads, then
 * one parallel_for with that many tasks (as generated code splits a parallel
 * loop). Args: out (float32, at least 1 + num_threads elements). */
static int32_t ThreadProbe(const kiln_kernel_env* env, const kiln_kernel_arg* args, int32_t num_args) {
  float* out = F32(args[0].tensor);
  if (NumElements(args[0].tensor) < 1 + (int64_t)env->num_threads) {
    env->set_error(env->ctx, "thread_probe: output too small for the thread count");
    return 1;
  }
  out[0] = (float)env->num_threads;
  return env->parallel_for(env->ctx, env->num_threads, ProbeTask, out);
}

static const kiln_kernel_entry kKernels[] = {
    {"add_f32", AddF32, 3, 0},
    {"scale_parallel", ScaleParallel, 3, 0},
    {"fail_kernel", FailKernel, 1, 0},
    {"thread_probe", ThreadProbe, 1, 0},
};

static const kiln_kernel_library kLibrary = {
    KILN_KERNEL_ABI_VERSION, 4, kKernels, "x86_64-unknown-linux-gnu", "generic", "",
};

__attribute__((visibility("default"))) const kiln_kernel_library* kiln_kernel_query(uint32_t abi_version) {
  return abi_version == KILN_KERNEL_ABI_VERSION ? &kLibrary : NULL;
}
