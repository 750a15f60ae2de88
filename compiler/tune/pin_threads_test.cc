#include "compiler/tune/pin_threads.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_topology.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace tune {
namespace {

// Each of the pool's threads' CPU affinity, read by the thread itself: one
// task per thread, every task waiting until all have started.
std::vector<cpu_set_t> ThreadMasks(ThreadPool* pool) {
  const int n = pool->num_threads();
  std::vector<cpu_set_t> masks(static_cast<size_t>(n));
  std::atomic<int> arrived{0};
  pool->ParallelFor(n, [&](int32_t) {
    const int me = arrived.fetch_add(1);
    while (arrived.load() < n) std::this_thread::yield();
    CPU_ZERO(&masks[static_cast<size_t>(me)]);
    pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), &masks[static_cast<size_t>(me)]);
  });
  return masks;
}

// Run in a thread of its own, so that pinning its caller leaves the test
// process's main thread as it was.
template <typename F>
void InFreshThread(F f) {
  std::thread t(f);
  t.join();
}

TEST(PinPoolThreadsTest, EachThreadOnACoreOfItsOwn) {
  const std::vector<int> cores = OneCpuPerPhysicalCore();
  if (cores.size() < 2) GTEST_SKIP() << "needs two physical cores, this machine has " << cores.size();
  InFreshThread([&] {
    ThreadPool pool(2);
    std::string why;
    std::vector<int> cpus = PinPoolThreads(&pool, &why);
    ASSERT_EQ(cpus.size(), 2u) << why;
    EXPECT_NE(cpus[0], cpus[1]);
    std::set<int> seen;
    for (const cpu_set_t& m : ThreadMasks(&pool)) {
      ASSERT_EQ(CPU_COUNT(&m), 1);
      for (int c : cpus)
        if (CPU_ISSET(c, &m)) seen.insert(c);
    }
    EXPECT_EQ(seen, std::set<int>(cpus.begin(), cpus.end()));
  });
}

TEST(PinPoolThreadsTest, OneThreadIsLeftAlone) {
  ThreadPool pool(1);
  std::string why;
  EXPECT_TRUE(PinPoolThreads(&pool, &why).empty());
  EXPECT_EQ(why, "one thread");
}

TEST(PinPoolThreadsTest, MoreThreadsThanCoresArePinnedNowhere) {
  const std::vector<int> cores = OneCpuPerPhysicalCore();
  ASSERT_FALSE(cores.empty());
  InFreshThread([&] {
    cpu_set_t before;
    CPU_ZERO(&before);
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
    const int n = static_cast<int>(cores.size()) + 1;
    ThreadPool pool(n);
    std::string why;
    EXPECT_TRUE(PinPoolThreads(&pool, &why).empty());
    EXPECT_EQ(why, std::to_string(n) + " threads on " + std::to_string(cores.size()) + " physical cores");
    for (const cpu_set_t& m : ThreadMasks(&pool)) EXPECT_TRUE(CPU_EQUAL(&m, &before));
  });
}

TEST(CpuTopologyTest, OneCpuPerCoreWithinTheAffinityMask) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  const std::vector<int> cpus = OneCpuPerPhysicalCore();
  ASSERT_FALSE(cpus.empty());
  EXPECT_LE(static_cast<int>(cpus.size()), CPU_COUNT(&mask));
  for (size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_TRUE(CPU_ISSET(cpus[i], &mask)) << cpus[i];
    if (i > 0) {
      EXPECT_LT(cpus[i - 1], cpus[i]);
    }
  }
  EXPECT_EQ(static_cast<int>(cpus.size()), DefaultThreadCount());
}

}  // namespace
}  // namespace tune
}  // namespace kiln
