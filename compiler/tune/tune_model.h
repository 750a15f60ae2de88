// Whole-model tuning (kiln-tune MODEL --db DIR --trials N): compiles the
// model as kiln-compile does up to the kernels lower-tir schedules
// (driver::LowerModuleToKernels), takes its distinct kernels as tasks
// weighted by their calls (tasks.h), measures each task's default schedule,
// then gives rounds of trials (TuneOptions::batch each) to the task where
// the model's estimated time falls fastest (task_scheduler.h) until the
// trials or the time budget are spent.
//
// Resumable: the database's records of a task count as measured (never
// measured again) and as trials of the run: --trials N is the total for
// the model's tasks, so a rerun after an interruption continues where it
// stopped, and a rerun with a larger N adds the difference.
// Interruption (*interrupted set by SIGINT): the measurement under way is
// recorded only when it succeeded (records are whole lines, flushed one at
// a time), each task's default point is recorded, the summary (and plot)
// written, and TuneModel returns 130.
#ifndef KILN_COMPILER_TUNE_TUNE_MODEL_H_
#define KILN_COMPILER_TUNE_TUNE_MODEL_H_

#include <csignal>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tune/tune.h"

namespace kiln {
namespace tune {

struct ModelTuneOptions {
  std::string input;  // .onnx or .relax
  std::string db_dir;
  driver::CompileOptions compile;
  // trials: the model's total; batch: trials per round; cost_model_path;
  // runner (threads, repeats, timeout); search, space, seed.
  TuneOptions tune;
  double time_budget_s = 0;  // 0: none. Checked between rounds.
  // Tune only these tasks (a task's name or any of its kernels' names).
  std::vector<std::string> only_tasks;
  std::string plot_path;  // empty: no plot
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

// Returns the exit status: 0 done, 1 an error (printed to `err`), 2 a bad
// --tasks name, 130 interrupted.
int TuneModel(const ModelTuneOptions& options, std::ostream& out, std::ostream& err);

// "20m", "90s", "1h30m", "45" (seconds) -> seconds; false when malformed.
bool ParseDuration(const std::string& text, double* seconds);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_MODEL_H_
