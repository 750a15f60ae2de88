#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_threads.h"
#include "kernels/kernel_test_util.h"
#include "kernels/ref_kernels.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace kernels {
namespace {

using testing::Call;
using testing::MaxAbsDiff;
using testing::RandomTensor;
using testing::SetStrides;
using testing::Zeros;

struct Shape {
  std::vector<int64_t> a;  // [..., M, K]
  int64_t n;
};

std::vector<int64_t> OutShape(const Shape& s) {
  std::vector<int64_t> out(s.a.begin(), s.a.end() - 1);
  out.push_back(s.n);
  return out;
}

// Runs dnnl and ref on the same random inputs; returns the max abs difference.
float CompareWithRef(const Shape& s, uint32_t seed) {
  Tensor a = RandomTensor(s.a, seed);
  Tensor b = RandomTensor({s.a.back(), s.n}, seed + 1);
  Tensor want = Zeros(OutShape(s));
  Tensor got = Zeros(OutShape(s));
  Status r = Call(RefMatmul, {a, b, want});
  Status d = Call(DnnlMatmul, {a, b, got});
  EXPECT_TRUE(r.ok()) << r.ToString();
  EXPECT_TRUE(d.ok()) << d.ToString();
  return MaxAbsDiff(want, got);
}

TEST(DnnlMatmul, MatchesReference) {
  const Shape shapes[] = {
      {{1, 784}, 128},   {{7, 784}, 128},    {{64, 784}, 128}, {{64, 128}, 10},
      {{1, 1}, 1},       {{3, 5, 17}, 9},    {{2, 4, 3, 33}, 65}, {{1024, 1024}, 1024},
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    EXPECT_LE(CompareWithRef(s, seed), 1e-4f) << "A " << ShapeToString(s.a) << " N " << s.n;
    seed += 2;
  }
}

TEST(DnnlMatmul, ZeroSizedProblems) {
  Tensor out = testing::MakeTensor({2, 3}, std::vector<float>{1, 1, 1, 1, 1, 1});
  ASSERT_TRUE(Call(DnnlMatmul, {Zeros({2, 0}), Zeros({0, 3}), out}).ok());
  EXPECT_EQ(testing::Values(out), (std::vector<float>(6, 0.0f)));
  ASSERT_TRUE(Call(DnnlMatmul, {Zeros({0, 4}), Zeros({4, 3}), Zeros({0, 3})}).ok());
}

TEST(DnnlMatmul, CachesPrimitivesByShape) {
  CompareWithRef({{5, 11}, 13}, 100);
  size_t before = DnnlMatmulCacheSize();
  CompareWithRef({{5, 11}, 13}, 200);
  EXPECT_EQ(DnnlMatmulCacheSize(), before);
  CompareWithRef({{6, 11}, 13}, 300);
  EXPECT_EQ(DnnlMatmulCacheSize(), before + 1);
}

TEST(DnnlMatmul, EightThreadsConcurrently) {
  const Shape shapes[] = {{{64, 784}, 128}, {{1, 784}, 128}, {{7, 33}, 17}};
  // Inputs and expected outputs prepared up front; threads only call dnnl.
  struct Case {
    Tensor a, b, want;
  };
  std::vector<Case> cases;
  for (size_t i = 0; i < 3; ++i) {
    const Shape& s = shapes[i];
    Case c{RandomTensor(s.a, 10 + i), RandomTensor({s.a.back(), s.n}, 20 + i), Zeros(OutShape(s))};
    ASSERT_TRUE(Call(RefMatmul, {c.a, c.b, c.want}).ok());
    cases.push_back(c);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 20; ++iter) {
        const Case& c = cases[(t + iter) % cases.size()];
        Tensor got = Zeros(c.want.shape());
        std::vector<Any> args = {c.a, c.b, got};
        Any ret;
        Status s = DnnlMatmul(Span<const Any>(args.data(), args.size()), &ret);
        if (!s.ok() || MaxAbsDiff(c.want, got) > 1e-4f) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---------------------------------------------------------------- threads

// The session's thread count (the caller's current pool) reaches oneDNN as the
// OpenMP thread count of the call, primitives are cached per count, and the
// caller's own OpenMP setting is restored afterwards.
TEST(DnnlThreads, SessionThreadCountReachesOneDnn) {
  if (OmpMaxThreads() < 0) GTEST_SKIP() << "oneDNN without an OpenMP runtime";
  const int before = OmpMaxThreads();
  for (int n : {1, 2, 3}) {
    ThreadPool::ScopedCurrent current(ThreadPool::Shared(n));
    size_t cached = DnnlMatmulCacheSize();
    EXPECT_LE(CompareWithRef({{17, 29}, 31}, 40 + n), 1e-4f);
    EXPECT_EQ(DnnlLastOmpThreads(), n);
    EXPECT_EQ(DnnlMatmulCacheSize(), cached + 1) << "one primitive per thread count";
    EXPECT_EQ(OmpMaxThreads(), before) << "restored after the call";
  }
  // Outside any session: the default pool's size.
  EXPECT_LE(CompareWithRef({{17, 29}, 31}, 50), 1e-4f);
  EXPECT_EQ(DnnlLastOmpThreads(), DefaultThreadCount());
}

// Kiln's idle workers are asleep while oneDNN runs and after it returns.
TEST(DnnlThreads, ParksTheSessionPool) {
  ThreadPool pool(3);
  ThreadPool::ScopedCurrent current(&pool);
  for (int round = 0; round < 10; ++round) {
    pool.ParallelFor(8, [](int32_t) {});  // workers spin after a launch
    EXPECT_LE(CompareWithRef({{64, 128}, 64}, 60 + round), 1e-4f);
    EXPECT_EQ(pool.num_spinning_workers(), 0);
    EXPECT_EQ(pool.num_sleeping_workers(), 2);
  }
}

// Calls on two thread counts at once from several threads.
TEST(DnnlThreads, ConcurrentSessionsOfDifferentSizes) {
  Tensor a = RandomTensor({32, 64}, 70), b = RandomTensor({64, 48}, 71), want = Zeros({32, 48});
  ASSERT_TRUE(Call(RefMatmul, {a, b, want}).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      int n = 1 + t % 2;
      ThreadPool::ScopedCurrent current(ThreadPool::Shared(n));
      for (int iter = 0; iter < 20; ++iter) {
        Tensor got = Zeros({32, 48});
        if (!Call(DnnlMatmul, {a, b, got}).ok() || MaxAbsDiff(want, got) > 1e-4f) failures.fetch_add(1);
        if (OmpMaxThreads() >= 0 && DnnlLastOmpThreads() != n) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---------------------------------------------------------------- errors

void ExpectError(std::vector<Any> args, const std::string& message) {
  Status s = Call(DnnlMatmul, std::move(args));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), message);
}

TEST(DnnlMatmulErrors, KMismatch) {
  ExpectError({Zeros({64, 784}), Zeros({785, 128}), Zeros({64, 128})}, "kiln.dnnl.matmul: A has K=784 but B has K=785");
}

TEST(DnnlMatmulErrors, WrongRank) {
  ExpectError({Zeros({784}), Zeros({784, 2}), Zeros({2})},
              "kiln.dnnl.matmul: A must have rank >= 2 ([..., M, K]), got rank 1 (float32[784])");
  ExpectError({Zeros({2, 3}), Zeros({3}), Zeros({2})},
              "kiln.dnnl.matmul: B must have rank 2 ([K, N]), got rank 1 (float32[3])");
}

TEST(DnnlMatmulErrors, DTypeNotFloat32) {
  ExpectError({Zeros({2, 2}), Zeros({2, 2}), Zeros({2, 2}, DType::Float16())},
              "kiln.dnnl.matmul: Out has dtype float16, expected float32");
}

TEST(DnnlMatmulErrors, NonCompactStrides) {
  Tensor a = Zeros({4, 2});
  SetStrides(a, {1, 4});
  ExpectError({a, Zeros({2, 2}), Zeros({4, 2})},
              "kiln.dnnl.matmul: A must be compact row-major, got shape [4, 2] with strides [1, 4]");
}

TEST(DnnlMatmulErrors, WrongOutShape) {
  ExpectError({Zeros({2, 3}), Zeros({3, 4}), Zeros({2, 5})}, "kiln.dnnl.matmul: Out has shape [2, 5], expected [2, 4]");
}

TEST(DnnlMatmulErrors, ArgumentsNotTensors) {
  ExpectError({Zeros({2, 3}), Zeros({3, 4})}, "kiln.dnnl.matmul: expected 3 arguments (A, B, Out), got 2");
  ExpectError({Any("x"), Zeros({3, 4}), Zeros({2, 4})},
              "kiln.dnnl.matmul: argument 0 (A) must be a tensor, got string \"x\"");
}

}  // namespace
}  // namespace kernels
}  // namespace kiln
