#include "compiler/tune/database.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"
#include "compiler/tune/json.h"
#include "compiler/tune/trace_json.h"

namespace kiln {
namespace tune {

namespace {

constexpr const char* kWorkloads = "workloads.jsonl";
constexpr const char* kRecords = "records.jsonl";
constexpr const char* kVerdicts = "verdicts.jsonl";

// The function as a workload: one fixed name, and no attributes or
// privacy, which say how the function is used, not what it computes (the
// compiler's fusion passes annotate functions the user wrote and tuned).
ir::PrimFunc Normalized(const ir::PrimFunc& func) {
  auto renamed = std::make_shared<ir::PrimFuncNode>(*func);
  renamed->name = "workload";
  renamed->attrs = {};
  renamed->is_private = false;
  return renamed;
}

std::string WorkloadText(const ir::PrimFunc& func) {
  ir::IRModule m;
  m.Add("workload", Normalized(func));
  return text::PrintModule(m);
}

bool IdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IdentChar(char c) { return IdentStart(c) || (c >= '0' && c <= '9'); }

// The text with its variable and buffer names replaced by v0, v1, ... in
// order of first appearance, so that functions equal but for those names
// (ir::StructuralEqual's sense: a model's identical kernels take their
// buffers' names from different Relax variables) hash alike. Renamed: every
// identifier outside quotes that is not a keyword and neither follows nor
// precedes a dot nor is called (so T.float32, T.max, range(...) stay; block
// names are quoted and stay). Used only for hashing.
std::string CanonicalNames(const std::string& text) {
  static const std::set<std::string> keep = {"def", "for", "in", "with", "if", "else", "elif", "and", "or", "not",
                                             "return", "True", "False", "None", "class", "lambda", "is"};
  std::map<std::string, std::string> names;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  char quote = 0;
  while (i < text.size()) {
    char c = text[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == quote) quote = 0;
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      out += c;
      ++i;
      continue;
    }
    bool after_digit = !out.empty() && (IdentChar(out.back()));
    if (!IdentStart(c) || after_digit) {
      out += c;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && IdentChar(text[j])) ++j;
    std::string word = text.substr(i, j - i);
    bool dotted = (i > 0 && text[i - 1] == '.') || (j < text.size() && text[j] == '.');
    bool called = j < text.size() && text[j] == '(';
    if (dotted || called || keep.count(word)) {
      out += word;
    } else {
      auto it = names.find(word);
      if (it == names.end()) it = names.emplace(word, "v" + std::to_string(names.size())).first;
      out += it->second;
    }
    i = j;
  }
  return out;
}

std::string PlainHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Hash(const std::string& workload_text) { return PlainHash(CanonicalNames(workload_text)); }

// A verdict's map key: the record it judges and where that record applies.
std::string VerdictKey(const std::string& workload, const std::string& target, int threads, bool cold,
                       const std::string& record) {
  return workload + "|" + target + "|" + std::to_string(threads) + (cold ? "|cold|" : "|warm|") + record;
}

const std::string* StringField(const Json& j, const char* key) {
  const Json* v = j.Get(key);
  return v && v->kind == Json::Kind::kString ? &v->s : nullptr;
}

}  // namespace

std::string Database::WorkloadHash(const ir::PrimFunc& func) { return Hash(WorkloadText(func)); }

Result<Database> Database::Open(const std::string& dir, std::vector<Status>* damage) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return InvalidArgument("tuning database " + dir + ": cannot create the directory: " + strerror(errno));
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return InvalidArgument("tuning database " + dir + " is not a directory");
  Database db;
  std::map<std::string, std::string> legacy;  // a pre-canonical hash -> the hash
  db.dir_ = dir;
  auto report = [&](const std::string& file, size_t line, const std::string& why) {
    if (damage) damage->push_back(DataLoss(dir + "/" + file + ":" + std::to_string(line) + ": " + why));
  };
  {
    std::ifstream in(dir + "/" + kWorkloads);
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      Result<Json> j = ParseJson(line);
      if (!j.ok()) {
        report(kWorkloads, n, j.status().message());
        continue;
      }
      const std::string* hash = StringField(*j, "hash");
      const std::string* name = StringField(*j, "name");
      const std::string* func = StringField(*j, "func");
      if (!hash || !name || !func) {
        report(kWorkloads, n, "a workload needs the strings hash, name and func");
        continue;
      }
      Result<ir::IRModule> m = text::ParseModule(*func, dir + "/" + kWorkloads);
      ir::PrimFunc f = m.ok() ? m->FindPrim("workload") : nullptr;
      if (!f) {
        report(kWorkloads, n, "the function text does not parse" + (m.ok() ? std::string() : ": " + m.status().message()));
        continue;
      }
      std::string key = Hash(*func);
      if (key != *hash) {
        // A database written before the hash ignored names: its records
        // name the workload by the hash of the plain text.
        if (PlainHash(*func) != *hash) {
          report(kWorkloads, n, "the hash does not match the function text");
          continue;
        }
        legacy[*hash] = key;
      }
      db.workloads_[key] = Workload{*name, *func, f};
    }
  }
  {
    std::ifstream in(dir + "/" + kRecords);
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      Result<Json> j = ParseJson(line);
      if (!j.ok()) {
        report(kRecords, n, j.status().message());
        continue;
      }
      TuningRecord r;
      const std::string* w = StringField(*j, "workload");
      const std::string* target = StringField(*j, "target");
      const std::string* state = StringField(*j, "state");
      const Json* trace = j->Get("trace");
      const Json* median = j->Get("median_us");
      if (!w || !target || !state || !trace || !median || !median->is_number()) {
        report(kRecords, n, "a record needs workload, target, state, trace and median_us");
        continue;
      }
      auto old = legacy.find(*w);
      const std::string& workload = old == legacy.end() ? *w : old->second;
      if (!db.workloads_.count(workload)) {
        report(kRecords, n, "unknown workload " + *w);
        continue;
      }
      Result<tir::Trace> t = TraceFromJson(*trace);
      if (!t.ok()) {
        report(kRecords, n, t.status().message());
        continue;
      }
      r.workload = workload;
      r.target = *target;
      r.state = *state;
      r.trace = std::move(*t);
      r.median_us = median->number();
      if (const Json* d = j->Get("default_us"); d && d->is_number()) r.default_us = d->number();
      if (const Json* times = j->Get("times_us"); times && times->kind == Json::Kind::kArray)
        for (const Json& x : times->array)
          if (x.is_number()) r.times_us.push_back(x.number());
      if (const std::string* msg = StringField(*j, "message")) r.message = *msg;
      if (const Json* th = j->Get("threads"); th && th->is_number()) {
        if (!(th->number() >= 1 && th->number() <= 1024 && th->number() == static_cast<int>(th->number()))) {
          report(kRecords, n, "threads must be an integer from 1 to 1024");
          continue;
        }
        r.threads = static_cast<int>(th->number());
      }
      if (const Json* cache = j->Get("cache")) {
        if (cache->kind != Json::Kind::kString || (cache->s != "warm" && cache->s != "cold")) {
          report(kRecords, n, "cache must be \"warm\" or \"cold\"");
          continue;
        }
        r.cold_cache = cache->s == "cold";
        if (r.cold_cache) {
          const Json* fb = j->Get("flush_bytes");
          bool integer = fb && fb->is_number() && fb->number() >= 1 &&
                         fb->number() == static_cast<double>(static_cast<int64_t>(fb->number()));
          if (!integer) {
            report(kRecords, n, "a cold-cache record needs flush_bytes, a positive integer");
            continue;
          }
          r.flush_bytes = static_cast<int64_t>(fb->number());
        }
      }
      db.records_.push_back(std::move(r));
    }
  }
  {
    std::ifstream in(dir + "/" + kVerdicts);
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      Result<Json> j = ParseJson(line);
      if (!j.ok()) {
        report(kVerdicts, n, j.status().message());
        continue;
      }
      const std::string* w = StringField(*j, "workload");
      const std::string* target = StringField(*j, "target");
      const std::string* record = StringField(*j, "record");
      const std::string* verdict = StringField(*j, "verdict");
      if (!w || !target || !record || !verdict) {
        report(kVerdicts, n, "a verdict needs the strings workload, target, record and verdict");
        continue;
      }
      if (*verdict != "keep" && *verdict != "drop") {
        report(kVerdicts, n, "verdict must be \"keep\" or \"drop\"");
        continue;
      }
      auto old = legacy.find(*w);
      const std::string& workload = old == legacy.end() ? *w : old->second;
      if (!db.workloads_.count(workload)) {
        report(kVerdicts, n, "unknown workload " + *w);
        continue;
      }
      TuningVerdict v;
      v.workload = workload;
      v.target = *target;
      v.record = *record;
      v.drop = *verdict == "drop";
      if (const Json* th = j->Get("threads"); th && th->is_number()) {
        if (!(th->number() >= 1 && th->number() <= 1024 && th->number() == static_cast<int>(th->number()))) {
          report(kVerdicts, n, "threads must be an integer from 1 to 1024");
          continue;
        }
        v.threads = static_cast<int>(th->number());
      }
      if (const std::string* cache = StringField(*j, "cache")) v.cold_cache = *cache == "cold";
      if (const Json* d = j->Get("default_us"); d && d->is_number()) v.default_us = d->number();
      if (const Json* t = j->Get("tuned_us"); t && t->is_number()) v.tuned_us = t->number();
      if (const std::string* why = StringField(*j, "reason")) v.reason = *why;
      db.verdicts_[VerdictKey(v.workload, v.target, v.threads, v.cold_cache, v.record)] = std::move(v);
    }
  }
  return db;
}

Status Database::AppendLine(const std::string& file, const std::string& line) {
  std::ofstream out(dir_ + "/" + file, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) return InvalidArgument("tuning database: cannot write " + dir_ + "/" + file);
  return Status::Ok();
}

std::string Database::FindWorkload(const ir::PrimFunc& func) const {
  std::string text = WorkloadText(func);
  auto it = workloads_.find(Hash(text));
  if (it == workloads_.end()) return "";
  return ir::StructuralEqual(it->second.func, Normalized(func)) ? it->first : "";
}

Result<std::string> Database::CommitWorkload(const ir::PrimFunc& func) {
  std::string text = WorkloadText(func);
  std::string hash = Hash(text);
  if (workloads_.count(hash)) return hash;
  Result<ir::IRModule> m = text::ParseModule(text, "<workload>");
  if (!m.ok()) return Internal("tuning database: the workload text of " + func->name + " does not parse back: " + m.status().message());
  Json j = Json::Object();
  j.object["hash"] = Json::Str(hash);
  j.object["name"] = Json::Str(func->name);
  j.object["func"] = Json::Str(text);
  KILN_RETURN_IF_ERROR(AppendLine(kWorkloads, WriteJson(j)));
  workloads_[hash] = Workload{func->name, text, m->FindPrim("workload")};
  return hash;
}

Status Database::CommitRecord(const TuningRecord& r) {
  if (!workloads_.count(r.workload)) return InvalidArgument("tuning database: record of unknown workload " + r.workload);
  KILN_ASSIGN_OR_RETURN(Json trace, TraceToJson(r.trace));
  Json j = Json::Object();
  j.object["workload"] = Json::Str(r.workload);
  j.object["target"] = Json::Str(r.target);
  j.object["trace"] = std::move(trace);
  j.object["state"] = Json::Str(r.state);
  j.object["median_us"] = Json::Double(r.median_us);
  j.object["default_us"] = Json::Double(r.default_us);
  Json times = Json::Array();
  for (double t : r.times_us) times.array.push_back(Json::Double(t));
  j.object["times_us"] = std::move(times);
  j.object["message"] = Json::Str(r.message);
  j.object["threads"] = Json::Int(r.threads);
  j.object["cache"] = Json::Str(r.cold_cache ? "cold" : "warm");
  if (r.cold_cache) j.object["flush_bytes"] = Json::Int(r.flush_bytes);
  KILN_RETURN_IF_ERROR(AppendLine(kRecords, WriteJson(j)));
  records_.push_back(r);
  return Status::Ok();
}

std::string Database::RecordKey(const TuningRecord& record) {
  Result<Json> trace = TraceToJson(record.trace);
  return trace.ok() ? PlainHash(WriteJson(*trace)) : std::string();
}

Status Database::CommitVerdict(const TuningVerdict& v) {
  if (!workloads_.count(v.workload))
    return InvalidArgument("tuning database: verdict on unknown workload " + v.workload);
  Json j = Json::Object();
  j.object["workload"] = Json::Str(v.workload);
  j.object["target"] = Json::Str(v.target);
  j.object["threads"] = Json::Int(v.threads);
  j.object["cache"] = Json::Str(v.cold_cache ? "cold" : "warm");
  j.object["record"] = Json::Str(v.record);
  j.object["verdict"] = Json::Str(v.drop ? "drop" : "keep");
  j.object["default_us"] = Json::Double(v.default_us);
  j.object["tuned_us"] = Json::Double(v.tuned_us);
  j.object["reason"] = Json::Str(v.reason);
  KILN_RETURN_IF_ERROR(AppendLine(kVerdicts, WriteJson(j)));
  verdicts_[VerdictKey(v.workload, v.target, v.threads, v.cold_cache, v.record)] = v;
  return Status::Ok();
}

const TuningVerdict* Database::FindVerdict(const TuningRecord& r) const {
  if (verdicts_.empty()) return nullptr;
  auto it = verdicts_.find(VerdictKey(r.workload, r.target, r.threads, r.cold_cache, RecordKey(r)));
  return it == verdicts_.end() ? nullptr : &it->second;
}

std::optional<TuningRecord> Database::Selected(const std::string& workload, const std::string& target, int threads,
                                               CacheRegime cache, bool apply_verdicts, bool* dropped) const {
  std::vector<TuningRecord> best = TopK(workload, target, 1, threads, cache);
  if (best.empty() || !(best[0].median_us < best[0].default_us)) return std::nullopt;
  if (apply_verdicts) {
    const TuningVerdict* v = FindVerdict(best[0]);
    if (v && v->drop) {
      if (dropped) *dropped = true;
      return std::nullopt;
    }
  }
  return best[0];
}

namespace {
bool InRegime(const TuningRecord& r, CacheRegime cache) {
  return cache == CacheRegime::kAny || r.cold_cache == (cache == CacheRegime::kCold);
}
}  // namespace

std::vector<TuningRecord> Database::Records(const std::string& workload, const std::string& target, int threads,
                                           CacheRegime cache) const {
  std::vector<TuningRecord> out;
  for (const auto& r : records_)
    if (r.workload == workload && r.target == target && (threads <= 0 || r.threads == threads) && InRegime(r, cache))
      out.push_back(r);
  return out;
}

std::vector<std::string> Database::WorkloadHashes() const {
  std::vector<std::string> out;
  for (const auto& [hash, w] : workloads_) out.push_back(hash);
  return out;
}

std::string Database::WorkloadName(const std::string& hash) const {
  auto it = workloads_.find(hash);
  return it == workloads_.end() ? std::string() : it->second.name;
}

std::vector<TuningRecord> Database::AllRecords(const std::string& workload) const {
  std::vector<TuningRecord> out;
  for (const auto& r : records_)
    if (r.workload == workload) out.push_back(r);
  return out;
}

std::vector<TuningRecord> Database::TopK(const std::string& workload, const std::string& target, size_t k,
                                        int threads, CacheRegime cache) const {
  std::vector<TuningRecord> out;
  for (const auto& r : records_)
    if (r.workload == workload && r.target == target && r.state == "ok" && (threads <= 0 || r.threads == threads) &&
        InRegime(r, cache))
      out.push_back(r);
  std::stable_sort(out.begin(), out.end(),
                   [](const TuningRecord& a, const TuningRecord& b) { return a.median_us < b.median_us; });
  if (out.size() > k) out.resize(k);
  return out;
}

}  // namespace tune
}  // namespace kiln
