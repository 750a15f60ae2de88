#include "tools/kiln-bench/bench_tool.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/common/prepared_call.h"

namespace kiln {
namespace tools {
namespace {

const char kUsage[] =
    "usage: kiln-bench FILE.vmfb [--function=main] [--input=SPEC]... [--threads=N]\n"
    "                  [--executor=auto|vm|graph] [--name=LABEL] [--profile] [--trace=FILE]\n"
    "                  [--profile_calls=N] [--benchmark_* flags]\n";

bool TakeValue(const std::string& arg, const char* flag, std::string* value) {
  std::string prefix = std::string(flag) + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

}  // namespace

int BenchToolMain(int argc, char** argv) {
  bool user_repetitions = false;
  for (int i = 1; i < argc; ++i) user_repetitions |= std::string(argv[i]).rfind("--benchmark_repetitions", 0) == 0;
  benchmark::Initialize(&argc, argv);  // consumes --benchmark_* flags
  CallSpec spec;
  std::string label, value, trace_path;
  bool profile = false;
  int profile_calls = 100;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (TakeValue(arg, "--function", &value)) {
      spec.function = value;
    } else if (TakeValue(arg, "--input", &value)) {
      spec.inputs.push_back(value);
    } else if (TakeValue(arg, "--threads", &value)) {
      spec.threads = std::atoi(value.c_str());
      if (spec.threads <= 0) {
        std::fprintf(stderr, "kiln-bench: error: --threads: '%s' is not a positive integer\n", value.c_str());
        return 2;
      }
    } else if (TakeValue(arg, "--executor", &value)) {
      if (value != "auto" && value != "vm" && value != "graph") {
        std::fprintf(stderr, "kiln-bench: error: --executor must be auto, vm or graph, got '%s'\n", value.c_str());
        return 2;
      }
      spec.executor = value;
    } else if (TakeValue(arg, "--name", &value)) {
      label = value;
    } else if (arg == "--profile") {
      profile = true;
    } else if (TakeValue(arg, "--trace", &value)) {
      if (value.empty()) {
        std::fprintf(stderr, "kiln-bench: error: --trace needs a file name\n");
        return 2;
      }
      trace_path = value;
    } else if (TakeValue(arg, "--profile_calls", &value)) {
      profile_calls = std::atoi(value.c_str());
      if (profile_calls <= 0) {
        std::fprintf(stderr, "kiln-bench: error: --profile_calls: '%s' is not a positive integer\n", value.c_str());
        return 2;
      }
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "kiln-bench: error: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    } else if (spec.module_path.empty()) {
      spec.module_path = arg;
    } else {
      std::fprintf(stderr, "kiln-bench: error: more than one module file\n");
      return 2;
    }
  }
  if (spec.module_path.empty()) {
    std::fprintf(stderr, "kiln-bench: error: no .vmfb file given\n%s", kUsage);
    return 2;
  }
  Result<std::unique_ptr<PreparedCall>> prepared = PreparedCall::Create(spec);
  if (!prepared.ok()) {
    std::fprintf(stderr, "kiln-bench: error: %s\n", prepared.status().message().c_str());
    return 1;
  }
  PreparedCall* call = prepared->get();
  Any warmup;
  Status s = call->Call(&warmup);
  if (!s.ok()) {
    std::fprintf(stderr, "kiln-bench: error: %s\n", s.message().c_str());
    return 1;
  }
  if (label.empty()) label = spec.function + (call->uses_graph() ? "/graph" : "/vm");
  if (spec.threads > 0) label += "/threads:" + std::to_string(spec.threads);
  auto* b = benchmark::RegisterBenchmark(label.c_str(), [call](benchmark::State& state) {
    for (auto _ : state) {
      Any result;
      Status st = call->Call(&result);
      if (!st.ok()) {
        state.SkipWithError(st.message().c_str());
        break;
      }
      benchmark::DoNotOptimize(result);
    }
  });
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
  if (!user_repetitions) b->Repetitions(5)->ReportAggregatesOnly(true);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (profile || !trace_path.empty()) {
    // Profiled calls of their own, after the timed ones, so that the timing
    // above is of unprofiled calls.
    Profiler profiler;
    call->SetProfiler(&profiler);
    for (int i = 0; i < profile_calls; ++i) {
      Any result;
      Status st = call->Call(&result);
      if (!st.ok()) {
        std::fprintf(stderr, "kiln-bench: error: %s\n", st.message().c_str());
        return 1;
      }
    }
    call->SetProfiler(nullptr);
    if (profile) std::printf("\n%s", profiler.FormatTable().c_str());
    if (!trace_path.empty()) {
      Status st = profiler.WriteChromeTrace(trace_path);
      if (!st.ok()) {
        std::fprintf(stderr, "kiln-bench: error: %s\n", st.message().c_str());
        return 1;
      }
      std::printf("kiln-bench: wrote a Chrome trace of %d profiled calls to %s (open it in ui.perfetto.dev)\n",
                  profile_calls, trace_path.c_str());
    }
  }
  return 0;
}

}  // namespace tools
}  // namespace kiln
