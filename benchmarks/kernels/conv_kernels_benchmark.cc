// Kiln's generated fp32 conv2d kernels against oneDNN's convolution primitive
// on the ResNet-18 layers of issue 4 §5 (batch 1, padding keeps the size),
// MobileNetV2's depthwise layers and the grouped and small-plane pointwise
// layers of torchvision's RegNetY-800MF and EfficientNet-B0 (issue 20 §3),
// with 1 and 2 threads, in one run (--benchmark_filter picks layers).
//
// Kiln: a one-operator module (R.nn.conv2d, NCHW data, OIHW weights) compiled
// with the driver (default schedule, host CPU) and called through vm::Module on
// a thread pool of the given size, as a user's program would: the per-call
// input packing and the VM's output allocation are inside the time.
// kiln_const: the same module with w bound at compile time
// (CompileOptions::params), so pack-constant-weights packs it into blocks of
// 8 output channels (kernel_layout "OIHW8o") once, at compile time.
// oneDNN, two ways, each a primitive created once and executed on a stream
// with OpenMP limited to the same number of threads:
//   dnnl_nchw: plain NCHW / OIHW / NCHW memory, the same contract as Kiln's;
//   dnnl_any:  the layouts oneDNN prefers (format_tag any, e.g. nChw16c), its
//              best case; converting to and from them is not timed.
//
// Each benchmark reports GFLOP/s (2 * MACs); at the end a table gives, per
// layer and thread count, the median and the best GFLOP/s of the repetitions
// and the ratios Kiln / oneDNN. Not run by ctest:
//   build/benchmarks/kernels/kiln_conv_kernels_benchmark --benchmark_repetitions=7 --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "vm/module.h"

namespace kiln {
namespace {

struct Layer {
  std::string name;
  int64_t c, hw, o, k, stride, pad;
  int64_t groups = 1;  // groups == c == o: depthwise
  int64_t Out() const { return (hw + 2 * pad - k) / stride + 1; }
};

const std::vector<Layer>& Layers() {
  static const std::vector<Layer> layers = {
      {"3->64 7x7/2 224", 3, 224, 64, 7, 2, 3},   {"64->64 3x3 56", 64, 56, 64, 3, 1, 1},
      {"128->128 3x3 28", 128, 28, 128, 3, 1, 1}, {"256->256 3x3 14", 256, 14, 256, 3, 1, 1},
      {"512->512 3x3 7", 512, 7, 512, 3, 1, 1},
      // MobileNetV2's 3x3 depthwise convolutions (channels, input size, stride).
      {"dw32 3x3 112", 32, 112, 32, 3, 1, 1, 32},    {"dw96 3x3/2 112", 96, 112, 96, 3, 2, 1, 96},
      {"dw144 3x3 56", 144, 56, 144, 3, 1, 1, 144},  {"dw192 3x3 28", 192, 28, 192, 3, 1, 1, 192},
      {"dw576 3x3/2 14", 576, 14, 576, 3, 2, 1, 576}, {"dw960 3x3 7", 960, 7, 960, 3, 1, 1, 960},
      // RegNetY-800MF (torchvision): grouped 3x3 convolutions of group width 16.
      {"g64/16 3x3/2 112", 64, 112, 64, 3, 2, 1, 4},  {"g144/16 3x3/2 56", 144, 56, 144, 3, 2, 1, 9},
      {"g144/16 3x3 28", 144, 28, 144, 3, 1, 1, 9},   {"g320/16 3x3/2 28", 320, 28, 320, 3, 2, 1, 20},
      {"g320/16 3x3 14", 320, 14, 320, 3, 1, 1, 20},  {"g784/16 3x3/2 14", 784, 14, 784, 3, 2, 1, 49},
      {"g784/16 3x3 7", 784, 7, 784, 3, 1, 1, 49},
      // Pointwise convolutions on small planes (RegNetY-800MF, EfficientNet-B0).
      {"784->784 1x1 7", 784, 7, 784, 1, 1, 0},       {"320->784 1x1 14", 320, 14, 784, 1, 1, 0},
      {"1152->192 1x1 7", 1152, 7, 192, 1, 1, 0},     {"192->1152 1x1 7", 192, 7, 1152, 1, 1, 0},
      {"672->112 1x1 14", 672, 14, 112, 1, 1, 0},     {"320->1280 1x1 7", 320, 7, 1280, 1, 1, 0},
  };
  return layers;
}

double Flops(const Layer& l) {
  return 2.0 * double(l.o) * l.Out() * l.Out() * double(l.c / l.groups) * l.k * l.k;
}

std::vector<int64_t> XShape(const Layer& l) { return {1, l.c, l.hw, l.hw}; }
std::vector<int64_t> WShape(const Layer& l) { return {l.o, l.c / l.groups, l.k, l.k}; }
// oneDNN's grouped weights: (G, O/G, I/G, KH, KW).
std::vector<int64_t> DnnlWShape(const Layer& l) {
  if (l.groups == 1) return WShape(l);
  return {l.groups, l.o / l.groups, l.c / l.groups, l.k, l.k};
}
std::vector<int64_t> YShape(const Layer& l) { return {1, l.o, l.Out(), l.Out()}; }

void Fill(float* p, int64_t count, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
}

Tensor Random(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  Fill(t.data<float>(), t.NumElements(), seed);
  return t;
}

std::string Dims(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

std::string ConvModule(const Layer& l) {
  std::string s = std::to_string(l.stride), p = std::to_string(l.pad);
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor(" + Dims(XShape(l)) +
         ", dtype=\"float32\"), w: R.Tensor(" + Dims(WShape(l)) + ", dtype=\"float32\")) -> R.Tensor(" +
         Dims(YShape(l)) + ", dtype=\"float32\"):\n        with R.dataflow():\n            y = R.nn.conv2d(x, w, strides=[" +
         s + ", " + s + "], padding=[" + p + ", " + p + ", " + p + ", " + p + "], groups=" + std::to_string(l.groups) +
         ")\n            R.output(y)\n        return y\n";
}

// `weights`: bound as a constant (the module then takes x only).
Result<std::shared_ptr<const vm::Module>> CompileKiln(const Layer& l, int threads, const Tensor* weights) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(ConvModule(l), "conv.relax"));
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  if (weights != nullptr) options.params.push_back({"w", *weights});
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

// CPU time of the whole process (every thread), in seconds.
double ProcessCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

void SetRate(benchmark::State& state, const Layer& l) {
  state.counters["GFLOPS"] = benchmark::Counter(Flops(l) * double(state.iterations()), benchmark::Counter::kIsRate,
                                                benchmark::Counter::kIs1000);
}

// Lets the other library's idle threads go to sleep before a case is timed:
// oneDNN's OpenMP workers spin after each parallel region (libgomp's default
// wait policy) and Kiln's pool spins 200 us, and a second thread spinning
// on the other core halved the two-thread speed of whichever case ran next
// (Kiln's 64->64 3x3 at 56^2 after oneDNN's: 2.16 ms, alone 1.41 ms).
void LetIdleThreadsSleep() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

void BM_Kiln(benchmark::State& state, const Layer& l, int threads, bool constant_weights) {
  Tensor w = Random(WShape(l), 2);
  Result<std::shared_ptr<const vm::Module>> mod = CompileKiln(l, threads, constant_weights ? &w : nullptr);
  if (!mod.ok()) {
    state.SkipWithError(mod.status().ToString().c_str());
    return;
  }
  std::unique_ptr<vm::Context> ctx = (*mod)->CreateContext();
  std::vector<Any> args = {Random(XShape(l), 1)};
  if (!constant_weights) args.push_back(w);
  Any ret;
  double cpu0 = ProcessCpuSeconds();
  LetIdleThreadsSleep();
  for (auto _ : state) {
    Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  // CPU time of all threads per call: with 2 threads, about the 1-thread
  // figure when the work splits without overhead (the pool's idle spin counts).
  state.counters["cpu_us"] = (ProcessCpuSeconds() - cpu0) * 1e6 / double(state.iterations());
  SetRate(state, l);
}

#define DNNL_OK(expr)                                    \
  do {                                                   \
    if ((expr) != dnnl_success) {                        \
      state.SkipWithError("oneDNN call failed: " #expr); \
      return;                                            \
    }                                                    \
  } while (0)

// `blocked`: format_tag any (oneDNN picks); otherwise plain nchw / oihw.
void BM_Dnnl(benchmark::State& state, const Layer& l, int threads, bool blocked) {
  omp_set_num_threads(threads);
  static dnnl_engine_t engine = nullptr;
  static dnnl_stream_t stream = nullptr;
  if (engine == nullptr) {
    DNNL_OK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  }
  std::vector<int64_t> xs = XShape(l), ws = DnnlWShape(l), ys = YShape(l);
  dnnl_memory_desc_t x_md, w_md, y_md;
  DNNL_OK(dnnl_memory_desc_init_by_tag(&x_md, 4, xs.data(), dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw));
  dnnl_format_tag_t plain_w = l.groups == 1 ? dnnl_oihw : dnnl_goihw;
  DNNL_OK(dnnl_memory_desc_init_by_tag(&w_md, static_cast<int>(ws.size()), ws.data(), dnnl_f32,
                                       blocked ? dnnl_format_tag_any : plain_w));
  DNNL_OK(dnnl_memory_desc_init_by_tag(&y_md, 4, ys.data(), dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw));
  dnnl_dims_t strides = {l.stride, l.stride}, pad = {l.pad, l.pad};
  dnnl_convolution_desc_t desc;
  DNNL_OK(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &x_md, &w_md,
                                             nullptr, &y_md, strides, pad, pad));
  dnnl_primitive_desc_t pd;
  DNNL_OK(dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr));
  dnnl_primitive_t prim;
  DNNL_OK(dnnl_primitive_create(&prim, pd));
  // Memory in the layouts the primitive settled on, filled with values.
  dnnl_memory_t mem[3];
  const dnnl_query_t queries[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
  for (int i = 0; i < 3; ++i) {
    const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd, queries[i], 0);
    DNNL_OK(dnnl_memory_create(&mem[i], md, engine, DNNL_MEMORY_ALLOCATE));
    void* p = nullptr;
    DNNL_OK(dnnl_memory_get_data_handle(mem[i], &p));
    Fill(static_cast<float*>(p), static_cast<int64_t>(dnnl_memory_desc_get_size(md) / sizeof(float)), i + 1);
  }
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
  LetIdleThreadsSleep();
  for (auto _ : state) {
    DNNL_OK(dnnl_primitive_execute(prim, stream, 3, args));
    DNNL_OK(dnnl_stream_wait(stream));
    benchmark::ClobberMemory();
  }
  SetRate(state, l);
  const char* impl = nullptr;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) state.SetLabel(impl);
  for (dnnl_memory_t m : mem) dnnl_memory_destroy(m);
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(pd);
}

// Collects each run's GFLOP/s: the median and the best ("max" aggregate) of
// the repetitions when repeated, else the single run's. The best is what a
// shared, loaded machine disturbs least (interference only adds time).
class TableReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> median, best;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      auto it = r.counters.find("GFLOPS");
      if (it == r.counters.end()) continue;
      std::string key = r.run_name.str();
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median[key] = it->second.value;
        if (r.aggregate_name == "max") best[key] = it->second.value;
      } else if (!repeated_.count(key)) {
        median[key] = best[key] = it->second.value;
        if (r.repetitions > 1) repeated_[key] = true;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  static double Get(const std::map<std::string, double>& m, const std::string& name) {
    auto it = m.find(name + "/real_time");
    if (it == m.end()) it = m.find(name);
    return it == m.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, bool> repeated_;
};

std::string RunName(const char* lib, const Layer& l, int threads) {
  std::string n = l.name;
  for (char& ch : n)
    if (ch == ' ') ch = '_';
  return std::string(lib) + "/" + n + "/threads:" + std::to_string(threads);
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using namespace kiln;  // NOLINT
  auto best_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  for (const Layer& l : Layers()) {
    for (int threads : {1, 2}) {
      // The four of one case run back to back, so they see the same load.
      benchmark::RegisterBenchmark(RunName("kiln", l, threads).c_str(), BM_Kiln, l, threads, false)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->ComputeStatistics("max", best_of);
      benchmark::RegisterBenchmark(RunName("kiln_const", l, threads).c_str(), BM_Kiln, l, threads, true)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->ComputeStatistics("max", best_of);
      benchmark::RegisterBenchmark(RunName("dnnl_nchw", l, threads).c_str(), BM_Dnnl, l, threads, false)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->ComputeStatistics("max", best_of);
      benchmark::RegisterBenchmark(RunName("dnnl_any", l, threads).c_str(), BM_Dnnl, l, threads, true)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->ComputeStatistics("max", best_of);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // GFLOP/s: median (best) of the repetitions; ratios of medians (of bests).
  // kiln: weights as arguments; const: weights bound and packed at compile time.
  std::printf("\n%-16s %3s %14s %14s %14s %14s %12s %12s %12s\n", "layer", "thr", "kiln GF/s", "const GF/s",
              "dnnl_nchw", "dnnl_any", "kiln/nchw", "kiln/any", "const/any");
  for (const Layer& l : Layers()) {
    for (int threads : {1, 2}) {
      const auto& md = reporter.median;
      const auto& bs = reporter.best;
      double k = TableReporter::Get(md, RunName("kiln", l, threads));
      double kc = TableReporter::Get(md, RunName("kiln_const", l, threads));
      double dn = TableReporter::Get(md, RunName("dnnl_nchw", l, threads));
      double da = TableReporter::Get(md, RunName("dnnl_any", l, threads));
      double kb = TableReporter::Get(bs, RunName("kiln", l, threads));
      double kcb = TableReporter::Get(bs, RunName("kiln_const", l, threads));
      double dnb = TableReporter::Get(bs, RunName("dnnl_nchw", l, threads));
      double dab = TableReporter::Get(bs, RunName("dnnl_any", l, threads));
      if (k == 0 && kc == 0 && dn == 0 && da == 0) continue;
      auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
      std::printf("%-16s %3d %6.1f (%5.1f) %6.1f (%5.1f) %6.1f (%5.1f) %6.1f (%5.1f) %5.2f (%4.2f) %5.2f (%4.2f) "
                  "%5.2f (%4.2f)\n",
                  l.name.c_str(), threads, k / 1e9, kb / 1e9, kc / 1e9, kcb / 1e9, dn / 1e9, dnb / 1e9, da / 1e9,
                  dab / 1e9, ratio(k, dn), ratio(kb, dnb), ratio(k, da), ratio(kb, dab), ratio(kc, da),
                  ratio(kcb, dab));
    }
  }
  benchmark::Shutdown();
  return 0;
}
