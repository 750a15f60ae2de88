#include "compiler/tune/database_show.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tune {
namespace {

std::string Us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

std::string Ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

// The trace's readable form, each line indented.
std::string Indented(const std::string& text, const std::string& indent) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += indent + line + "\n";
  return out;
}

// A default-space trace is sample_categorical / annotate pairs, one per
// knob (schedule_knobs.h): its decisions read best as "knob=value" for the
// knobs not left to the rule (0). Sets *only_knobs when the trace has no
// other instruction. "" when it sets no knob.
std::string KnobSummary(const tir::Trace& trace, bool* only_knobs) {
  std::map<int64_t, int64_t> value;  // ExprRV id -> the chosen candidate
  std::string knobs;
  bool any = false;
  *only_knobs = true;
  for (const tir::Instruction& inst : trace.instructions()) {
    if (inst.name == "sample_categorical" && inst.inputs.size() >= 1 && inst.decision.size() == 1 &&
        inst.outputs.size() == 1) {
      const std::vector<int64_t>& candidates = inst.inputs[0].ints;
      int64_t d = inst.decision[0];
      if (d >= 0 && d < static_cast<int64_t>(candidates.size())) value[inst.outputs[0]] = candidates[d];
      continue;
    }
    const size_t prefix = sizeof(tir::kKnobAnnotationPrefix) - 1;
    if (inst.name == "annotate" && inst.inputs.size() == 2 && inst.inputs[0].kind == tir::TraceArg::Kind::kString &&
        inst.inputs[0].s.compare(0, prefix, tir::kKnobAnnotationPrefix) == 0 && inst.inputs[1].ints.size() == 1) {
      any = true;
      auto v = value.find(inst.inputs[1].ints[0]);
      if (v != value.end() && v->second != 0)
        knobs += (knobs.empty() ? "" : ", ") + inst.inputs[0].s.substr(prefix) + "=" + std::to_string(v->second);
      continue;
    }
    *only_knobs = false;
  }
  if (!any) return "";
  return knobs.empty() ? "none (every knob at its rule: the default schedule's point)" : knobs;
}

}  // namespace

void ShowDatabase(const Database& db, const std::string& dir, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<TuningRecord>>> workloads;
  size_t failed = 0;
  for (const std::string& h : db.WorkloadHashes()) {
    workloads.emplace_back(h, db.AllRecords(h));
    for (const TuningRecord& r : workloads.back().second) failed += r.state != "ok";
  }
  out << "database " << dir << ": " << db.num_workloads() << " workload(s), " << db.num_records() << " record(s), "
      << failed << " failed\n";
  size_t applied = 0, dropped_count = 0;
  for (const auto& [h, all] : workloads) {
    std::string name = db.WorkloadName(h);
    out << "\n" << (name.empty() ? "(unnamed)" : name) << " (workload " << h << "): " << all.size() << " record(s)\n";
    // One group per (target, threads, regime): what a build for that target
    // and thread count, with --tuning-cache=warm or cold, would look up.
    std::map<std::tuple<std::string, int, bool>, std::vector<const TuningRecord*>> groups;
    for (const TuningRecord& r : all) groups[{r.target, r.threads, r.cold_cache}].push_back(&r);
    for (const auto& [key, records] : groups) {
      const auto& [target, threads, cold] = key;
      size_t bad = 0;
      for (const TuningRecord* r : records) bad += r->state != "ok";
      out << "  " << target << ", " << threads << (threads == 1 ? " thread, " : " threads, ")
          << (cold ? "cold cache" : "warm") << ": " << records.size() << " record(s)";
      if (bad) out << ", " << bad << " failed";
      const CacheRegime regime = cold ? CacheRegime::kCold : CacheRegime::kWarm;
      std::vector<TuningRecord> best = db.TopK(h, target, 1, threads, regime);
      if (best.empty()) {
        out << "; none measured: the default schedule\n";
        continue;
      }
      const TuningRecord& b = best[0];
      out << "; default " << Us(b.default_us) << ", best " << Us(b.median_us);
      if (!(b.median_us < b.default_us)) {
        out << ": no record beat the default, builds keep it\n";
        continue;
      }
      out << " (" << Ratio(b.default_us / b.median_us) << ")";
      // It beat the default, so a build leaves it out only for a drop verdict.
      std::optional<TuningRecord> sel = db.Selected(h, target, threads, regime, true);
      const TuningVerdict* v = db.FindVerdict(b);
      if (sel) {
        ++applied;
        out << ": kiln-compile --tuning-db applies it";
        if (v) out << " (model check: kept, its kernels " << Us(v->default_us) << " -> " << Us(v->tuned_us) << " per model call)";
      } else {
        ++dropped_count;
        out << ": dropped by the model check";
        if (v) {
          out << " (" << (v->reason.empty() ? "" : v->reason + "; ") << "its kernels " << Us(v->default_us) << " -> "
              << Us(v->tuned_us) << " per model call)";
        }
        out << ", builds keep the default";
      }
      out << "\n";
      bool only_knobs = false;
      std::string knobs = KnobSummary(b.trace, &only_knobs);
      if (!knobs.empty()) out << "    knobs: " << knobs << "\n";
      if (!only_knobs) out << Indented(b.trace.ToString(), "    ");
    }
  }
  out << "\n" << applied << " record(s) applied by kiln-compile --tuning-db " << dir << " (each for its target, "
      << "--threads and --tuning-cache), " << dropped_count << " dropped by the model check\n";
}

}  // namespace tune
}  // namespace kiln
