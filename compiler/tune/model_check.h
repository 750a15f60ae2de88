// The model check of kiln-tune (issue 21 §5: tuning never makes a model
// slower). Kernels timed alone (warm caches, one kernel again and again) do
// not add up to the model: MobileNetV3-Large's records promised 2.17 -> 2.14
// ms and built a model 3 % slower. So after a model's tuning run (and with
// kiln-tune MODEL --db DIR --verify-only) the model is built twice, with the
// default schedules and with the database's records, and both are timed in
// the same way a user would time them: kiln-bench, each build in its own
// process, the order alternating between rounds, the verdict from the median
// of the rounds' paired ratios (tuned / default).
//
// When the tuned build is not faster beyond the margin, each applied
// record's kernels are timed inside the model (kiln-bench --trace of both
// builds, the same rounds) and the records whose kernels took longer there
// than the default's are dropped (a "drop" verdict, database.h), so
// kiln-compile --tuning-db leaves them out. The build with the kept records
// is then timed against the default again; when it is still not faster,
// every record is dropped: the tuned build is then the default build.
#ifndef KILN_COMPILER_TUNE_MODEL_CHECK_H_
#define KILN_COMPILER_TUNE_MODEL_CHECK_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tune/database.h"

namespace kiln {
namespace tune {

struct ModelCheckOptions {
  std::string input;  // .onnx or .relax
  std::string db_dir;
  driver::CompileOptions compile;  // --dim, --params
  int threads = 1;                 // kernel threads of the builds and of kiln-bench
  bool cold_cache = false;         // which records apply (--tuning-cache)
  std::string bench_program;       // kiln-bench
  int rounds = 5;
  double min_time_s = 0.5;  // kiln-bench --min-time of each timing process
  int profile_calls = 50;   // kiln-bench --profile_calls of the traces
  // Judge by CPU time per call rather than the wall-clock p50: steadier on
  // a loaded machine, where a call's wall time includes the time other
  // processes held its core (kiln-tune's default with one thread; with
  // more, workers' waits count as CPU time, so wall time is judged).
  bool cpu_time = true;
  // The tuned build counts as faster when the median paired ratio is below
  // 1 - margin and it was faster in more than half of the rounds.
  double margin = 0.01;
};

// One timing process's result.
struct BuildTiming {
  double ms = 0;  // what is judged: cpu_ms or p50_ms (ModelCheckOptions::cpu_time)
  double p50_ms = 0;
  double cpu_ms = 0;  // CPU time per call
  // Each kernel's time per model call (us), from the trace's profiled calls:
  // the median of its calls' durations (a call the scheduler preempted is an
  // outlier) times its calls per model call.
  std::map<std::string, double> kernel_us;
};

// Rounds of (default, tuned) timings, each round's two from one run of the
// alternating order.
struct PairedTimings {
  std::vector<BuildTiming> base, other;
};

// Median of other/base (BuildTiming::ms) over the rounds, and in how many rounds other
// was faster.
double MedianRatio(const PairedTimings& t, int* rounds_faster);
// Whether `other` is faster than `base` beyond `margin` (ModelCheckOptions).
bool FasterBeyondNoise(const PairedTimings& t, double margin);
// The kernels' summed time per call in each build (medians over rounds of
// the per-round sums).
void InModelUs(const PairedTimings& t, const std::vector<std::string>& kernels, double* base_us, double* other_us);
// The median over rounds of the kernels' in-model time ratio other/base
// (1 when the traces never saw them).
double InModelRatio(const PairedTimings& t, const std::vector<std::string>& kernels);
// Whether a record whose kernels are `kernels` costs time in the model: its
// kernels' in-model time with the record is not below the default's
// (InModelRatio >= 1; kernels no trace saw count as costing, since nothing
// says the record helps).
bool CostsTimeInModel(const PairedTimings& t, const std::vector<std::string>& kernels);

// Runs the check; returns 0 (done, verdicts written), 1 an error (printed
// to `err`).
int CheckModel(const ModelCheckOptions& options, std::ostream& out, std::ostream& err);

// kiln-bench beside this executable or in the build tree's tools/kiln-bench
// ($KILN_BENCH names another); "" when there is none.
std::string DefaultBenchProgram();

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_MODEL_CHECK_H_
