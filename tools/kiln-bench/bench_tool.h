// kiln-bench: latency and throughput of one function of one or more .vmfb
// files, with its own timing loop (no benchmark framework).
//
//   kiln-bench A.vmfb [B.vmfb ...] [--function=main] [--input=SPEC]...
//              [--dim NAME=V1,V2,...]... [--seed=N] [--warmup=N] [--runs=N]
//              [--min-time=SECONDS] [--threads=N] [--concurrency=N]
//              [--executor=auto|vm|graph] [--profile] [--trace=FILE]
//              [--profile_calls=N] [--remeasure-peak] [--format=table|json|csv]
//              [--plugin=PATH]...
//
// Inputs: every --input as for kiln-run, or, without --input, random values
// (inline_tensor.h, seeds --seed, --seed+1, ...) shaped by the function's
// signature, its symbolic dimensions taken from --dim. Each --dim value (the
// cartesian product when several names are given) is one case; every file
// runs every case, and rows of later files carry the ratio of their p50
// latency to the first file's for the same case.
//
// A case: --concurrency caller threads, each with its own context on one
// loaded module, make --warmup untimed calls, wait for each other, then make
// timed calls until each has made at least --runs and --min-time has passed.
// Latencies (min, p50, p90, p99, max, mean; nearest-rank percentiles) are
// over the calls of every caller; throughput is all calls over the wall time
// from the common start until the last caller stops; CPU ms/call is the
// callers' own thread CPU time over their calls. Peak tensor memory is
// the largest vm::Context::LastCallPeakBytes seen; peak RSS is the process's
// high-water mark during the case (reset before it where Linux allows,
// /proc/self/clear_refs, otherwise since the process started).
// --profile / --trace=FILE then make --profile_calls (default 100) calls on
// one caller with a profiler and print its table / write a Chrome trace
// (only with exactly one case); the timed calls are never profiled. When the
// .vmfb carries kernel costs, the table has each kernel's GFLOP/s, GB/s and
// share of its roofline against this machine's peak (roofline_table.h,
// machine_peak.h: measured on the first --profile, then cached;
// --remeasure-peak measures it again); an older .vmfb gets the plain table.
// Each --plugin library is loaded before the files (tools/common/plugins.h).
//
// Thread-compatible: RunBench uses only its arguments and the global registry.
#ifndef KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_
#define KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tools {

struct BenchOptions {
  std::vector<std::string> files;
  std::string function = "main";
  std::vector<std::string> inputs;  // SPECs; empty: random inputs
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
  uint64_t seed = 1;
  int warmup = 2;
  int runs = 10;
  double min_time = 1.0;  // seconds
  int threads = 0;        // 0: one per core
  int concurrency = 1;
  std::string executor = "auto";
  int device = -1;  // -1: the CPU; N: CUDA device N (--device)
  bool cuda_graph = true;  // --cuda_graph: replay static calls as a CUDA graph
  bool replay = true;      // --replay: VM calls replay call plans (vm/call_plan.h)
  bool profile = false;
  std::string trace_path;
  int profile_calls = 100;
  bool remeasure_peak = false;
  std::string format = "table";
  std::vector<std::string> plugins;  // --plugin paths, loaded in order
  bool help = false;
};

// Parses argv[1..argc-1]; errors name the flag.
Result<BenchOptions> ParseBenchArgs(int argc, const char* const* argv);

// Latencies in milliseconds.
struct LatencyStats {
  int64_t calls = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
  double throughput = 0;  // calls per second of wall time
  // CPU time of the calling threads per call (their kernels' pool workers
  // not included): close to the latency when the caller does the work,
  // far below it when the caller waits for workers.
  double cpu_ms_per_call = 0;
};
// Nearest-rank percentiles of `ms` (any order); `wall_seconds` > 0 gives the throughput.
LatencyStats Summarize(std::vector<double> ms, double wall_seconds);

struct BenchCase {
  std::string file;
  std::map<std::string, int64_t> dims;
  LatencyStats stats;
  uint64_t peak_tensor_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  std::string executor;  // "vm" or "graph", as run
  double ratio = 0;      // p50 / the first file's p50 for the same dims; 0 for the first file
  std::string profile_table;
  // --device=cuda: the median GPU time per call (CUDA events around each
  // call on the device's stream), ms; -1 on the CPU.
  double gpu_p50_ms = -1;
  std::string cuda_graph_note;  // PreparedCall::cuda_graph_note() of the first caller
};

// Runs every case of every file. `log` gets one line per case as it finishes
// (progress for long runs); results come back for formatting.
Result<std::vector<BenchCase>> RunBench(const BenchOptions& options, std::ostream& log);

// "n=1,seq=8" ("-" when there are no dims).
std::string DimsText(const std::map<std::string, int64_t>& dims);
std::string FormatBenchTable(const BenchOptions& options, const std::vector<BenchCase>& cases);
std::string FormatBenchJson(const BenchOptions& options, const std::vector<BenchCase>& cases);
std::string FormatBenchCsv(const std::vector<BenchCase>& cases);

// Parse + run + print in --format to `out`; progress and errors ("kiln-bench:
// error: ...", one line) to `err`. Returns 0, 1 (failure) or 2 (usage).
int BenchToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

extern const char kBenchToolUsage[];

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_
