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
// the same code are measured once, in this run or in an earlier one whose
// records the database holds (they also count toward the best found).
#ifndef KILN_COMPILER_TUNE_TUNE_H_
#define KILN_COMPILER_TUNE_TUNE_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
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
  // A progress line per measured candidate (whole-model tuning prints one
  // per round instead).
  bool trial_lines = true;
  // Set (by a SIGINT handler) to stop: the candidate being measured is
  // recorded only when it succeeded (a failure may be the signal's doing),
  // and no other starts. Null: never.
  const volatile std::sig_atomic_t* interrupted = nullptr;
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
  // Records of the workload for this target found in the database at the
  // start (a resumed run; the default point's records not counted): they
  // count as measured and are never measured again; the best ok one counts
  // in best_us.
  int prior_trials = 0;
};

class CostModel;

// Tuning one PrimFunc in steps, for a caller that shares trials among
// several (whole-model tuning, tune_model.h). TuneFunction is Start,
// Step(trials), Finish.
class TaskTuner {
 public:
  // Measures the default schedule (it fails when that cannot be measured)
  // and takes the workload's existing records. `model` (shared between
  // tasks, may be untrained) must outlive the tuner; `progress` too.
  static Result<std::unique_ptr<TaskTuner>> Start(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                                  CostModel* model, std::ostream& progress);
  ~TaskTuner();
  // Measures up to `n` more candidates in rounds of options.batch (each
  // ending with the model refitted and the default measured again); fewer
  // when the space has no point left (exhausted()) or on interruption.
  // Returns how many it measured.
  Result<int> Step(int n);
  // Appends the default point's record with its fastest median. Once.
  Status Finish();
  const TuneSummary& summary() const;
  bool exhausted() const;

 private:
  struct State;
  explicit TaskTuner(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

// Pre: `func` in block form with float32 parameters of static shape. Writes
// one progress line per trial to `progress`. Fails when the default schedule
// itself cannot be measured or the database cannot be written.
Result<TuneSummary> TuneFunction(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                 std::ostream& progress);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_H_
