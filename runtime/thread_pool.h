// ThreadPool: a fixed set of workers that run parallel-for launches from
// generated kernels (through kiln_kernel_env::parallel_for) and library kernels.
//
// The calling thread takes part in every launch, so a pool of N threads has N-1
// workers; a pool of 1 thread runs every launch inline on the caller. Idle
// workers spin briefly after a launch (the next kernel usually follows within
// microseconds) and then sleep on a condition variable, so an idle pool costs
// no CPU. Park() sends them to sleep at once: a library that brings its own
// threads (oneDNN's OpenMP team) calls it before it runs, so Kiln's spinning
// workers never compete with it for the cores.
//
// A launch and its join. The tasks are dealt as one contiguous run per thread
// and a thread that has finished its own takes the others' leftovers one at a
// time, so a worker whose core is busy with another process (or that wakes
// late) only holds up the launch by the one task it is running. The launcher
// returns as soon as every task has finished: a worker that has not yet left
// the launch (preempted between two claims) holds a reference to the launch's
// record, not the launcher. Once its own tasks are done the launcher polls
// for the others' for a few tens of microseconds and then sleeps until the
// last one ends, which frees its core for a preempted worker. Generated
// kernels launch only loops worth it (tir/parallel_work.h); every launch
// runs on the caller too.
//
// Sizing. The thread count is a session option (vm::LoadOptions /
// vm::ContextOptions, graph_executor::GraphSessionOptions, the C API's
// kiln_context_options, kiln-run/kiln-bench --threads); the default is
// DefaultThreadCount(), the number of physical cores this process may run on.
// Pools are shared per size: Shared(n) hands every caller asking for n threads
// the same pool, so contexts of one size never oversubscribe each other, and
// contexts of different sizes coexist (each size has its own workers).
//
// The current pool. The VM and the graph executor make their pool the
// thread's Current() pool for the duration of a call (ScopedCurrent), so
// library kernels (packed functions, which get no environment) know how many
// threads to use and which workers to park.
//
// Thread-safe, and no caller waits for another: one launch at a time gets the
// workers; a launch from another thread while they are taken, and a launch
// from inside a task (no nested parallelism), runs inline on its caller.
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

// The largest thread count a session option may ask for.
constexpr int kMaxThreads = 1024;

// The number of physical cores in this process's CPU affinity mask (SMT
// siblings count once), at least 1. Computed once.
int DefaultThreadCount();

class ThreadPool {
 public:
  // num_threads <= 0: DefaultThreadCount(); more than kMaxThreads: kMaxThreads.
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

  // Stops the idle spin now: returns once no worker spins (each is asleep or,
  // if another thread launched meanwhile, working). The next launch wakes the
  // workers as usual. Cheap when they already sleep.
  void Park();

  // Test and diagnostic hooks: workers asleep on the condition variable, and
  // workers in their idle spin, at this instant.
  int num_sleeping_workers() const;
  int num_spinning_workers() const { return spinning_.load(); }
  // Diagnostics: launches so far that handed tasks to the workers (parallel
  // regions, each with a join), and launches of more than one task that ran
  // on their caller alone because another caller's launch had the workers.
  // (Launches from inside a task also run inline; they are not counted, to
  // keep the tasks off the launcher's lines.)
  uint64_t num_parallel_launches() const { return parallel_launches_.load(std::memory_order_relaxed); }
  uint64_t num_inline_launches() const { return inline_launches_.load(std::memory_order_relaxed); }
  // Tasks of the parallel launches so far, and how many of them the workers
  // ran (the launcher ran the rest): how much a second thread takes part.
  uint64_t num_parallel_tasks() const { return parallel_tasks_.load(std::memory_order_relaxed); }
  uint64_t num_worker_tasks() const { return worker_tasks_.load(std::memory_order_relaxed); }
  // Parallel launches that had to wake sleeping workers, and joins in which
  // the launcher slept until the last task ended (each a futex wake).
  uint64_t num_wake_ups() const { return wake_ups_.load(std::memory_order_relaxed); }
  uint64_t num_join_sleeps() const { return join_sleeps_.load(std::memory_order_relaxed); }

  // The pool of `num_threads` threads (<= 0: DefaultThreadCount(); clamped to
  // kMaxThreads) that every caller asking for that size shares. Created on
  // first use and kept for the life of the process (one per distinct size; an
  // idle pool only holds sleeping threads), so raw pointers to it never dangle.
  static ThreadPool* Shared(int num_threads);
  // Shared(0).
  static ThreadPool* Global();

  // The pool of the call running on this thread (see ScopedCurrent), or nullptr.
  static ThreadPool* Current();

  // Makes `pool` this thread's Current() until destroyed, then restores the
  // previous one (scopes nest). Not movable.
  class ScopedCurrent {
   public:
    explicit ScopedCurrent(ThreadPool* pool);
    ~ScopedCurrent();
    ScopedCurrent(const ScopedCurrent&) = delete;
    ScopedCurrent& operator=(const ScopedCurrent&) = delete;

   private:
    ThreadPool* previous_;
  };

 private:
  // Tasks are dealt out as one contiguous range per thread (slot 0 is the
  // caller, slot i worker i), so consecutive launches of the same shape give
  // each thread the same part of the data: a kernel reads what the previous
  // one wrote from its own core's cache. A thread claims its own tasks from
  // its slot's counter (a cache line only it writes, unless stolen from) and
  // then takes what is left in the other slots one task at a time, so a
  // thread whose core is busy elsewhere, or that wakes late, takes fewer
  // tasks and holds up nobody but the task it is running.
  struct alignas(64) Slot {
    std::atomic<int32_t> next{0};
    std::atomic<int32_t> end{0};
  };
  // How many of a launch's tasks one thread has finished, on a cache line
  // only that thread writes. A shared counter that every task incremented
  // moved its line between the cores once per task (16 times a launch);
  // between cores far apart (a virtual machine whose two CPUs the host runs
  // on different core complexes: a line's round trip 400 ns instead of 80)
  // that was microseconds per launch. The launcher reads the lines only
  // while it waits.
  struct alignas(64) Finished {
    std::atomic<int32_t> count{0};
  };
  // One launch's state. The pool owns a few of these and reuses them; the
  // launcher holds a reference for the duration of its call and every worker
  // that joins takes one more, so the launcher returns as soon as every task
  // has finished, without waiting for a worker that was preempted between
  // two claims (it finds the counters spent when it runs again, and drops its
  // reference). A record is dealt out again only once its count is back to 0.
  struct Launch {
    std::atomic<kiln_task_fn> fn{nullptr};
    std::atomic<void*> closure{nullptr};
    std::atomic<int32_t> num_tasks{0};
    std::atomic<int32_t> result{0};
    std::atomic<int32_t> refs{0};
    // The launcher sleeps on join_ once its short spin ran out (a worker is
    // off its core with a task in hand): its own core is then free for it.
    std::atomic<bool> launcher_waits{false};
    std::mutex join_mu;
    std::condition_variable join_;
    std::unique_ptr<Slot[]> slots;  // one per thread
    std::unique_ptr<Finished[]> finished;  // one per thread (0: the launcher)
  };
  // Tasks of `launch` finished by all threads (memory order `order`).
  int32_t CountFinished(const Launch* launch, std::memory_order order) const;
  void WorkerLoop(int slot);
  void RunTasks(Launch* launch, int slot);
  Launch* TakeFreeLaunch();
  void WaitForTasks(Launch* launch, int32_t num_tasks);

  int num_threads_;
  std::vector<std::thread> workers_;
  // Held by the one launch that has the workers. On a line of its own, as
  // are the groups below: every field a worker writes shares no line with
  // one the launcher writes on each launch (a shared line crosses between
  // the cores on every launch, up to half a microsecond each way).
  alignas(64) std::mutex launch_mu_;

  // What a spinning worker polls and a launch writes, on one line of their
  // own: a launch moves this line to the workers and back, and nothing else
  // of the pool's (no mutex: WorkerLoop). A launch stores launch_ (its
  // record) and then bumps generation_; it clears launch_ when its tasks are
  // done. A worker joins the launch_ it finds, taking a reference.
  alignas(64) std::atomic<uint64_t> generation_{0};
  std::atomic<Launch*> launch_{nullptr};
  std::atomic<bool> stop_{false};
  // park_ asks spinning workers to sleep; a launch clears it.
  std::atomic<bool> park_{false};
  // Workers waiting on wake_ with nothing new: written under mu_ (rarely),
  // read by every launch without it (seq_cst, with generation_).
  std::atomic<int32_t> sleeping_{0};

  alignas(64) mutable std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<int32_t> waking_{0};  // written under mu_: woken, not yet running

  // Every worker is in exactly one state: spinning (a new worker counts as
  // spinning until it first sleeps), sleeping, waking or active (in a launch).
  std::atomic<int32_t> spinning_{0};

  // The records, dealt round-robin by the launch that holds launch_mu_. Each
  // worker holds at most one reference at a time, so with one record per
  // thread (capped) the next one is nearly always free.
  alignas(64) std::unique_ptr<Launch[]> launches_;
  int num_launches_ = 0;
  int next_launch_ = 0;  // guarded by launch_mu_
  // Diagnostics, written by the launch holding launch_mu_ only; atomics so
  // that a read from another thread is no race.
  std::atomic<uint64_t> parallel_launches_{0};
  std::atomic<uint64_t> parallel_tasks_{0};  // written by the holder of launch_mu_
  std::atomic<uint64_t> worker_tasks_{0};    // written by the holder of launch_mu_
  std::atomic<uint64_t> wake_ups_{0};        // written by the holder of launch_mu_
  std::atomic<uint64_t> join_sleeps_{0};     // written by the holder of launch_mu_
  // Written by callers that found launch_mu_ taken (rare: several callers).
  alignas(64) std::atomic<uint64_t> inline_launches_{0};
};

// Fills a kiln_kernel_env that launches on `pool` (nullptr: run serially).
kiln_kernel_env MakeKernelEnv(ThreadPool* pool);

}  // namespace kiln

#endif  // KILN_RUNTIME_THREAD_POOL_H_
