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
 *   cold_cache_bytes B  optional (kiln-tune --cold-cache): before each timed
 *                     run, read B bytes (0: 64 MiB) of a buffer, untimed, so
 *                     the kernel's operands come from memory; on T threads,
 *                     a slice each (parallel_for's threads)
 *                     (compiler/tune/cache_evict.h says why a read flush)
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

/* Where the cold-cache flush's sum goes, so the compiler keeps its loads. */
uint64_t g_flush_sink;
/* The flush buffer: file scope, so an early error return (a kernel error
 * after it was made) leaves it reachable rather than leaked for LeakSanitizer;
 * freed on the normal exit. */
static uint64_t* g_flush;
static int64_t g_flush_lines;

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

/* One slice of the cold-cache flush: task t of T reads one word of each
 * 64-byte line of its T-th of the buffer. */
static int32_t flush_slice(int32_t task, int32_t num_tasks, void* closure) {
  (void)closure;
  int64_t begin = g_flush_lines * task / num_tasks, end = g_flush_lines * (task + 1) / num_tasks;
  uint64_t sum = 0;
  for (int64_t l = begin; l < end; ++l) sum += g_flush[l * 8];
  __atomic_fetch_add(&g_flush_sink, sum, __ATOMIC_RELAXED);
  return 0;
}

static void* ws_alloc(void* ctx, uint64_t nbytes, uint64_t alignment) {
  (void)ctx;
  void* p = NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(&p, (size_t)alignment, nbytes ? (size_t)nbytes : 1) != 0) return NULL;
  return p;
}

/* The kernel's workspaces (packing buffers): the blocks a call frees are kept
 * for the next call (up to CACHED_WORKSPACES, the largest), as the runtime's
 * CallKernel keeps them (runtime/kernel_call.cc). With a fresh allocation per
 * call, kiln-measure-host measured a conv packed into 77 KiB of shifted
 * planes at 45 us against 20 us in the module (docs/guide/tuning.md). One
 * cache under a mutex, not one per thread: parallel_for's threads are
 * started per call, and a block a task frees is taken by the next call's.
 * Each block carries its capacity and header length in the 16 bytes before
 * the pointer the kernel gets. */
#define CACHED_WORKSPACES 8
typedef struct {
  void* ptr;
  uint64_t bytes, align;
} ws_block;
static ws_block ws_cache[CACHED_WORKSPACES];
static int ws_count;
static pthread_mutex_t ws_mu = PTHREAD_MUTEX_INITIALIZER;

static void* kernel_ws_alloc(void* ctx, uint64_t nbytes, uint64_t alignment) {
  (void)ctx;
  if (alignment < 16) alignment = 16;
  pthread_mutex_lock(&ws_mu);
  int best = -1;
  for (int i = 0; i < ws_count; ++i)
    if (ws_cache[i].bytes >= nbytes && ws_cache[i].align >= alignment &&
        (best < 0 || ws_cache[i].bytes < ws_cache[best].bytes))
      best = i;
  void* hit = NULL;
  if (best >= 0) {
    hit = ws_cache[best].ptr;
    ws_cache[best] = ws_cache[--ws_count];
  }
  pthread_mutex_unlock(&ws_mu);
  if (hit) return hit;
  void* base = NULL;
  if (posix_memalign(&base, (size_t)alignment, (size_t)(alignment + (nbytes ? nbytes : 1))) != 0) return NULL;
  uint64_t* p = (uint64_t*)((char*)base + alignment);
  p[-2] = nbytes;
  p[-1] = alignment;
  return p;
}

static void kernel_ws_free(void* ctx, void* ptr) {
  (void)ctx;
  if (!ptr) return;
  ws_block b = {ptr, ((uint64_t*)ptr)[-2], ((uint64_t*)ptr)[-1]};
  pthread_mutex_lock(&ws_mu);
  if (ws_count < CACHED_WORKSPACES) {
    ws_cache[ws_count++] = b;
    b.ptr = NULL;
  } else {
    /* Full: keep the larger blocks. */
    int smallest = 0;
    for (int i = 1; i < ws_count; ++i)
      if (ws_cache[i].bytes < ws_cache[smallest].bytes) smallest = i;
    if (ws_cache[smallest].bytes < b.bytes) {
      ws_block t = ws_cache[smallest];
      ws_cache[smallest] = b;
      b = t;
    }
  }
  pthread_mutex_unlock(&ws_mu);
  if (b.ptr) free((char*)b.ptr - b.align);
}

/* The kept blocks, freed before a successful exit. */
static void kernel_ws_clear(void) {
  pthread_mutex_lock(&ws_mu);
  for (int i = 0; i < ws_count; ++i) free((char*)ws_cache[i].ptr - ws_cache[i].align);
  ws_count = 0;
  pthread_mutex_unlock(&ws_mu);
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
  long long cold_bytes = -1; /* < 0: warm */
  char key[64];
  if (fscanf(job, "%63s", key) == 1) {
    if (strcmp(key, "cold_cache_bytes") != 0 || fscanf(job, "%lld", &cold_bytes) != 1 || cold_bytes < 0)
      return fail("job: bad 'cold_cache_bytes'", NULL);
    if (cold_bytes == 0) cold_bytes = 64ll << 20;
  }
  fclose(job);
  size_t flush_words = cold_bytes > 0 ? (size_t)(cold_bytes / 8) : 0;
  if (flush_words > 0) {
    g_flush = (uint64_t*)malloc(flush_words * sizeof(uint64_t));
    if (!g_flush) return fail("out of memory (cold_cache_bytes)", NULL);
    for (size_t i = 0; i < flush_words; ++i) g_flush[i] = i;
  }
  const uint64_t* const flush = g_flush;
  g_flush_lines = (int64_t)(flush_words / 8);

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
  env.workspace_alloc = kernel_ws_alloc;
  env.workspace_free = kernel_ws_free;
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
    /* On the kernel's T threads, a slice each (cache_evict.h says why). */
    if (flush) run_parallel(NULL, threads, flush_slice, NULL);
    double t0 = now_us();
    if (fn(&env, args, nargs) != 0) return 2;
    printf("time_us %.3f\n", now_us() - t0);
  }
  kernel_ws_clear();
  free(g_flush);
  g_flush = NULL;
  printf("done\n");
  fflush(stdout);
  return 0;
}
