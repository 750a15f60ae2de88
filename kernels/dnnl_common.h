// What the oneDNN kernels (dnnl_matmul.cc, dnnl_conv.cc) share: the CPU
// engine, turning a dnnl_status_t into a Status, and running a cached
// primitive with per-call memory objects and a per-call scratchpad.
//
// Everything here is thread-safe: the engine is created once; each Execute
// builds its own stream and memory objects, so concurrent calls share only
// the immutable primitive.
#ifndef KILN_KERNELS_DNNL_COMMON_H_
#define KILN_KERNELS_DNNL_COMMON_H_

#include <oneapi/dnnl/dnnl.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace kernels {

// "<fn>: oneDNN <what> failed: <oneDNN's reason>" (kInternal).
Status DnnlError(const char* fn, const char* what, dnnl_status_t s);

// Returns the DnnlError of a failing oneDNN call from the enclosing function;
// `fn` (the packed function's name) must be in scope as kFn.
#define KILN_DNNL_CALL(call)                                                   \
  do {                                                                         \
    dnnl_status_t kiln_dnnl_s_ = (call);                                       \
    if (kiln_dnnl_s_ != dnnl_success) return DnnlError(kFn, #call, kiln_dnnl_s_); \
  } while (0)

// The CPU engine, created on first use and never destroyed (primitives and
// streams could otherwise outlive it in static destruction order).
Result<dnnl_engine_t> DnnlCpuEngine(const char* fn);

// A created primitive and the scratchpad it needs (user scratchpad mode, so
// concurrent executions never share temporary memory).
struct DnnlPrimitive {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_desc_t scratch_md;
  size_t scratch_bytes = 0;
  DnnlPrimitive() = default;
  DnnlPrimitive(const DnnlPrimitive&) = delete;
  DnnlPrimitive& operator=(const DnnlPrimitive&) = delete;
  ~DnnlPrimitive();
};

// A primitive attribute in user-scratchpad mode, destroyed with the guard.
using DnnlAttrGuard = std::unique_ptr<dnnl_primitive_attr, dnnl_status_t (*)(dnnl_primitive_attr_t)>;
Result<DnnlAttrGuard> DnnlUserScratchpadAttr(const char* fn);

// Fills `p` from a primitive descriptor: its scratchpad and the primitive.
Status DnnlFinishPrimitive(const char* fn, dnnl_primitive_desc_t pd, DnnlPrimitive* p);

// A process-wide cache of primitives by problem key. oneDNN picks its
// blocking for the thread count it sees at creation and must run with that
// count, so keys include the thread count. Creation takes milliseconds, so it
// happens outside the lock; two threads racing on one new key both create and
// one result is kept. Full at `capacity`, the cache is emptied (a dynamic
// batch size could otherwise grow it without bound).
template <typename Key, typename T>
class DnnlPrimitiveCache {
 public:
  explicit DnnlPrimitiveCache(size_t capacity) : capacity_(capacity) {}

  // `create`: () -> Result<std::shared_ptr<const T>>, called on a miss.
  template <typename Create>
  Result<std::shared_ptr<const T>> Get(const Key& key, Create create) {
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const T> created, create());
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    if (entries_.size() >= capacity_) entries_.clear();
    entries_.emplace(key, created);
    return created;
  }

  size_t size() {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return entries_.size();
  }

 private:
  const size_t capacity_;
  std::shared_mutex mu_;
  std::map<Key, std::shared_ptr<const T>> entries_;
};

// One argument of an execution: DNNL_ARG_*, its memory descriptor and data.
struct DnnlExecArg {
  int arg;
  const dnnl_memory_desc_t* md;
  void* data;
};

// Executes `p` on `args` with a fresh stream and scratchpad and waits.
Status DnnlExecute(const char* fn, dnnl_engine_t engine, const DnnlPrimitive& p, const std::vector<DnnlExecArg>& args);

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_DNNL_COMMON_H_
