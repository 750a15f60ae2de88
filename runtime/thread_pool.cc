#include "runtime/thread_pool.h"

#include <chrono>
#include <cstdlib>

#include "runtime/allocator.h"

namespace kiln {
namespace {

thread_local bool tls_in_task = false;

// How long an idle worker polls for the next launch before sleeping.
constexpr auto kSpinTime = std::chrono::microseconds(200);

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (num_threads <= 0) num_threads = 1;
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool* ThreadPool::Global() {
  static ThreadPool* pool = new ThreadPool(0);  // lives for the process
  return pool;
}

void ThreadPool::RunTasks(Launch* launch) {
  tls_in_task = true;
  for (;;) {
    int32_t i = launch->next.fetch_add(1);
    if (i >= launch->num_tasks) break;
    int32_t r = launch->fn(i, launch->num_tasks, launch->closure);
    if (r != 0) {
      int32_t expected = 0;
      launch->result.compare_exchange_strong(expected, r);
    }
    launch->done.fetch_add(1, std::memory_order_acq_rel);
  }
  tls_in_task = false;
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    }
    Launch* launch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_) return;
      launch = launch_;
      if (launch != nullptr) active_.fetch_add(1);
    }
    if (launch != nullptr) {
      RunTasks(launch);
      active_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

int32_t ThreadPool::ParallelFor(int32_t num_tasks, kiln_task_fn fn, void* closure) {
  if (num_tasks <= 0) return 0;
  if (num_tasks == 1 || workers_.empty() || tls_in_task) {
    for (int32_t i = 0; i < num_tasks; ++i) {
      int32_t r = fn(i, num_tasks, closure);
      if (r != 0) return r;
    }
    return 0;
  }
  std::lock_guard<std::mutex> one_launch(launch_mu_);
  Launch launch;
  launch.fn = fn;
  launch.closure = closure;
  launch.num_tasks = num_tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    launch_ = &launch;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks(&launch);
  while (launch.done.load(std::memory_order_acquire) < num_tasks) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> lock(mu_);
    launch_ = nullptr;
  }
  while (active_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  return launch.result.load();
}

void ThreadPool::ParallelFor(int32_t num_tasks, const std::function<void(int32_t)>& fn) {
  auto trampoline = [](int32_t i, int32_t, void* c) -> int32_t {
    (*static_cast<const std::function<void(int32_t)>*>(c))(i);
    return 0;
  };
  ParallelFor(num_tasks, trampoline, const_cast<std::function<void(int32_t)>*>(&fn));
}

namespace {

int32_t EnvParallelFor(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure) {
  auto* pool = static_cast<ThreadPool*>(ctx);
  if (pool == nullptr) {
    for (int32_t i = 0; i < num_tasks; ++i) {
      int32_t r = fn(i, num_tasks, closure);
      if (r != 0) return r;
    }
    return 0;
  }
  return pool->ParallelFor(num_tasks, fn, closure);
}

void* EnvWorkspaceAlloc(void*, uint64_t nbytes, uint64_t alignment) {
  return DefaultCpuAllocator()->Allocate(nbytes, alignment);
}

void EnvWorkspaceFree(void*, void* ptr) { DefaultCpuAllocator()->Free(ptr); }

void EnvSetError(void*, const char*) {}

}  // namespace

kiln_kernel_env MakeKernelEnv(ThreadPool* pool) {
  kiln_kernel_env env{};
  env.abi_version = KILN_KERNEL_ABI_VERSION;
  env.num_threads = pool ? pool->num_threads() : 1;
  env.ctx = pool;
  env.parallel_for = EnvParallelFor;
  env.workspace_alloc = EnvWorkspaceAlloc;
  env.workspace_free = EnvWorkspaceFree;
  env.set_error = EnvSetError;
  return env;
}

}  // namespace kiln
