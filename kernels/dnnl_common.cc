#include "kernels/dnnl_common.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <cstdlib>
#include <cstring>

namespace kiln {
namespace kernels {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// The per-call oneDNN objects, destroyed on every return path.
struct CallObjects {
  dnnl_stream_t stream = nullptr;
  std::vector<dnnl_memory_t> mem;
  ~CallObjects() {
    for (dnnl_memory_t m : mem)
      if (m != nullptr) dnnl_memory_destroy(m);
    if (stream != nullptr) dnnl_stream_destroy(stream);
  }
};

}  // namespace

Status DnnlError(const char* fn, const char* what, dnnl_status_t s) {
  return Internal(StrFormat("%s: oneDNN %s failed: %s", fn, what, dnnl_status2str(s)));
}

Result<dnnl_engine_t> DnnlCpuEngine(const char* kFn) {
  static dnnl_engine_t engine = nullptr;
  static dnnl_status_t status = dnnl_engine_create(&engine, dnnl_cpu, 0);
  if (status != dnnl_success) return DnnlError(kFn, "dnnl_engine_create", status);
  return engine;
}

DnnlPrimitive::~DnnlPrimitive() {
  if (primitive != nullptr) dnnl_primitive_destroy(primitive);
}

Result<DnnlAttrGuard> DnnlUserScratchpadAttr(const char* kFn) {
  dnnl_primitive_attr_t attr = nullptr;
  KILN_DNNL_CALL(dnnl_primitive_attr_create(&attr));
  DnnlAttrGuard guard(attr, dnnl_primitive_attr_destroy);
  KILN_DNNL_CALL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  return guard;
}

Status DnnlFinishPrimitive(const char* kFn, dnnl_primitive_desc_t pd, DnnlPrimitive* p) {
  const dnnl_memory_desc_t* scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (scratch != nullptr) {
    p->scratch_md = *scratch;
  } else {
    std::memset(&p->scratch_md, 0, sizeof(p->scratch_md));  // a zero md: no scratchpad
  }
  p->scratch_bytes = dnnl_memory_desc_get_size(&p->scratch_md);
  KILN_DNNL_CALL(dnnl_primitive_create(&p->primitive, pd));
  return Status::Ok();
}

Status DnnlExecute(const char* kFn, dnnl_engine_t engine, const DnnlPrimitive& p,
                   const std::vector<DnnlExecArg>& args) {
  std::unique_ptr<void, FreeDeleter> scratch;
  if (p.scratch_bytes > 0) {
    size_t bytes = (p.scratch_bytes + 63) / 64 * 64;
    scratch.reset(std::aligned_alloc(64, bytes));
    if (!scratch) return ResourceExhausted(StrFormat("%s: cannot allocate a %zu-byte scratchpad", kFn, bytes));
  }
  CallObjects call;
  KILN_DNNL_CALL(dnnl_stream_create(&call.stream, engine, dnnl_stream_default_flags));
  std::vector<dnnl_exec_arg_t> exec;
  exec.reserve(args.size() + 1);
  call.mem.reserve(args.size() + 1);
  for (const DnnlExecArg& a : args) {
    call.mem.push_back(nullptr);
    KILN_DNNL_CALL(dnnl_memory_create(&call.mem.back(), a.md, engine, a.data));
    exec.push_back({a.arg, call.mem.back()});
  }
  if (scratch) {
    call.mem.push_back(nullptr);
    KILN_DNNL_CALL(dnnl_memory_create(&call.mem.back(), &p.scratch_md, engine, scratch.get()));
    exec.push_back({DNNL_ARG_SCRATCHPAD, call.mem.back()});
  }
  KILN_DNNL_CALL(dnnl_primitive_execute(p.primitive, call.stream, static_cast<int>(exec.size()), exec.data()));
  KILN_DNNL_CALL(dnnl_stream_wait(call.stream));
  return Status::Ok();
}

}  // namespace kernels
}  // namespace kiln
