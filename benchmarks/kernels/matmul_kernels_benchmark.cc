// Kiln's generated fp32 matmul kernels against oneDNN's matmul primitive, on
// the shapes of issue 4 §5, with 1 and 2 threads, in one run.
//
// Kiln: a one-operator module (R.matmul; for the "linear" cases a model's
// layer with constant weights, see Case) is compiled with the driver (default
// schedule, host CPU) and called through vm::Module on a thread pool of the
// given size, as a user's program would (the VM allocates the output each
// call). oneDNN: a matmul primitive created once, executed on a stream, with
// OpenMP limited to the same number of threads.
//
// Each benchmark reports GFLOP/s. Kiln and oneDNN runs of a case alternate
// (--pairs=N pairs, default 5); at the end a table gives the median GFLOP/s of
// both and the median of the pairs' ratios Kiln / oneDNN. Not run by ctest:
//   build/benchmarks/kernels/kiln_matmul_kernels_benchmark --benchmark_min_time=0.3 --pairs=5
// (--cpu-time: one thread, rates from CPU time, for a busy machine;
// --filter-case=TEXT: the cases whose name contains TEXT.)
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/thread_pool.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace {

struct Case {
  std::string name;
  std::vector<int64_t> a, b;  // shapes; batched when 3-D
  // A model's linear layer: relu(a @ w^T + bias) with w (N, K) and bias
  // bound as constants (--params), so the transposed weight is folded at
  // compile time and Kiln runs one fused kernel; oneDNN gets the same (K, N)
  // weight, the bias and a ReLU post-op.
  bool linear = false;
  // Linear with the weight passed at run time instead: Kiln's fused kernel
  // transposes it every call; oneDNN reads it in place as a (K, N) matrix
  // with transposed strides (tag ba).
  bool runtime_weight = false;
  // The linear layer's activation: ReLU, or erf GELU (a BERT FFN's first
  // matmul; oneDNN's gelu_erf post-op).
  bool gelu = false;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"1x784x128", {1, 784}, {784, 128}},
      {"64x784x128", {64, 784}, {784, 128}},
      {"128x256x1024", {128, 256}, {256, 1024}},
      {"128x1024x256", {128, 1024}, {1024, 256}},
      {"4x(128x64x128)", {4, 128, 64}, {4, 64, 128}},
      {"1024x1024x1024", {1024, 1024}, {1024, 1024}},
      {"linear 1x784x128", {1, 784}, {784, 128}, true},
      {"linear 64x784x128", {64, 784}, {784, 128}, true},
      {"linear 64x784x128 rt-w", {64, 784}, {784, 128}, true, true},
      // MiniLM-L6 at 2 x 128 tokens: the FFN pair and the Q/K/V/out projections.
      {"linear 256x384x1536 gelu", {256, 384}, {384, 1536}, true, false, true},
      {"linear 256x384x1536", {256, 384}, {384, 1536}, true},
      {"linear 256x1536x384", {256, 1536}, {1536, 384}, true},
      {"linear 256x384x384", {256, 384}, {384, 384}, true},
      // Short and wide: 1-8 rows against a wide B, at run time (a decoder's
      // attention at batch 1, a few batched rows against a weight passed as
      // an input) and as a constant (a linear layer at batch 1-4).
      {"1x256x1024", {1, 256}, {256, 1024}},
      {"1x256x4096", {1, 256}, {256, 4096}},
      {"2x256x1024", {2, 256}, {256, 1024}},
      {"2x256x4096", {2, 256}, {256, 4096}},
      {"3x256x4096", {3, 256}, {256, 4096}},
      {"4x256x1024", {4, 256}, {256, 1024}},
      {"4x256x4096", {4, 256}, {256, 4096}},
      {"4x1024x1024", {4, 1024}, {1024, 1024}},
      {"6x256x4096", {6, 256}, {256, 4096}},
      {"8x256x4096", {8, 256}, {256, 4096}},
      {"linear 1x1024x4096", {1, 1024}, {1024, 4096}, true},
      {"linear 2x1024x4096", {2, 1024}, {1024, 4096}, true},
      {"linear 4x1024x4096", {4, 1024}, {1024, 4096}, true},
  };
  return cases;
}

double Flops(const Case& c) {
  double batch = c.a.size() == 3 ? double(c.a[0]) : 1.0;
  size_t r = c.a.size();
  return 2.0 * batch * double(c.a[r - 2]) * double(c.a[r - 1]) * double(c.b[r - 1]);
}

std::vector<int64_t> OutShape(const Case& c) {
  std::vector<int64_t> out(c.a.begin(), c.a.end() - 1);
  out.push_back(c.b.back());
  return out;
}

Tensor Random(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float>()[i] = static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
  return t;
}

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

std::string LinearModule(const Case& c) {
  int64_t k = c.b[0], n = c.b[1];
  std::vector<int64_t> w = {n, k};
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor(" + ShapeText(c.a) +
         ", dtype=\"float32\"), w: R.Tensor(" + ShapeText(w) + ", dtype=\"float32\"), bias: R.Tensor((" +
         std::to_string(n) + ",), dtype=\"float32\")) -> R.Tensor(" + ShapeText(OutShape(c)) +
         ", dtype=\"float32\"):\n        with R.dataflow():\n            wt = R.permute_dims(w, axes=None)\n"
         "            y = R.matmul(a, wt, out_dtype=\"void\")\n            z = R.add(y, bias)\n"
         "            gv = R.nn." + std::string(c.gelu ? "gelu" : "relu") + "(z)\n            R.output(gv)\n        return gv\n";
}

// The linear case's weight (N, K) and bias, and the weight transposed to
// (K, N) for oneDNN.
Tensor LinearWeight(const Case& c) { return Random({c.b[1], c.b[0]}, 2); }
Tensor LinearBias(const Case& c) { return Random({c.b[1]}, 3); }
Tensor Transposed(const Tensor& w) {
  int64_t n = w.shape()[0], k = w.shape()[1];
  Tensor t = Tensor::Empty({k, n}, DType::Float32()).value();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) t.data<float>()[j * n + i] = w.data<float>()[i * k + j];
  return t;
}

std::string MatmulModule(const Case& c) {
  if (c.linear) return LinearModule(c);
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor(" + ShapeText(c.a) +
         ", dtype=\"float32\"), b: R.Tensor(" + ShapeText(c.b) + ", dtype=\"float32\")) -> R.Tensor(" +
         ShapeText(OutShape(c)) +
         ", dtype=\"float32\"):\n        with R.dataflow():\n            c = R.matmul(a, b, out_dtype=\"void\")\n"
         "            R.output(c)\n        return c\n";
}

Result<std::shared_ptr<const vm::Module>> CompileKiln(const Case& c, int threads) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(MatmulModule(c), c.name + ".relax"));
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  if (c.linear && !c.runtime_weight) options.params = {{"w", LinearWeight(c)}, {"bias", LinearBias(c)}};
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, driver::CompileModule(mod, options));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, compiler::SerializeVmfb(program));
  void* owned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  if (owned == nullptr) return ResourceExhausted("out of memory");
  std::memcpy(owned, bytes.data(), bytes.size());
  vm::LoadOptions load;
  load.thread_pool = ThreadPool::Shared(threads);
  return vm::Module::LoadOwnedBuffer(
      owned, bytes.size(), [](const void*, void* user) { std::free(user); }, owned, load);
}

void SetRate(benchmark::State& state, const Case& c) {
  state.counters["GFLOPS"] = benchmark::Counter(Flops(c) * double(state.iterations()), benchmark::Counter::kIsRate,
                                                benchmark::Counter::kIs1000);
}

// Lets the other library's idle threads go to sleep before a case is timed:
// oneDNN's OpenMP workers spin after each parallel region (libgomp's default
// wait policy) and Kiln's pool spins 200 us, and a second thread spinning
// on the other core halved the two-thread speed of whichever case ran next
// (Kiln's 64->64 3x3 at 56^2 after oneDNN's: 2.16 ms, alone 1.41 ms).
void LetIdleThreadsSleep() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

void BM_Kiln(benchmark::State& state, const Case& c, int threads) {
  // Compiled once per case and thread count, reused by the later pairs.
  static std::map<std::string, Result<std::shared_ptr<const vm::Module>>> cache;
  std::string key = c.name + "/" + std::to_string(threads);
  auto found = cache.find(key);
  if (found == cache.end()) found = cache.emplace(key, CompileKiln(c, threads)).first;
  const Result<std::shared_ptr<const vm::Module>>& mod = found->second;
  if (!mod.ok()) {
    state.SkipWithError(mod.status().ToString().c_str());
    return;
  }
  std::unique_ptr<vm::Context> ctx = (*mod)->CreateContext();
  std::vector<Any> args = {Random(c.a, 1)};
  if (!c.linear) args.push_back(Random(c.b, 2));
  if (c.runtime_weight) {
    args.push_back(LinearWeight(c));
    args.push_back(LinearBias(c));
  }
  Any ret;
  LetIdleThreadsSleep();
  for (auto _ : state) {
    Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
}

#define DNNL_OK(expr)                                                  \
  do {                                                                 \
    if ((expr) != dnnl_success) {                                      \
      state.SkipWithError("oneDNN call failed: " #expr);               \
      return;                                                          \
    }                                                                  \
  } while (0)

void BM_Dnnl(benchmark::State& state, const Case& c, int threads) {
  omp_set_num_threads(threads);
  static dnnl_engine_t engine = nullptr;
  static dnnl_stream_t stream = nullptr;
  if (engine == nullptr) {
    DNNL_OK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  }
  std::vector<int64_t> out = OutShape(c);
  int nd = static_cast<int>(c.a.size());
  dnnl_format_tag_t tag = nd == 3 ? dnnl_abc : dnnl_ab;
  dnnl_memory_desc_t a_md, b_md, c_md;
  DNNL_OK(dnnl_memory_desc_init_by_tag(&a_md, nd, c.a.data(), dnnl_f32, tag));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&b_md, nd, c.b.data(), dnnl_f32, c.runtime_weight ? dnnl_ba : tag));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&c_md, nd, out.data(), dnnl_f32, tag));
  dnnl_memory_desc_t bias_md;
  int64_t bias_dims[2] = {1, c.b.back()};
  DNNL_OK(dnnl_memory_desc_init_by_tag(&bias_md, 2, bias_dims, dnnl_f32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  DNNL_OK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, c.linear ? &bias_md : nullptr, &c_md));
  dnnl_primitive_attr_t attr = nullptr;
  if (c.linear) {
    dnnl_post_ops_t ops;
    DNNL_OK(dnnl_post_ops_create(&ops));
    DNNL_OK(dnnl_post_ops_append_eltwise(ops, 1.0f, c.gelu ? dnnl_eltwise_gelu_erf : dnnl_eltwise_relu, 0.0f, 0.0f));
    DNNL_OK(dnnl_primitive_attr_create(&attr));
    DNNL_OK(dnnl_primitive_attr_set_post_ops(attr, ops));
    dnnl_post_ops_destroy(ops);
  }
  dnnl_primitive_desc_t pd;
  DNNL_OK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, nullptr));
  if (attr != nullptr) dnnl_primitive_attr_destroy(attr);
  dnnl_primitive_t prim;
  DNNL_OK(dnnl_primitive_create(&prim, pd));
  Tensor ta = Random(c.a, 1);
  Tensor tb = c.runtime_weight ? LinearWeight(c) : c.linear ? Transposed(LinearWeight(c)) : Random(c.b, 2);
  Tensor tbias = LinearBias(c);
  Tensor tc = Tensor::Empty(out, DType::Float32()).value();
  dnnl_memory_t ma, mb, mc, mbias;
  DNNL_OK(dnnl_memory_create(&ma, &a_md, engine, ta.data<float>()));
  DNNL_OK(dnnl_memory_create(&mb, &b_md, engine, tb.data<float>()));
  DNNL_OK(dnnl_memory_create(&mc, &c_md, engine, tc.data<float>()));
  DNNL_OK(dnnl_memory_create(&mbias, &bias_md, engine, tbias.data<float>()));
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_BIAS, mbias}};
  int nargs = c.linear ? 4 : 3;
  LetIdleThreadsSleep();
  for (auto _ : state) {
    DNNL_OK(dnnl_primitive_execute(prim, stream, nargs, args));
    DNNL_OK(dnnl_stream_wait(stream));
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
  dnnl_memory_destroy(ma);
  dnnl_memory_destroy(mb);
  dnnl_memory_destroy(mc);
  dnnl_memory_destroy(mbias);
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(pd);
}

// Collects the GFLOP/s of every run, by run name, in run order.
class TableReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<double>> samples;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("GFLOPS");
      if (it == r.counters.end()) continue;
      std::string name = r.benchmark_name();
      const std::string suffix = "/real_time";  // added by UseRealTime()
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        name.resize(name.size() - suffix.size());
      }
      samples[name].push_back(it->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string RunName(const char* lib, const Case& c, int threads) {
  return std::string(lib) + "/" + c.name + "/threads:" + std::to_string(threads);
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using namespace kiln;  // NOLINT
  // --pairs=N: how many (Kiln, oneDNN) pairs of runs per case (default 5).
  int pairs = 5;
  int kept = 1;
  // --cpu-time: rates from the calling thread's CPU time, with one thread
  // only (both libraries run a one-thread call inline on the caller), for a
  // machine busy with other work, where wall time counts the waits.
  bool cpu_time = false;
  // --filter-case=TEXT: only the cases whose name contains TEXT.
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cpu-time") == 0) {
      cpu_time = true;
    } else if (std::strncmp(argv[i], "--filter-case=", 14) == 0) {
      only = argv[i] + 14;
    } else if (std::strncmp(argv[i], "--pairs=", 8) == 0) {
      pairs = std::max(1, std::atoi(argv[i] + 8));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  std::vector<int> thread_counts = cpu_time ? std::vector<int>{1} : std::vector<int>{1, 2};
  for (const Case& c : Cases()) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    for (int threads : thread_counts) {
      // Kiln and oneDNN runs of one case alternate, so each pair sees about
      // the same machine load; the table takes medians over the pairs.
      for (int p = 0; p < pairs; ++p) {
        auto* k = benchmark::RegisterBenchmark(RunName("kiln", c, threads).c_str(), BM_Kiln, c, threads)
                      ->Unit(benchmark::kMicrosecond);
        auto* d = benchmark::RegisterBenchmark(RunName("dnnl", c, threads).c_str(), BM_Dnnl, c, threads)
                      ->Unit(benchmark::kMicrosecond);
        if (!cpu_time) {
          k->UseRealTime();
          d->UseRealTime();
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nmedians over pairs of alternating runs; ratio: median of the pairs' Kiln / oneDNN\n");
  std::printf("%-24s %7s %6s %10s %10s %7s\n", "case", "threads", "pairs", "kiln GF/s", "dnnl GF/s", "ratio");
  for (const Case& c : Cases()) {
    for (int threads : thread_counts) {
      const std::vector<double>& k = reporter.samples[RunName("kiln", c, threads)];
      const std::vector<double>& d = reporter.samples[RunName("dnnl", c, threads)];
      size_t n = std::min(k.size(), d.size());
      if (n == 0) continue;
      std::vector<double> ratios;
      for (size_t i = 0; i < n; ++i) ratios.push_back(d[i] > 0 ? k[i] / d[i] : 0.0);
      std::printf("%-24s %7d %6zu %10.1f %10.1f %7.2f\n", c.name.c_str(), threads, n, Median(k) / 1e9,
                  Median(d) / 1e9, Median(ratios));
    }
  }
  benchmark::Shutdown();
  return 0;
}
