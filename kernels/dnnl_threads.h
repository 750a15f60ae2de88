// Running oneDNN on Kiln's thread count without oversubscribing the cores.
//
// The Debian oneDNN (2.6) uses OpenMP threads, not Kiln's ThreadPool (the
// threadpool interop exists only in THREADPOOL builds). So around every oneDNN
// call a DnnlThreadScope:
//   1. takes the calling thread's current pool (ThreadPool::Current(): the
//      pool of the VM context or graph session running the call; outside any
//      call, ThreadPool::Global());
//   2. parks that pool: its idle workers stop spinning and sleep before the
//      OpenMP team starts, so the two never compete for the cores;
//   3. sets the calling thread's OpenMP thread count (omp_set_num_threads, an
//      ICV private to this thread) to the pool's size, so oneDNN creates and
//      runs its primitives with exactly the session's thread count;
//   4. restores the previous OpenMP count when it ends, so code of the
//      embedding application that uses OpenMP on this thread is unaffected.
// The OpenMP functions are looked up in the process (the OpenMP runtime that
// libdnnl itself loaded), so Kiln does not link an OpenMP runtime of its own;
// where none is found (a non-OpenMP oneDNN build), only the parking happens.
//
// Thread-safe: everything it touches is per calling thread, except Park.
#ifndef KILN_KERNELS_DNNL_THREADS_H_
#define KILN_KERNELS_DNNL_THREADS_H_

namespace kiln {

class ThreadPool;

namespace kernels {

class DnnlThreadScope {
 public:
  DnnlThreadScope();
  ~DnnlThreadScope();
  DnnlThreadScope(const DnnlThreadScope&) = delete;
  DnnlThreadScope& operator=(const DnnlThreadScope&) = delete;

  // The thread count oneDNN runs with inside this scope.
  int num_threads() const { return num_threads_; }

 private:
  int num_threads_;
  int previous_omp_threads_ = -1;  // -1: OpenMP not found, nothing to restore
};

// Test and diagnostic hooks. The OpenMP thread count (omp_get_max_threads())
// that the last oneDNN call on this thread ran with, or -1 when this process
// has no OpenMP runtime or no call ran yet; and the calling thread's OpenMP
// thread count now (-1 without OpenMP).
int DnnlLastOmpThreads();
int OmpMaxThreads();

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_DNNL_THREADS_H_
