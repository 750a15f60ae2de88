// The out-of-process runner: a good candidate is timed and matches the
// default schedule; one that segfaults, one that never ends and one that
// computes other numbers are recorded as failed, and measuring goes on.
#include <gtest/gtest.h>

#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/cache_evict.h"
#include "runtime/thread_pool.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/runner.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {
namespace {

using tir::testing::ParseFunc;

const char* kScale = R"(@T.prim_func
def scale(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(3)
)";

// Same signature and name, deliberately broken bodies.
const char* kWrong = R"(@T.prim_func
def scale(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)
)";
// Stores far outside C: the child dies with SIGSEGV.
const char* kSegfault = R"(@T.prim_func
def scale(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi * 40000000, vj] = A[vi, vj]
)";
// About 10^16 dependent float additions: runs for years.
const char* kForever = R"(@T.prim_func
def scale(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    for i, j in T.grid(100000000, 100000000):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[0, 0] = C[0, 0] + A[0, 1]
)";

// Each test runs twice: candidates in a forked child of this process, and in
// kiln-measure-host exec'd per candidate (what kiln-tune uses).
class RunnerTest : public ::testing::TestWithParam<bool> {
 protected:
  RunnerOptions Options() const {
    RunnerOptions o;
    o.warmup = 1;
    o.repeats = 3;
    o.timeout_s = 20;
    if (GetParam()) o.host_program = KILN_MEASURE_HOST_PROGRAM;
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(ForkAndHostProgram, RunnerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "HostProgram" : "Fork");
                         });

TEST_P(RunnerTest, DefaultAndCandidate) {
  ir::PrimFunc f = ParseFunc(kScale, "scale");
  Measurement ref = Measure(LowerWithDefaultSchedule(f, 1), Options());
  ASSERT_TRUE(ref.ok()) << ref.message;
  EXPECT_EQ(ref.times_us.size(), 3u);
  EXPECT_GT(ref.median_us, 0);
  ASSERT_EQ(ref.outputs.size(), 2u);
  EXPECT_EQ(ref.outputs[1].size(), 64u * 32u * 4u);
  // The output is 3 * the input.
  const float* a = reinterpret_cast<const float*>(ref.outputs[0].data());
  const float* c = reinterpret_cast<const float*>(ref.outputs[1].data());
  EXPECT_FLOAT_EQ(c[5], 3 * a[5]);
  Result<tir::Schedule> s = SampleGenericSpace(f, 3);
  ASSERT_TRUE(s.ok());
  Measurement m = Measure(LowerScheduled(s->func()), Options(), &ref);
  EXPECT_TRUE(m.ok()) << MeasureStateName(m.state) << ": " << m.message;
}

TEST_P(RunnerTest, FailuresAreRecordedAndMeasuringGoesOn) {
  ir::PrimFunc f = ParseFunc(kScale, "scale");
  Measurement ref = Measure(LowerWithDefaultSchedule(f, 1), Options());
  ASSERT_TRUE(ref.ok()) << ref.message;

  Measurement wrong = Measure(LowerScheduled(ParseFunc(kWrong, "scale")), Options(), &ref);
  EXPECT_EQ(wrong.state, MeasureState::kWrong) << wrong.message;
  EXPECT_NE(wrong.message.find("the default schedule gives"), std::string::npos) << wrong.message;

  Measurement crash = Measure(LowerScheduled(ParseFunc(kSegfault, "scale")), Options(), &ref);
  EXPECT_EQ(crash.state, MeasureState::kCrashed) << crash.message;
  // Death by SIGSEGV; under ASan the child reports and exits with status 1.
  // (kiln-measure-host: "exited with status 1 before its report was complete")
  EXPECT_TRUE(crash.message.find("signal") != std::string::npos ||
              crash.message.find("exited with status 1 before its report was complete") != std::string::npos)
      << crash.message;

  RunnerOptions quick = Options();
  quick.timeout_s = 1;
  Measurement hang = Measure(LowerScheduled(ParseFunc(kForever, "scale")), quick, &ref);
  EXPECT_EQ(hang.state, MeasureState::kTimedOut) << hang.message;

  // The runner is still usable afterwards.
  Measurement again = Measure(LowerWithDefaultSchedule(f, 1), Options(), &ref);
  EXPECT_TRUE(again.ok()) << again.message;
}

// A kernel that fails (here: its workspace, 2^47 bytes, cannot be
// allocated) is a failed run whose message says what the kernel said.
// Sanitizers' allocators abort on such a request instead of failing it.
TEST_P(RunnerTest, AKernelErrorIsARunFailureWithItsMessage) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator aborts on a 2^47-byte request";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "a sanitizer's allocator aborts on a 2^47-byte request";
#endif
#endif
  ir::PrimFunc f = ParseFunc(R"(@T.prim_func
def scale(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    W = T.alloc_buffer((35184372088832,), "float32")
    for i, j in T.grid(64, 32):
        with T.block("W"):
            vi, vj = T.axis.remap("SS", [i, j])
            W[vi * 549755813888 + vj] = A[vi, vj]
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = W[vi * 549755813888 + vj]
)", "scale");
  Measurement m = Measure(LowerScheduled(f), Options());
  EXPECT_EQ(m.state, MeasureState::kRunFailed) << MeasureStateName(m.state) << ": " << m.message;
  EXPECT_NE(m.message.find("workspace allocation of 140737488355328 bytes for buffer W failed"), std::string::npos)
      << m.message;
  EXPECT_NE(m.message.find(GetParam() ? "kiln-measure-host: the kernel scale failed: " : "the kernel failed: "),
            std::string::npos)
      << m.message;
}

TEST_P(RunnerTest, UnsupportedParametersAreABuildFailure) {
  ir::PrimFunc f = ParseFunc(R"(@T.prim_func
def relu(x: T.handle, y: T.handle):
    n = T.int64()
    X = T.match_buffer(x, (n,), "float32")
    Y = T.match_buffer(y, (n,), "float32")
    for i in range(n):
        with T.block("Y"):
            vi = T.axis.spatial(n, i)
            Y[vi] = T.max(X[vi], T.float32(0))
)", "relu");
  Measurement m = Measure(LowerWithDefaultSchedule(f, 1), Options());
  EXPECT_EQ(m.state, MeasureState::kBuildFailed);
  EXPECT_NE(m.message.find("symbolic shape"), std::string::npos) << m.message;
}

// --cold-cache in both children (the forked one and kiln-measure-host): the
// flush before each timed run leaves the numbers the default schedule's.
TEST_P(RunnerTest, ColdCacheKeepsTheNumbers) {
  ir::PrimFunc f = ParseFunc(kScale, "scale");
  Measurement ref = Measure(LowerWithDefaultSchedule(f, 1), Options());
  ASSERT_TRUE(ref.ok()) << ref.message;
  RunnerOptions cold = Options();
  cold.cold_cache = true;
  cold.cold_cache_bytes = 2 << 20;
  Measurement m = Measure(LowerWithDefaultSchedule(f, 1), cold, &ref);
  EXPECT_TRUE(m.ok()) << MeasureStateName(m.state) << ": " << m.message;
  EXPECT_EQ(m.times_us.size(), 3u);
  // On two kernel threads the flush runs on both (cache_evict.h).
  cold.threads = 2;
  m = Measure(LowerWithDefaultSchedule(f, 2), cold, &ref);
  EXPECT_TRUE(m.ok()) << MeasureStateName(m.state) << ": " << m.message;
}

// kiln-measure-host reads the job's optional cold_cache_bytes line; a bad one
// is its job error (exit 3), which the runner reports with the message.
TEST(RunnerHostProgramTest, ABadColdCacheLineIsTheProgramsError) {
  RunnerOptions o;
  o.repeats = 3;
  o.timeout_s = 20;
  o.measure_program = KILN_MEASURE_HOST_PROGRAM;
  o.command = "sh -c 'sed -i \"s/^cold_cache_bytes .*/cold_cache_bytes -1/\" \"$2\"; exec \"$1\" \"$2\"' sh";
  o.cold_cache = true;
  Measurement m = Measure(LowerWithDefaultSchedule(ParseFunc(kScale, "scale"), 1), o);
  EXPECT_EQ(m.state, MeasureState::kRunFailed);
  EXPECT_NE(m.message.find("kiln-measure-host: job: bad 'cold_cache_bytes'"), std::string::npos) << m.message;
  // The same job with the line as written runs.
  o.command = "env";
  m = Measure(LowerWithDefaultSchedule(ParseFunc(kScale, "scale"), 1), o);
  EXPECT_TRUE(m.ok()) << m.message;
}

// The default flush is twice the last-level cache; an explicit size is kept.
TEST(CacheEvictTest, Sizes) {
  EXPECT_GE(LastLevelCacheBytes(), int64_t{1} << 20);
  EXPECT_EQ(DefaultColdCacheBytes(), 2 * LastLevelCacheBytes());
  EXPECT_EQ(CacheEvictor(0).bytes(), DefaultColdCacheBytes());
  CacheEvictor e(3 << 20);
  EXPECT_EQ(e.bytes(), 3 << 20);
  e.Evict();
}

// With a pool of T > 1 threads the flush is one parallel launch of T
// slices that together read every line of the buffer once; without one (or
// with one thread) it is one slice on the caller.
TEST(CacheEvictTest, ThreadedFlushReadsEveryLineOnce) {
  const int64_t bytes = (int64_t{3} << 20) + 3 * 64;  // lines not a multiple of 2 or 4
  CacheEvictor e(bytes);
  e.Evict();
  EXPECT_EQ(e.last_slice_bytes(), std::vector<int64_t>{bytes});
  ThreadPool one(1);
  e.Evict(&one);
  EXPECT_EQ(e.last_slice_bytes(), std::vector<int64_t>{bytes});
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    uint64_t launches = pool.num_parallel_launches();
    e.Evict(&pool);
    EXPECT_EQ(pool.num_parallel_launches(), launches + 1) << threads;
    const std::vector<int64_t>& slices = e.last_slice_bytes();
    ASSERT_EQ(slices.size(), static_cast<size_t>(threads));
    int64_t total = 0;
    for (int64_t s : slices) {
      EXPECT_EQ(s % 64, 0);
      EXPECT_GE(s, bytes / threads - 64) << threads;
      EXPECT_LE(s, bytes / threads + 64) << threads;
      total += s;
    }
    EXPECT_EQ(total, bytes) << threads;
  }
}

// What a record stores as its flush: 0 warm, the size given, or the
// measuring program's default (this machine's, or kiln-measure's 64 MiB).
TEST(CacheEvictTest, RecordedFlushBytes) {
  RunnerOptions o;
  EXPECT_EQ(ColdCacheFlushBytes(o), 0);
  o.cold_cache = true;
  EXPECT_EQ(ColdCacheFlushBytes(o), DefaultColdCacheBytes());
  o.command = "qemu-aarch64";
  EXPECT_EQ(ColdCacheFlushBytes(o), int64_t{64} << 20);
  o.cold_cache_bytes = 8 << 20;
  EXPECT_EQ(ColdCacheFlushBytes(o), 8 << 20);
}

TEST(RunnerHostProgramTest, AMissingProgramIsARunFailure) {
  RunnerOptions o;
  o.host_program = "/nonexistent/kiln-measure-host";
  Measurement m = Measure(LowerWithDefaultSchedule(ParseFunc(kScale, "scale"), 1), o);
  EXPECT_EQ(m.state, MeasureState::kRunFailed);
  EXPECT_NE(m.message.find("the measuring program '/nonexistent/kiln-measure-host' does not exist"), std::string::npos)
      << m.message;
}

}  // namespace
}  // namespace tune
}  // namespace kiln
