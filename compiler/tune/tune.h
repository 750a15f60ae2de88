// Tuning one PrimFunc by random search over its generic design space:
// measure the default schedule (the reference for numbers and time), then
// for each trial sample a new point (a new seed; points already measured are
// skipped), lower, build and measure it out of process, and append a record
// (failed ones too, with why) to the database. A failed candidate never stops
// the search.
//
// Random search is this stage; evolutionary search guided by a learned cost
// model (XGBoost on TIR features) is the next.
#ifndef KILN_COMPILER_TUNE_TUNE_H_
#define KILN_COMPILER_TUNE_TUNE_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "compiler/ir/tir.h"
#include "compiler/tune/database.h"
#include "compiler/tune/runner.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

struct TuneOptions {
  int trials = 16;
  uint64_t seed = 1;
  RunnerOptions runner;
};

struct TuneSummary {
  std::string function;
  std::string workload;  // hash
  double default_us = 0;
  double best_us = 0;     // 0 when no candidate succeeded
  int trials = 0;         // candidates measured
  int failures = 0;
  std::string best_trace;  // printed
};

// Pre: `func` in block form with float32 parameters of static shape. Writes
// one progress line per trial to `progress`. Fails when the default schedule
// itself cannot be measured or the database cannot be written.
Result<TuneSummary> TuneFunction(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                 std::ostream& progress);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_H_
