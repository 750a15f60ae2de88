// kiln.ref.matmul vs kiln.dnnl.matmul at an MLP layer (64x784x128) and 1024^3.
// Not run by ctest: `build/kernels/kiln_kernels_benchmark`.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/registry.h"
#include "runtime/tensor.h"

namespace kiln {
namespace {

Tensor RandomTensor(std::vector<int64_t> shape, uint32_t seed) {
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
  KILN_CHECK(t.ok(), "%s", t.status().ToString().c_str());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t->NumElements(); ++i) t->data<float>()[i] = dist(gen);
  return *t;
}

// Args: M, K, N. The kernel is looked up once, as a loaded program does.
void BM_Matmul(benchmark::State& state, const char* name) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Result<PackedFunc> fn = LookupGlobalFunction(name);
  if (!fn.ok()) {
    state.SkipWithError(fn.status().ToString().c_str());
    return;
  }
  std::vector<Any> args = {RandomTensor({m, k}, 1), RandomTensor({k, n}, 2), RandomTensor({m, n}, 3)};
  Any ret;
  for (auto _ : state) {
    Status s = (*fn)(Span<const Any>(args.data(), args.size()), &ret);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * m * k * n * state.iterations(), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

BENCHMARK_CAPTURE(BM_Matmul, ref, "kiln.ref.matmul")->Args({64, 784, 128})->Args({1024, 1024, 1024})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Matmul, dnnl, "kiln.dnnl.matmul")->Args({64, 784, 128})->Args({1024, 1024, 1024})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kiln

BENCHMARK_MAIN();
