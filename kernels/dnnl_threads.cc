#include "kernels/dnnl_threads.h"

#include <dlfcn.h>

#include "runtime/thread_pool.h"

namespace kiln {
namespace kernels {
namespace {

using OmpSetFn = void (*)(int);
using OmpGetFn = int (*)();

struct OmpApi {
  OmpSetFn set_num_threads = nullptr;
  OmpGetFn get_max_threads = nullptr;
};

// Looked up once in the global scope, where libdnnl's OpenMP runtime lives.
const OmpApi& Omp() {
  static const OmpApi api = [] {
    OmpApi a;
    a.set_num_threads = reinterpret_cast<OmpSetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    a.get_max_threads = reinterpret_cast<OmpGetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    if (a.set_num_threads == nullptr || a.get_max_threads == nullptr) a = OmpApi();
    return a;
  }();
  return api;
}

thread_local int tls_last_omp_threads = -1;

}  // namespace

DnnlThreadScope::DnnlThreadScope() {
  ThreadPool* pool = ThreadPool::Current();
  if (pool == nullptr) pool = ThreadPool::Global();
  num_threads_ = pool->num_threads();
  pool->Park();
  const OmpApi& omp = Omp();
  if (omp.set_num_threads != nullptr) {
    previous_omp_threads_ = omp.get_max_threads();
    if (previous_omp_threads_ != num_threads_) omp.set_num_threads(num_threads_);
    tls_last_omp_threads = omp.get_max_threads();
  }
}

DnnlThreadScope::~DnnlThreadScope() {
  const OmpApi& omp = Omp();
  if (previous_omp_threads_ > 0 && previous_omp_threads_ != num_threads_) omp.set_num_threads(previous_omp_threads_);
}

int DnnlLastOmpThreads() { return tls_last_omp_threads; }

int OmpMaxThreads() {
  const OmpApi& omp = Omp();
  return omp.get_max_threads != nullptr ? omp.get_max_threads() : -1;
}

}  // namespace kernels
}  // namespace kiln
