#include "compiler/tune/tune.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <set>

#include "compiler/tune/cost_model.h"
#include "compiler/tune/features.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/mutate.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {

namespace {

std::string Us(double us) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

// Sampling tries before giving up on finding a point not yet seen (small
// spaces run out).
constexpr int kMaxSampleTries = 32;
// Measured points that seed each round's population.
constexpr size_t kTopSeeds = 8;

struct Candidate {
  tir::Trace trace;
  ir::PrimFunc lowered;
  std::string key;  // hash of the lowered TIR
  std::vector<float> features;
  float score = 0;  // predicted
  bool random = false;
};

class Searcher {
 public:
  Searcher(const ir::PrimFunc& func, const TuneOptions& o)
      : func_(func), options_(o), rng_(o.seed), knobs_(DefaultSpaceKnobs(func, o.runner.threads)) {}

  // A candidate from `sch`, or nullopt when its lowered code was seen.
  std::optional<Candidate> Make(const tir::Schedule& sch, const std::set<std::string>& skip) {
    Candidate c;
    c.lowered = LowerScheduled(sch.func());
    c.key = Database::WorkloadHash(c.lowered);
    if (skip.count(c.key)) return std::nullopt;
    c.trace = sch.trace();
    c.features = ExtractFeatures(c.lowered);
    return c;
  }

  // A random point of one of the spaces (the knob space when the function
  // has knobs, by a coin, else the generic rules).
  Result<tir::Schedule> SampleRandom() {
    uint64_t seed = rng_();
    if (options_.space == SpaceKind::kUser) return options_.user_space(func_, seed);
    bool knob_space = options_.space == SpaceKind::kDefault ||
                      (options_.space == SpaceKind::kAll && !knobs_.empty() && (rng_() & 1) == 0);
    if (knob_space) {
      KILN_ASSIGN_OR_RETURN(tir::Schedule sch, tir::Schedule::Create(func_, seed));
      KILN_RETURN_IF_ERROR(ApplyDefaultSpace(&sch, knobs_, options_.runner.threads));
      return sch;
    }
    return SampleGenericSpace(func_, seed);
  }

  // A fresh random candidate not in `skip`, or nullopt when the spaces seem
  // exhausted.
  Result<std::optional<Candidate>> FreshRandom(const std::set<std::string>& skip) {
    for (int tries = 0; tries < kMaxSampleTries; ++tries) {
      KILN_ASSIGN_OR_RETURN(tir::Schedule sch, SampleRandom());
      std::optional<Candidate> c = Make(sch, skip);
      if (c) {
        c->random = true;
        return c;
      }
    }
    return std::optional<Candidate>();
  }

  Status Score(std::vector<Candidate>* cs, const CostModel& model) {
    std::vector<std::vector<float>> rows;
    for (const auto& c : *cs) rows.push_back(c.features);
    KILN_ASSIGN_OR_RETURN(std::vector<float> s, model.Predict(rows));
    for (size_t i = 0; i < cs->size(); ++i) (*cs)[i].score = s[i];
    return Status::Ok();
  }

  // The evolutionary round's picks: `want` unmeasured points by predicted
  // score. `seeds` are the best measured traces.
  Result<std::vector<Candidate>> Evolve(const std::vector<tir::Trace>& seeds, const CostModel& model,
                                        const std::set<std::string>& measured, size_t want) {
    std::vector<Candidate> pop;
    std::set<std::string> in_pop;
    auto add = [&](std::optional<Candidate> c) {
      if (c && in_pop.insert(c->key).second) pop.push_back(std::move(*c));
    };
    for (const auto& t : seeds) {
      Result<tir::Schedule> sch = tir::Schedule::Replay(func_, t);
      if (sch.ok()) add(Make(*sch, {}));
    }
    while (pop.size() < static_cast<size_t>(options_.population)) {
      KILN_ASSIGN_OR_RETURN(std::optional<Candidate> c, FreshRandom(in_pop));
      if (!c) break;
      add(std::move(c));
    }
    if (pop.empty()) return pop;
    KILN_RETURN_IF_ERROR(Score(&pop, model));
    for (int g = 0; g < options_.generations; ++g) {
      std::vector<Candidate> children;
      for (size_t i = 0; i < pop.size(); ++i) {
        // Parent: the better of two drawn at random (tournament), so good
        // points have more children without one taking over.
        const Candidate& a = pop[rng_() % pop.size()];
        const Candidate& b = pop[rng_() % pop.size()];
        const Candidate& parent = a.score >= b.score ? a : b;
        Result<tir::Schedule> child = MutateTrace(func_, parent.trace, &rng_);
        if (!child.ok()) continue;
        std::optional<Candidate> c = Make(*child, in_pop);
        if (c && in_pop.insert(c->key).second) children.push_back(std::move(*c));
      }
      KILN_RETURN_IF_ERROR(Score(&children, model));
      for (auto& c : children) pop.push_back(std::move(c));
      std::stable_sort(pop.begin(), pop.end(), [](const Candidate& x, const Candidate& y) { return x.score > y.score; });
      if (pop.size() > static_cast<size_t>(options_.population)) pop.resize(options_.population);
    }
    std::vector<Candidate> out;
    for (auto& c : pop) {
      if (out.size() >= want) break;
      if (measured.count(c.key)) continue;
      c.random = false;  // picked by the model, wherever it came from
      out.push_back(std::move(c));
    }
    return out;
  }

 private:
  ir::PrimFunc func_;
  TuneOptions options_;
  std::mt19937_64 rng_;
  std::vector<Knob> knobs_;
};

}  // namespace

// The message of the default point's record (database.h).
constexpr char kDefaultPointMessage[] = "the default schedule";

struct TaskTuner::State {
  ir::PrimFunc func;
  Database* db = nullptr;
  TuneOptions options;
  CostModel* model = nullptr;
  std::ostream* progress = nullptr;
  std::string target;
  TuneSummary sum;
  ir::PrimFunc default_lowered;
  Measurement reference;
  // Points already measured, by the hash of their lowered TIR (the
  // default's code is the all-default knob point: never measured twice).
  std::set<std::string> measured;
  // Successful traces, fastest first: this run's and the database's.
  std::vector<std::pair<double, tir::Trace>> good;
  double best_candidate_us = 0;  // 0 until a candidate succeeds
  bool exhausted = false;
  bool finished = false;
  std::unique_ptr<Searcher> searcher;
};

TaskTuner::TaskTuner(std::unique_ptr<State> s) : s_(std::move(s)) {}
TaskTuner::~TaskTuner() = default;
const TuneSummary& TaskTuner::summary() const { return s_->sum; }
bool TaskTuner::exhausted() const { return s_->exhausted; }

Result<std::unique_ptr<TaskTuner>> TaskTuner::Start(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                                    CostModel* model, std::ostream& progress) {
  auto s = std::make_unique<State>();
  s->func = func;
  s->db = db;
  s->options = options;
  s->model = model;
  s->progress = &progress;
  TuneSummary& sum = s->sum;
  sum.function = func->name;
  if (options.space == SpaceKind::kUser) {
    // A user space that does not apply to the function fails before anything
    // is measured, with the space's own message (its file and line).
    if (!options.user_space) return InvalidArgument("tune " + func->name + ": --space user without a space");
    KILN_RETURN_IF_ERROR(options.user_space(func, options.seed).status());
  }
  KILN_ASSIGN_OR_RETURN(s->target, codegen::ResolvedTargetName(options.runner.codegen));
  KILN_ASSIGN_OR_RETURN(sum.workload, db->CommitWorkload(func));
  s->default_lowered = LowerWithDefaultSchedule(func, options.runner.threads);
  s->reference = Measure(s->default_lowered, options.runner);
  if (!s->reference.ok())
    return FailedPrecondition("tune " + func->name + ": the default schedule cannot be measured (" +
                              MeasureStateName(s->reference.state) + "): " + s->reference.message);
  sum.default_us = s->reference.median_us;
  s->measured.insert(Database::WorkloadHash(s->default_lowered));
  // A resumed run: the workload's records count as measured (their lowered
  // code is never measured again) and their best counts as found.
  // Only records measured as this run measures (warm, or cold with the same
  // flush): a cold time is no bound for a warm candidate, nor the reverse.
  const int64_t flush_bytes = ColdCacheFlushBytes(options.runner);
  const CacheRegime regime = options.runner.cold_cache ? CacheRegime::kCold : CacheRegime::kWarm;
  for (const TuningRecord& r : db->Records(sum.workload, s->target, options.runner.threads, regime)) {
    if (r.message == kDefaultPointMessage || r.flush_bytes != flush_bytes) continue;
    ++sum.prior_trials;
    Result<tir::Schedule> sch = tir::Schedule::Replay(func, r.trace);
    if (sch.ok()) s->measured.insert(Database::WorkloadHash(LowerScheduled(sch->func())));
    if (r.state != "ok" || !(r.median_us > 0)) continue;
    s->good.push_back({r.median_us, r.trace});
    if (s->best_candidate_us == 0 || r.median_us < s->best_candidate_us) {
      s->best_candidate_us = r.median_us;
      if (r.median_us < sum.default_us) sum.best_trace = r.trace.ToString();
    }
  }
  std::stable_sort(s->good.begin(), s->good.end(),
                   [](const std::pair<double, tir::Trace>& a, const std::pair<double, tir::Trace>& b) {
                     return a.first < b.first;
                   });
  sum.best_us = s->best_candidate_us > 0 ? std::min(sum.default_us, s->best_candidate_us) : sum.default_us;
  const bool evolutionary = options.search == SearchKind::kEvolutionary;
  progress << "tune " << func->name << " (workload " << sum.workload << ", " << s->target << ", "
           << (evolutionary ? "evolutionary search" : "random search")
           << (options.runner.cold_cache ? ", cold cache" : "") << "): default schedule " << Us(sum.default_us);
  if (sum.prior_trials > 0)
    progress << "; " << sum.prior_trials << " trials in the database, best " << Us(sum.best_us);
  progress << "\n";
  s->searcher = std::make_unique<Searcher>(func, options);
  return std::unique_ptr<TaskTuner>(new TaskTuner(std::move(s)));
}

Result<int> TaskTuner::Step(int n) {
  State& s = *s_;
  TuneSummary& sum = s.sum;
  const TuneOptions& options = s.options;
  std::ostream& progress = *s.progress;
  CostModel& model = *s.model;
  const bool evolutionary = options.search == SearchKind::kEvolutionary;
  // A SIGINT (kiln-tune) or the caller's stop request (kiln.tune: Ctrl-C or
  // a progress callback's exception) ends the search before the next trial.
  auto interrupted = [&] {
    return (options.interrupted != nullptr && *options.interrupted != 0) ||
           (options.should_stop && options.should_stop());
  };
  int done = 0;
  while (done < n && !s.exhausted && !interrupted()) {
    size_t batch = static_cast<size_t>(std::min(std::max(options.batch, 1), n - done));
    std::vector<Candidate> round;
    if (evolutionary && model.trained()) {
      size_t n_random = static_cast<size_t>(options.epsilon * batch + 0.5);
      if (n_random >= batch && batch > 1) n_random = batch - 1;
      std::vector<tir::Trace> seeds;
      for (size_t i = 0; i < s.good.size() && i < kTopSeeds; ++i) seeds.push_back(s.good[i].second);
      KILN_ASSIGN_OR_RETURN(round, s.searcher->Evolve(seeds, model, s.measured, batch - n_random));
    }
    std::set<std::string> taken = s.measured;
    for (const auto& c : round) taken.insert(c.key);
    while (round.size() < batch) {
      KILN_ASSIGN_OR_RETURN(std::optional<Candidate> c, s.searcher->FreshRandom(taken));
      if (!c) break;
      taken.insert(c->key);
      round.push_back(std::move(*c));
    }
    if (round.empty()) {
      progress << "tune " << sum.function << ": the space has no point left to try after "
               << sum.prior_trials + sum.trials << " trials\n";
      s.exhausted = true;
      break;
    }
    s.exhausted = round.size() < batch;
    size_t measured_in_round = 0;
    for (Candidate& c : round) {
      if (interrupted()) break;
      Measurement m = Measure(c.lowered, options.runner, &s.reference);
      // Interrupted while measuring: the child may have died of the same
      // signal, so only a success is a measurement.
      if (interrupted() && !m.ok()) break;
      ++done;
      ++measured_in_round;
      s.measured.insert(c.key);
      ++sum.trials;
      TuningRecord rec;
      rec.workload = sum.workload;
      rec.target = s.target;
      rec.trace = c.trace;
      rec.state = MeasureStateName(m.state);
      rec.median_us = m.median_us;
      rec.default_us = sum.default_us;
      rec.times_us = m.times_us;
      rec.message = m.message;
      rec.threads = options.runner.threads;
      rec.cold_cache = options.runner.cold_cache;
      rec.flush_bytes = ColdCacheFlushBytes(options.runner);
      KILN_RETURN_IF_ERROR(s.db->CommitRecord(rec));
      // Score: speed relative to the default (0 for a failure), so one model
      // serves kernels of any size.
      model.Add(c.features, m.ok() && m.median_us > 0 ? static_cast<float>(sum.default_us / m.median_us) : 0.0f);
      if (m.ok()) {
        s.good.push_back({m.median_us, c.trace});
        if (s.best_candidate_us == 0 || m.median_us < s.best_candidate_us) {
          s.best_candidate_us = m.median_us;
          if (m.median_us < sum.default_us) sum.best_trace = c.trace.ToString();
        }
        sum.best_us = std::min(sum.default_us, s.best_candidate_us);
      } else {
        ++sum.failures;
      }
      sum.best_after.push_back(sum.best_us);
      if (options.trial_lines) {
        progress << "[" << sum.trials << "/" << options.trials << "] " << sum.function << ": "
                 << (m.ok() ? Us(m.median_us) : std::string(MeasureStateName(m.state)))
                 << (evolutionary ? (c.random ? " (random)" : " (model)") : "") << "  best " << Us(sum.best_us)
                 << "  default " << Us(sum.default_us) << "  failed " << sum.failures << "\n";
        progress.flush();
      }
    }
    std::stable_sort(s.good.begin(), s.good.end(),
                     [](const std::pair<double, tir::Trace>& a, const std::pair<double, tir::Trace>& b) {
                       return a.first < b.first;
                     });
    if (measured_in_round == 0 || interrupted()) break;
    if (evolutionary && model.num_samples() > 0) {
      KILN_RETURN_IF_ERROR(model.Train());
      if (!options.cost_model_path.empty()) KILN_RETURN_IF_ERROR(model.Save(options.cost_model_path));
    }
    // The default again after each round, keeping its fastest median: one
    // measurement taken while the machine was busy must not let a slower
    // candidate pass for faster than the default.
    Measurement again = Measure(s.default_lowered, options.runner);
    if (again.ok() && again.median_us < sum.default_us) {
      sum.default_us = again.median_us;
      if (s.best_candidate_us == 0 || s.best_candidate_us >= sum.default_us) sum.best_trace.clear();
      sum.best_us = s.best_candidate_us > 0 ? std::min(sum.default_us, s.best_candidate_us) : sum.default_us;
    }
  }
  // The default schedule is always available at its fastest median, which a
  // later round may have measured below what it was known as when an early
  // trial ended; the curve counts it so (it stays non-increasing).
  for (double& b : sum.best_after) b = std::min(b, sum.default_us);
  return done;
}

Status TaskTuner::Finish() {
  State& s = *s_;
  if (s.finished) return Status::Ok();
  s.finished = true;
  // The default schedule's own point, with its fastest median: the database's
  // best record for the workload is then never slower than the default
  // measured (the compiler applies a record only when it beat the default).
  KILN_ASSIGN_OR_RETURN(tir::Schedule def, tir::Schedule::Create(s.func, s.options.seed));
  KILN_RETURN_IF_ERROR(
      ApplyDefaultSpace(&def, DefaultSpaceKnobs(s.func, s.options.runner.threads), s.options.runner.threads));
  KILN_ASSIGN_OR_RETURN(tir::Trace def_trace, DefaultPoint(def.trace()));
  TuningRecord rec;
  rec.workload = s.sum.workload;
  rec.target = s.target;
  rec.trace = def_trace;
  rec.median_us = s.sum.default_us;
  rec.default_us = s.sum.default_us;
  rec.message = kDefaultPointMessage;
  rec.threads = s.options.runner.threads;
  rec.cold_cache = s.options.runner.cold_cache;
  rec.flush_bytes = ColdCacheFlushBytes(s.options.runner);
  return s.db->CommitRecord(rec);
}

Result<TuneSummary> TuneFunction(const ir::PrimFunc& func, Database* db, const TuneOptions& options,
                                 std::ostream& progress) {
  CostModel model;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<TaskTuner> tuner, TaskTuner::Start(func, db, options, &model, progress));
  if (options.search == SearchKind::kEvolutionary && !options.cost_model_path.empty() &&
      model.Load(options.cost_model_path).ok())
    progress << "tune: cost model loaded from " << options.cost_model_path << "\n";
  KILN_RETURN_IF_ERROR(tuner->Step(options.trials).status());
  KILN_RETURN_IF_ERROR(tuner->Finish());
  return tuner->summary();
}

}  // namespace tune
}  // namespace kiln
