#include "compiler/tune/task_scheduler.h"

#include <algorithm>

namespace kiln {
namespace tune {

namespace {

double Best(const TaskHistory& t) { return t.best_after.empty() ? t.default_us : t.best_after.back(); }

}  // namespace

double EstimatedModelUs(const std::vector<TaskHistory>& tasks) {
  double sum = 0;
  for (const auto& t : tasks) sum += t.weight * Best(t);
  return sum;
}

double ExpectedGainPerTrial(const TaskHistory& t, const SchedulerOptions& options) {
  size_t n = t.best_after.size();
  if (n == 0) return 0;
  // The recent gradient: the fall over the last `window` trials (from the
  // default when the task has had fewer), per trial.
  size_t w = std::min(n, static_cast<size_t>(std::max(options.window, 1)));
  double before = n > w ? t.best_after[n - w - 1] : std::max(t.default_us, t.best_after.front());
  double recent = std::max(0.0, before - t.best_after.back()) / static_cast<double>(w);
  double optimistic = options.explore * t.best_after.back() / static_cast<double>(n);
  return t.weight * (recent + optimistic);
}

int PickTask(const std::vector<TaskHistory>& tasks, const SchedulerOptions& options) {
  int pick = -1;
  double best = -1;
  // Untuned tasks first, the largest share of the model's time first.
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].done || !tasks[i].best_after.empty()) continue;
    double share = tasks[i].weight * tasks[i].default_us;
    if (share > best) {
      best = share;
      pick = static_cast<int>(i);
    }
  }
  if (pick >= 0) return pick;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].done) continue;
    double g = ExpectedGainPerTrial(tasks[i], options);
    if (g > best) {
      best = g;
      pick = static_cast<int>(i);
    }
  }
  return pick;
}

}  // namespace tune
}  // namespace kiln
