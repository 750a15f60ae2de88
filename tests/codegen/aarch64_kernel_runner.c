/* Runs one kernel of a Kiln native library on float32 tensors read from
 * files, and writes every tensor back after the call: the aarch64 side of
 * codegen_aarch64_test.cc, cross-compiled and run under qemu-aarch64.
 *
 *   aarch64_kernel_runner JOB
 *
 * JOB is a text file: the library's path, the kernel's name, the number of
 * arguments, then one line per argument: ndim, the extents, and a file of
 * raw float32 values (the tensor's contents; written back to FILE.out after
 * the call). parallel_for runs its tasks one after another; env->num_threads
 * is 2, so the kernels still split their loops into tasks.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kiln_kernel_abi.h"

#define MAX_ARGS 16
#define MAX_DIMS 8

static int32_t serial_parallel_for(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure) {
  (void)ctx;
  for (int32_t i = 0; i < num_tasks; ++i) {
    int32_t rc = fn(i, num_tasks, closure);
    if (rc != 0) return rc;
  }
  return 0;
}

static void* workspace_alloc(void* ctx, uint64_t nbytes, uint64_t alignment) {
  (void)ctx;
  void* p = NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(&p, (size_t)alignment, nbytes ? (size_t)nbytes : 1) != 0) return NULL;
  return p;
}

static void workspace_free(void* ctx, void* ptr) {
  (void)ctx;
  free(ptr);
}

static void set_error(void* ctx, const char* message) {
  (void)ctx;
  fprintf(stderr, "kernel error: %s\n", message);
}

static int fail(const char* what, const char* detail) {
  fprintf(stderr, "aarch64_kernel_runner: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: aarch64_kernel_runner JOB", NULL);
  FILE* job = fopen(argv[1], "r");
  if (!job) return fail("cannot open the job file", argv[1]);
  char lib_path[4096], kernel[256];
  int nargs = 0;
  if (fscanf(job, "%4095s %255s %d", lib_path, kernel, &nargs) != 3 || nargs < 0 || nargs > MAX_ARGS)
    return fail("bad job header", argv[1]);

  kiln_dltensor tensors[MAX_ARGS];
  int64_t shapes[MAX_ARGS][MAX_DIMS];
  char paths[MAX_ARGS][4096];
  kiln_kernel_arg args[MAX_ARGS];
  memset(tensors, 0, sizeof(tensors));
  for (int a = 0; a < nargs; ++a) {
    int ndim = 0;
    if (fscanf(job, "%d", &ndim) != 1 || ndim < 0 || ndim > MAX_DIMS) return fail("bad argument rank", NULL);
    int64_t count = 1;
    for (int d = 0; d < ndim; ++d) {
      long long e = 0;
      if (fscanf(job, "%lld", &e) != 1 || e < 0) return fail("bad extent", NULL);
      shapes[a][d] = e;
      count *= e;
    }
    if (fscanf(job, "%4095s", paths[a]) != 1) return fail("missing data file", NULL);
    float* data = (float*)workspace_alloc(NULL, (uint64_t)(count ? count : 1) * sizeof(float), 64);
    if (!data) return fail("out of memory", NULL);
    FILE* in = fopen(paths[a], "rb");
    if (!in) return fail("cannot open", paths[a]);
    size_t got = fread(data, sizeof(float), (size_t)count, in);
    fclose(in);
    if (got != (size_t)count) return fail("short data file", paths[a]);
    tensors[a].data = data;
    tensors[a].device_type = 1; /* kDLCPU */
    tensors[a].ndim = ndim;
    tensors[a].dtype_code = 2; /* float */
    tensors[a].dtype_bits = 32;
    tensors[a].dtype_lanes = 1;
    tensors[a].shape = shapes[a];
    args[a].tensor = &tensors[a];
  }
  fclose(job);

  void* lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail("dlopen", dlerror());
  kiln_kernel_query_fn query = (kiln_kernel_query_fn)dlsym(lib, KILN_KERNEL_QUERY_SYMBOL);
  if (!query) return fail("no query symbol", lib_path);
  const kiln_kernel_library* table = query(KILN_KERNEL_ABI_VERSION);
  if (!table) return fail("the library refuses ABI version", "1");
  kiln_kernel_fn fn = NULL;
  for (uint32_t i = 0; i < table->num_kernels; ++i)
    if (strcmp(table->kernels[i].name, kernel) == 0) fn = table->kernels[i].fn;
  if (!fn) return fail("no such kernel", kernel);

  kiln_kernel_env env;
  memset(&env, 0, sizeof(env));
  env.abi_version = KILN_KERNEL_ABI_VERSION;
  env.num_threads = 2;
  env.parallel_for = serial_parallel_for;
  env.workspace_alloc = workspace_alloc;
  env.workspace_free = workspace_free;
  env.set_error = set_error;
  int32_t rc = fn(&env, args, nargs);
  if (rc != 0) return fail("the kernel returned non-zero", kernel);

  for (int a = 0; a < nargs; ++a) {
    char out_path[sizeof(paths[0]) + 8];
    size_t len = strlen(paths[a]);
    memcpy(out_path, paths[a], len);
    memcpy(out_path + len, ".out", 5);
    int64_t count = 1;
    for (int d = 0; d < tensors[a].ndim; ++d) count *= shapes[a][d];
    FILE* out = fopen(out_path, "wb");
    if (!out) return fail("cannot write", out_path);
    if (fwrite(tensors[a].data, sizeof(float), (size_t)count, out) != (size_t)count) return fail("short write", out_path);
    fclose(out);
    free(tensors[a].data);
  }
  return 0;
}
