// What a parallel launch costs against the work it splits, to set
// tir::kMinParallelWork (compiler/tir/parallel_work.h), the size below which
// generated kernels run a parallel loop on the calling thread:
//   launch: ThreadPool::ParallelFor of `threads` empty tasks, back to back
//           (the workers still spinning from the launch before) and after a
//           2 ms pause (the workers asleep: a futex wake each);
//   work:   the generated kernel y = x * 2 + 1 over (rows, 64) float32 with
//           one thread, in ns per operation of tir/parallel_work.h (16 per
//           row of 64), at sizes around the threshold;
//   split:  the same kernel with 1 and 2 threads at multiples of the
//           threshold (every size here launches with 2 threads).
// Medians of many repetitions of the calling thread's wall time; not run by
// ctest. Usage: build/benchmarks/runtime/kiln_parallel_launch_benchmark [--launch-only]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/parallel_work.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

const char kScaleRows[] = R"(@I.ir_module
class Module:
    @T.prim_func
    def scale_rows(x_handle: T.handle, y_handle: T.handle):
        n = T.int64()
        X = T.match_buffer(x_handle, (n, 64), "float32")
        Y = T.match_buffer(y_handle, (n, 64), "float32")
        for i in T.parallel(n):
            for j in T.vectorized(T.int64(64)):
                Y[i, j] = X[i, j] * T.float32(2) + T.float32(1)
)";
constexpr int64_t kWorkPerRow = 16;  // 4 vectors x (store, load, mul, add)

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median wall time of f() over `reps` calls, each after setup().
template <typename S, typename F>
double MedianNs(int reps, S&& setup, F&& f) {
  std::vector<double> t(reps);
  for (int i = 0; i < reps; ++i) {
    setup();
    double t0 = Seconds();
    f();
    t[i] = (Seconds() - t0) * 1e9;
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

int Main(bool launch_only) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    auto empty = [](int32_t, int32_t, void*) -> int32_t { return 0; };
    pool.ParallelFor(threads, empty, nullptr);
    double hot = MedianNs(20001, [] {}, [&] { pool.ParallelFor(threads, empty, nullptr); });
    double cold = MedianNs(
        201, [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); },
        [&] { pool.ParallelFor(threads, empty, nullptr); });
    std::printf("launch, %d threads: %.0f ns with the workers spinning, %.0f ns with them asleep\n", threads, hot,
                cold);
    // Empty tasks let the launcher run them all itself when a worker is a
    // little late, so the launch above can cost less than a worker's round
    // trip. Here each task waits until every task has started: every thread
    // takes part, as in a kernel whose tasks take longer than the wake-up.
    // Only with a CPU per thread (the tasks spin on each other).
    if (threads > static_cast<int>(std::thread::hardware_concurrency())) continue;
    std::atomic<int32_t> arrived{0};
    auto meet = [](int32_t, int32_t n, void* c) -> int32_t {
      auto* a = static_cast<std::atomic<int32_t>*>(c);
      a->fetch_add(1);
      while (a->load() < n) {
      }
      return 0;
    };
    auto reset = [&] { arrived.store(0); };
    std::vector<double> all(2001);
    for (double& t : all) {
      reset();
      double t0 = Seconds();
      pool.ParallelFor(threads, meet, &arrived);
      t = (Seconds() - t0) * 1e9;
    }
    std::sort(all.begin(), all.end());
    std::printf("launch, %d threads, every thread taking part: min %.0f ns, median %.0f ns (workers spinning)\n",
                threads, all[0], all[all.size() / 2]);
  }

  if (launch_only) return 0;

  Result<ir::IRModule> mod = text::ParseModule(kScaleRows, "scale_rows");
  if (!mod.ok()) {
    std::fprintf(stderr, "%s\n", mod.status().ToString().c_str());
    return 1;
  }
  ir::PrimFunc f = tir::LowerBlocks(mod->FindPrim("scale_rows"));
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary({f}, {});
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", built.status().ToString().c_str());
    return 1;
  }
  auto lib = NativeLibrary::LoadFromMemory(built->shared_object.data(), built->shared_object.size(), "scale_rows");
  if (!lib.ok()) return 1;
  kiln_kernel_fn fn = (*(*lib)->Find("scale_rows"))->fn;
  auto run = [&](int64_t rows, ThreadPool* pool, int reps) {
    std::vector<int64_t> shape = {rows, 64};
    Tensor x = *Tensor::Empty(shape, DType::Float32()), y = *Tensor::Empty(shape, DType::Float32());
    std::fill(x.data<float>(), x.data<float>() + rows * 64, 1.0f);
    kiln_kernel_env env = MakeKernelEnv(pool);
    kiln_kernel_arg args[2];
    args[0].tensor = AsKernelTensor(x.dl());
    args[1].tensor = AsKernelTensor(y.dl());
    fn(&env, args, 2);
    return MedianNs(reps, [] {}, [&] { fn(&env, args, 2); });
  };
  ThreadPool one(1), two(2);
  const int64_t threshold_rows = tir::kMinParallelWork / kWorkPerRow;
  for (int64_t rows : {threshold_rows / 8, threshold_rows / 2, threshold_rows, threshold_rows * 4}) {
    double ns = run(rows, &one, 2001);
    std::printf("work, 1 thread: %lld rows (%lld ops): %.0f ns, %.3f ns per op\n", static_cast<long long>(rows),
                static_cast<long long>(rows * kWorkPerRow), ns, ns / static_cast<double>(rows * kWorkPerRow));
  }
  for (int64_t mult : {1, 2, 4, 16}) {
    int64_t rows = threshold_rows * mult + 1;
    double t1 = run(rows, &one, 1001), t2 = run(rows, &two, 1001);
    std::printf("split, %lld x the threshold: 1 thread %.0f ns, 2 threads %.0f ns, speed-up %.2f\n",
                static_cast<long long>(mult), t1, t2, t1 / t2);
  }
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  return kiln::Main(argc > 1 && std::string(argv[1]) == "--launch-only");
}
