#include "compiler/tune/tune_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include "compiler/tune/cost_model.h"
#include "compiler/tune/database.h"
#include "compiler/tune/task_scheduler.h"
#include "compiler/tune/tasks.h"
#include "compiler/tune/tuning_plot.h"

namespace kiln {
namespace tune {

namespace {

std::string Us(double us) {
  char buf[32];
  if (us >= 10000) snprintf(buf, sizeof buf, "%.2f ms", us / 1000);
  else snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

std::string Clock(double seconds) {
  char buf[32];
  long s = static_cast<long>(seconds + 0.5);
  snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// A task being tuned in this run.
struct Running {
  const TuneTask* task = nullptr;
  std::unique_ptr<TaskTuner> tuner;
  TaskHistory history;
  PlotSeries series;
};

}  // namespace

bool ParseDuration(const std::string& text, double* seconds) {
  if (text.empty()) return false;
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && ((text[j] >= '0' && text[j] <= '9') || text[j] == '.')) ++j;
    if (j == i) return false;
    char* end = nullptr;
    std::string number = text.substr(i, j - i);
    double v = strtod(number.c_str(), &end);
    if (*end != '\0') return false;
    double unit = 1;
    if (j < text.size()) {
      char u = text[j++];
      if (u == 'h') unit = 3600;
      else if (u == 'm') unit = 60;
      else if (u == 's') unit = 1;
      else return false;
    } else if (i > 0) {
      return false;  // "1h30": a bare number only alone
    }
    total += v * unit;
    i = j;
  }
  if (!(total > 0)) return false;
  *seconds = total;
  return true;
}

int TuneModel(const ModelTuneOptions& options, std::ostream& out, std::ostream& err) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto interrupted = [&] { return options.interrupted != nullptr && *options.interrupted != 0; };

  driver::CompileOptions compile;
  Result<ir::IRModule> mod = driver::LoadModuleFile(options.input, options.compile, &compile);
  if (!mod.ok()) {
    err << "kiln-tune: " << mod.status().ToString() << "\n";
    return 1;
  }
  // The kernels are planned for the threads they are measured with, as
  // kiln-compile --threads T plans them (the hint acts at lower-tir, which
  // each task's lowering does with the same T).
  compile.num_threads_hint = options.tune.runner.threads;
  Result<ir::IRModule> kernels = driver::LowerModuleToKernels(*mod, compile);
  if (!kernels.ok()) {
    err << "kiln-tune: " << options.input << ": " << kernels.status().ToString() << "\n";
    return 1;
  }
  std::vector<TuneTask> tasks = ExtractTasks(*kernels);
  size_t num_kernels = 0, num_calls = 0;
  for (const auto& t : tasks) {
    num_kernels += t.kernels.size();
    num_calls += static_cast<size_t>(t.calls);
  }
  out << options.input << ": " << num_kernels << " kernels, " << num_calls << " calls, " << tasks.size()
      << " distinct (tasks)\n";
  // --tasks: every name must name a task or one of its kernels.
  std::vector<bool> selected(tasks.size(), options.only_tasks.empty());
  for (const auto& name : options.only_tasks) {
    bool found = false;
    for (size_t i = 0; i < tasks.size(); ++i)
      if (std::find(tasks[i].kernels.begin(), tasks[i].kernels.end(), name) != tasks[i].kernels.end()) {
        selected[i] = true;
        found = true;
      }
    if (!found) {
      std::string names;
      for (const auto& t : tasks) names += (names.empty() ? "" : ", ") + t.name;
      err << "kiln-tune: --tasks: the model has no kernel named " << name << " (tasks: " << names << ")\n";
      return 2;
    }
  }
  for (size_t i = 0; i < tasks.size(); ++i)
    if (selected[i] && !tasks[i].skip_reason.empty())
      out << "skip " << tasks[i].name << " (" << tasks[i].calls << " calls): " << tasks[i].skip_reason << "\n";

  std::vector<Status> damage;
  Result<Database> db = Database::Open(options.db_dir, &damage);
  if (!db.ok()) {
    err << "kiln-tune: " << db.status().ToString() << "\n";
    return 1;
  }
  for (const auto& d : damage) err << "kiln-tune: error: " << d.message() << " (line skipped)\n";

  TuneOptions topt = options.tune;
  topt.trial_lines = false;
  topt.interrupted = options.interrupted;
  CostModel model;
  if (topt.search == SearchKind::kEvolutionary && !topt.cost_model_path.empty() &&
      model.Load(topt.cost_model_path).ok())
    out << "cost model loaded from " << topt.cost_model_path << "\n";

  // Each task's default schedule (and its records from earlier runs).
  std::vector<Running> running;
  std::vector<std::string> failed_defaults;
  bool out_of_time = false;
  for (size_t i = 0; i < tasks.size() && !interrupted(); ++i) {
    if (!selected[i] || !tasks[i].skip_reason.empty()) continue;
    if (options.time_budget_s > 0 && elapsed() >= options.time_budget_s) {
      out << "the time budget was spent measuring the defaults; " << tasks[i].name << " and later tasks are left out\n";
      out_of_time = true;
      break;
    }
    Running r;
    r.task = &tasks[i];
    Result<std::unique_ptr<TaskTuner>> tuner = TaskTuner::Start(tasks[i].func, &*db, topt, &model, out);
    if (!tuner.ok()) {
      if (interrupted()) break;
      out << "skip " << tasks[i].name << ": " << tuner.status().message() << "\n";
      continue;
    }
    r.tuner = std::move(*tuner);
    const TuneSummary& s = r.tuner->summary();
    r.history.weight = tasks[i].calls;
    r.history.default_us = s.default_us;
    // Trials of earlier runs: no gradient known, only their best.
    r.history.best_after.assign(static_cast<size_t>(s.prior_trials), s.best_us);
    r.series.name = tasks[i].name + " x" + std::to_string(tasks[i].calls);
    r.series.default_us = s.default_us;
    running.push_back(std::move(r));
  }
  auto histories = [&] {
    std::vector<TaskHistory> h;
    for (const auto& r : running) h.push_back(r.history);
    return h;
  };
  // The defaults' sum, at each default's fastest median so far.
  auto DefaultModelUs = [&] {
    double sum = 0;
    for (const auto& r : running) sum += r.history.weight * r.history.default_us;
    return sum;
  };
  int done = 0, failures = 0;
  for (const auto& r : running) done += r.tuner->summary().prior_trials;
  const int prior = done;
  TuningPlot plot;
  plot.title = "kiln-tune " + options.input;
  plot.model_us.push_back({0, EstimatedModelUs(histories())});
  int run_trials = 0;  // this run's, the plot's x axis

  int round = 0;
  SchedulerOptions sched;
  while (done < topt.trials && !interrupted() && !out_of_time) {
    if (options.time_budget_s > 0 && elapsed() >= options.time_budget_s) {
      out_of_time = true;
      break;
    }
    std::vector<TaskHistory> h = histories();
    int pick = PickTask(h, sched);
    if (pick < 0) break;
    Running& r = running[static_cast<size_t>(pick)];
    int n = std::min(std::max(topt.batch, 1), topt.trials - done);
    size_t before = r.tuner->summary().best_after.size();
    int before_failures = r.tuner->summary().failures;
    Result<int> got = r.tuner->Step(n);
    if (!got.ok()) {
      err << "kiln-tune: " << got.status().ToString() << "\n";
      return 1;
    }
    const TuneSummary& s = r.tuner->summary();
    if (*got == 0 || r.tuner->exhausted()) r.history.done = true;
    // The default may have been measured faster after the round: the task's
    // whole curve is capped by it (TaskTuner::Step), so take it again.
    r.history.default_us = s.default_us;
    r.series.default_us = s.default_us;
    r.history.best_after.resize(static_cast<size_t>(s.prior_trials));
    for (double b : s.best_after) r.history.best_after.push_back(b);
    for (auto& p : r.series.points) p.second = std::min(p.second, s.default_us);
    for (size_t k = before; k < s.best_after.size(); ++k) {
      ++run_trials;
      r.series.points.push_back({run_trials, s.best_after[k]});
      // The model's estimate after this trial: this task at its best after
      // it, the others as they stand.
      std::vector<TaskHistory> now = histories();
      now[static_cast<size_t>(pick)].best_after.resize(static_cast<size_t>(s.prior_trials) + k + 1);
      plot.model_us.push_back({run_trials, EstimatedModelUs(now)});
    }
    done += *got;
    failures += s.failures - before_failures;
    ++round;
    double left_s = 0;
    std::string left;
    if (options.time_budget_s > 0) {
      left_s = std::max(0.0, options.time_budget_s - elapsed());
      left = Clock(left_s) + " left of the budget";
    } else if (done > prior) {
      left = "~" + Clock(elapsed() / (done - prior) * (topt.trials - done)) + " left";
    }
    out << "[round " << round << "] " << done << "/" << topt.trials << " trials, " << failures << " failed  "
        << r.task->name << " (x" << r.task->calls << "): " << (*got == 0 ? std::string("no point left in its space") : "+" + std::to_string(*got)) << ", best " << Us(s.best_us) << " (default "
        << Us(s.default_us) << ")  model " << Us(EstimatedModelUs(histories())) << " (default "
        << Us(DefaultModelUs()) << ")  " << left << "\n";
    out.flush();
  }
  bool was_interrupted = interrupted();
  // Every task's default point (its fastest median), so that the database's
  // best record of each is never slower than its default as measured.
  for (auto& r : running) {
    Status st = r.tuner->Finish();
    if (!st.ok()) {
      err << "kiln-tune: " << st.ToString() << "\n";
      return 1;
    }
  }
  if (was_interrupted) out << "\ninterrupted: the database holds every trial measured so far; run again to continue\n";
  else if (out_of_time) out << "\nthe time budget is spent\n";
  else if (done < topt.trials && !running.empty()) out << "\nevery task's space is exhausted\n";

  // The summary.
  out << "\nsummary (" << done << " trials, " << done - prior << " in this run, " << Clock(elapsed()) << ")\n";
  char line[512];
  snprintf(line, sizeof line, "  %-36s %6s %12s %12s %8s %7s %7s\n", "task", "calls", "default", "tuned", "speedup",
           "trials", "failed");
  out << line;
  double tuned_model_us = 0, default_model_us = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TuneTask& t = tasks[i];
    const Running* r = nullptr;
    for (const auto& x : running)
      if (x.task == &t) r = &x;
    std::string name = t.name.size() > 36 ? t.name.substr(0, 33) + "..." : t.name;
    if (!r) {
      if (!selected[i]) continue;
      snprintf(line, sizeof line, "  %-36s %6d %12s %12s %8s %7s %7s\n", name.c_str(), t.calls, "-", "-", "-",
               "skipped", "");
      out << line;
      continue;
    }
    const TuneSummary& s = r->tuner->summary();
    default_model_us += t.calls * s.default_us;
    tuned_model_us += t.calls * s.best_us;
    snprintf(line, sizeof line, "  %-36s %6d %12s %12s %7.2fx %7d %7d\n", name.c_str(), t.calls,
             Us(s.default_us).c_str(), Us(s.best_us).c_str(), s.best_us > 0 ? s.default_us / s.best_us : 0.0,
             s.prior_trials + s.trials, s.failures);
    out << line;
  }
  snprintf(line, sizeof line, "  %-36s %6s %12s %12s %7.2fx\n", "model (sum of calls x time)", "",
           Us(default_model_us).c_str(), Us(tuned_model_us).c_str(),
           tuned_model_us > 0 ? default_model_us / tuned_model_us : 0.0);
  out << line;
  out << "database " << options.db_dir << ": " << db->num_workloads() << " workloads, " << db->num_records()
      << " records\nbuild with it: kiln-compile " << options.input << " --tuning-db " << options.db_dir
      << " --threads " << options.tune.runner.threads << (options.tune.runner.cold_cache ? " --tuning-cache=cold" : "")
      << "\n";

  if (!options.plot_path.empty()) {
    plot.trials = run_trials;
    for (const auto& r : running)
      if (!r.series.points.empty()) plot.tasks.push_back(r.series);
    std::ofstream f(options.plot_path);
    f << TuningPlotSvg(plot);
    f.close();
    if (!f) {
      err << "kiln-tune: --plot: cannot write " << options.plot_path << "\n";
      return 1;
    }
    out << "plot: " << options.plot_path << "\n";
  }
  return was_interrupted ? 130 : 0;
}

}  // namespace tune
}  // namespace kiln
