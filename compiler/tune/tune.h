// Tuning one PrimFunc: measure the default schedule first (the reference for
// numbers and time, and the best so far), then search the function's design
// spaces (space.h: the default schedules' knobs, whose all-default point is
// the default schedule, and the generic block rules), measuring candidates
// out of process and appending a record (failed ones too, with why) to the
// database. A failed candidate never stops the search; the best reported is
// never slower than the default (when nothing beats it, the default stays).
// The default is measured again after each round and its fastest median
// kept (a busy machine slows single measurements), and at the end a record
// of the default point (DefaultPoint, with that median) is added, so the
// database's best record of the workload is never slower than the default.
//
// Two searches over the same spaces and measurements:
//   evolutionary (default): rounds of `batch` measurements. A round starts
//     from a population of the best points measured (this run and the
//     database's records of the workload) and fresh random samples, evolves
//     it for a few generations by mutating decisions (mutate.h), with parents
//     and survivors picked by the cost model's predicted score (cost_model.h,
//     XGBoost on features of the lowered TIR, features.h); then measures the
//     top-scored unmeasured points plus an epsilon share of random ones, adds
//     the measurements to the model and refits it. Until the model has been
//     fitted (the first round, unless a saved model was loaded) it measures
//     random samples.
//   random: fresh random samples only (the baseline the evolutionary search
//     is measured against).
// Points are told apart by their lowered TIR: two decisions that compile to
// the same code are measured once.
#ifndef KILN_COMPILER_TUNE_TUNE_H_
#define KILN_COMPILER_TUNE_TUNE_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/database.h"
#include "compiler/tune/runner.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

enum class SearchKind : uint8_t { kEvolutionary, kRandom };
// Which design spaces candidates come from: both, the default schedules'
// knobs only, the generic block rules only, or a user's space
// (TuneOptions::user_space: a text file, space_text.h, or a registered C++
// function, space_registry.h).
enum class SpaceKind : uint8_t { kAll, kDefault, kGeneric, kUser };

// A user space: one point of it for a seed (deterministic for the seed).
using UserSpace = std::function<Result<tir::Schedule>(const ir::PrimFunc& func, uint64_t seed)>;

struct TuneOptions {
  int trials = 16;
  uint64_t seed = 1;
  RunnerOptions runner;
  SearchKind search = SearchKind::kEvolutionary;
  SpaceKind space = SpaceKind::kAll;
  UserSpace user_space;  // with SpaceKind::kUser
  int batch = 8;           // measurements per round
  double epsilon = 0.25;   // share of each round measured from random samples
  int population = 64;     // points the cost model ranks per generation
  int generations = 3;
  // Where the cost model is loaded from (when present) and saved to after
  // each round; empty: neither.
  std::string cost_model_path;
  // Asked before each trial when set; true ends the search there (the
  // records measured so far and the default's record are kept). The Python
  // package's kiln.tune stops on Ctrl-C or a progress callback's exception.
  std::function<bool()> should_stop;
};

struct TuneSummary {
  std::string function;
  std::string workload;  // hash
  double default_us = 0;
  // The fastest of the default and every successful candidate: never above
  // default_us.
  double best_us = 0;
  int trials = 0;         // candidates measured
  int failures = 0;
  std::string best_trace;  // printed; empty when the default stayed best
  std::vector<double> best_after;  // best_us after each trial (the default at its fastest median)
};

// Pre: `func` in block form with float32 parameters of static shape. Writes
// one progress line per trial to `progress`. Fails when the default schedule
// itself cannot be measured or the database cannot be written.
Result<TuneSummary> TuneFunction(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                 std::ostream& progress);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_H_
