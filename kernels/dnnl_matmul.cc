// kiln.dnnl.matmul through oneDNN's C API, with primitives cached by shape.
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_threads.h"
#include "kernels/kernel_args.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {
namespace {

constexpr const char* kFn = "kiln.dnnl.matmul";

Status DnnlError(const char* what, dnnl_status_t s) {
  return Internal(StrFormat("%s: oneDNN %s failed: %s", kFn, what, dnnl_status2str(s)));
}

#define KILN_DNNL_CALL(call)                                       \
  do {                                                             \
    dnnl_status_t kiln_dnnl_s_ = (call);                           \
    if (kiln_dnnl_s_ != dnnl_success) return DnnlError(#call, kiln_dnnl_s_); \
  } while (0)

// The CPU engine, created on first use and never destroyed (primitives and
// streams may outlive static destruction order otherwise).
Result<dnnl_engine_t> CpuEngine() {
  static dnnl_engine_t engine = nullptr;
  static dnnl_status_t status = dnnl_engine_create(&engine, dnnl_cpu, 0);
  if (status != dnnl_success) return DnnlError("dnnl_engine_create", status);
  return engine;
}

// One cached primitive and the memory descriptors it was created for.
struct MatmulPrimitive {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_desc_t a_md, b_md, c_md, scratch_md;
  size_t scratch_bytes = 0;
  ~MatmulPrimitive() {
    if (primitive != nullptr) dnnl_primitive_destroy(primitive);
  }
};

// (rows, K, N, threads): oneDNN chooses its blocking for the thread count it
// sees at creation and must run with that count, so primitives for different
// session thread counts are different entries.
using Key = std::tuple<int64_t, int64_t, int64_t, int>;

struct Cache {
  std::shared_mutex mu;
  std::map<Key, std::shared_ptr<const MatmulPrimitive>> entries;
};

Cache& GetCache() {
  static Cache* cache = new Cache();  // never destroyed, like the engine
  return *cache;
}

Result<std::shared_ptr<const MatmulPrimitive>> CreatePrimitive(dnnl_engine_t engine, const MatmulDims& d) {
  auto p = std::make_shared<MatmulPrimitive>();
  const dnnl_dims_t a_dims = {d.rows, d.k};
  const dnnl_dims_t b_dims = {d.k, d.n};
  const dnnl_dims_t c_dims = {d.rows, d.n};
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->a_md, 2, a_dims, dnnl_f32, dnnl_ab));
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->b_md, 2, b_dims, dnnl_f32, dnnl_ab));
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->c_md, 2, c_dims, dnnl_f32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  KILN_DNNL_CALL(dnnl_matmul_desc_init(&desc, &p->a_md, &p->b_md, nullptr, &p->c_md));

  // A user scratchpad: each call passes its own, so concurrent executions of
  // one primitive never share temporary memory.
  dnnl_primitive_attr_t attr = nullptr;
  KILN_DNNL_CALL(dnnl_primitive_attr_create(&attr));
  std::unique_ptr<dnnl_primitive_attr, dnnl_status_t (*)(dnnl_primitive_attr_t)> attr_guard(
      attr, dnnl_primitive_attr_destroy);
  KILN_DNNL_CALL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));

  dnnl_primitive_desc_t pd = nullptr;
  KILN_DNNL_CALL(dnnl_primitive_desc_create(&pd, &desc, attr, engine, nullptr));
  std::unique_ptr<dnnl_primitive_desc, dnnl_status_t (*)(dnnl_primitive_desc_t)> pd_guard(
      pd, dnnl_primitive_desc_destroy);
  const dnnl_memory_desc_t* scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (scratch != nullptr) {
    p->scratch_md = *scratch;
  } else {
    std::memset(&p->scratch_md, 0, sizeof(p->scratch_md));  // a zero md: no scratchpad
  }
  p->scratch_bytes = dnnl_memory_desc_get_size(&p->scratch_md);
  KILN_DNNL_CALL(dnnl_primitive_create(&p->primitive, pd));
  return std::shared_ptr<const MatmulPrimitive>(std::move(p));
}

Result<std::shared_ptr<const MatmulPrimitive>> GetPrimitive(dnnl_engine_t engine, const MatmulDims& d,
                                                            int num_threads) {
  Cache& cache = GetCache();
  const Key key{d.rows, d.k, d.n, num_threads};
  {
    std::shared_lock<std::shared_mutex> lock(cache.mu);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }
  // Create outside the lock: creation takes milliseconds and other shapes must
  // not wait. Two threads racing on one new shape both create; one wins.
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const MatmulPrimitive> created, CreatePrimitive(engine, d));
  std::unique_lock<std::shared_mutex> lock(cache.mu);
  auto it = cache.entries.find(key);
  if (it != cache.entries.end()) return it->second;
  if (cache.entries.size() >= kDnnlMatmulCacheCapacity) cache.entries.clear();
  cache.entries.emplace(key, created);
  return created;
}

// Owns the per-call oneDNN objects.
struct CallObjects {
  dnnl_stream_t stream = nullptr;
  dnnl_memory_t mem[4] = {nullptr, nullptr, nullptr, nullptr};
  ~CallObjects() {
    for (dnnl_memory_t m : mem)
      if (m != nullptr) dnnl_memory_destroy(m);
    if (stream != nullptr) dnnl_stream_destroy(stream);
  }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

Status DnnlMatmul(Span<const Any> args, Any* ret) {
  Tensor a, b, out;
  KILN_ASSIGN_OR_RETURN(MatmulDims d, CheckMatmulArgs(kFn, args, &a, &b, &out));
  if (d.rows == 0 || d.n == 0) return Status::Ok();
  if (d.k == 0) {  // an empty sum; oneDNN rejects zero-sized reductions
    std::memset(out.raw_data(), 0, out.NumBytes());
    return Status::Ok();
  }
  // The session's thread count, with Kiln's idle workers parked, for both
  // creating and running the primitive.
  DnnlThreadScope threads;
  KILN_ASSIGN_OR_RETURN(dnnl_engine_t engine, CpuEngine());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const MatmulPrimitive> p, GetPrimitive(engine, d, threads.num_threads()));

  std::unique_ptr<void, FreeDeleter> scratch;
  if (p->scratch_bytes > 0) {
    size_t bytes = (p->scratch_bytes + 63) / 64 * 64;
    scratch.reset(std::aligned_alloc(64, bytes));
    if (!scratch) return ResourceExhausted(StrFormat("%s: cannot allocate a %zu-byte scratchpad", kFn, bytes));
  }
  CallObjects call;
  KILN_DNNL_CALL(dnnl_stream_create(&call.stream, engine, dnnl_stream_default_flags));
  KILN_DNNL_CALL(dnnl_memory_create(&call.mem[0], &p->a_md, engine, a.raw_data()));
  KILN_DNNL_CALL(dnnl_memory_create(&call.mem[1], &p->b_md, engine, b.raw_data()));
  KILN_DNNL_CALL(dnnl_memory_create(&call.mem[2], &p->c_md, engine, out.raw_data()));
  dnnl_exec_arg_t exec_args[4] = {{DNNL_ARG_SRC, call.mem[0]}, {DNNL_ARG_WEIGHTS, call.mem[1]},
                                  {DNNL_ARG_DST, call.mem[2]}, {DNNL_ARG_SCRATCHPAD, nullptr}};
  int nargs = 3;
  if (scratch) {
    KILN_DNNL_CALL(dnnl_memory_create(&call.mem[3], &p->scratch_md, engine, scratch.get()));
    exec_args[3].memory = call.mem[3];
    nargs = 4;
  }
  KILN_DNNL_CALL(dnnl_primitive_execute(p->primitive, call.stream, nargs, exec_args));
  KILN_DNNL_CALL(dnnl_stream_wait(call.stream));
  return Status::Ok();
}

size_t DnnlMatmulCacheSize() {
  Cache& cache = GetCache();
  std::shared_lock<std::shared_mutex> lock(cache.mu);
  return cache.entries.size();
}

KILN_REGISTER_GLOBAL("kiln.dnnl.matmul", DnnlMatmul);

}  // namespace kernels
}  // namespace kiln
