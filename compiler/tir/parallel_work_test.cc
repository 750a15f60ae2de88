// ParallelIterationWork on lowered loop nests, and what the LLVM codegen does
// with it: a parallel loop whose whole work is below kMinParallelWork runs on
// the calling thread without a launch, a larger one launches on the pool with
// a bounded number of chunks, and a one-thread pool never launches. The
// generated kernels run through a kernel environment that counts the
// launches and forwards them to a real pool; every output is checked.
#include "compiler/tir/parallel_work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/codegen/native_codegen.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/substitute.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace tir {
namespace {

using testing::ParseFunc;

// The first parallel loop in `s`.
const ir::ForNode* FirstParallelLoop(const ir::Stmt& s) {
  if (!s) return nullptr;
  switch (s->kind()) {
    case ir::TirKind::kFor: {
      const auto* f = ir::As<ir::ForNode>(s);
      if (f->for_kind == ir::ForKind::kParallel) return f;
      return FirstParallelLoop(f->body);
    }
    case ir::TirKind::kSeqStmt:
      for (const auto& x : ir::As<ir::SeqStmtNode>(s)->seq)
        if (const ir::ForNode* f = FirstParallelLoop(x)) return f;
      return nullptr;
    case ir::TirKind::kLetStmt: return FirstParallelLoop(ir::As<ir::LetStmtNode>(s)->body);
    case ir::TirKind::kAllocate: return FirstParallelLoop(ir::As<ir::AllocateNode>(s)->body);
    default: return nullptr;
  }
}

std::optional<ir::PrimExpr> WorkOfFirstParallelLoop(const ir::PrimFunc& f) {
  const ir::ForNode* loop = FirstParallelLoop(f->body);
  EXPECT_NE(loop, nullptr);
  if (loop == nullptr) return std::nullopt;
  return ParallelIterationWork(*loop);
}

TEST(ParallelWorkTest, StaticNestCountsStoresLoadsAndArithmetic) {
  // Per row: one vector of 16 x (store + 2 loads + add + mul) = 5, and
  // 4 x (store + exp call + load) = 4 x 10 = 40.
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a: T.Buffer((8, 16), "float32"), b: T.Buffer((8, 16), "float32"), c: T.Buffer((8, 16), "float32"), d: T.Buffer((8, 4), "float32")):
    for i in T.parallel(T.int64(8)):
        for j in T.vectorized(T.int64(16)):
            c[i, j] = (a[i, j] + b[i, j]) * T.float32(2)
        for j in range(T.int64(4)):
            d[i, j] = T.exp(a[i, j])
)", "k");
  std::optional<ir::PrimExpr> w = WorkOfFirstParallelLoop(f);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(arith::AsConstInt(*w), std::optional<int64_t>(45));
}

TEST(ParallelWorkTest, SymbolicInnerExtentStaysAnExpression) {
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a_handle: T.handle, c_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (4, n), "float32")
    C = T.match_buffer(c_handle, (4, n), "float32")
    for i in T.parallel(T.int64(4)):
        for j in range(n):
            C[i, j] = A[i, j] + T.float32(1)
)", "k");
  std::optional<ir::PrimExpr> w = WorkOfFirstParallelLoop(f);
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(arith::AsConstInt(*w).has_value());  // 3 * n
}

TEST(ParallelWorkTest, TriangularNestIsUnknown) {
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a: T.Buffer((8, 8), "float32")):
    for i in T.parallel(T.int64(8)):
        for j in range(i + T.int64(1)):
            a[i, j] = T.float32(0)
)", "k");
  EXPECT_FALSE(WorkOfFirstParallelLoop(f).has_value());
}

// The work of `f`'s first parallel loop with its size variable `name` set
// to `value`.
std::optional<int64_t> WorkAt(const ir::PrimFunc& f, const std::string& name, int64_t value) {
  std::optional<ir::PrimExpr> w = WorkOfFirstParallelLoop(f);
  if (!w) return std::nullopt;
  VarMap map;
  for (const auto& [param, buffer] : f->buffer_map)
    for (const auto& d : buffer->shape)
      if (const auto* v = d.as<ir::VarNode>(); v != nullptr && v->name == name) map[v] = ir::IntImm(DType::Int64(), value);
  return arith::AsConstInt(arith::Simplify(Substitute(*w, map)));
}

TEST(ParallelWorkTest, ACaseOnSizesCountsTheCaseTaken) {
  // A symbolic schedule's cases on a size: the work is the taken case's, not
  // the sum (store + load + add = 3 per element or vector; n == 1: 4 vectors
  // per row; otherwise 64 elements).
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a_handle: T.handle, c_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(a_handle, (n, 64), "float32")
    C = T.match_buffer(c_handle, (n, 64), "float32")
    for i in T.parallel(n):
        if n == T.int64(1):
            for j in T.vectorized(T.int64(64)):
                C[i, j] = A[i, j] + T.float32(1)
        else:
            for j in range(T.int64(64)):
                C[i, j] = A[i, j] + T.float32(1)
)", "k");
  EXPECT_EQ(WorkAt(f, "n", 1), std::optional<int64_t>(4 * 3));
  EXPECT_EQ(WorkAt(f, "n", 3), std::optional<int64_t>(64 * 3));
}

TEST(ParallelWorkTest, ACaseOnTheIterationCountsTheLargerBranch) {
  // Decided per row (i < 4): an upper bound, the larger branch (16 x 3), not
  // both (16 x 3 + 3).
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a: T.Buffer((8, 16), "float32"), c: T.Buffer((8, 16), "float32")):
    for i in T.parallel(T.int64(8)):
        if i < T.int64(4):
            for j in range(T.int64(16)):
                c[i, j] = a[i, j] + T.float32(1)
        else:
            for j in T.vectorized(T.int64(16)):
                c[i, j] = a[i, j] + T.float32(1)
)", "k");
  std::optional<ir::PrimExpr> w = WorkOfFirstParallelLoop(f);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(arith::AsConstInt(*w), std::optional<int64_t>(16 * 3));
}

TEST(ParallelWorkTest, ASplitReductionsPartsCountAsTheirLargest) {
  // Part p of 8 sums up to ceil(n / 8) elements (fewer for the last ones):
  // counted as ceil(n / 8), and its remainder loop (x % 4) as 3. At n = 800:
  // 1 (c[p] = 0) + 100 x 4 (store, two loads, add) + 3 x 3 = 410.
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a_handle: T.handle, c: T.Buffer((8,), "float32")):
    n = T.int64()
    A = T.match_buffer(a_handle, (n,), "float32")
    for p in T.parallel(T.int64(8)):
        c[p] = T.float32(0)
        for j in range(T.max(T.min((n + 7) // 8, n - p * ((n + 7) // 8)), 0)):
            c[p] = c[p] + A[p * ((n + 7) // 8) + j]
        for t in range(T.max(T.min((n + 7) // 8, n - p * ((n + 7) // 8)), 0) % 4):
            c[p] = c[p] + T.float32(1)
)", "k");
  EXPECT_EQ(WorkAt(f, "n", 800), std::optional<int64_t>(410));
}

TEST(ParallelWorkTest, StaticRuleCountsMultiplyAddsWhereTheLoopHasAnFma) {
  // Per row: 8 x 16 lanes of fma = 128 multiply-adds (the vectorized loop in
  // lanes, not in vectors); the zeroing and the epilogue count nothing.
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(x: T.Buffer((4, 8), "float32"), w: T.Buffer((8, 16), "float32"), y: T.Buffer((4, 16), "float32")):
    for i in T.parallel(T.int64(4)):
        for j in T.vectorized(T.int64(16)):
            y[i, j] = T.float32(0)
        for k in range(T.int64(8)):
            for j in T.vectorized(T.int64(16)):
                y[i, j] = T.call_intrin("float32", "fma", x[i, k], w[k, j], y[i, j])
        for j in T.vectorized(T.int64(16)):
            y[i, j] = T.max(y[i, j], T.float32(0))
)", "k");
  const ir::ForNode* loop = FirstParallelLoop(f->body);
  ASSERT_NE(loop, nullptr);
  std::optional<StaticRuleWork> r = ParallelStaticRuleWork(*loop);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(arith::AsConstInt(r->per_iteration), std::optional<int64_t>(128));
  EXPECT_EQ(r->threshold, kMinParallelMacs);
}

TEST(ParallelWorkTest, StaticRuleCountsIterationsWithoutAnFma) {
  // As the default schedule's rule: every element (lane) stored counts 1,
  // however much arithmetic it takes (64 + 4 per row).
  ir::PrimFunc f = ParseFunc(R"(
@T.prim_func
def k(a: T.Buffer((8, 64), "float32"), c: T.Buffer((8, 64), "float32"), d: T.Buffer((8, 4), "float32")):
    for i in T.parallel(T.int64(8)):
        for j in T.vectorized(T.int64(64)):
            c[i, j] = T.exp(a[i, j] * T.float32(2) + T.float32(1))
        for j in range(T.int64(4)):
            d[i, j] = T.tanh(a[i, j])
)", "k");
  const ir::ForNode* loop = FirstParallelLoop(f->body);
  ASSERT_NE(loop, nullptr);
  std::optional<StaticRuleWork> r = ParallelStaticRuleWork(*loop);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(arith::AsConstInt(r->per_iteration), std::optional<int64_t>(68));
  EXPECT_EQ(r->threshold, kMinParallelWork);
}

// ---- the generated launch

// A kernel environment that counts parallel launches and the largest task
// count asked for, and runs them on `pool`.
struct CountingEnv {
  ThreadPool* pool;
  std::atomic<int32_t> launches{0};
  std::atomic<int32_t> max_tasks{0};
};

int32_t CountingParallelFor(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure) {
  auto* c = static_cast<CountingEnv*>(ctx);
  c->launches.fetch_add(1);
  if (num_tasks > c->max_tasks.load()) c->max_tasks = num_tasks;
  return c->pool->ParallelFor(num_tasks, fn, closure);
}

// y[i, j] = x[i, j] * 2 + 1 over an (rows, 64) tensor, the row loop parallel.
const char* kScaleRows = R"(
@T.prim_func
def scale_rows(x_handle: T.handle, y_handle: T.handle):
    n = T.int64()
    X = T.match_buffer(x_handle, (n, 64), "float32")
    Y = T.match_buffer(y_handle, (n, 64), "float32")
    for i in T.parallel(n):
        for j in T.vectorized(T.int64(64)):
            Y[i, j] = X[i, j] * T.float32(2) + T.float32(1)
)";

class GeneratedLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ir::PrimFunc f = LowerBlocks(ParseFunc(kScaleRows, "scale_rows"));
    Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary({f}, {});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    auto lib = NativeLibrary::LoadFromMemory(built->shared_object.data(), built->shared_object.size(), "scale_rows");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = std::move(*lib);
    auto entry = lib_->Find("scale_rows");
    ASSERT_TRUE(entry.ok());
    fn_ = (*entry)->fn;
  }

  // Runs the kernel on `rows` rows with `threads` threads; checks the output
  // and returns the launches it made.
  int32_t Run(int64_t rows, int threads, int32_t* max_tasks) {
    ThreadPool pool(threads);
    CountingEnv counting;
    counting.pool = &pool;
    kiln_kernel_env env = MakeKernelEnv(&pool);
    env.ctx = &counting;
    env.parallel_for = CountingParallelFor;
    std::vector<int64_t> shape = {rows, 64};
    Result<Tensor> xr = Tensor::Empty(shape, DType::Float32()), yr = Tensor::Empty(shape, DType::Float32());
    EXPECT_TRUE(xr.ok() && yr.ok());
    if (!xr.ok() || !yr.ok()) return -1;
    Tensor x = *xr, y = *yr;
    for (int64_t i = 0; i < rows * 64; ++i) {
      x.data<float>()[i] = static_cast<float>(i % 97);
      y.data<float>()[i] = -1;
    }
    kiln_kernel_arg args[2];
    args[0].tensor = AsKernelTensor(x.dl());
    args[1].tensor = AsKernelTensor(y.dl());
    EXPECT_EQ(fn_(&env, args, 2), 0);
    for (int64_t i = 0; i < rows * 64; ++i) {
      EXPECT_EQ(y.data<float>()[i], static_cast<float>(i % 97) * 2 + 1) << "rows=" << rows << " i=" << i;
      if (y.data<float>()[i] != static_cast<float>(i % 97) * 2 + 1) break;
    }
    *max_tasks = counting.max_tasks.load();
    return counting.launches.load();
  }

  std::unique_ptr<NativeLibrary> lib_;
  kiln_kernel_fn fn_ = nullptr;
};

TEST_F(GeneratedLaunchTest, SmallLoopRunsOnTheCaller) {
  // 4 vectors x (store + load + mul + add) = 16 per row.
  int64_t small_rows = kMinParallelWork / 16 - 1;
  int32_t max_tasks = 0;
  EXPECT_EQ(Run(small_rows, 2, &max_tasks), 0);
  EXPECT_EQ(Run(1, 4, &max_tasks), 0);
}

TEST_F(GeneratedLaunchTest, LargeLoopLaunchesWithBoundedChunks) {
  int64_t rows = kMinParallelWork / 16 * 8;  // 8 x the threshold
  for (int threads : {2, 3}) {
    int32_t max_tasks = 0;
    EXPECT_EQ(Run(rows, threads, &max_tasks), 1);
    EXPECT_GE(max_tasks, threads);
    EXPECT_LE(max_tasks, 8 * threads);
  }
  // Just over the threshold: a launch, with fewer chunks than 8 per thread
  // (each chunk is worth at least an eighth of the threshold).
  int32_t max_tasks = 0;
  EXPECT_EQ(Run(kMinParallelWork / 16 + 1, 2, &max_tasks), 1);
  EXPECT_GE(max_tasks, 2);
  EXPECT_LE(max_tasks, 8);
}

TEST_F(GeneratedLaunchTest, OneThreadNeverLaunches) {
  int32_t max_tasks = 0;
  EXPECT_EQ(Run(kMinParallelWork / 16 * 8, 1, &max_tasks), 0);
}

}  // namespace
}  // namespace tir
}  // namespace kiln

namespace kiln {
namespace tir {
namespace {

// y[i, :] = x[i, :] @ w, 64 x 16 multiply-adds a row; the row loop parallel,
// over a symbolic row count or a static one. One row counts 64 x (store +
// fma call + 3 loads) = 768 operations but 1024 multiply-adds.
const char* kRowsTimesW = R"(
@T.prim_func
def rows_w(x_handle: T.handle, w: T.Buffer((64, 16), "float32"), y_handle: T.handle):
    n = T.int64()
    X = T.match_buffer(x_handle, (n, 64), "float32")
    Y = T.match_buffer(y_handle, (n, 16), "float32")
    for i in T.parallel(n):
        for j in T.vectorized(T.int64(16)):
            Y[i, j] = T.float32(0)
        for k in range(T.int64(64)):
            for j in T.vectorized(T.int64(16)):
                Y[i, j] = T.call_intrin("float32", "fma", X[i, k], w[k, j], Y[i, j])
)";

// The same kernel pinned to `rows` rows.
std::string StaticRowsTimesW(int64_t rows) {
  std::string r = std::to_string(rows);
  return "@T.prim_func\n"
         "def rows_w(X: T.Buffer((" + r + ", 64), \"float32\"), w: T.Buffer((64, 16), \"float32\"), "
         "Y: T.Buffer((" + r + ", 16), \"float32\")):\n"
         "    for i in T.parallel(T.int64(" + r + ")):\n"
         "        for j in T.vectorized(T.int64(16)):\n"
         "            Y[i, j] = T.float32(0)\n"
         "        for k in range(T.int64(64)):\n"
         "            for j in T.vectorized(T.int64(16)):\n"
         "                Y[i, j] = T.call_intrin(\"float32\", \"fma\", X[i, k], w[k, j], Y[i, j])\n";
}

// Builds `source`'s rows_w, runs it on `rows` rows with `threads` threads
// through a counting environment, checks every output against a plain
// loop and returns the launches it made (-1 on a build failure).
int32_t RunRowsTimesW(const std::string& source, int64_t rows, int threads) {
  ir::PrimFunc f = LowerBlocks(ParseFunc(source, "rows_w"));
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary({f}, {});
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return -1;
  auto lib = NativeLibrary::LoadFromMemory(built->shared_object.data(), built->shared_object.size(), "rows_w");
  EXPECT_TRUE(lib.ok());
  if (!lib.ok()) return -1;
  auto entry = (*lib)->Find("rows_w");
  EXPECT_TRUE(entry.ok());
  if (!entry.ok()) return -1;
  ThreadPool pool(threads);
  CountingEnv counting;
  counting.pool = &pool;
  kiln_kernel_env env = MakeKernelEnv(&pool);
  env.ctx = &counting;
  env.parallel_for = CountingParallelFor;
  Result<Tensor> xr = Tensor::Empty({rows, 64}, DType::Float32());
  Result<Tensor> wr = Tensor::Empty({64, 16}, DType::Float32());
  Result<Tensor> yr = Tensor::Empty({rows, 16}, DType::Float32());
  EXPECT_TRUE(xr.ok() && wr.ok() && yr.ok());
  if (!xr.ok() || !wr.ok() || !yr.ok()) return -1;
  Tensor x = *xr, w = *wr, y = *yr;
  // Small integers: every sum is exact in float, whatever the order.
  for (int64_t i = 0; i < rows * 64; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3;
  for (int64_t i = 0; i < 64 * 16; ++i) w.data<float>()[i] = static_cast<float>(i % 5) - 2;
  for (int64_t i = 0; i < rows * 16; ++i) y.data<float>()[i] = -1;
  kiln_kernel_arg args[3];
  args[0].tensor = AsKernelTensor(x.dl());
  args[1].tensor = AsKernelTensor(w.dl());
  args[2].tensor = AsKernelTensor(y.dl());
  EXPECT_EQ((*entry)->fn(&env, args, 3), 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < 16; ++j) {
      float want = 0;
      for (int64_t k = 0; k < 64; ++k) want += x.data<float>()[i * 64 + k] * w.data<float>()[k * 16 + j];
      EXPECT_EQ(y.data<float>()[i * 16 + j], want) << "rows=" << rows << " i=" << i << " j=" << j;
      if (y.data<float>()[i * 16 + j] != want) return counting.launches.load();
    }
  }
  return counting.launches.load();
}

// 32 rows: 24576 operations (over kMinParallelWork, a launch by the
// operation count alone) but 32768 multiply-adds (under kMinParallelMacs).
constexpr int64_t kSmallRows = 32;
static_assert(kSmallRows * 768 >= kMinParallelWork && kSmallRows * 1024 < kMinParallelMacs, "between the rules");

TEST(StaticRuleLaunchTest, SymbolicLoopUnderTheStaticRuleRunsOnTheCaller) {
  EXPECT_EQ(RunRowsTimesW(kRowsTimesW, kSmallRows, 2), 0);
  EXPECT_EQ(RunRowsTimesW(kRowsTimesW, 1, 2), 0);
}

TEST(StaticRuleLaunchTest, SymbolicLoopOverTheStaticRuleStillLaunches) {
  EXPECT_EQ(RunRowsTimesW(kRowsTimesW, kMinParallelMacs / 1024, 2), 1);
  EXPECT_EQ(RunRowsTimesW(kRowsTimesW, 512, 2), 1);
}

TEST(StaticRuleLaunchTest, StaticLoopHasNoStaticRuleCheck) {
  // Its schedule decided to make it parallel: only the operation count
  // applies, and 32 rows launch.
  EXPECT_EQ(RunRowsTimesW(StaticRowsTimesW(kSmallRows), kSmallRows, 2), 1);
}

// The check in the generated code: the symbolic kernel compares its
// multiply-adds with kMinParallelMacs, the static one has no such compare.
TEST(StaticRuleLaunchTest, OnlyTheSymbolicKernelComparesWithTheMacThreshold) {
  auto ir_of = [](const std::string& source) {
    Result<std::string> ir = codegen::EmitLLVMIR({LowerBlocks(ParseFunc(source, "rows_w"))}, {});
    EXPECT_TRUE(ir.ok()) << ir.status().ToString();
    return ir.ok() ? *ir : std::string();
  };
  auto compares_with_threshold = [](const std::string& ir) {
    // slt T, or its canonical forms sgt T - 1 / ult / ugt.
    for (const std::string& c : {std::to_string(kMinParallelMacs), std::to_string(kMinParallelMacs - 1)})
      for (const char* op : {"slt", "sgt", "ult", "ugt", "sle", "sge", "ule", "uge"})
        if (ir.find(std::string("icmp ") + op + " i64 %") != std::string::npos &&
            ir.find(", " + c + "\n") != std::string::npos)
          return true;
    return false;
  };
  EXPECT_TRUE(compares_with_threshold(ir_of(kRowsTimesW)));
  EXPECT_FALSE(compares_with_threshold(ir_of(StaticRowsTimesW(kSmallRows))));
}

}  // namespace
}  // namespace tir
}  // namespace kiln
