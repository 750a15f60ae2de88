#include "tools/kiln-bench/bench_tool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/profiler.h"
#include "runtime/program.h"
#include "runtime/thread_pool.h"
#include "tools/common/flags.h"
#include "tools/common/inline_tensor.h"
#include "tools/common/plugins.h"
#include "tools/common/prepared_call.h"
#include "tools/common/process_stats.h"
#include "tools/common/run_tool.h"
#include "tools/kiln-bench/machine_peak.h"
#include "tools/kiln-bench/roofline_table.h"

namespace kiln {
namespace tools {

const char kBenchToolUsage[] =
    "usage: kiln-bench A.vmfb [B.vmfb ...] [flags]\n"
    "  --function=NAME          the function to time (default main)\n"
    "  --input=SPEC             inputs as for kiln-run (default: random values shaped by the signature)\n"
    "  --dim NAME=V1,V2,...     values of a symbolic dimension; each is a case (several names: every\n"
    "                           combination); only with random inputs\n"
    "  --seed=N                 seed of the random inputs (default 1)\n"
    "  --warmup=N               untimed calls per caller first (default 2)\n"
    "  --runs=N                 at least N timed calls per caller (default 10)\n"
    "  --min-time=SECONDS       and at least this long (default 1)\n"
    "  --threads=N              kernel threads (default: one per core)\n"
    "  --concurrency=N          N caller threads on one module, each with its own context (default 1)\n"
    "  --executor=auto|vm|graph the static graph where there is one (auto), the VM, or the graph only\n"
    "  --device=cpu|cuda[:N]    where to run; cuda: modules compiled with --target=cuda, on GPU N (each call\n"
    "                           waits for its kernels, so times are wall times including the launches)\n"
    "  --cuda_graph=on|off      --device=cuda: replay a static function's call as a CUDA graph (default on)\n"
    "  --replay=on|off          on the VM, replay a call's recorded kernel calls when the shapes repeat\n"
    "                           (default on; off: interpret every call)\n"
    "  --profile                then profile --profile_calls calls and print the per-kernel table\n"
    "  --trace=FILE             and write them as a Chrome trace (ui.perfetto.dev); one case only\n"
    "  --profile_calls=N        calls to profile (default 100)\n"
    "  --remeasure-peak         measure this machine's peak for the profile's roofline again (it is cached)\n"
    "  --format=table|json|csv  how to print the results (default table)\n"
    "  --plugin=PATH            load a library of packed functions first (repeatable; kiln.h, \"Plugins\")\n"
    "Several files run side by side: later rows show their p50 latency over the first file's.\n"
    "Flags take --flag=value or --flag value.\n";

Result<BenchOptions> ParseBenchArgs(int argc, const char* const* argv) {
  BenchOptions o;
  FlagParser flags;
  flags.AddValue("function", [&](const std::string& v) -> Status {
    if (v.empty()) return InvalidArgument("empty function name");
    o.function = v;
    return Status::Ok();
  });
  flags.AddRepeated("input", &o.inputs);
  flags.AddValue("dim", [&](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(auto dim, ParseNameValues("--dim", v, 0));
    for (const auto& d : o.dims) {
      if (d.first == dim.first) return InvalidArgument("--dim: '" + dim.first + "' given twice");
    }
    o.dims.push_back(std::move(dim));
    return Status::Ok();
  });
  flags.AddValue("seed", [&](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(int64_t seed, ParseIntFlag("--seed", v, 0, INT64_MAX));
    o.seed = static_cast<uint64_t>(seed);
    return Status::Ok();
  });
  flags.AddInt("warmup", 0, 1000000000, &o.warmup);
  flags.AddInt("runs", 1, 1000000000, &o.runs);
  flags.AddDouble("min-time", 0, &o.min_time);
  flags.AddInt("threads", 1, 1000000000, &o.threads);
  flags.AddInt("concurrency", 1, 1024, &o.concurrency);
  flags.AddChoice("executor", {"auto", "vm", "graph"}, &o.executor);
  flags.AddValue("device", [&](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(o.device, ParseDeviceFlag(v));
    return Status::Ok();
  });
  flags.AddValue("cuda_graph", [&](const std::string& v) -> Status {
    if (v != "on" && v != "off") return InvalidArgument("expected on or off, got '" + v + "'");
    o.cuda_graph = v == "on";
    return Status::Ok();
  });
  flags.AddValue("replay", [&](const std::string& v) -> Status {
    if (v != "on" && v != "off") return InvalidArgument("expected on or off, got '" + v + "'");
    o.replay = v == "on";
    return Status::Ok();
  });
  flags.AddSwitch("profile", &o.profile);
  flags.AddValue("trace", [&](const std::string& v) -> Status {
    if (v.empty()) return InvalidArgument("needs a file name");
    o.trace_path = v;
    return Status::Ok();
  });
  flags.AddInt("profile_calls", 1, 1000000000, &o.profile_calls);
  flags.AddSwitch("remeasure-peak", &o.remeasure_peak);
  flags.AddChoice("format", {"table", "json", "csv"}, &o.format);
  flags.AddRepeated("plugin", &o.plugins);
  KILN_RETURN_IF_ERROR(flags.Parse(argc, argv, &o.files));
  o.help = flags.help();
  if (o.help) return o;
  if (o.files.empty()) return InvalidArgument("no .vmfb file given (see --help)");
  if (!o.dims.empty() && !o.inputs.empty()) {
    return InvalidArgument("--dim shapes random inputs; it cannot be used with --input");
  }
  size_t cases = 1;
  for (const auto& d : o.dims) cases *= d.second.size();
  if (!o.trace_path.empty() && cases * o.files.size() != 1) {
    return InvalidArgument(StrFormat("--trace writes one case, but there are %zu (files x --dim values)",
                                     cases * o.files.size()));
  }
  return o;
}

LatencyStats Summarize(std::vector<double> ms, double wall_seconds) {
  LatencyStats s;
  s.calls = static_cast<int64_t>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size())));
    return ms[std::min(ms.size(), std::max<size_t>(k, 1)) - 1];
  };
  s.min = ms.front();
  s.max = ms.back();
  s.p50 = rank(50);
  s.p90 = rank(90);
  s.p99 = rank(99);
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  if (wall_seconds > 0) s.throughput = static_cast<double>(ms.size()) / wall_seconds;
  return s;
}

std::string DimsText(const std::map<std::string, int64_t>& dims) {
  if (dims.empty()) return "-";
  std::string s;
  for (const auto& kv : dims) s += (s.empty() ? "" : ",") + kv.first + "=" + std::to_string(kv.second);
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

// Every combination of the --dim values, first name varying slowest.
std::vector<std::map<std::string, int64_t>> DimCases(const BenchOptions& o) {
  std::vector<std::map<std::string, int64_t>> cases = {{}};
  for (const auto& d : o.dims) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& c : cases) {
      for (int64_t v : d.second) {
        auto m = c;
        m[d.first] = v;
        next.push_back(std::move(m));
      }
    }
    cases = std::move(next);
  }
  return cases;
}

// Releases every caller at once, after each finished its warm-up.
class StartGate {
 public:
  explicit StartGate(int callers) : waiting_(callers) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--waiting_ == 0) {
      start_ = Clock::now();
      cv_.notify_all();
    } else {
      cv_.wait(lock, [this] { return waiting_ == 0; });
    }
  }
  Clock::time_point start() {
    std::lock_guard<std::mutex> lock(mu_);
    return start_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
  Clock::time_point start_;
};

struct CallerResult {
  std::vector<double> ms;
  std::vector<double> gpu_ms;  // --device=cuda: per call, from CUDA events
  double cpu_seconds = 0;
  uint64_t peak_tensor_bytes = 0;
  Clock::time_point end;
  Status status;
};

void RunCaller(PreparedCall* call, const BenchOptions& o, StartGate* gate, CallerResult* r) {
  Any result;
  for (int i = 0; i < o.warmup && r->status.ok(); ++i) {
    r->status = call->Call(&result);
    if (!r->status.ok()) r->status.Annotate(StrFormat("warm-up call %d", i + 1));
  }
  gate->ArriveAndWait();  // a failed caller still arrives, so the others are not stuck
  if (!r->status.ok()) return;
  Clock::time_point start = gate->start();
  double cpu_start = ThreadCpuSeconds();
  auto min_time = std::chrono::duration<double>(o.min_time);
  r->ms.reserve(static_cast<size_t>(o.runs));
  while (static_cast<int64_t>(r->ms.size()) < o.runs || Clock::now() - start < min_time) {
    result = Any();
    Clock::time_point t0 = Clock::now();
    Status s = call->Call(&result);
    Clock::time_point t1 = Clock::now();
    if (!s.ok()) {
      r->status = s.Annotate(StrFormat("timed call %zu", r->ms.size() + 1));
      break;
    }
    r->ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (call->LastCallGpuMs() >= 0) r->gpu_ms.push_back(call->LastCallGpuMs());
    r->peak_tensor_bytes = std::max(r->peak_tensor_bytes, call->LastCallPeakBytes());
  }
  r->end = Clock::now();
  r->cpu_seconds = ThreadCpuSeconds() - cpu_start;
}

// The --profile table: with the roofline columns when the file carries kernel
// costs (the peak is then measured or read from its cache), else the plain one.
std::string ProfileTable(const Profiler& profiler, const vm::Module& module, const BenchOptions& o, std::ostream& log) {
  std::string plain = profiler.FormatTable();
  std::shared_ptr<const LinkedProgram> linked = module.linked_program();
  std::map<std::string, ProgramKernelCost> costs;
  if (linked) costs = KernelCosts(linked->program);
  if (costs.empty()) {
    return plain + "(no kernel costs in this .vmfb: it was compiled before kiln-compile wrote them; recompile it for "
                   "the GFLOP/s, GB/s and roof% columns)\n";
  }
  MachinePeak peak = GetMachinePeak(o.remeasure_peak, log);
  int threads = o.threads > 0 ? o.threads : DefaultThreadCount();
  return FormatRooflineTable(profiler.Summary(), plain.substr(0, plain.find('\n') + 1), costs, peak, threads);
}

Result<BenchCase> RunCase(const BenchOptions& o, const std::string& file, std::shared_ptr<const vm::Module> module,
                          const std::vector<Tensor>& given, const std::map<std::string, int64_t>& dims,
                          std::ostream& log) {
  CallSpec spec;
  spec.module_path = file;
  spec.function = o.function;
  spec.threads = o.threads;
  spec.executor = o.executor;
  spec.device = o.device;
  // Callers of one module share its device's stream: a capture would record
  // the other callers' launches too.
  spec.cuda_graph = o.cuda_graph && o.concurrency == 1;
  spec.replay = o.replay;
  std::vector<Tensor> inputs = given;
  if (o.inputs.empty()) {
    KILN_ASSIGN_OR_RETURN(inputs, RandomInputs(*module, o.function, dims, o.seed));
  }
  std::vector<std::unique_ptr<PreparedCall>> callers;
  for (int i = 0; i < o.concurrency; ++i) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedCall> c, PreparedCall::Bind(module, spec, inputs));
    callers.push_back(std::move(c));
  }
  ResetPeakRss();
  StartGate gate(o.concurrency);
  std::vector<CallerResult> results(static_cast<size_t>(o.concurrency));
  std::vector<std::thread> threads;
  for (int i = 1; i < o.concurrency; ++i) {
    threads.emplace_back(RunCaller, callers[i].get(), std::cref(o), &gate, &results[i]);
  }
  RunCaller(callers[0].get(), o, &gate, &results[0]);
  for (std::thread& t : threads) t.join();
  BenchCase c;
  c.file = file;
  c.dims = dims;
  c.executor = callers[0]->uses_graph() ? "graph" : "vm";
  std::vector<double> all, gpu_all;
  Clock::time_point end = gate.start();
  double cpu_seconds = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].status.ok()) {
      Status s = results[i].status;
      if (o.concurrency > 1) s.Annotate(StrFormat("caller %zu", i));
      return s;
    }
    all.insert(all.end(), results[i].ms.begin(), results[i].ms.end());
    gpu_all.insert(gpu_all.end(), results[i].gpu_ms.begin(), results[i].gpu_ms.end());
    end = std::max(end, results[i].end);
    cpu_seconds += results[i].cpu_seconds;
    c.peak_tensor_bytes = std::max(c.peak_tensor_bytes, results[i].peak_tensor_bytes);
  }
  c.stats = Summarize(std::move(all), std::chrono::duration<double>(end - gate.start()).count());
  if (!gpu_all.empty()) {
    std::sort(gpu_all.begin(), gpu_all.end());
    c.gpu_p50_ms = gpu_all[gpu_all.size() / 2];
    c.cuda_graph_note = callers[0]->cuda_graph_note();
  }
  if (c.stats.calls > 0) c.stats.cpu_ms_per_call = cpu_seconds * 1e3 / static_cast<double>(c.stats.calls);
  c.peak_rss_bytes = PeakRssBytes();

  if (o.profile || !o.trace_path.empty()) {
    Profiler profiler;
    callers[0]->SetProfiler(&profiler);
    // The pool the calls launch on (vm::Module shares pools per size).
    ThreadPool* pool = ThreadPool::Shared(o.threads);
    const uint64_t parallel0 = pool->num_parallel_launches(), inline0 = pool->num_inline_launches();
    const uint64_t tasks0 = pool->num_parallel_tasks(), worker_tasks0 = pool->num_worker_tasks();
    const uint64_t wakes0 = pool->num_wake_ups(), join_sleeps0 = pool->num_join_sleeps();
    for (int i = 0; i < o.profile_calls; ++i) {
      Any result;
      Status s = callers[0]->Call(&result);
      if (!s.ok()) {
        callers[0]->SetProfiler(nullptr);
        return s.Annotate(StrFormat("profiled call %d", i + 1));
      }
    }
    callers[0]->SetProfiler(nullptr);
    if (o.profile) {
      c.profile_table = ProfileTable(profiler, *module, o, log);
      const double calls = o.profile_calls;
      const uint64_t tasks = pool->num_parallel_tasks() - tasks0;
      c.profile_table += StrFormat(
          "parallel launches per call: %.1f on %d threads (%.1f tasks each, %.0f%% of them run by the workers), "
          "%.1f run on the caller alone; per call %.1f launches woke sleeping workers, %.1f joins slept\n",
          static_cast<double>(pool->num_parallel_launches() - parallel0) / calls, pool->num_threads(),
          static_cast<double>(tasks) / std::max(1.0, static_cast<double>(pool->num_parallel_launches() - parallel0)),
          100.0 * static_cast<double>(pool->num_worker_tasks() - worker_tasks0) / std::max<double>(1, tasks),
          static_cast<double>(pool->num_inline_launches() - inline0) / calls,
          static_cast<double>(pool->num_wake_ups() - wakes0) / calls,
          static_cast<double>(pool->num_join_sleeps() - join_sleeps0) / calls);
    }
    if (!o.trace_path.empty()) KILN_RETURN_IF_ERROR_CTX(profiler.WriteChromeTrace(o.trace_path), "--trace");
  }
  return c;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += StrFormat("\\u%04x", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

Result<std::vector<BenchCase>> RunBench(const BenchOptions& o, std::ostream& log) {
  // Inputs first: a typo in a flag does not wait for a model to load.
  std::vector<Tensor> given;
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    Result<Tensor> t = ParseTensorArgument(o.inputs[i]);
    if (!t.ok()) return t.TakeStatus().Annotate(StrFormat("--input %zu", i + 1));
    given.push_back(std::move(t).value());
  }
  // Before the modules: loading resolves the packed functions they call.
  KILN_RETURN_IF_ERROR(LoadPlugins(o.plugins));
  std::vector<std::map<std::string, int64_t>> dim_cases = DimCases(o);
  std::vector<BenchCase> cases;
  for (const std::string& file : o.files) {
    CallSpec spec;
    spec.module_path = file;
    spec.threads = o.threads;
    spec.device = o.device;
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Module> module, LoadModuleForTool(spec));
    for (size_t d = 0; d < dim_cases.size(); ++d) {
      Result<BenchCase> c = RunCase(o, file, module, given, dim_cases[d], log);
      if (!c.ok()) {
        std::string where = file + (o.dims.empty() ? "" : " (" + DimsText(dim_cases[d]) + ")");
        return c.TakeStatus().Annotate(where);
      }
      if (cases.size() >= dim_cases.size()) {
        double first = cases[d].stats.p50;  // the first file's row for the same dims
        c->ratio = first > 0 ? c->stats.p50 / first : 0;
      }
      log << StrFormat("kiln-bench: %s %s: %lld calls, p50 %.4f ms\n", file.c_str(), DimsText(c->dims).c_str(),
                       static_cast<long long>(c->stats.calls), c->stats.p50);
      cases.push_back(std::move(c).value());
    }
  }
  return cases;
}

std::string FormatBenchTable(const BenchOptions& o, const std::vector<BenchCase>& cases) {
  std::vector<std::vector<std::string>> rows = {{"file", "dims", "executor", "calls", "min ms", "p50 ms", "p90 ms",
                                                 "p99 ms", "max ms", "mean ms", "cpu ms", "calls/s", "peak mem", "peak RSS"}};
  bool ratios = o.files.size() > 1;
  if (ratios) rows[0].push_back("p50 ratio");
  for (const BenchCase& c : cases) {
    const LatencyStats& s = c.stats;
    std::vector<std::string> row = {c.file,
                                    DimsText(c.dims),
                                    c.executor,
                                    std::to_string(s.calls),
                                    StrFormat("%.4f", s.min),
                                    StrFormat("%.4f", s.p50),
                                    StrFormat("%.4f", s.p90),
                                    StrFormat("%.4f", s.p99),
                                    StrFormat("%.4f", s.max),
                                    StrFormat("%.4f", s.mean),
                                    StrFormat("%.4f", s.cpu_ms_per_call),
                                    StrFormat("%.1f", s.throughput),
                                    FormatBytes(c.peak_tensor_bytes),
                                    FormatBytes(c.peak_rss_bytes)};
    if (ratios) row.push_back(c.ratio > 0 ? StrFormat("%.3f", c.ratio) : "1 (ref)");
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out = StrFormat("function %s, %s threads, concurrency %d, warm-up %d, at least %d calls and %g s per "
                              "case\n",
                              o.function.c_str(), o.threads > 0 ? std::to_string(o.threads).c_str() : "default",
                              o.concurrency, o.warmup, o.runs, o.min_time);
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      // Text columns left-aligned, numbers right-aligned.
      std::string pad(width[i] - r[i].size(), ' ');
      line += (i == 0 ? "" : "  ") + (i < 3 ? r[i] + pad : pad + r[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  // On the GPU, the device's time beside the wall times above.
  for (const BenchCase& c : cases) {
    if (c.gpu_p50_ms < 0) continue;
    out += StrFormat("GPU time (CUDA events around each call), p50: %.4f ms  %s %s\n", c.gpu_p50_ms, c.file.c_str(),
                     DimsText(c.dims).c_str());
    if (!c.cuda_graph_note.empty()) out += "CUDA graph: " + c.cuda_graph_note + "\n";
  }
  for (const BenchCase& c : cases) {
    if (c.profile_table.empty()) continue;
    out += "\nprofile of " + c.file + " " + DimsText(c.dims) + StrFormat(" (%d calls):\n", o.profile_calls);
    out += c.profile_table;
  }
  return out;
}

std::string FormatBenchJson(const BenchOptions& o, const std::vector<BenchCase>& cases) {
  std::ostringstream j;
  j << "{\n  \"function\": " << JsonString(o.function) << ",\n  \"threads\": " << o.threads
    << ",\n  \"concurrency\": " << o.concurrency << ",\n  \"warmup\": " << o.warmup << ",\n  \"runs\": " << o.runs
    << ",\n  \"min_time_s\": " << o.min_time << ",\n  \"results\": [";
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    const LatencyStats& s = c.stats;
    j << (i ? "," : "") << "\n    {\"file\": " << JsonString(c.file) << ", \"dims\": {";
    size_t k = 0;
    for (const auto& kv : c.dims) j << (k++ ? ", " : "") << JsonString(kv.first) << ": " << kv.second;
    j << "}, \"executor\": " << JsonString(c.executor) << ", \"calls\": " << s.calls
      << StrFormat(", \"latency_ms\": {\"min\": %.6f, \"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"max\": %.6f, "
                   "\"mean\": %.6f}, \"cpu_ms_per_call\": %.6f, \"throughput_per_s\": %.3f",
                   s.min, s.p50, s.p90, s.p99, s.max, s.mean, s.cpu_ms_per_call, s.throughput)
      << ", \"peak_tensor_bytes\": " << c.peak_tensor_bytes << ", \"peak_rss_bytes\": " << c.peak_rss_bytes;
    if (c.ratio > 0) j << StrFormat(", \"p50_ratio\": %.6f", c.ratio);
    if (!c.profile_table.empty()) j << ", \"profile_table\": " << JsonString(c.profile_table);
    j << "}";
  }
  j << "\n  ]\n}\n";
  return j.str();
}

std::string FormatBenchCsv(const std::vector<BenchCase>& cases) {
  std::string out =
      "file,dims,executor,calls,min_ms,p50_ms,p90_ms,p99_ms,max_ms,mean_ms,cpu_ms_per_call,calls_per_s,"
      "peak_tensor_bytes,"
      "peak_rss_bytes,p50_ratio\n";
  for (const BenchCase& c : cases) {
    const LatencyStats& s = c.stats;
    out += CsvField(c.file) + "," + CsvField(DimsText(c.dims)) + "," + c.executor + "," + std::to_string(s.calls) +
           StrFormat(",%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,", s.min, s.p50, s.p90, s.p99, s.max, s.mean,
                     s.cpu_ms_per_call, s.throughput) +
           std::to_string(c.peak_tensor_bytes) + "," + std::to_string(c.peak_rss_bytes) + "," +
           (c.ratio > 0 ? StrFormat("%.6f", c.ratio) : "") + "\n";
  }
  return out;
}

int BenchToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Result<BenchOptions> options = ParseBenchArgs(argc, argv);
  if (!options.ok()) {
    err << "kiln-bench: error: " << OneLine(options.status().message()) << "\n";
    return 2;
  }
  if (options->help) {
    out << kBenchToolUsage;
    return 0;
  }
  Result<std::vector<BenchCase>> cases = RunBench(*options, err);
  if (!cases.ok()) {
    err << "kiln-bench: error: " << OneLine(cases.status().message()) << "\n";
    return 1;
  }
  if (options->format == "json") {
    out << FormatBenchJson(*options, *cases);
  } else if (options->format == "csv") {
    out << FormatBenchCsv(*cases);
  } else {
    out << FormatBenchTable(*options, *cases);
  }
  if (!options->trace_path.empty()) {
    err << "kiln-bench: wrote a Chrome trace of " << options->profile_calls << " profiled calls to "
        << options->trace_path << " (open it in ui.perfetto.dev)\n";
  }
  return 0;
}

}  // namespace tools
}  // namespace kiln
