// The whole-model allocator's choice on synthetic histories.
#include "compiler/tune/task_scheduler.h"

#include <gtest/gtest.h>

namespace kiln {
namespace tune {
namespace {

TaskHistory Task(double weight, double default_us, std::vector<double> best_after = {}) {
  TaskHistory t;
  t.weight = weight;
  t.default_us = default_us;
  t.best_after = std::move(best_after);
  return t;
}

TEST(TaskSchedulerTest, UntunedTasksFirstLargestShareFirst) {
  // 3 x 10 us = 30 us of the model against 1 x 20 us.
  std::vector<TaskHistory> tasks = {Task(1, 20), Task(3, 10), Task(1, 100, {90, 80})};
  EXPECT_EQ(PickTask(tasks), 1);
  tasks[1].best_after = {10};
  EXPECT_EQ(PickTask(tasks), 0);  // still untuned, though the third improves fast
}

TEST(TaskSchedulerTest, TheTaskWhoseModelTimeFallsFastestPerTrial) {
  // a: flat at its default; b: fell 10 us per trial lately, one call;
  // c: fell 4 us per trial, three calls (12 us of model time per trial).
  std::vector<TaskHistory> tasks = {Task(1, 100, {100, 100, 100, 100}), Task(1, 100, {90, 80, 70, 60}),
                                    Task(3, 100, {96, 92, 88, 84})};
  SchedulerOptions o;
  o.window = 4;
  o.explore = 0;
  EXPECT_EQ(PickTask(tasks, o), 2);
  EXPECT_DOUBLE_EQ(ExpectedGainPerTrial(tasks[1], o), 10);
  EXPECT_DOUBLE_EQ(ExpectedGainPerTrial(tasks[2], o), 12);
  // Only the last `window` trials count: b's recent gain is 20 us per trial.
  tasks[1].best_after = {100, 100, 100, 100, 60, 20};
  o.window = 2;
  EXPECT_EQ(PickTask(tasks, o), 1);
}

TEST(TaskSchedulerTest, StalledTasksShareTrialsByTheirTime) {
  // No recent gain anywhere: the optimistic term prefers the task with
  // more model time per trial had.
  std::vector<TaskHistory> tasks = {Task(1, 100, std::vector<double>(8, 100)),
                                    Task(1, 400, std::vector<double>(8, 400))};
  EXPECT_EQ(PickTask(tasks), 1);
  // After four times as many trials the two are even; more, and the first wins.
  tasks[1].best_after.assign(40, 400);
  EXPECT_EQ(PickTask(tasks), 0);
}

TEST(TaskSchedulerTest, DoneTasksGetNoMore) {
  std::vector<TaskHistory> tasks = {Task(1, 100), Task(1, 50, {40})};
  tasks[0].done = true;
  EXPECT_EQ(PickTask(tasks), 1);
  tasks[1].done = true;
  EXPECT_EQ(PickTask(tasks), -1);
}

TEST(TaskSchedulerTest, EstimatedModelTime) {
  std::vector<TaskHistory> tasks = {Task(2, 100, {90, 80}), Task(3, 10)};
  EXPECT_DOUBLE_EQ(EstimatedModelUs(tasks), 2 * 80 + 3 * 10);
}

}  // namespace
}  // namespace tune
}  // namespace kiln
