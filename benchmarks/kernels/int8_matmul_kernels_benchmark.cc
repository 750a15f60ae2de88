// Kiln's 8-bit matmul kernel (kernels/int8_matmul.h: AVX512-VNNI, B packed
// ahead of time as the compiler packs a constant weight) against oneDNN's
// u8 x s8 -> s32 matmul primitive (weights reordered once into the layout it
// chooses, the source zero point given at run time, as for a dynamically
// quantized activation), on the shapes of the quantized MiniLM
// (quantize_dynamic of minilm_l6_int8: rows = batch x sequence, K x N =
// 384x384, 384x1536, 1536x384) and 1024^3, with 1 and 2 threads, in one run.
//
// Each benchmark reports GOP/s (2 M K N per call). Kiln and oneDNN runs of a
// case alternate (--pairs=N, default 5); the table at the end gives the
// medians and the median of the pairs' ratios Kiln / oneDNN. Not run by ctest:
//   build/benchmarks/kernels/kiln_int8_matmul_kernels_benchmark --benchmark_min_time=0.2 --pairs=5
// Kiln uses AMX where the CPU has it (as oneDNN does); to compare the
// AVX512-VNNI code with oneDNN's, run with --vnni and oneDNN limited to it:
//   ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI build/.../kiln_int8_matmul_kernels_benchmark --vnni
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kernels/int8_matmul.h"
#include "kernels/int8_pack.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

kernels::Int8Isa g_isa = kernels::Int8Isa::kBest;

struct Case {
  std::string name;
  int64_t m, k, n;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"256x384x384", 256, 384, 384},   {"256x384x1536", 256, 384, 1536}, {"256x1536x384", 256, 1536, 384},
      {"7x384x384", 7, 384, 384},       {"7x384x1536", 7, 384, 1536},     {"1024x1024x1024", 1024, 1024, 1024},
  };
  return cases;
}

std::vector<uint8_t> Bytes(int64_t count, uint64_t seed) {
  std::vector<uint8_t> v(static_cast<size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<uint8_t>(s >> 56);
  }
  return v;
}

void SetRate(benchmark::State& state, const Case& c) {
  state.counters["GOPS"] = benchmark::Counter(2.0 * c.m * c.k * c.n * double(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void LetIdleThreadsSleep() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

void BM_Kiln(benchmark::State& state, const Case& c, int threads) {
  std::vector<uint8_t> a = Bytes(c.m * c.k, 1), b = Bytes(c.k * c.n, 2);
  std::vector<int8_t> packed(static_cast<size_t>(kernels::Int8PackedBytes(c.k, c.n)));
  std::vector<int32_t> colsum(static_cast<size_t>(kernels::Int8Blocks(c.n) * kernels::kInt8BlockN));
  kernels::PackInt8B(b.data(), false, c.k, c.n, packed.data(), colsum.data());
  std::vector<int32_t> out(static_cast<size_t>(c.m * c.n));
  const int32_t za = 117, zb = 0;
  kernels::Int8MatmulProblem p;
  p.a = a.data();
  p.rows = p.m = c.m;
  p.k = p.lda = c.k;
  p.packed_b = packed.data();
  p.colsum = colsum.data();
  p.n = c.n;
  p.za = &za;
  p.zb = &zb;
  p.out = out.data();
  ThreadPool* pool = ThreadPool::Shared(threads);
  LetIdleThreadsSleep();
  for (auto _ : state) {
    kernels::RunInt8Matmul(p, g_isa, pool);
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
}

#define DNNL_OK(expr)                                    \
  do {                                                   \
    if ((expr) != dnnl_success) {                        \
      state.SkipWithError("oneDNN call failed: " #expr); \
      return;                                            \
    }                                                    \
  } while (0)

void BM_Dnnl(benchmark::State& state, const Case& c, int threads) {
  omp_set_num_threads(threads);
  static dnnl_engine_t engine = nullptr;
  static dnnl_stream_t stream = nullptr;
  if (engine == nullptr) {
    DNNL_OK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  }
  const int64_t ad[2] = {c.m, c.k}, bd[2] = {c.k, c.n}, cd[2] = {c.m, c.n};
  dnnl_memory_desc_t a_md, b_md, b_any, c_md;
  DNNL_OK(dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_u8, dnnl_ab));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dnnl_s8, dnnl_ab));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&b_any, 2, bd, dnnl_s8, dnnl_format_tag_any));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dnnl_s32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  DNNL_OK(dnnl_matmul_desc_init(&desc, &a_md, &b_any, nullptr, &c_md));
  dnnl_primitive_attr_t attr;
  DNNL_OK(dnnl_primitive_attr_create(&attr));
  const int32_t runtime_zp = DNNL_RUNTIME_S32_VAL;
  DNNL_OK(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime_zp));
  dnnl_primitive_desc_t pd;
  DNNL_OK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, nullptr));
  dnnl_primitive_attr_destroy(attr);
  dnnl_primitive_t prim;
  DNNL_OK(dnnl_primitive_create(&prim, pd));
  const dnnl_memory_desc_t* w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  std::vector<uint8_t> a = Bytes(c.m * c.k, 1), b = Bytes(c.k * c.n, 2);
  std::vector<int32_t> out(static_cast<size_t>(c.m * c.n));
  int32_t za = 117;
  const int64_t zd[1] = {1};
  dnnl_memory_desc_t z_md;
  DNNL_OK(dnnl_memory_desc_init_by_tag(&z_md, 1, zd, dnnl_s32, dnnl_a));
  dnnl_memory_t ma, mb_plain, mb, mc, mz;
  DNNL_OK(dnnl_memory_create(&ma, &a_md, engine, a.data()));
  DNNL_OK(dnnl_memory_create(&mb_plain, &b_md, engine, b.data()));
  DNNL_OK(dnnl_memory_create(&mb, w_md, engine, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(dnnl_memory_create(&mc, &c_md, engine, out.data()));
  DNNL_OK(dnnl_memory_create(&mz, &z_md, engine, &za));
  // The weights reordered once, outside the timing (Kiln's are packed at compile time).
  dnnl_primitive_desc_t rpd;
  DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, &b_md, engine, w_md, engine, nullptr));
  dnnl_primitive_t reorder;
  DNNL_OK(dnnl_primitive_create(&reorder, rpd));
  dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, mb_plain}, {DNNL_ARG_TO, mb}};
  DNNL_OK(dnnl_primitive_execute(reorder, stream, 2, rargs));
  DNNL_OK(dnnl_stream_wait(stream));
  dnnl_exec_arg_t args[4] = {
      {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, mz}};
  LetIdleThreadsSleep();
  for (auto _ : state) {
    DNNL_OK(dnnl_primitive_execute(prim, stream, 4, args));
    DNNL_OK(dnnl_stream_wait(stream));
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
  for (dnnl_memory_t mem : {ma, mb_plain, mb, mc, mz}) dnnl_memory_destroy(mem);
  dnnl_primitive_destroy(reorder);
  dnnl_primitive_desc_destroy(rpd);
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(pd);
}

class TableReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<double>> samples;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("GOPS");
      if (it == r.counters.end()) continue;
      std::string name = r.benchmark_name();
      const std::string suffix = "/real_time";
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
  int pairs = 5;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pairs=", 8) == 0) {
      pairs = std::max(1, std::atoi(argv[i] + 8));
    } else if (std::strcmp(argv[i], "--vnni") == 0) {
      g_isa = kernels::Int8Isa::kAvx512Vnni;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  for (const Case& c : Cases()) {
    for (int threads : {1, 2}) {
      for (int p = 0; p < pairs; ++p) {
        benchmark::RegisterBenchmark(RunName("kiln", c, threads).c_str(), BM_Kiln, c, threads)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(RunName("dnnl", c, threads).c_str(), BM_Dnnl, c, threads)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nmedians over pairs of alternating runs; ratio: median of the pairs' Kiln / oneDNN\n");
  std::printf("%-18s %7s %6s %10s %10s %7s\n", "case", "threads", "pairs", "kiln GOPS", "dnnl GOPS", "ratio");
  for (const Case& c : Cases()) {
    for (int threads : {1, 2}) {
      const std::vector<double>& k = reporter.samples[RunName("kiln", c, threads)];
      const std::vector<double>& d = reporter.samples[RunName("dnnl", c, threads)];
      size_t n = std::min(k.size(), d.size());
      if (n == 0) continue;
      std::vector<double> ratios;
      for (size_t i = 0; i < n; ++i) ratios.push_back(d[i] > 0 ? k[i] / d[i] : 0.0);
      std::printf("%-18s %7d %6zu %10.1f %10.1f %7.2f\n", c.name.c_str(), threads, n, Median(k) / 1e9,
                  Median(d) / 1e9, Median(ratios));
    }
  }
  benchmark::Shutdown();
  return 0;
}
