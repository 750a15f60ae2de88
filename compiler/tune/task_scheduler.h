// Which task of a whole-model tuning run gets the next round of trials.
// The model's estimated time is the sum over tasks of calls x best time;
// the next round goes to the task where it is expected to fall fastest per
// trial:
//   - a task not yet tuned comes first (the floor: every task gets a first
//     round), the one with the largest share of the model's time first;
//   - then the largest weight x gain, where a task's gain per trial is what
//     its best time fell per trial over its last `window` trials (the
//     recent gradient) plus an optimistic `explore` share of its best time
//     spread over the trials it has had (so a task that stopped improving
//     still gets trials, ever less often, in proportion to its share of the
//     model's time).
// Tasks marked done (space exhausted, or failing) get no more.
#ifndef KILN_COMPILER_TUNE_TASK_SCHEDULER_H_
#define KILN_COMPILER_TUNE_TASK_SCHEDULER_H_

#include <vector>

namespace kiln {
namespace tune {

struct TaskHistory {
  double weight = 1;      // calls per model run
  double default_us = 0;  // the default schedule's time
  // The task's best time after each of its trials (non-increasing), the
  // first entry after its first trial; empty: not tuned yet.
  std::vector<double> best_after;
  bool done = false;
};

struct SchedulerOptions {
  int window = 8;
  double explore = 0.01;
};

// The index of the task to tune next, or -1 when every task is done.
int PickTask(const std::vector<TaskHistory>& tasks, const SchedulerOptions& options = {});

// Estimated model time: sum of weight x (best time, or the default before
// any trial).
double EstimatedModelUs(const std::vector<TaskHistory>& tasks);

// The expected fall of the model's time per trial of task `t` (the score
// PickTask maximizes among tuned tasks).
double ExpectedGainPerTrial(const TaskHistory& t, const SchedulerOptions& options);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TASK_SCHEDULER_H_
