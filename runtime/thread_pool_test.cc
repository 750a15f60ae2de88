#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

TEST(ThreadPoolTest, EachThreadStartsOnItsOwnRange) {
  // Tasks are dealt as one contiguous range per thread, the caller's first
  // (so consecutive kernels give a core the same part of the data). The
  // caller starts on task 0 at once; another thread could only reach it
  // after running its own range, 3 tasks of 50 ms each.
  ThreadPool pool(4);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran_on(12);
  std::atomic<int32_t> count{0};
  pool.ParallelFor(12, [&](int32_t i) {
    ran_on[i] = std::this_thread::get_id();
    count.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  EXPECT_EQ(count.load(), 12);
  EXPECT_EQ(ran_on[0], caller);
  // The caller takes tasks from its own range in order until the range is
  // done: whatever it ran of 0..2 was a prefix.
  bool prefix = true;
  for (int i = 1; i < 3; ++i) {
    if (ran_on[i] == caller && ran_on[i - 1] != caller) prefix = false;
  }
  EXPECT_TRUE(prefix);
  // Ranges of uneven size and fewer tasks than threads still run each once.
  for (int32_t n : {1, 2, 3, 5, 6, 7}) ExpectEachIndexOnce(&pool, n);
}

// One worker is held up in the first task it takes until every other task
// has run: the launch only completes if the other threads take over what was
// dealt to it, one task at a time, and each index still runs exactly once.
// (A static split would leave the held worker's range to it alone, and the
// bounded wait below would run out and fail the check.)
TEST(ThreadPoolTest, OtherThreadsTakeOverADelayedWorkersTasks) {
  for (int threads : {2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int32_t n : {2, 5, 16, 33, 257}) {
      const std::thread::id caller = std::this_thread::get_id();
      std::unique_ptr<std::atomic<int32_t>[]> hits(new std::atomic<int32_t>[n]);
      for (int32_t i = 0; i < n; ++i) hits[i] = 0;
      std::atomic<int32_t> finished{0};
      std::atomic<bool> held{false}, held_waited_out{false};
      pool.ParallelFor(n, [&](int32_t i) {
        hits[i].fetch_add(1);
        if (std::this_thread::get_id() != caller && !held.exchange(true)) {
          // The held worker: wait (boundedly) for the n - 1 others.
          for (int k = 0; k < 20000 && finished.load() < n - 1; ++k) {
            std::this_thread::sleep_for(std::chrono::microseconds(500));
          }
          held_waited_out = finished.load() < n - 1;
        }
        finished.fetch_add(1);
      });
      EXPECT_EQ(finished.load(), n);
      EXPECT_FALSE(held_waited_out.load()) << "threads=" << threads << " n=" << n;
      for (int32_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads=" << threads << " n=" << n << " i=" << i;
    }
  }
}

// The launcher whose own tasks are done sleeps on the launch once its short
// spin runs out; the worker that finishes the last task wakes it. The
// caller's task waits for the worker to start the other one, which then
// takes 2 ms: far past the spin. Repeated, so that a lost wake-up would hang
// the test.
TEST(ThreadPoolTest, LauncherSleepsUntilTheLastTaskEnds) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 20; ++round) {
    int32_t ran[2] = {0, 0};  // plain ints: the join publishes the tasks' writes
    std::atomic<bool> worker_started{false};
    pool.ParallelFor(2, [&](int32_t i) {
      if (std::this_thread::get_id() == caller) {
        for (int k = 0; k < 20000 && !worker_started.load(); ++k) {
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
      } else {
        worker_started = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      ran[i] += 1;
    });
    EXPECT_TRUE(worker_started.load());
    EXPECT_EQ(ran[0], 1);
    EXPECT_EQ(ran[1], 1);
  }
}

// Each thread counts the tasks it finished on its own cache line, and a
// sleeping launcher is woken by whichever thread finishes the last one: three
// workers end their tasks at about the same time, 1 ms after the launcher
// began to sleep, so a wake-up lost between two of them would hang the test.
TEST(ThreadPoolTest, WorkersFinishingTogetherWakeTheSleepingLauncher) {
  ThreadPool pool(4);
  for (int round = 0; round < 30; ++round) {
    int32_t ran[4] = {0, 0, 0, 0};  // plain ints: the join publishes the tasks' writes
    std::atomic<int> started{0};
    pool.ParallelFor(4, [&](int32_t i) {
      if (i > 0) {
        started.fetch_add(1);
        for (int k = 0; k < 4000 && started.load() < 3; ++k) std::this_thread::sleep_for(std::chrono::microseconds(500));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ran[i] += 1;
    });
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ran[i], 1) << "round " << round << " task " << i;
  }
}

// Launches back to back from one thread, each with its own closure on the
// caller's stack: a worker that is late for one launch never runs a task of
// the next with the old one's function (the checks count per launch).
TEST(ThreadPoolTest, LateWorkersNeverRunAnotherLaunchsTasks) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 2000; ++round) {
      const int32_t n = 1 + round % 7;
      std::atomic<int32_t> hits[7];
      for (auto& h : hits) h = 0;
      struct Closure {
        std::atomic<int32_t>* hits;
        int32_t n;
      } c{hits, n};
      int32_t r = pool.ParallelFor(
          n,
          [](int32_t i, int32_t num_tasks, void* closure) -> int32_t {
            auto* cl = static_cast<Closure*>(closure);
            if (num_tasks != cl->n || i >= cl->n) return 99;
            cl->hits[i].fetch_add(1);
            return 0;
          },
          &c);
      ASSERT_EQ(r, 0) << "round " << round;
      for (int32_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round << " i=" << i;
    }
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

// A launch that finds the workers busy with another thread's launch runs on
// its own caller instead of waiting: here the first launch cannot finish
// until the second one has, which deadlocks if the second waits its turn.
TEST(ThreadPoolTest, SecondCallerDoesNotWaitForTheFirst) {
  ThreadPool pool(2);
  std::atomic<bool> first_running{false}, second_done{false};
  std::thread first([&] {
    pool.ParallelFor(2, [&](int32_t) {
      first_running.store(true);
      while (!second_done.load()) std::this_thread::yield();
    });
  });
  while (!first_running.load()) std::this_thread::yield();
  std::atomic<int32_t> ran{0};
  pool.ParallelFor(5, [&](int32_t) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 5);
  second_done.store(true);
  first.join();
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

TEST(ThreadPoolTest, OneThreadRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int32_t> elsewhere{0}, ran{0};
  pool.ParallelFor(64, [&](int32_t) {
    if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
    ran.fetch_add(1);
  });
  EXPECT_EQ(ran.load(), 64);
  EXPECT_EQ(elsewhere.load(), 0);
  pool.Park();  // no workers: returns at once
  EXPECT_EQ(pool.num_sleeping_workers(), 0);
}

TEST(ThreadPoolTest, DefaultThreadCountIsTheCores) {
  int n = DefaultThreadCount();
  EXPECT_GE(n, 1);
  unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0) {
    EXPECT_LE(n, static_cast<int>(hw));
  }
  EXPECT_EQ(ThreadPool().num_threads(), n);
}

TEST(ThreadPoolTest, SharedPoolsArePerSize) {
  ThreadPool* two = ThreadPool::Shared(2);
  ThreadPool* three = ThreadPool::Shared(3);
  EXPECT_EQ(two->num_threads(), 2);
  EXPECT_EQ(three->num_threads(), 3);
  EXPECT_EQ(ThreadPool::Shared(2), two);
  EXPECT_NE(two, three);
  EXPECT_EQ(ThreadPool::Shared(0), ThreadPool::Global());
  EXPECT_EQ(ThreadPool::Shared(DefaultThreadCount()), ThreadPool::Global());
  // Pools of two sizes run launches at the same time.
  std::atomic<int32_t> sum{0};
  std::thread other([&] { three->ParallelFor(30, [&](int32_t) { sum.fetch_add(1); }); });
  two->ParallelFor(20, [&](int32_t) { sum.fetch_add(1); });
  other.join();
  EXPECT_EQ(sum.load(), 50);
}

TEST(ThreadPoolTest, CurrentPoolScopesNest) {
  EXPECT_EQ(ThreadPool::Current(), nullptr);
  ThreadPool a(2), b(3);
  {
    ThreadPool::ScopedCurrent outer(&a);
    EXPECT_EQ(ThreadPool::Current(), &a);
    {
      ThreadPool::ScopedCurrent inner(&b);
      EXPECT_EQ(ThreadPool::Current(), &b);
      ThreadPool* seen_elsewhere = &b;
      std::thread t([&] { seen_elsewhere = ThreadPool::Current(); });  // per thread
      t.join();
      EXPECT_EQ(seen_elsewhere, nullptr);
    }
    EXPECT_EQ(ThreadPool::Current(), &a);
  }
  EXPECT_EQ(ThreadPool::Current(), nullptr);
}

TEST(ThreadPoolTest, ParkPutsEveryWorkerToSleep) {
  ThreadPool pool(4);
  pool.Park();  // also waits for workers that have not started yet
  EXPECT_EQ(pool.num_spinning_workers(), 0);
  EXPECT_EQ(pool.num_sleeping_workers(), 3);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int32_t> ran{0};
    pool.ParallelFor(16, [&](int32_t) { ran.fetch_add(1); });  // wakes them
    EXPECT_EQ(ran.load(), 16);
    pool.Park();
    EXPECT_EQ(pool.num_spinning_workers(), 0);
    EXPECT_EQ(pool.num_sleeping_workers(), 3);
  }
}

TEST(ThreadPoolTest, IdleWorkersStopSpinningByThemselves) {
  ThreadPool pool(3);
  pool.ParallelFor(8, [](int32_t) {});
  // The spin is bounded (~200 us); wait for it without a deadline on the
  // result (the loop only bounds a hang, it asserts nothing about time).
  for (int i = 0; i < 100000 && pool.num_sleeping_workers() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(pool.num_sleeping_workers(), 2);
  EXPECT_EQ(pool.num_spinning_workers(), 0);
}

TEST(ThreadPoolTest, ParkWhileOthersLaunch) {
  ThreadPool pool(3);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ran{0};
  std::thread launcher([&] {
    for (int r = 0; r < 300; ++r) pool.ParallelFor(9, [&](int32_t) { ran.fetch_add(1); });
    stop = true;
  });
  std::thread parker([&] {
    while (!stop.load()) pool.Park();
  });
  launcher.join();
  parker.join();
  EXPECT_EQ(ran.load(), 300 * 9);
  pool.Park();
  EXPECT_EQ(pool.num_sleeping_workers(), 2);
}

// Every launch here needs every thread: each task waits until all of the
// launch's tasks have started. Between rounds the workers are left to fall
// asleep (longer than the idle spin), or parked, or kept spinning, so each
// launch meets them in a different state; a lost wake-up or a worker that
// misses a launch it should join leaves a task waiting, and the wait is
// bounded so that it fails instead of hanging.
TEST(ThreadPoolTest, EveryThreadJoinsEachLaunchWhateverItsState) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 60; ++round) {
      if (round % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(400));
      if (round % 3 == 2) pool.Park();
      std::atomic<int32_t> started{0};
      std::atomic<int32_t> timed_out{0};
      pool.ParallelFor(threads, [&](int32_t) {
        started.fetch_add(1);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (started.load() < threads) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out.fetch_add(1);
            return;
          }
          std::this_thread::yield();
        }
      });
      ASSERT_EQ(timed_out.load(), 0) << threads << " threads, round " << round;
      ASSERT_EQ(started.load(), threads);
    }
  }
}

// Pools destroyed while their workers spin right after a launch, while they
// sleep, and before they first ran: the destructor reaches each of them.
TEST(ThreadPoolTest, DestroyedInAnyWorkerState) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(1 + round % 4);
    if (round % 3 == 0) pool.ParallelFor(8, [](int32_t) {});
    if (round % 3 == 1) pool.Park();
  }
}

TEST(ThreadPoolTest, CountsLaunchesAndTheWorkersShare) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.num_parallel_launches(), 0u);
  // The worker must take part: the caller's task waits for one of its own.
  std::atomic<bool> worker_ran{false};
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(2, [&](int32_t) {
    if (std::this_thread::get_id() != caller) {
      worker_ran = true;
      return;
    }
    while (!worker_ran.load()) std::this_thread::yield();
  });
  EXPECT_EQ(pool.num_parallel_launches(), 1u);
  EXPECT_EQ(pool.num_parallel_tasks(), 2u);
  EXPECT_EQ(pool.num_worker_tasks(), 1u);
  EXPECT_EQ(pool.num_inline_launches(), 0u);
  // One task runs on the caller without a launch; a launch from inside a
  // task runs inline, uncounted.
  pool.ParallelFor(1, [](int32_t) {});
  EXPECT_EQ(pool.num_parallel_launches(), 1u);
  pool.ParallelFor(2, [&](int32_t i) {
    if (i == 0) pool.ParallelFor(4, [](int32_t) {});
  });
  EXPECT_EQ(pool.num_parallel_launches(), 2u);
  EXPECT_EQ(pool.num_parallel_tasks(), 4u);
  EXPECT_EQ(pool.num_inline_launches(), 0u);
  EXPECT_LE(pool.num_worker_tasks(), 3u);
  // A launch from a second caller while the workers are taken runs inline.
  std::atomic<bool> second_done{false};
  pool.ParallelFor(2, [&](int32_t i) {
    if (i != 0) return;
    std::thread other([&] {
      pool.ParallelFor(3, [](int32_t) {});
      second_done = true;
    });
    other.join();
  });
  EXPECT_TRUE(second_done.load());
  EXPECT_EQ(pool.num_inline_launches(), 1u);
  EXPECT_EQ(pool.num_parallel_launches(), 3u);

  ThreadPool one(1);
  one.ParallelFor(16, [](int32_t) {});
  EXPECT_EQ(one.num_parallel_launches(), 0u);
  EXPECT_EQ(one.num_inline_launches(), 0u);
}

}  // namespace
}  // namespace kiln
