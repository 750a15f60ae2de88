// Kiln's generated streaming kernels (sigmoid, softmax, layer_norm) against
// the streaming bound of their bytes, with 1 and 2 threads, in one run
// (issue 4 §5), on rows of usual length and on one long row (issue 4 §2).
//
// Each case is a one-operator module compiled with the driver (default
// schedule, host CPU) and called through vm::Module on a thread pool of the
// given size, as a user's program would. The bound is a plain copy kernel of
// the same input and output bytes (B[i, j] = A[i, j] as a TIR PrimFunc, which
// the default schedule makes a parallel loop over rows with a vectorized inner
// loop), compiled and called the same way, so both pay the same call and
// allocation costs. A plain std::memcpy of the same bytes (one thread) is
// printed for context.
//
// A second table times the generated kernels alone (kernel-only): the same
// modules lowered by the driver (LowerModule: default schedules), built into
// a native library, and the kernel function called directly on preallocated
// tensors with the kernel env of ThreadPool::Shared(threads); no VM call, no
// output allocation, so the ratio shows the kernel's code against the copy
// kernel's, which the VM path blurs with allocation and page faults of the
// output when the machine is loaded.
//
// A third table times the same kernel-only calls with the data coming from
// memory: each call takes the next of enough copies of its tensors to span
// kColdFootprintBytes (more than this machine's 32 MiB L3), so every call
// reads its input from DRAM and writes its output to lines not in cache, as
// a "streaming" read + write does once tensors outgrow the caches. In the
// kernel-only table the data stays in L2 / L3 between calls, and there the
// copy is far faster than memory (docs/performance.md, streaming section).
//
// Each benchmark reports GB/s of input + output bytes. Kernel and copy runs
// of one case alternate (--pairs=N pairs, default 5), so both see about the
// same load on a shared machine; at the end a table gives the median GB/s of
// each and the median of the per-pair ratios kernel / copy (1.0 means "at the
// streaming bound"). Not run by ctest:
//   build/benchmarks/kernels/kiln_streaming_kernels_benchmark --benchmark_min_time=0.2 --pairs=7
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "kernels/kiln_kernel_abi.h"
#include "runtime/native_library.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "vm/module.h"

namespace kiln {
namespace {

struct Case {
  std::string name;
  int64_t rows, cols;
  bool affine;  // layer_norm: gamma and beta of `cols` elements
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"sigmoid", 1024, 1024, false},
      {"softmax", 512, 128, false},
      {"layer_norm", 128, 256, true},
      // One long row: with 2 threads the row's max and sum (softmax) or mean
      // and variance (layer_norm) are split across the threads (partial
      // results combined in order), beside the parallel elementwise loops;
      // with 1 thread they are not, so the two rows compare split and no split.
      {"softmax_row", 1, 1 << 20, false},
      {"lnorm_row", 1, 262144, true},
  };
  return cases;
}

std::string Shape(const Case& c) { return "(" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + ")"; }

std::string OpModule(const Case& c) {
  std::string t = "R.Tensor(" + Shape(c) + ", dtype=\"float32\")";
  std::string v = "R.Tensor((" + std::to_string(c.cols) + ",), dtype=\"float32\")";
  std::string head = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + t;
  std::string call;
  if (c.name == "sigmoid") {
    call = "R.sigmoid(x)";
  } else if (c.name.compare(0, 7, "softmax") == 0) {
    call = "R.nn.softmax(x, axis=-1)";
  } else {
    head += ", g: " + v + ", b: " + v;
    call = "R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)";
  }
  return head + ") -> " + t + ":\n        with R.dataflow():\n            y = " + call +
         "\n            R.output(y)\n        return y\n";
}

// The bound: a TIR copy of the same rows x cols.
std::string CopyModule(const Case& c) {
  std::string t = "R.Tensor(" + Shape(c) + ", dtype=\"float32\")";
  std::string buf = "T.Buffer(" + Shape(c) + ", \"float32\")";
  return "@I.ir_module\nclass Module:\n    @T.prim_func\n    def copy(A: " + buf + ", B: " + buf +
         "):\n        for i, j in T.grid(" + std::to_string(c.rows) + ", " + std::to_string(c.cols) +
         "):\n            with T.block(\"B\"):\n                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
         "                B[vi, vj] = A[vi, vj]\n\n    @R.function\n    def main(x: " +
         t + ") -> " + t + ":\n        y = R.call_tir(Module.copy, (x,), out_sinfo=" + t + ")\n        return y\n";
}

Tensor Random(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float>()[i] = 4.0f * (static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f);
  }
  return t;
}

Result<std::shared_ptr<const vm::Module>> Compile(const std::string& source, const std::string& name, int threads) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, name + ".relax"));
  driver::CompileOptions options;
  options.num_threads_hint = threads;
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

// The kernel of a one-PrimFunc module after the driver's lowering, built and
// loaded as a native library.
struct LoadedKernel {
  std::unique_ptr<NativeLibrary> lib;
  kiln_kernel_fn fn = nullptr;
};

Result<LoadedKernel> CompileKernel(const std::string& source, const std::string& name, int threads) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, name + ".relax"));
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  KILN_ASSIGN_OR_RETURN(ir::IRModule lowered, driver::LowerModule(mod, options));
  std::vector<ir::PrimFunc> prims;
  for (const auto& e : lowered.entries) {
    if (e.prim) prims.push_back(e.prim);
  }
  if (prims.size() != 1) return InvalidArgument(name + ": expected one kernel, got " + std::to_string(prims.size()));
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild built, codegen::BuildNativeLibrary(prims, {}));
  LoadedKernel k;
  KILN_ASSIGN_OR_RETURN(k.lib, NativeLibrary::LoadFromMemory(built.shared_object.data(), built.shared_object.size(), name));
  KILN_ASSIGN_OR_RETURN(const kiln_kernel_entry* entry, k.lib->Find(prims[0]->name));
  k.fn = entry->fn;
  return k;
}

// Input + output bytes of one call (gamma/beta are a row each, left out).
double Bytes(const Case& c) { return 2.0 * double(c.rows) * double(c.cols) * sizeof(float); }

void SetRate(benchmark::State& state, const Case& c) {
  state.counters["GBps"] = benchmark::Counter(Bytes(c) * double(state.iterations()), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
}

void Run(benchmark::State& state, const Case& c, int threads, bool copy) {
  Result<std::shared_ptr<const vm::Module>> mod =
      copy ? Compile(CopyModule(c), c.name + "_copy", threads) : Compile(OpModule(c), c.name, threads);
  if (!mod.ok()) {
    state.SkipWithError(mod.status().ToString().c_str());
    return;
  }
  std::unique_ptr<vm::Context> ctx = (*mod)->CreateContext();
  std::vector<Any> args = {Random({c.rows, c.cols}, 1)};
  if (!copy && c.affine) {
    args.push_back(Random({c.cols}, 2));
    args.push_back(Random({c.cols}, 3));
  }
  Any ret;
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

void BM_Kernel(benchmark::State& state, const Case& c, int threads) { Run(state, c, threads, false); }
void BM_Copy(benchmark::State& state, const Case& c, int threads) { Run(state, c, threads, true); }

// The data of the cold calls spans this much, input and output together.
constexpr double kColdFootprintBytes = 128.0 * 1024 * 1024;

// Kernel-only: the generated function on preallocated tensors. `cold`: each
// call on the next of several copies of them (kColdFootprintBytes in all).
void RunKernelOnly(benchmark::State& state, const Case& c, int threads, bool copy, bool cold = false) {
  Result<LoadedKernel> k = copy ? CompileKernel(CopyModule(c), c.name + "_copy", threads)
                                : CompileKernel(OpModule(c), c.name, threads);
  if (!k.ok()) {
    state.SkipWithError(k.status().ToString().c_str());
    return;
  }
  const int sets = cold ? std::max(1, static_cast<int>(kColdFootprintBytes / Bytes(c) + 0.5)) : 1;
  std::vector<Tensor> tensors;  // kept alive for the args
  std::vector<std::vector<kiln_kernel_arg>> args(sets);
  for (int set = 0; set < sets; ++set) {
    std::vector<Tensor> ts = {Random({c.rows, c.cols}, 1)};
    if (!copy && c.affine) {
      ts.push_back(Random({c.cols}, 2));
      ts.push_back(Random({c.cols}, 3));
    }
    ts.push_back(Tensor::Empty({c.rows, c.cols}, DType::Float32()).value());
    for (const Tensor& t : ts) {
      kiln_kernel_arg a;
      a.tensor = reinterpret_cast<kiln_dltensor*>(t.dl());
      args[set].push_back(a);
      tensors.push_back(t);
    }
  }
  kiln_kernel_env env = MakeKernelEnv(ThreadPool::Shared(threads));
  int set = 0;
  for (auto _ : state) {
    std::vector<kiln_kernel_arg>& a = args[set];
    set = set + 1 == sets ? 0 : set + 1;
    if (k->fn(&env, a.data(), static_cast<int32_t>(a.size())) != 0) {
      state.SkipWithError("the kernel returned an error");
      return;
    }
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
}
void BM_KernelOnly(benchmark::State& state, const Case& c, int threads) { RunKernelOnly(state, c, threads, false); }
void BM_CopyOnly(benchmark::State& state, const Case& c, int threads) { RunKernelOnly(state, c, threads, true); }
void BM_KernelCold(benchmark::State& state, const Case& c, int threads) {
  RunKernelOnly(state, c, threads, false, true);
}
void BM_CopyCold(benchmark::State& state, const Case& c, int threads) { RunKernelOnly(state, c, threads, true, true); }

void BM_Memcpy(benchmark::State& state, const Case& c) {
  Tensor in = Random({c.rows, c.cols}, 1);
  Tensor out = Tensor::Empty({c.rows, c.cols}, DType::Float32()).value();
  for (auto _ : state) {
    std::memcpy(out.data<float>(), in.data<float>(), size_t(in.NumElements()) * sizeof(float));
    benchmark::ClobberMemory();
  }
  SetRate(state, c);
}

// Collects each run's GB/s by run name.
class TableReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("GBps");
      if (it != r.counters.end()) gbps_[r.run_name.str()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Get(const std::string& name) const {
    auto it = gbps_.find(name + "/real_time");
    if (it == gbps_.end()) it = gbps_.find(name);
    return it == gbps_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> gbps_;
};

std::string RunName(const char* what, const Case& c, int threads, int pair) {
  return std::string(what) + "/" + c.name + "/threads:" + std::to_string(threads) + "/pair:" + std::to_string(pair);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  for (const Case& c : Cases()) {
    for (int threads : {1, 2}) {
      for (int p = 0; p < pairs; ++p) {
        // Kernel and copy of each table back to back, so a pair sees the same load.
        const std::pair<const char*, void (*)(benchmark::State&, const Case&, int)> runs[] = {
            {"kiln", BM_Kernel},        {"copy", BM_Copy},           {"kernel_only", BM_KernelOnly},
            {"copy_only", BM_CopyOnly}, {"kernel_cold", BM_KernelCold}, {"copy_cold", BM_CopyCold}};
        for (const auto& run : runs) {
          benchmark::RegisterBenchmark(RunName(run.first, c, threads, p).c_str(), run.second, c, threads)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
    benchmark::RegisterBenchmark(RunName("memcpy", c, 1, 0).c_str(), BM_Memcpy, c)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  for (const char* mode : {"vm", "kernel_only", "cold"}) {
    bool vm = std::strcmp(mode, "vm") == 0, cold = std::strcmp(mode, "cold") == 0;
    const char* title = vm     ? "through the VM (call + output allocation included):"
                        : cold ? "kernel only, data from memory (each call on the next copy of its tensors, 128 MiB "
                                 "in all):"
                               : "kernel only (generated function on preallocated tensors):";
    std::printf("\n%s\n%-12s %9s %7s %11s %11s %13s %8s\n", title, "case", "shape", "threads", "kiln GB/s",
                "copy GB/s", "memcpy GB/s", "ratio");
    for (const Case& c : Cases()) {
      for (int threads : {1, 2}) {
        std::vector<double> k, b, ratio;
        for (int p = 0; p < pairs; ++p) {
          double kp = reporter.Get(RunName(vm ? "kiln" : cold ? "kernel_cold" : "kernel_only", c, threads, p));
          double bp = reporter.Get(RunName(vm ? "copy" : cold ? "copy_cold" : "copy_only", c, threads, p));
          if (kp > 0) k.push_back(kp);
          if (bp > 0) b.push_back(bp);
          if (kp > 0 && bp > 0) ratio.push_back(kp / bp);
        }
        if (k.empty() && b.empty()) continue;
        double m = reporter.Get(RunName("memcpy", c, 1, 0));
        std::string shape = std::to_string(c.rows) + "x" + std::to_string(c.cols);
        std::printf("%-12s %9s %7d %11.1f %11.1f %13.1f %8.2f\n", c.name.c_str(), shape.c_str(), threads,
                    Median(k) / 1e9, Median(b) / 1e9, m / 1e9, Median(ratio));
      }
    }
  }
  benchmark::Shutdown();
  return 0;
}
