// ThreadPool: a fixed set of workers that run parallel-for launches from
// generated kernels (through kiln_kernel_env::parallel_for) and library kernels.
//
// The calling thread takes part in every launch, so a pool of N threads has N-1
// workers. Idle workers spin briefly after a launch (the next kernel usually
// follows within microseconds) and then sleep on a condition variable, so an
// idle pool costs no CPU.
//
// Thread-safe: launches from several threads are serialized; a launch from
// inside a task runs inline on the calling thread (no nested parallelism).
#ifndef KILN_RUNTIME_THREAD_POOL_H_
#define KILN_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/kiln_kernel_abi.h"

namespace kiln {

class ThreadPool {
 public:
  // num_threads <= 0: the number of hardware threads.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(task_id, num_tasks, closure) for task_id in [0, num_tasks); returns
  // 0 or the first non-zero result.
  int32_t ParallelFor(int32_t num_tasks, kiln_task_fn fn, void* closure);
  // Convenience for C++ callers.
  void ParallelFor(int32_t num_tasks, const std::function<void(int32_t)>& fn);

  // A process-wide pool with the default size, created on first use.
  static ThreadPool* Global();

 private:
  struct Launch {
    kiln_task_fn fn;
    void* closure;
    int32_t num_tasks;
    std::atomic<int32_t> next{0};
    std::atomic<int32_t> done{0};
    std::atomic<int32_t> result{0};
  };
  void WorkerLoop();
  static void RunTasks(Launch* launch);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex launch_mu_;  // one launch at a time

  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;

  // The launch in progress (guarded by mu_), and how many workers are inside
  // it; the launcher waits for them to leave before its Launch goes away.
  Launch* launch_ = nullptr;
  std::atomic<int32_t> active_{0};
};

// Fills a kiln_kernel_env that launches on `pool` (nullptr: run serially).
kiln_kernel_env MakeKernelEnv(ThreadPool* pool);

}  // namespace kiln

#endif  // KILN_RUNTIME_THREAD_POOL_H_
