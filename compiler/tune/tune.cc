#include "compiler/tune/tune.h"

#include <cstdio>
#include <set>

#include "compiler/tune/lower.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {

namespace {

std::string Us(double us) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

// Sampling tries per trial before giving up on finding a point not yet seen
// (small spaces run out).
constexpr int kMaxSampleTries = 32;

}  // namespace

Result<TuneSummary> TuneFunction(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                 std::ostream& progress) {
  TuneSummary sum;
  sum.function = func->name;
  KILN_ASSIGN_OR_RETURN(std::string target, codegen::ResolvedTargetName(options.runner.codegen));
  KILN_ASSIGN_OR_RETURN(sum.workload, db->CommitWorkload(func));
  Measurement reference = Measure(LowerWithDefaultSchedule(func, options.runner.threads), options.runner);
  if (!reference.ok())
    return FailedPrecondition("tune " + func->name + ": the default schedule cannot be measured (" +
                              MeasureStateName(reference.state) + "): " + reference.message);
  sum.default_us = reference.median_us;
  progress << "tune " << func->name << " (workload " << sum.workload << ", " << target << "): default schedule "
           << Us(sum.default_us) << "\n";

  std::set<std::string> seen;
  uint64_t seed = options.seed;
  for (int trial = 1; trial <= options.trials; ++trial) {
    Result<tir::Schedule> sch = Status::Ok();
    bool fresh = false;
    for (int tries = 0; tries < kMaxSampleTries && !fresh; ++tries) {
      sch = SampleGenericSpace(func, seed++);
      if (!sch.ok()) return sch.status();
      fresh = seen.insert(sch->trace().ToString()).second;
    }
    if (!fresh) {
      progress << "tune " << func->name << ": the space has no point left to try after " << sum.trials << " trials\n";
      break;
    }
    Measurement m = Measure(LowerScheduled(sch->func()), options.runner, &reference);
    ++sum.trials;
    TuningRecord rec;
    rec.workload = sum.workload;
    rec.target = target;
    rec.trace = sch->trace();
    rec.state = MeasureStateName(m.state);
    rec.median_us = m.median_us;
    rec.default_us = sum.default_us;
    rec.times_us = m.times_us;
    rec.message = m.message;
    KILN_RETURN_IF_ERROR(db->CommitRecord(rec));
    if (m.ok()) {
      if (sum.best_us == 0 || m.median_us < sum.best_us) {
        sum.best_us = m.median_us;
        sum.best_trace = sch->trace().ToString();
      }
    } else {
      ++sum.failures;
    }
    progress << "[" << trial << "/" << options.trials << "] " << func->name << ": "
             << (m.ok() ? Us(m.median_us) : std::string(MeasureStateName(m.state))) << "  best "
             << (sum.best_us > 0 ? Us(sum.best_us) : std::string("-")) << "  default " << Us(sum.default_us) << "  failed "
             << sum.failures << "\n";
    progress.flush();
  }
  return sum;
}

}  // namespace tune
}  // namespace kiln
