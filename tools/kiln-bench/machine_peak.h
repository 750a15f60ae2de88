// The machine's peak for kiln-bench --profile's roofline: floating-point
// throughput of one core and streaming memory bandwidth, measured by small
// micro-benchmarks once per machine and cached.
//
// - FMA throughput: one thread runs independent chains of fused multiply-adds
//   on float32 vectors of the widest ISA the CPU reports (AVX-512, AVX2+FMA,
//   SSE, or portable vectors elsewhere), enough chains to hide the FMA
//   latency; GFLOP/s counts an FMA as 2. The best of 40 runs of about 2 ms
//   (short runs, so that on a shared machine some run is not interrupted).
// - Bandwidth: y[i] = x[i] * k over two 64 MiB float arrays (128 MiB read and
//   written per pass, more than any cache); one thread: the best 4 MiB chunk
//   of 3 passes; one thread per hardware thread: the best of 5 passes. And a curve at one
//   thread over working sets of 256 KiB to 64 MiB (x4 each step): a kernel
//   whose arguments total B bytes is held to the bandwidth measured at the
//   largest working set not above B (the caches that hold it), so a kernel
//   that streams from L2 is not judged against memory's bandwidth.
//
// Cache: KILN_PEAK_CACHE names the file if set; otherwise
// $XDG_CACHE_HOME/kiln/peak-CPU.json or ~/.cache/kiln/peak-CPU.json, CPU
// being /proc/cpuinfo's model name with every character outside [A-Za-z0-9]
// made '_'. kiln-bench --remeasure-peak (or KILN_REMEASURE_PEAK=1) measures
// again and rewrites the file. A cache that cannot be written is not an error
// (the measurement is used and a note printed).
#ifndef KILN_TOOLS_KILN_BENCH_MACHINE_PEAK_H_
#define KILN_TOOLS_KILN_BENCH_MACHINE_PEAK_H_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tools {

struct MachinePeak {
  std::string cpu;                 // model name
  std::string isa;                 // "avx512f", "avx2+fma", "sse", "portable"
  double gflops_per_core = 0;      // float32
  double gbs_one_thread = 0;       // GB/s (1e9 bytes)
  double gbs_all_threads = 0;
  // One thread: (working-set bytes, GB/s), increasing sizes.
  std::vector<std::pair<double, double>> curve;
  int hardware_threads = 1;
  std::string source;              // "measured" or the cache file it came from

  // The roofline's ceilings for a run on `threads` threads: compute scales
  // with threads; bandwidth with them up to what all threads together reach.
  double GflopsAt(int threads) const;
  // For a kernel moving `bytes` (0: memory): the curve's bandwidth at the
  // largest working set <= bytes, times threads while the set is below the
  // curve's last point (caches are per core); from memory above it, up to
  // what all threads reach.
  double GbsAt(int threads, double bytes = 0) const;
};

// Runs the micro-benchmarks (a few seconds).
MachinePeak MeasureMachinePeak();

// The cache file this machine uses (see above).
std::string MachinePeakCachePath();

// The cached peak, or a fresh measurement (written to the cache) when there
// is none, it is unreadable, or `remeasure`. Notes go to `log`.
MachinePeak GetMachinePeak(bool remeasure, std::ostream& log);

// The cache's JSON text and its parser (a text that lacks a field fails).
std::string MachinePeakJson(const MachinePeak& p);
Result<MachinePeak> ParseMachinePeakJson(const std::string& text);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_BENCH_MACHINE_PEAK_H_
