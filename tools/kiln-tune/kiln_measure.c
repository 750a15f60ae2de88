/* kiln-measure: the measuring program of kiln-tune's runner command
 * (compiler/tune/runner.h, MeasureWithCommand). It is built for the target
 * (kiln-measure-TRIPLE; plain C with only libc, libdl and pthreads, so a
 * cross C compiler suffices) and run there through the user's command
 * (qemu-aarch64 -L /usr/aarch64-linux-gnu, ssh to a board with a wrapper
 * that copies the files, ...):
 *
 *   RUNNER kiln-measure JOB
 *
 * JOB is a text file of "key value" lines:
 *   kiln-measure-job 1
 *   library PATH      the candidate's shared library (Kiln kernel ABI)
 *   kernel NAME
 *   threads T         parallel_for runs on T threads (T-1 started per call)
 *   warmup W
 *   repeats R
 *   args N            then N lines: NDIM EXTENTS... PATH (raw float32)
 * It loads the library, reads the arguments, runs the kernel once and
 * writes every argument to PATH.out (the tuner compares them with the
 * default schedule's), then W warm-up runs and R timed ones, printing
 * "time_us X" per timed run and "done" last on stdout. Any failure: a
 * message on stderr and exit status 1 (2 when the kernel reported an error).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kiln_kernel_abi.h"

#define MAX_ARGS 32
#define MAX_DIMS 8
#define MAX_THREADS 256

static int fail(const char* what, const char* detail) {
  fprintf(stderr, "kiln-measure: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

/* parallel_for: tasks handed out by a shared counter to the caller and
 * num_threads-1 threads started for this call. */
typedef struct {
  int32_t num_tasks;
  kiln_task_fn fn;
  void* closure;
  int32_t next;
  int32_t rc;
  pthread_mutex_t mu;
} job_state;

static void* worker(void* arg) {
  job_state* s = (job_state*)arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int32_t t = s->next < s->num_tasks && s->rc == 0 ? s->next++ : -1;
    pthread_mutex_unlock(&s->mu);
    if (t < 0) return NULL;
    int32_t rc = s->fn(t, s->num_tasks, s->closure);
    if (rc != 0) {
      pthread_mutex_lock(&s->mu);
      s->rc = rc;
      pthread_mutex_unlock(&s->mu);
    }
  }
}

static int32_t g_threads = 1;

static int32_t run_parallel(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure) {
  (void)ctx;
  if (g_threads <= 1 || num_tasks <= 1) {
    for (int32_t i = 0; i < num_tasks; ++i) {
      int32_t rc = fn(i, num_tasks, closure);
      if (rc != 0) return rc;
    }
    return 0;
  }
  job_state s;
  s.num_tasks = num_tasks;
  s.fn = fn;
  s.closure = closure;
  s.next = 0;
  s.rc = 0;
  pthread_mutex_init(&s.mu, NULL);
  pthread_t th[MAX_THREADS];
  int32_t started = 0;
  for (int32_t i = 1; i < g_threads && i < num_tasks; ++i)
    if (pthread_create(&th[started], NULL, worker, &s) == 0) ++started;
  worker(&s);
  for (int32_t i = 0; i < started; ++i) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&s.mu);
  return s.rc;
}

static void* ws_alloc(void* ctx, uint64_t nbytes, uint64_t alignment) {
  (void)ctx;
  void* p = NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(&p, (size_t)alignment, nbytes ? (size_t)nbytes : 1) != 0) return NULL;
  return p;
}

static void ws_free(void* ctx, void* ptr) {
  (void)ctx;
  free(ptr);
}

static void set_error(void* ctx, const char* message) {
  (void)ctx;
  fprintf(stderr, "kiln-measure: kernel error: %s\n", message);
}

static int expect_key(FILE* f, const char* key, char* value, size_t cap) {
  char k[64];
  char fmt[32];
  snprintf(fmt, sizeof fmt, "%%63s %%%zus", cap - 1);
  if (fscanf(f, fmt, k, value) != 2 || strcmp(k, key) != 0) return 0;
  return 1;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: kiln-measure JOB", NULL);
  FILE* job = fopen(argv[1], "r");
  if (!job) return fail("cannot open the job file", argv[1]);
  char version[16], lib_path[4096], kernel[256], num[32];
  if (!expect_key(job, "kiln-measure-job", version, sizeof version) || strcmp(version, "1") != 0)
    return fail("not a version-1 job file", argv[1]);
  if (!expect_key(job, "library", lib_path, sizeof lib_path)) return fail("job: missing 'library'", NULL);
  if (!expect_key(job, "kernel", kernel, sizeof kernel)) return fail("job: missing 'kernel'", NULL);
  int threads = 0, warmup = 0, repeats = 0, nargs = 0;
  if (!expect_key(job, "threads", num, sizeof num) || (threads = atoi(num)) < 1 || threads > MAX_THREADS)
    return fail("job: bad 'threads'", NULL);
  if (!expect_key(job, "warmup", num, sizeof num) || (warmup = atoi(num)) < 0) return fail("job: bad 'warmup'", NULL);
  if (!expect_key(job, "repeats", num, sizeof num) || (repeats = atoi(num)) < 1)
    return fail("job: bad 'repeats'", NULL);
  if (!expect_key(job, "args", num, sizeof num) || (nargs = atoi(num)) < 0 || nargs > MAX_ARGS)
    return fail("job: bad 'args'", NULL);
  g_threads = threads;

  static kiln_dltensor tensors[MAX_ARGS];
  static int64_t shapes[MAX_ARGS][MAX_DIMS];
  static char paths[MAX_ARGS][4096];
  static int64_t counts[MAX_ARGS];
  kiln_kernel_arg args[MAX_ARGS];
  for (int a = 0; a < nargs; ++a) {
    int ndim = 0;
    if (fscanf(job, "%d", &ndim) != 1 || ndim < 0 || ndim > MAX_DIMS) return fail("job: bad argument rank", NULL);
    int64_t count = 1;
    for (int d = 0; d < ndim; ++d) {
      long long e = 0;
      if (fscanf(job, "%lld", &e) != 1 || e < 0) return fail("job: bad extent", NULL);
      shapes[a][d] = e;
      count *= e;
    }
    if (fscanf(job, "%4095s", paths[a]) != 1) return fail("job: missing data file", NULL);
    float* data = (float*)ws_alloc(NULL, (uint64_t)(count ? count : 1) * sizeof(float), 64);
    if (!data) return fail("out of memory", NULL);
    FILE* in = fopen(paths[a], "rb");
    if (!in) return fail("cannot open", paths[a]);
    size_t got = fread(data, sizeof(float), (size_t)count, in);
    fclose(in);
    if (got != (size_t)count) return fail("short data file", paths[a]);
    counts[a] = count;
    memset(&tensors[a], 0, sizeof tensors[a]);
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
  if (!query) return fail("no kernel query symbol in", lib_path);
  const kiln_kernel_library* table = query(KILN_KERNEL_ABI_VERSION);
  if (!table) return fail("the library refuses this kernel ABI version", lib_path);
  kiln_kernel_fn fn = NULL;
  for (uint32_t i = 0; i < table->num_kernels; ++i)
    if (strcmp(table->kernels[i].name, kernel) == 0) fn = table->kernels[i].fn;
  if (!fn) return fail("no such kernel", kernel);

  kiln_kernel_env env;
  memset(&env, 0, sizeof env);
  env.abi_version = KILN_KERNEL_ABI_VERSION;
  env.num_threads = threads;
  env.parallel_for = run_parallel;
  env.workspace_alloc = ws_alloc;
  env.workspace_free = ws_free;
  env.set_error = set_error;
  if (fn(&env, args, nargs) != 0) {
    fail("the kernel returned an error", kernel);
    return 2;
  }
  for (int a = 0; a < nargs; ++a) {
    char out_path[sizeof(paths[0]) + 8];
    snprintf(out_path, sizeof out_path, "%.4095s.out", paths[a]);
    FILE* out = fopen(out_path, "wb");
    if (!out) return fail("cannot write", out_path);
    if (fwrite(tensors[a].data, sizeof(float), (size_t)counts[a], out) != (size_t)counts[a])
      return fail("short write", out_path);
    fclose(out);
  }
  for (int k = 0; k < warmup; ++k)
    if (fn(&env, args, nargs) != 0) return 2;
  for (int k = 0; k < repeats; ++k) {
    double t0 = now_us();
    if (fn(&env, args, nargs) != 0) return 2;
    printf("time_us %.3f\n", now_us() - t0);
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
