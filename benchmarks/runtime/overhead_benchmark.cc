// Per-call overhead of the runtime (issue 5 §7), on one thread:
//   add: a program adding two 1-element float32 tensors (target <= 0.5 us per
//        call through the C API);
//   mlp: examples/mlp.relax at batch 1 with its weights bound as constants
//        (random, generated here; target <= 4 us per call).
// Each is called through the C API (by name, and by a function looked up
// once), through the C++ API (vm::Context::Invoke by name and by handle,
// graph_executor::GraphSession::Run), on the VM and on the graph executor,
// and with profiling on (runtime/profiler.h) to show what it costs.
//
// At the end a table gives the median time per call of each case over the
// repetitions (CPU time of the one calling thread, and wall time), and ratios
// of the CPU medians measured in this run: against the target, graph / VM,
// by-handle / by-name, and profiling on / off. ONNX Runtime on the same
// programs is measured by benchmarks/runtime/overhead_vs_onnxruntime.py,
// which runs this program and ORT in one window and prints the ratios.
//
// Not run by ctest (from the repository root):
//   build/benchmarks/runtime/kiln_overhead_benchmark --benchmark_min_time=0.5
//       --benchmark_enable_random_interleaving=true   (one command line)
//
// The file also builds against the runtime before profiling and function
// handles existed (those cases drop out): benchmarks/runtime/overhead_before.sh
// builds it at an older commit and runs it, for "before" numbers.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "graph_executor/graph_session.h"
#include "runtime/tensor.h"
#include "vm/module.h"

#if __has_include("runtime/profiler.h")
#include "runtime/profiler.h"
#define KILN_OVERHEAD_HAS_PROFILER 1
#else
#define KILN_OVERHEAD_HAS_PROFILER 0
#endif

namespace kiln {
namespace {

const char kAddSource[] = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((1,), dtype="float32"), b: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        with R.dataflow():
            c = R.add(a, b)
            R.output(c)
        return c
)";

std::string ReadText(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

// Deterministic values in [-0.5, 0.5).
Tensor Filled(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float>()[i] = static_cast<float>((state >> 40) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return t;
}

// examples/mlp.relax at batch 1 (so that it also has a static graph).
std::string MlpBatch1Source() {
  std::string src = ReadText("examples/mlp.relax");
  if (src.empty()) src = ReadText(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  std::string out;
  for (size_t i = 0; i < src.size();) {
    if (src.compare(i, 3, "\"n\"") == 0) {
      out += "1";
      i += 3;
    } else if (src.compare(i, 16, "n = T.int64()\n") == 0) {
      i += 16;
    } else {
      out += src[i++];
    }
  }
  return out;
}

// A compiled program, its bytes (64-byte aligned, as the loader wants for
// borrowed constants) and its inputs.
struct Program {
  std::string name;
  void* bytes = nullptr;
  size_t size = 0;
  std::vector<Tensor> inputs;
  ~Program() { std::free(bytes); }
};

std::unique_ptr<Program> Compile(const std::string& name, const std::string& source,
                                 const driver::CompileOptions& options, std::vector<Tensor> inputs) {
  auto mod = text::ParseModule(source, name + ".relax");
  if (!mod.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), mod.status().ToString().c_str());
    std::exit(1);
  }
  auto program = driver::CompileModule(*mod, options);
  if (!program.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), program.status().ToString().c_str());
    std::exit(1);
  }
  auto serialized = compiler::SerializeVmfb(*program);
  if (!serialized.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), serialized.status().ToString().c_str());
    std::exit(1);
  }
  const std::vector<uint8_t>& bytes = *serialized;
  auto p = std::make_unique<Program>();
  p->name = name;
  p->size = bytes.size();
  p->bytes = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  std::memcpy(p->bytes, bytes.data(), bytes.size());
  p->inputs = std::move(inputs);
  return p;
}

std::vector<std::unique_ptr<Program>>& Programs() {
  static std::vector<std::unique_ptr<Program>> programs;
  return programs;
}

void Fail(benchmark::State& state, kiln_status_t* s) {
  state.SkipWithError(kiln_status_message(s));
  kiln_status_free(s);
}

// The C API path: wrapped inputs, a context of one thread, outputs released
// after every call as a caller would.
struct CApiCall {
  kiln_module_t* module = nullptr;
  kiln_context_t* context = nullptr;
  std::vector<kiln_tensor_t*> inputs;
  const kiln_function_t* function = nullptr;

  kiln_status_t* Init(const Program& p, kiln_executor_t executor, bool profile) {
    if (kiln_status_t* s = kiln_module_load_buffer(p.bytes, p.size, &module)) return s;
    kiln_context_options_t* options = nullptr;
    if (kiln_status_t* s = kiln_context_options_create(&options)) return s;
    kiln_status_t* s = kiln_context_options_set_executor(options, executor);
    if (s == nullptr) s = kiln_context_options_set_num_threads(options, 1);
    if (s == nullptr) s = kiln_context_create_with_options(module, options, &context);
    kiln_context_options_release(options);
    if (s != nullptr) return s;
#if KILN_OVERHEAD_HAS_PROFILER
    if (profile) {
      if (kiln_status_t* e = kiln_context_enable_profiling(context, 1)) return e;
    }
#endif
    if (kiln_status_t* e = kiln_module_lookup_function(module, "main", &function)) return e;
    for (const Tensor& t : p.inputs) {
      kiln_tensor_t* h = nullptr;
      if (kiln_status_t* e = kiln_tensor_wrap(const_cast<void*>(t.raw_data()), t.shape().data(),
                                              static_cast<int32_t>(t.ndim()), KILN_DTYPE_FLOAT32, &h)) {
        return e;
      }
      inputs.push_back(h);
    }
    return nullptr;
  }
  ~CApiCall() {
    for (kiln_tensor_t* t : inputs) kiln_tensor_release(t);
    kiln_context_release(context);
    kiln_module_release(module);
  }
};

void BM_CApi(benchmark::State& state, const Program* p, kiln_executor_t executor, bool by_handle, bool profile) {
  CApiCall call;
  if (kiln_status_t* s = call.Init(*p, executor, profile)) return Fail(state, s);
  int64_t n = 0;
  for (auto _ : state) {
    kiln_outputs_t* outputs = nullptr;
    kiln_status_t* s;
#if KILN_OVERHEAD_HAS_PROFILER
    if (by_handle) {
      s = kiln_context_invoke_function(call.context, call.function, call.inputs.data(), call.inputs.size(),
                                       &outputs);
    } else
#endif
    {
      s = kiln_context_invoke(call.context, "main", call.inputs.data(), call.inputs.size(), &outputs);
    }
    if (s != nullptr) return Fail(state, s);
    kiln_outputs_release(outputs);
#if KILN_OVERHEAD_HAS_PROFILER
    // Keep the profile's memory bounded; clearing is part of the cost.
    if (profile && (++n & 4095) == 0) kiln_context_reset_profile(call.context);
#endif
  }
  (void)n;
}

void BM_CppVm(benchmark::State& state, const Program* p, bool by_handle, bool profile) {
  vm::LoadOptions load;
  load.num_threads = 1;
  auto module = vm::Module::LoadBuffer(p->bytes, p->size, load);
  if (!module.ok()) return state.SkipWithError(module.status().ToString().c_str());
  std::unique_ptr<vm::Context> context = (*module)->CreateContext();
  std::vector<Any> args(p->inputs.begin(), p->inputs.end());
#if KILN_OVERHEAD_HAS_PROFILER
  Profiler profiler;
  if (profile) context->set_profiler(&profiler);
  auto handle = (*module)->LookupFunction("main");
  if (!handle.ok()) return state.SkipWithError(handle.status().ToString().c_str());
#endif
  int64_t n = 0;
  for (auto _ : state) {
    Any result;
    Status s;
#if KILN_OVERHEAD_HAS_PROFILER
    if (by_handle) {
      s = context->Invoke(*handle, args, &result);
    } else
#endif
    {
      s = context->Invoke("main", args, &result);
    }
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(result);
#if KILN_OVERHEAD_HAS_PROFILER
    if (profile && (++n & 4095) == 0) profiler.Clear();
#endif
  }
  (void)n;
}

void BM_CppGraph(benchmark::State& state, const Program* p, bool profile) {
  vm::LoadOptions load;
  load.num_threads = 1;
  auto module = vm::Module::LoadBuffer(p->bytes, p->size, load);
  if (!module.ok()) return state.SkipWithError(module.status().ToString().c_str());
  auto session = graph_executor::GraphSession::Create(*module, "main");
  if (!session.ok()) return state.SkipWithError(session.status().ToString().c_str());
  auto outputs = (*session)->NewOutputs();
  if (!outputs.ok()) return state.SkipWithError(outputs.status().ToString().c_str());
#if KILN_OVERHEAD_HAS_PROFILER
  Profiler profiler;
  if (profile) (*session)->set_profiler(&profiler);
#endif
  int64_t n = 0;
  for (auto _ : state) {
    Status s = (*session)->Run(p->inputs, *outputs);
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
#if KILN_OVERHEAD_HAS_PROFILER
    if (profile && (++n & 4095) == 0) profiler.Clear();
#endif
  }
  (void)n;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Collects every repetition's time per call (us) by benchmark name: CPU time
// of the calling thread (what the ratios use: on one thread it equals wall
// time on an idle machine, and unlike wall time it does not grow when a
// shared machine preempts the benchmark) and wall time.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      double n = static_cast<double>(r.iterations);
      cpu_[r.run_name.function_name].push_back(r.cpu_accumulated_time * 1e6 / n);
      real_[r.run_name.function_name].push_back(r.real_accumulated_time * 1e6 / n);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Median CPU time per call of `name`, 0 if it did not run.
  double Median(const std::string& name) const { return Get(cpu_, name); }
  double MedianReal(const std::string& name) const { return Get(real_, name); }
  const std::map<std::string, std::vector<double>>& times() const { return cpu_; }

 private:
  static double Get(const std::map<std::string, std::vector<double>>& m, const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? 0 : MedianOf(it->second);
  }
  std::map<std::string, std::vector<double>> cpu_, real_;
};

void Register(const Program* p, bool default_repetitions) {
  auto reg = [default_repetitions](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMicrosecond);
    if (default_repetitions) b->Repetitions(5);
  };
  const std::string& n = p->name;
  reg(n + "/capi/vm/by_name", [p](benchmark::State& s) { BM_CApi(s, p, KILN_EXECUTOR_VM, false, false); });
  reg(n + "/capi/graph/by_name", [p](benchmark::State& s) { BM_CApi(s, p, KILN_EXECUTOR_GRAPH, false, false); });
  reg(n + "/cpp/vm/by_name", [p](benchmark::State& s) { BM_CppVm(s, p, false, false); });
  reg(n + "/cpp/graph", [p](benchmark::State& s) { BM_CppGraph(s, p, false); });
#if KILN_OVERHEAD_HAS_PROFILER
  reg(n + "/capi/vm/by_handle", [p](benchmark::State& s) { BM_CApi(s, p, KILN_EXECUTOR_VM, true, false); });
  reg(n + "/capi/graph/by_handle", [p](benchmark::State& s) { BM_CApi(s, p, KILN_EXECUTOR_GRAPH, true, false); });
  reg(n + "/cpp/vm/by_handle", [p](benchmark::State& s) { BM_CppVm(s, p, true, false); });
  reg(n + "/capi/vm/by_handle/profiled", [p](benchmark::State& s) { BM_CApi(s, p, KILN_EXECUTOR_VM, true, true); });
  reg(n + "/cpp/vm/by_handle/profiled", [p](benchmark::State& s) { BM_CppVm(s, p, true, true); });
  reg(n + "/cpp/graph/profiled", [p](benchmark::State& s) { BM_CppGraph(s, p, true); });
#endif
}

void PrintSummary(const MedianReporter& r) {
  std::printf("\nmedian time per call (us) over the repetitions, one thread\n");
  std::printf("%-34s %10s %10s\n", "case", "cpu", "wall");
  for (const auto& kv : r.times()) {
    std::printf("%-34s %10.3f %10.3f\n", kv.first.c_str(), r.Median(kv.first), r.MedianReal(kv.first));
  }
  std::printf("\nratios of median CPU times (same run)\n");
  auto ratio = [&](const std::string& what, const std::string& a, double b, const std::string& b_name) {
    double ta = r.Median(a);
    if (ta <= 0 || b <= 0) return;
    std::printf("  %-58s %8.3f  (%.3f / %.3f us%s%s)\n", what.c_str(), ta / b, ta, b, b_name.empty() ? "" : ", ",
                b_name.c_str());
  };
  for (const char* prog : {"add", "mlp"}) {
    std::string p = prog;
    double target = p == "add" ? 0.5 : 4.0;
    std::string best = r.Median(p + "/capi/vm/by_handle") > 0 ? "/by_handle" : "/by_name";
    ratio(p + ": C API VM" + best + " / target", p + "/capi/vm" + best, target, "target");
    std::string gbest = r.Median(p + "/capi/graph/by_handle") > 0 ? "/by_handle" : "/by_name";
    ratio(p + ": C API graph" + gbest + " / target", p + "/capi/graph" + gbest, target, "target");
    ratio(p + ": C API graph / VM (by name)", p + "/capi/graph/by_name", r.Median(p + "/capi/vm/by_name"), "");
    ratio(p + ": C++ graph / VM (by name)", p + "/cpp/graph", r.Median(p + "/cpp/vm/by_name"), "");
    ratio(p + ": C API VM by handle / by name", p + "/capi/vm/by_handle", r.Median(p + "/capi/vm/by_name"), "");
    ratio(p + ": C++ VM by handle / by name", p + "/cpp/vm/by_handle", r.Median(p + "/cpp/vm/by_name"), "");
    ratio(p + ": C API VM profiled / not", p + "/capi/vm/by_handle/profiled", r.Median(p + "/capi/vm/by_handle"), "");
    ratio(p + ": C++ VM profiled / not", p + "/cpp/vm/by_handle/profiled", r.Median(p + "/cpp/vm/by_handle"), "");
    ratio(p + ": C++ graph profiled / not", p + "/cpp/graph/profiled", r.Median(p + "/cpp/graph"), "");
  }
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using namespace kiln;
  bool user_repetitions = false;
  for (int i = 1; i < argc; ++i) user_repetitions |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
  benchmark::Initialize(&argc, argv);

  driver::CompileOptions add_options;
  Programs().push_back(Compile("add", kAddSource, add_options, {Filled({1}, 1), Filled({1}, 2)}));

  driver::CompileOptions mlp_options;
  mlp_options.params = {{"w0", Filled({128, 784}, 3)},
                        {"b0", Filled({128}, 4)},
                        {"w1", Filled({10, 128}, 5)},
                        {"b1", Filled({10}, 6)}};
  std::string mlp = MlpBatch1Source();
  if (mlp.empty()) {
    std::fprintf(stderr, "cannot read examples/mlp.relax (run from the repository root)\n");
    return 1;
  }
  Programs().push_back(Compile("mlp", mlp, mlp_options, {Filled({1, 784}, 7)}));

  // Five repetitions of every case unless the caller chose.
  for (const auto& p : Programs()) Register(p.get(), !user_repetitions);
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  PrintSummary(reporter);
  benchmark::Shutdown();
  return 0;
}
