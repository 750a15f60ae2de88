#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <string>

#include "runtime/allocator.h"
#include "runtime/cpu_topology.h"

namespace kiln {
namespace {

thread_local bool tls_in_task = false;
thread_local ThreadPool* tls_current = nullptr;

// How long an idle worker polls for the next launch before sleeping: kernels
// follow each other within microseconds, and a futex wake costs tens of them.
constexpr auto kSpinTime = std::chrono::microseconds(200);
// How long a launcher whose own tasks are done polls for the others' before it
// sleeps. Past this a worker is most likely off its core (the machine runs
// something else too); sleeping frees the launcher's core for it.
constexpr auto kJoinSpinTime = std::chrono::microseconds(50);
// Polls between two reads of the clock, or two yields.
constexpr int kPollsPerCheck = 64;
// At most this many launch records per pool (see ThreadPool::Launch).
constexpr int kMaxLaunchRecords = 8;

// A hint to the core that this is a spin-wait loop (frees the pipeline for an
// SMT sibling, and saves power).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

int CountPhysicalCores() {
  std::vector<int> cpus = OneCpuPerPhysicalCore();
  if (cpus.empty()) {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    return n > 0 ? n : 1;
  }
  return std::max(1, std::min(static_cast<int>(cpus.size()), kMaxThreads));
}

}  // namespace

int DefaultThreadCount() {
  static const int count = CountPhysicalCores();
  return count;
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = DefaultThreadCount();
  num_threads_ = std::min(num_threads, kMaxThreads);
  // Each new worker counts as spinning until it first goes to sleep, so Park()
  // also waits for workers that have not started running yet.
  spinning_.store(num_threads_ - 1);
  num_launches_ = std::max(2, std::min(num_threads_, kMaxLaunchRecords));
  launches_.reset(new Launch[num_launches_]);
  for (int i = 0; i < num_launches_; ++i) {
    launches_[i].slots.reset(new Slot[num_threads_]);
    launches_[i].finished.reset(new Finished[num_threads_]);
  }
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
    waking_.fetch_add(sleeping_.load());
    sleeping_.store(0);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool* ThreadPool::Shared(int num_threads) {
  if (num_threads <= 0) num_threads = DefaultThreadCount();
  num_threads = std::min(num_threads, kMaxThreads);
  // Never destroyed: kernels may run during static destruction, and modules,
  // contexts and graph sessions hold raw pointers to these pools.
  static std::mutex* mu = new std::mutex();
  static auto* pools = new std::map<int, ThreadPool*>();
  std::lock_guard<std::mutex> lock(*mu);
  ThreadPool*& pool = (*pools)[num_threads];
  if (pool == nullptr) pool = new ThreadPool(num_threads);
  return pool;
}

ThreadPool* ThreadPool::Global() {
  static ThreadPool* pool = Shared(0);
  return pool;
}

ThreadPool* ThreadPool::Current() { return tls_current; }

ThreadPool::ScopedCurrent::ScopedCurrent(ThreadPool* pool) : previous_(tls_current) { tls_current = pool; }

ThreadPool::ScopedCurrent::~ScopedCurrent() { tls_current = previous_; }

int ThreadPool::num_sleeping_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sleeping_.load();
}

void ThreadPool::RunTasks(Launch* launch, int slot) {
  tls_in_task = true;
  // The record is not dealt again while this thread holds a reference, so
  // relaxed reads see what the launcher wrote before it published the record
  // (by its seq_cst read of launch_ for a worker, its own writes for the
  // launcher).
  const kiln_task_fn fn = launch->fn.load(std::memory_order_relaxed);
  void* const closure = launch->closure.load(std::memory_order_relaxed);
  const int32_t num_tasks = launch->num_tasks.load(std::memory_order_relaxed);
  std::atomic<int32_t>& finished = launch->finished[slot].count;
  int32_t mine = 0;
  // Its own range first, then the others' leftovers, starting with the next
  // slot so that thieves spread over different victims. A claim is one
  // fetch_add: every index below `end` is handed to exactly one thread.
  for (int k = 0; k < num_threads_; ++k) {
    Slot& s = launch->slots[(slot + k) % num_threads_];
    const int32_t end = s.end.load(std::memory_order_relaxed);
    while (s.next.load(std::memory_order_relaxed) < end) {
      int32_t i = s.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= end) break;
      int32_t r = fn(i, num_tasks, closure);
      if (r != 0) {
        int32_t expected = 0;
        launch->result.compare_exchange_strong(expected, r, std::memory_order_relaxed);
      }
      // seq_cst: with the launcher's store of launcher_waits, one of the two
      // sides sees the other (WaitForTasks). The release half publishes the
      // task's writes (and result) to the launcher. The count is this
      // thread's own (Finished), so the store stays in its core's cache; the
      // flag is written once a launch at most, so reading it is a hit too.
      finished.store(++mine, std::memory_order_seq_cst);
      if (launch->launcher_waits.load(std::memory_order_seq_cst) &&
          CountFinished(launch, std::memory_order_seq_cst) == num_tasks) {
        std::lock_guard<std::mutex> lock(launch->join_mu);
        launch->join_.notify_one();
      }
    }
  }
  tls_in_task = false;
}

void ThreadPool::WorkerLoop(int slot) {
  uint64_t seen = 0;
  for (;;) {
    // Counted in spinning_ here (by the constructor, after a wake-up, or
    // after a launch). park_ is read after that count became visible, so
    // Park() either sees this worker spinning and waits, or this worker sees
    // park_ and stops. The poll is a load and a pause; every kPollsPerCheck
    // polls the clock is read and the core offered to whatever else is
    // runnable on it.
    auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (int polls = 1; generation_.load(std::memory_order_acquire) == seen && !park_.load(); ++polls) {
      if (polls % kPollsPerCheck == 0) {
        if (std::chrono::steady_clock::now() >= spin_until) break;
        std::this_thread::yield();
      } else {
        CpuRelax();
      }
    }
    const uint64_t now = generation_.load(std::memory_order_acquire);
    if (now != seen) {
      // Something new, without taking mu_: a launch, or the destructor. The
      // mutex's line would cross between the cores twice more per launch
      // (this worker's lock, the launcher's), each a round trip of up to
      // half a microsecond when the host places the CPUs far apart.
      seen = now;
      if (stop_.load(std::memory_order_acquire)) return;
      Launch* launch = launch_.load(std::memory_order_seq_cst);
      if (launch == nullptr) continue;  // over already
      // The reference first, then launch_ once more: the launcher clears
      // launch_ before it drops its own reference (all four seq_cst), so if
      // launch_ still names the record, the record is the live launch and
      // stays so until this reference goes. Otherwise the record may be free
      // or being filled for the next launch: leave it untouched (the
      // launcher counts its own reference on top of any such passing one).
      launch->refs.fetch_add(1, std::memory_order_seq_cst);
      if (launch_.load(std::memory_order_seq_cst) != launch) {
        launch->refs.fetch_sub(1, std::memory_order_release);
        continue;
      }
      spinning_.fetch_sub(1);  // active: in no count until it spins again
      RunTasks(launch, slot);
      spinning_.fetch_add(1);  // before leaving the launch (Park sees it)
      // release: this worker's last reads of the record happen before the
      // launcher (acquire in TakeFreeLaunch) writes it for a new launch.
      launch->refs.fetch_sub(1, std::memory_order_release);
      continue;
    }
    // Nothing new for kSpinTime, or asked to park: sleep until a launch.
    std::unique_lock<std::mutex> lock(mu_);
    // Every worker is counted in exactly one state (spinning, sleeping,
    // waking, active); a move increments the new state before it decrements
    // the old one, so Park() never sees a worker in no state at all.
    // seq_cst: with the launcher's bump of generation_ and its read of
    // sleeping_ (ParallelFor), either this read sees the new generation or
    // the launcher sees this sleeper and wakes it (under mu_, so not before
    // this thread waits).
    sleeping_.fetch_add(1, std::memory_order_seq_cst);
    spinning_.fetch_sub(1);
    if (generation_.load(std::memory_order_seq_cst) != seen) {
      spinning_.fetch_add(1);
      sleeping_.fetch_sub(1);
      continue;
    }
    // Whoever bumps generation_ and finds sleepers moves them to waking_
    // (under mu_), so a woken worker that has not run yet is never counted
    // asleep. The destructor bumps it too.
    while (generation_.load() == seen) wake_.wait(lock);
    spinning_.fetch_add(1);
    waking_.fetch_sub(1);
    // Back to the top with `seen` unchanged: it finds the new generation.
  }
}

void ThreadPool::Park() {
  if (workers_.empty()) return;
  park_.store(true);
  // A launch from another thread clears park_; its workers are busy, not
  // spinning, and will spin again after it as usual.
  // waking_ is read before spinning_: a waking worker counts itself spinning
  // before it stops counting as waking, so one of the two reads sees it.
  for (;;) {
    if (!park_.load()) return;
    int32_t waking = waking_.load();
    int32_t spinning = spinning_.load();
    if (waking == 0 && spinning == 0) return;
    std::this_thread::yield();
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
  // One launch at a time uses the workers. A caller that finds them taken by
  // another thread's launch runs its tasks itself rather than wait for it:
  // concurrent calls on one shared pool never block each other, and the
  // cores stay busy either way (the other launch occupies the workers).
  std::unique_lock<std::mutex> one_launch(launch_mu_, std::try_to_lock);
  if (!one_launch.owns_lock()) {
    inline_launches_.fetch_add(1, std::memory_order_relaxed);
    for (int32_t i = 0; i < num_tasks; ++i) {
      int32_t r = fn(i, num_tasks, closure);
      if (r != 0) return r;
    }
    return 0;
  }
  // Only the holder of launch_mu_ writes it: no locked add needed.
  parallel_launches_.store(parallel_launches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  Launch* launch = TakeFreeLaunch();
  launch->fn.store(fn, std::memory_order_relaxed);
  launch->closure.store(closure, std::memory_order_relaxed);
  launch->num_tasks.store(num_tasks, std::memory_order_relaxed);
  for (int t = 0; t < num_threads_; ++t) launch->finished[t].count.store(0, std::memory_order_relaxed);
  launch->result.store(0, std::memory_order_relaxed);
  launch->launcher_waits.store(false, std::memory_order_relaxed);
  // The launcher's own reference, added to those of workers that looked at
  // the record in passing (WorkerLoop) and are about to drop theirs.
  launch->refs.fetch_add(1, std::memory_order_relaxed);
  // Deal the tasks: slot t gets [t·n/T, (t+1)·n/T). Published to the workers
  // by the store of launch_ below.
  for (int t = 0; t < num_threads_; ++t) {
    launch->slots[t].next.store(static_cast<int32_t>(int64_t{t} * num_tasks / num_threads_),
                                std::memory_order_relaxed);
    launch->slots[t].end.store(static_cast<int32_t>(int64_t{t + 1} * num_tasks / num_threads_),
                               std::memory_order_relaxed);
  }
  // Published without mu_ (see WorkerLoop); seq_cst for the reference
  // handshake with a joining worker and the sleep handshake below.
  if (park_.load(std::memory_order_relaxed)) park_.store(false);  // the workers may spin again after this
  launch_.store(launch, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) > 0) {
    wake_ups_.store(wake_ups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mu_);
      waking_.fetch_add(sleeping_.load());
      sleeping_.store(0);
    }
    wake_.notify_all();
  }
  RunTasks(launch, 0);
  WaitForTasks(launch, num_tasks);
  // The counts are final (every task finished) and in this core's cache from
  // the wait.
  parallel_tasks_.store(parallel_tasks_.load(std::memory_order_relaxed) + static_cast<uint64_t>(num_tasks),
                        std::memory_order_relaxed);
  worker_tasks_.store(worker_tasks_.load(std::memory_order_relaxed) + static_cast<uint64_t>(
                          num_tasks - launch->finished[0].count.load(std::memory_order_relaxed)),
                      std::memory_order_relaxed);
  // Before the launcher's reference goes (seq_cst, see WorkerLoop).
  launch_.store(nullptr, std::memory_order_seq_cst);
  int32_t result = launch->result.load(std::memory_order_relaxed);
  // Workers still inside (between two claims, or not yet at their first)
  // find nothing left and drop their references on their own time.
  launch->refs.fetch_sub(1, std::memory_order_release);
  return result;
}

ThreadPool::Launch* ThreadPool::TakeFreeLaunch() {
  // Round-robin: the record just used is the likeliest to have a straggler.
  // A worker holds one reference at a time, so a free record turns up; the
  // wait is for num_launches_ stragglers at once and ends when they run.
  for (int polls = 1;; ++polls) {
    for (int k = 0; k < num_launches_; ++k) {
      Launch* l = &launches_[(next_launch_ + k) % num_launches_];
      // acquire: pairs with the release decrements, so the last holder's
      // reads of the record happen before it is rewritten.
      if (l->refs.load(std::memory_order_acquire) == 0) {
        next_launch_ = (next_launch_ + k + 1) % num_launches_;
        return l;
      }
    }
    if (polls % kPollsPerCheck == 0) std::this_thread::yield();
    else CpuRelax();
  }
}

int32_t ThreadPool::CountFinished(const Launch* launch, std::memory_order order) const {
  int32_t total = 0;
  for (int t = 0; t < num_threads_; ++t) total += launch->finished[t].count.load(order);
  return total;
}

void ThreadPool::WaitForTasks(Launch* launch, int32_t num_tasks) {
  // acquire: every task's writes (and its result) happen before the launcher
  // returns.
  auto spin_until = std::chrono::steady_clock::now() + kJoinSpinTime;
  for (int polls = 1; CountFinished(launch, std::memory_order_acquire) < num_tasks; ++polls) {
    if (polls % kPollsPerCheck != 0) {
      CpuRelax();
      continue;
    }
    if (std::chrono::steady_clock::now() < spin_until) continue;
    // A task is still running on a worker that is probably waiting for a
    // core: sleep, so that it can have this one. The store and a worker's
    // store of its count are both seq_cst, so either the predicate below sees
    // the last task finished or the worker that finishes it sees the flag,
    // finds every task counted and notifies under join_mu (after this thread
    // waits, or before it checks).
    join_sleeps_.store(join_sleeps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    launch->launcher_waits.store(true, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> lock(launch->join_mu);
    launch->join_.wait(lock, [&] { return CountFinished(launch, std::memory_order_seq_cst) >= num_tasks; });
    return;
  }
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
