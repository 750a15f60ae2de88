#include "compiler/tune/pin_threads.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/cpu_topology.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace tune {

std::vector<int> PinPoolThreads(ThreadPool* pool, std::string* why) {
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  if (threads <= 1) {
    *why = "one thread";
    return {};
  }
  const std::vector<int> cpus = OneCpuPerPhysicalCore();
  if (static_cast<int>(cpus.size()) < threads) {
    *why = std::to_string(threads) + " threads on " + std::to_string(cpus.size()) + " physical cores";
    return {};
  }
  cpu_set_t before;
  CPU_ZERO(&before);
  if (sched_getaffinity(0, sizeof(before), &before) != 0) {
    *why = "sched_getaffinity failed";
    return {};
  }
  // Which thread runs each task: every task waits until all have started,
  // so each is on a thread of its own (a worker that has not started yet,
  // or shares the launcher's CPU, runs whenever the others yield). The
  // threads are pinned afterwards, from here, by their handles (the workers
  // live as long as the pool).
  std::atomic<int> arrived{0};
  std::vector<pthread_t> handles(static_cast<size_t>(threads));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  pool->ParallelFor(threads, [&](int32_t) {
    const int me = arrived.fetch_add(1);
    handles[static_cast<size_t>(me)] = pthread_self();
    while (arrived.load() < threads && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  // A task that gave up at the deadline may have let its thread run a
  // second one: then fewer threads than tasks were seen.
  for (int i = 0; i < threads; ++i)
    for (int j = 0; j < i; ++j)
      if (pthread_equal(handles[static_cast<size_t>(i)], handles[static_cast<size_t>(j)])) {
        *why = "the pool's threads did not all start within a second";
        return {};
      }
  std::vector<int> taken;
  for (int i = 0; i < threads; ++i) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<size_t>(i)], &one);
    if (pthread_setaffinity_np(handles[static_cast<size_t>(i)], sizeof(one), &one) != 0) {
      // Undo: measure unpinned rather than half pinned.
      for (int k = 0; k < i; ++k) pthread_setaffinity_np(handles[static_cast<size_t>(k)], sizeof(before), &before);
      *why = "pthread_setaffinity_np failed";
      return {};
    }
    taken.push_back(cpus[static_cast<size_t>(i)]);
  }
  return taken;
}

}  // namespace tune
}  // namespace kiln
