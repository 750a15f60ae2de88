#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace kiln {
namespace {

// Runs ParallelFor(n) and checks every index ran exactly once.
void ExpectEachIndexOnce(ThreadPool* pool, int32_t n) {
  std::unique_ptr<std::atomic<int32_t>[]> hits(new std::atomic<int32_t>[n > 0 ? n : 1]);
  for (int32_t i = 0; i < n; ++i) hits[i] = 0;
  pool->ParallelFor(n, [&](int32_t i) { hits[i].fetch_add(1); });
  for (int32_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
}

TEST(ThreadPoolTest, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int32_t n : {0, 1, 2, 3, 5, 8, 13, 64, 100, 1000, 4097}) ExpectEachIndexOnce(&pool, n);
  }
}

TEST(ThreadPoolTest, DefaultSizeIsPositive) {
  ThreadPool pool;
  EXPECT_GE(pool.num_threads(), 1);
  EXPECT_GE(ThreadPool::Global()->num_threads(), 1);
  EXPECT_EQ(ThreadPool::Global(), ThreadPool::Global());
}

TEST(ThreadPoolTest, ManyLaunchesInARow) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 500; ++round) {
    pool.ParallelFor(16, [&](int32_t i) { sum.fetch_add(i); });
  }
  EXPECT_EQ(sum.load(), 500 * (15 * 16 / 2));
}

TEST(ThreadPoolTest, NestedLaunchRunsInline) {
  ThreadPool pool(4);
  constexpr int32_t kOuter = 8, kInner = 16;
  std::atomic<int32_t> hits[kOuter * kInner];
  for (auto& h : hits) h = 0;
  std::atomic<int32_t> wrong_thread{0};
  pool.ParallelFor(kOuter, [&](int32_t o) {
    std::thread::id outer_thread = std::this_thread::get_id();
    pool.ParallelFor(kInner, [&](int32_t i) {
      if (std::this_thread::get_id() != outer_thread) wrong_thread.fetch_add(1);
      hits[o * kInner + i].fetch_add(1);
    });
  });
  EXPECT_EQ(wrong_thread.load(), 0);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

struct ErrorClosure {
  int32_t failing_task;
  std::atomic<int32_t> ran{0};
};

int32_t FailOne(int32_t task, int32_t, void* closure) {
  auto* c = static_cast<ErrorClosure*>(closure);
  c->ran.fetch_add(1);
  return task == c->failing_task ? 7 : 0;
}

TEST(ThreadPoolTest, ErrorResultPropagates) {
  for (int threads : {1, 4}) {
    ThreadPool pool(threads);
    ErrorClosure c;
    c.failing_task = 5;
    EXPECT_EQ(pool.ParallelFor(32, FailOne, &c), 7);
    ErrorClosure none;
    none.failing_task = -1;
    EXPECT_EQ(pool.ParallelFor(32, FailOne, &none), 0);
    EXPECT_EQ(none.ran.load(), 32);
  }
}

TEST(ThreadPoolTest, ConcurrentLaunchesFromFourThreads) {
  ThreadPool pool(4);
  constexpr int kCallers = 4, kRounds = 100, kTasks = 37;
  std::atomic<int64_t> totals[kCallers];
  for (auto& t : totals) t = 0;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        std::atomic<int32_t> hits[kTasks];
        for (auto& h : hits) h = 0;
        pool.ParallelFor(kTasks, [&](int32_t i) {
          hits[i].fetch_add(1);
          totals[c].fetch_add(1);
        });
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      }
    });
  }
  for (auto& t : callers) t.join();
  for (auto& t : totals) EXPECT_EQ(t.load(), kRounds * kTasks);
}

TEST(ThreadPoolTest, KernelEnvLaunchesOnThePool) {
  ThreadPool pool(3);
  kiln_kernel_env env = MakeKernelEnv(&pool);
  EXPECT_EQ(env.abi_version, KILN_KERNEL_ABI_VERSION);
  EXPECT_EQ(env.num_threads, 3);
  ErrorClosure c;
  c.failing_task = -1;
  EXPECT_EQ(env.parallel_for(env.ctx, 50, FailOne, &c), 0);
  EXPECT_EQ(c.ran.load(), 50);
  void* p = env.workspace_alloc(env.ctx, 100, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  env.workspace_free(env.ctx, p);

  kiln_kernel_env serial = MakeKernelEnv(nullptr);
  EXPECT_EQ(serial.num_threads, 1);
  ErrorClosure e;
  e.failing_task = 2;
  EXPECT_EQ(serial.parallel_for(serial.ctx, 10, FailOne, &e), 7);
  EXPECT_EQ(e.ran.load(), 3);  // serial execution stops at the first error
}

}  // namespace
}  // namespace kiln
