#include "compiler/tune/model_check.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "compiler/codegen/native_codegen.h"
#include "compiler/tune/json.h"
#include "compiler/tune/tasks.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace tune {

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double KernelsUs(const BuildTiming& t, const std::vector<std::string>& kernels) {
  double sum = 0;
  for (const auto& k : kernels) {
    auto it = t.kernel_us.find(k);
    if (it != t.kernel_us.end()) sum += it->second;
  }
  return sum;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `argv` with stdout to `out_path` and stderr to `err_path`; its exit
// status, or -1 when it could not start or was killed.
int RunProgram(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(127);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One kiln-bench process on `vmfb`: its p50, CPU time per call and the
// kernels' time per call from the trace of its profiled calls.
Result<BuildTiming> TimeBuild(const ModelCheckOptions& o, const std::string& dir, const std::string& vmfb) {
  std::string trace = dir + "/trace.json", out = dir + "/bench.out", err = dir + "/bench.err";
  char min_time[32];
  snprintf(min_time, sizeof min_time, "%g", o.min_time_s);
  std::vector<std::string> argv = {o.bench_program,
                                   vmfb,
                                   "--threads=" + std::to_string(o.threads),
                                   "--format=json",
                                   std::string("--min-time=") + min_time,
                                   "--runs=20",
                                   "--trace=" + trace,
                                   "--profile_calls=" + std::to_string(o.profile_calls)};
  int rc = RunProgram(argv, out, err);
  std::string output = ReadAll(out), errors = ReadAll(err);
  unlink(out.c_str());
  unlink(err.c_str());
  if (rc != 0) {
    unlink(trace.c_str());
    return Internal("model check: " + o.bench_program + " " + vmfb + " exited with " + std::to_string(rc) + ": " +
                    errors.substr(0, 600));
  }
  BuildTiming t;
  Result<Json> j = ParseJson(output);
  const Json* results = j.ok() ? j->Get("results") : nullptr;
  const Json* first = results && results->kind == Json::Kind::kArray && !results->array.empty() ? &results->array[0]
                                                                                                : nullptr;
  const Json* latency = first ? first->Get("latency_ms") : nullptr;
  const Json* p50 = latency ? latency->Get("p50") : nullptr;
  if (!p50 || !p50->is_number()) {
    unlink(trace.c_str());
    return Internal("model check: kiln-bench printed no p50 latency: " + output.substr(0, 600));
  }
  t.p50_ms = p50->number();
  if (const Json* cpu = first->Get("cpu_ms_per_call"); cpu && cpu->is_number()) t.cpu_ms = cpu->number();
  Result<Json> tr = ParseJson(ReadAll(trace));
  unlink(trace.c_str());
  const Json* events = tr.ok() ? tr->Get("traceEvents") : nullptr;
  if (!events || events->kind != Json::Kind::kArray)
    return Internal("model check: kiln-bench's trace " + trace + " has no traceEvents");
  std::map<std::string, std::vector<double>> durations;
  for (const Json& e : events->array) {
    const Json* cat = e.Get("cat");
    const Json* name = e.Get("name");
    const Json* dur = e.Get("dur");
    if (!cat || cat->kind != Json::Kind::kString || cat->s != "kernel" || !name ||
        name->kind != Json::Kind::kString || !dur || !dur->is_number())
      continue;
    durations[name->s].push_back(dur->number());
  }
  for (auto& [name, d] : durations)
    t.kernel_us[name] = Median(d) * static_cast<double>(d.size()) / o.profile_calls;
  t.ms = o.cpu_time ? t.cpu_ms : t.p50_ms;
  return t;
}

// Rounds of the two builds, each in its own process, the order alternating.
Result<PairedTimings> TimePair(const ModelCheckOptions& o, const std::string& dir, const std::string& base,
                               const std::string& other) {
  PairedTimings t;
  for (int r = 0; r < o.rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      bool base_now = (k + r) % 2 == 0;
      KILN_ASSIGN_OR_RETURN(BuildTiming b, TimeBuild(o, dir, base_now ? base : other));
      (base_now ? t.base : t.other).push_back(std::move(b));
    }
  }
  return t;
}

std::string Ms(double ms) {
  char buf[32];
  if (ms < 1) snprintf(buf, sizeof buf, "%.1f us", ms * 1000);
  else snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

std::string Fixed3(double x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

double LoadAverage() {
  double load = -1;
  FILE* f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &load) != 1) load = -1;
    fclose(f);
  }
  return load;
}

// "default 2.170 ms, tuned 2.236 ms CPU per call: tuned/default 1.030
// (median of 5 paired ratios; faster in 0 of 5 rounds; wall p50 ...)".
std::string DescribePair(const PairedTimings& t, const std::string& other_name, bool cpu_time) {
  int faster = 0;
  double ratio = MedianRatio(t, &faster);
  std::vector<double> b, o, bw, ow;
  for (const auto& x : t.base) b.push_back(x.ms), bw.push_back(x.p50_ms);
  for (const auto& x : t.other) o.push_back(x.ms), ow.push_back(x.p50_ms);
  char r[32];
  snprintf(r, sizeof r, "%.3f", ratio);
  std::string n = std::to_string(t.base.size());
  std::string text = "default " + Ms(Median(b)) + ", " + other_name + " " + Ms(Median(o)) +
                     (cpu_time ? " CPU per call" : " p50") + ": " + other_name + "/default " + r + " (median of " + n +
                     " paired ratios; faster in " + std::to_string(faster) + " of " + n + " rounds";
  if (cpu_time) text += "; wall p50 " + Ms(Median(bw)) + " / " + Ms(Median(ow));
  // Each round's ratio: their spread is the noise the verdict was made in.
  text += ")\n    ratio by round:";
  for (size_t i = 0; i < t.base.size() && i < t.other.size(); ++i)
    text += " " + (t.base[i].ms > 0 ? Fixed3(t.other[i].ms / t.base[i].ms) : std::string("-"));
  return text;
}

// A directory of the check's builds, removed with them.
class WorkDir {
 public:
  WorkDir() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-check-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~WorkDir() {
    for (const auto& f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

struct Candidate {
  const TuneTask* task = nullptr;
  TuningRecord record;
  bool drop = false;
  bool drop_written = false;  // its "drop" verdict is in the database already
  double default_us = 0, tuned_us = 0;
  double ratio = 1;  // InModelRatio
  std::string reason;
};

}  // namespace

double MedianRatio(const PairedTimings& t, int* rounds_faster) {
  std::vector<double> ratios;
  int faster = 0;
  for (size_t i = 0; i < t.base.size() && i < t.other.size(); ++i) {
    if (!(t.base[i].ms > 0)) continue;
    ratios.push_back(t.other[i].ms / t.base[i].ms);
    faster += t.other[i].ms < t.base[i].ms;
  }
  if (rounds_faster) *rounds_faster = faster;
  return ratios.empty() ? 1.0 : Median(ratios);
}

bool FasterBeyondNoise(const PairedTimings& t, double margin) {
  int faster = 0;
  double ratio = MedianRatio(t, &faster);
  return ratio < 1.0 - margin && 2 * faster > static_cast<int>(t.base.size());
}

void InModelUs(const PairedTimings& t, const std::vector<std::string>& kernels, double* base_us, double* other_us) {
  std::vector<double> b, o;
  for (const auto& x : t.base) b.push_back(KernelsUs(x, kernels));
  for (const auto& x : t.other) o.push_back(KernelsUs(x, kernels));
  *base_us = Median(b);
  *other_us = Median(o);
}

double InModelRatio(const PairedTimings& t, const std::vector<std::string>& kernels) {
  std::vector<double> ratios;
  for (size_t i = 0; i < t.base.size() && i < t.other.size(); ++i) {
    double b = KernelsUs(t.base[i], kernels);
    if (b > 0) ratios.push_back(KernelsUs(t.other[i], kernels) / b);
  }
  return ratios.empty() ? 1.0 : Median(ratios);
}

bool CostsTimeInModel(const PairedTimings& t, const std::vector<std::string>& kernels) {
  return InModelRatio(t, kernels) >= 1.0;
}

std::string DefaultBenchProgram() {
  const char* env = getenv("KILN_BENCH");
  if (env && *env) return env;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string self(buf, static_cast<size_t>(n));
  std::string dir = self.substr(0, self.rfind('/'));
  // Installed side by side, or the build tree (tools/kiln-tune/kiln-tune
  // and tools/kiln-bench/kiln-bench).
  for (const std::string& p : {dir + "/kiln-bench", dir + "/../kiln-bench/kiln-bench"})
    if (access(p.c_str(), X_OK) == 0) return p;
  return "";
}

int CheckModel(const ModelCheckOptions& o, std::ostream& out, std::ostream& err) {
  if (o.bench_program.empty() || access(o.bench_program.c_str(), X_OK) != 0) {
    err << "kiln-tune: the model check needs kiln-bench"
        << (o.bench_program.empty() ? std::string() : " (" + o.bench_program + " is not an executable file)")
        << "; it is built beside kiln-tune, or $KILN_BENCH names it\n";
    return 1;
  }
  driver::CompileOptions compile;
  Result<ir::IRModule> mod = driver::LoadModuleFile(o.input, o.compile, &compile);
  if (!mod.ok()) {
    err << "kiln-tune: " << mod.status().ToString() << "\n";
    return 1;
  }
  compile.num_threads_hint = o.threads;
  compile.tuning_cold_cache = o.cold_cache;
  Result<ir::IRModule> kernels = driver::LowerModuleToKernels(*mod, compile);
  if (!kernels.ok()) {
    err << "kiln-tune: " << o.input << ": " << kernels.status().ToString() << "\n";
    return 1;
  }
  std::vector<TuneTask> tasks = ExtractTasks(*kernels);
  std::vector<Status> damage;
  Result<Database> db = Database::Open(o.db_dir, &damage);
  if (!db.ok()) {
    err << "kiln-tune: " << db.status().ToString() << "\n";
    return 1;
  }
  for (const auto& d : damage) err << "kiln-tune: error: " << d.message() << " (line skipped)\n";
  Result<std::string> target = codegen::ResolvedTargetName({});
  if (!target.ok()) {
    err << "kiln-tune: " << target.status().ToString() << "\n";
    return 1;
  }
  const CacheRegime regime = o.cold_cache ? CacheRegime::kCold : CacheRegime::kWarm;
  std::vector<Candidate> cands;
  for (const auto& t : tasks) {
    std::string w = db->FindWorkload(t.func);
    if (w.empty()) continue;
    std::optional<TuningRecord> r = db->Selected(w, *target, o.threads, regime, /*apply_verdicts=*/false);
    if (!r) continue;
    Candidate c;
    c.task = &t;
    c.record = *r;
    cands.push_back(std::move(c));
  }
  out << "\nmodel check: " << o.input << " with " << o.db_dir << " (" << cands.size() << " of " << tasks.size()
      << " tasks have a record that beat the default; --threads " << o.threads << ")\n";
  if (cands.empty()) {
    out << "nothing to check: the tuned build is the default build\n";
    return 0;
  }
  WorkDir dir;
  if (dir.path().empty()) {
    err << "kiln-tune: the model check cannot create a directory under $TMPDIR or /tmp\n";
    return 1;
  }
  auto build = [&](const std::string& name, bool with_db, bool verdicts) -> Result<std::string> {
    driver::CompileOptions c = compile;
    c.tuning_db = with_db ? o.db_dir : "";
    c.tuning_verdicts = verdicts;
    std::ostringstream notes;  // the compiler's notes about the records: the check reports its own
    c.dump_stream = &notes;
    KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, driver::CompileModule(*mod, c));
    std::string path = dir.File(name);
    KILN_RETURN_IF_ERROR(compiler::WriteVmfbFile(program, path));
    return path;
  };
  auto fail = [&](const Status& s) {
    err << "kiln-tune: " << s.ToString() << "\n";
    return 1;
  };
  Result<std::string> base = build("default.vmfb", false, false);
  if (!base.ok()) return fail(base.status());
  Result<std::string> tuned = build("tuned.vmfb", true, false);
  if (!tuned.ok()) return fail(tuned.status());
  out << "timing both builds: " << o.rounds << " rounds of kiln-bench --threads=" << o.threads << " --min-time="
      << o.min_time_s << ", each build in its own process, the order alternating (load " << LoadAverage() << ")\n";
  out.flush();
  Result<PairedTimings> first = TimePair(o, dir.path(), *base, *tuned);
  if (!first.ok()) return fail(first.status());
  out << "  " << DescribePair(*first, "tuned", o.cpu_time) << "\n";
  PairedTimings final_pair = *first;
  const char* final_name = "tuned";

  for (auto& c : cands) {
    InModelUs(*first, c.task->kernels, &c.default_us, &c.tuned_us);
    c.ratio = InModelRatio(*first, c.task->kernels);
  }
  if (FasterBeyondNoise(*first, o.margin)) {
    for (auto& c : cands) c.reason = "the model is faster with the records";
  } else {
    size_t dropped = 0;
    for (auto& c : cands) {
      c.drop = CostsTimeInModel(*first, c.task->kernels);
      c.reason = c.drop ? "its kernels took longer in the model than the default's" : "its kernels were faster in the model";
      dropped += c.drop;
    }
    out << "  not faster beyond " << o.margin * 100 << " %: " << dropped << " of " << cands.size()
        << " records cost time in the model (their kernels' in-model time, traces of both builds)\n";
    bool rest_too = dropped == 0 || dropped == cands.size();
    if (!rest_too) {
      // Time the build with the kept records only: kernels that are faster
      // themselves can still slow their neighbours (caches, layouts).
      for (auto& c : cands) {
        if (!c.drop) continue;
        TuningVerdict v{c.record.workload, c.record.target, c.record.threads, c.record.cold_cache,
                        Database::RecordKey(c.record), true, c.default_us, c.tuned_us, c.reason};
        Status st = db->CommitVerdict(v);
        if (!st.ok()) return fail(st);
        c.drop_written = true;
      }
      Result<std::string> kept = build("kept.vmfb", true, true);
      if (!kept.ok()) return fail(kept.status());
      Result<PairedTimings> second = TimePair(o, dir.path(), *base, *kept);
      if (!second.ok()) return fail(second.status());
      out << "  with the " << cands.size() - dropped << " kept records: " << DescribePair(*second, "kept", o.cpu_time) << "\n";
      final_pair = *second;
      final_name = "kept";
      rest_too = !FasterBeyondNoise(*second, o.margin);
    }
    if (rest_too) {
      for (auto& c : cands) {
        if (c.drop) continue;
        c.drop = true;
        c.reason = "the model was not faster with the records its kernels' times kept";
      }
    }
  }
  size_t kept = 0;
  for (const auto& c : cands) {
    kept += !c.drop;
    if (c.drop_written) continue;
    TuningVerdict v{c.record.workload, c.record.target, c.record.threads, c.record.cold_cache,
                    Database::RecordKey(c.record), c.drop, c.default_us, c.tuned_us, c.reason};
    Status st = db->CommitVerdict(v);
    if (!st.ok()) return fail(st);
  }
  char line[512];
  // ratio: the median of the rounds' paired ratios (what is judged), not
  // the ratio of the two medians beside it.
  snprintf(line, sizeof line, "  %-36s %6s %12s %12s %7s  %s\n", "task (in-model us per call)", "calls", "default",
           "tuned", "ratio", "verdict");
  out << line;
  for (const auto& c : cands) {
    std::string name = c.task->name.size() > 36 ? c.task->name.substr(0, 33) + "..." : c.task->name;
    snprintf(line, sizeof line, "  %-36s %6d %12.1f %12.1f %7.3f  %s\n", name.c_str(), c.task->calls, c.default_us,
             c.tuned_us, c.ratio, c.drop ? "drop" : "keep");
    out << line;
  }
  std::vector<double> b, t;
  for (const auto& x : final_pair.base) b.push_back(x.ms);
  for (const auto& x : final_pair.other) t.push_back(x.ms);
  out << "model time (" << (o.cpu_time ? "CPU per call" : "p50") << "): default " << Ms(Median(b)) << ", "
      << final_name << " " << Ms(Median(t)) << " (" << final_name << "/default " << Fixed3(MedianRatio(final_pair, nullptr))
      << ", median of the paired ratios)";
  if (kept == 0) out << "\nevery record dropped: kiln-compile --tuning-db builds the default model";
  out << "\nrecords: " << kept << " kept, " << cands.size() - kept << " dropped (verdicts in " << o.db_dir
      << "/verdicts.jsonl; kiln-compile --tuning-db applies the kept ones)\n";
  return 0;
}

}  // namespace tune
}  // namespace kiln
