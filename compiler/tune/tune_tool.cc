#include "compiler/tune/tune_tool.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile_tool.h"
#include "compiler/text/text.h"
#include "compiler/tune/database.h"
#include "compiler/tune/database_show.h"
#include "compiler/tune/model_check.h"
#include "compiler/tune/space_registry.h"
#include "compiler/tune/space_text.h"
#include "compiler/tune/tune.h"
#include "compiler/tune/tune_model.h"

namespace kiln {
namespace tune {

namespace {

const char kUsage[] =
    "usage: kiln-tune MODULE.relax --function NAME --db DIR [options]   (one PrimFunc)\n"
    "       kiln-tune MODEL.(onnx|relax) --db DIR [options]             (every kernel of a model)\n"
    "       kiln-tune --show DIR                                        (what a database holds)\n"
    "  --function NAME     the PrimFunc to tune; without it the whole model is tuned: its kernels\n"
    "                      after fusion, as kiln-compile builds them, each distinct one a task\n"
    "  --db DIR            the tuning database (created when absent; records are appended)\n"
    "  --trials N          candidates to measure (default 16); for a model, the total over its\n"
    "                      tasks, counting the database's records (a rerun continues)\n"
    "  --time-budget T     a model's tuning stops after T (20m, 90s, 1h30m), checked between rounds\n"
    "  --tasks A,B,...     tune only these kernels of the model\n"
    "  --dim NAME=N,...    fix a symbolic input dimension of an ONNX model (as kiln-compile --dim)\n"
    "  --params FILE       weights for the model's main (as kiln-compile --params)\n"
    "  --plot FILE.svg     a model's estimated time and each task's best against trials\n"
    "  --seed S            first seed of the random search (default 1)\n"
    "  --threads T         kernel threads while measuring (default 1); the default schedule and\n"
    "                      the candidates are planned for T threads, and the records apply to\n"
    "                      builds with kiln-compile --threads T only\n"
    "  --repeats R         timed runs per candidate, the median is kept (default 7)\n"
    "  --timeout SECONDS   per candidate (default 10)\n"
    "  --cold-cache[=SIZE] before each timed run, read SIZE bytes (default: twice the last-level\n"
    "                      cache; 64M, 1G) so the kernel's operands come from memory, as large\n"
    "                      weights do in a model; the flush is not timed, and runs on every\n"
    "                      kernel thread. Records say how they were measured; a run reuses\n"
    "                      only those of its own regime (and flush size)\n"
    "  --search KIND       evolutionary (default: mutations ranked by a learned cost model,\n"
    "                      an epsilon share of random points) or random\n"
    "  --space KIND        all (default), default (the default schedules' knobs: tile\n"
    "                      sizes, packing, parallel), generic (block rules: tiling, inlining),\n"
    "                      or the name of a space registered in C++ (space_registry.h)\n"
    "  --space-file FILE   a user space: schedule statements as in the MLC course\n"
    "                      (`j0, j1 = sch.split(j, factors=sch_tiles)`; space_text.h)\n"
    "  --target TRIPLE     build candidates for TRIPLE (as kiln-compile --target); another\n"
    "                      architecture needs --runner\n"
    "  --cpu NAME          the target CPU (default: the host's, or generic for another triple)\n"
    "  --runner \"CMD\"      run the measuring program through CMD, e.g.\n"
    "                      \"qemu-aarch64 -L /usr/aarch64-linux-gnu\" or a script that copies to a board\n"
    "  --measure-program PATH  kiln-measure built for the target (default: kiln-measure[-TRIPLE]\n"
    "                      beside kiln-tune)\n"
    "  --batch N           measurements per search round (default 8)\n"
    "  --cost-model FILE   the cost model to load and save (default DIR/cost_model.json)\n"
    "Model check (a whole model; model_check.h): after the trials the model is built with and\n"
    "without the records and both are timed with kiln-bench; when the tuned build is not faster,\n"
    "the records whose kernels took longer in the model are dropped (kiln-compile leaves them out)\n"
    "  --verify-only       only the model check of the database's records (no trials)\n"
    "  --no-verify         no model check after the trials\n"
    "  --verify-rounds N   rounds of the two builds (default 5), each build in its own process\n"
    "  --verify-time S     kiln-bench --min-time of each timing process (default 0.5)\n"
    "  --bench-program PATH  kiln-bench (default: beside kiln-tune, or $KILN_BENCH)\n"
    "The default schedule is measured first and stays the best unless a candidate beats it.\n"
    "Build with the results: kiln-compile --tuning-db DIR --threads T (records measured with\n"
    "--cold-cache: add --tuning-cache=cold).\n";

bool ParseInt(const std::string& s, long long lo, long long* out) {
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo) return false;
  *out = v;
  return true;
}

// "64M", "1G", "512K", "67108864": at least 1 MiB (smaller flushes nothing
// a kernel's operands would miss), at most 64 GiB.
bool ParseBytes(const std::string& s, int64_t* out) {
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (s.empty() || end == s.c_str() || v <= 0) return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, ++end;
  else if (*end == 'M' || *end == 'm') shift = 20, ++end;
  else if (*end == 'G' || *end == 'g') shift = 30, ++end;
  if (*end != '\0' || v > (int64_t{64} << 30) >> shift) return false;
  int64_t bytes = static_cast<int64_t>(v) << shift;
  if (bytes < (int64_t{1} << 20)) return false;
  *out = bytes;
  return true;
}

// The architecture part of a triple ("aarch64" of aarch64-linux-gnu).
std::string Arch(const std::string& triple) { return triple.substr(0, triple.find('-')); }

// Whether the first word of a shell command is a program that exists.
bool CommandExists(const std::string& command, std::string* word) {
  size_t b = command.find_first_not_of(" \t");
  if (b == std::string::npos) return false;
  size_t e = command.find_first_of(" \t", b);
  *word = command.substr(b, e == std::string::npos ? std::string::npos : e - b);
  if (word->find('/') != std::string::npos) return access(word->c_str(), X_OK) == 0;
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t p = 0; p <= dirs.size();) {
    size_t q = dirs.find(':', p);
    if (q == std::string::npos) q = dirs.size();
    std::string dir = dirs.substr(p, q - p);
    if (access(((dir.empty() ? "." : dir) + "/" + *word).c_str(), X_OK) == 0) return true;
    p = q + 1;
  }
  return false;
}

// kiln-measure[-TRIPLE] in the directory of this executable.
std::string DefaultMeasureProgram(const std::string& triple) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string dir = ".";
  if (n > 0) {
    std::string self(buf, static_cast<size_t>(n));
    dir = self.substr(0, self.rfind('/'));
  }
  return dir + "/kiln-measure" + (triple.empty() ? "" : "-" + triple);
}
volatile std::sig_atomic_t g_interrupted = 0;

void OnInterrupt(int) { g_interrupted = 1; }

// Opens the database at `dir` (created when absent), its damaged lines
// reported to `err` and skipped; on failure says why and returns nullopt.
std::optional<Database> OpenReporting(const std::string& dir, std::ostream& err) {
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  if (!db.ok()) {
    err << "kiln-tune: " << db.status().ToString() << "\n";
    return std::nullopt;
  }
  for (const auto& d : damage) err << "kiln-tune: error: " << d.message() << " (line skipped)\n";
  return std::move(*db);
}

// kiln-tune --show DIR (database_show.h): reads, never creates or writes.
// `others`: the arguments given besides --show and its value.
int ShowTool(const std::string& dir, int others, std::ostream& out, std::ostream& err) {
  if (others > 0) {
    err << "kiln-tune: --show DIR takes no other arguments\n";
    return 2;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || !std::filesystem::exists(dir + "/workloads.jsonl", ec)) {
    err << "kiln-tune: --show: " << dir << " is not a tuning database (no " << dir << "/workloads.jsonl)\n";
    return 2;
  }
  std::optional<Database> db = OpenReporting(dir, err);
  if (!db) return 1;
  ShowDatabase(*db, dir, out);
  return 0;
}

}  // namespace

int TuneToolMain(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::string input, function, db_dir, cost_model, space_file, space_name, target, cpu, runner, measure_program;
  bool runner_given = false;
  TuneOptions options;
  ModelTuneOptions model;
  bool model_flags = false;  // flags that only whole-model tuning takes
  bool verify = true, verify_only = false;
  std::string show_dir;  // --show: print the database, nothing else
  int show_args = 0;     // argv entries --show and its value took
  ModelCheckOptions check;
  check.bench_program = DefaultBenchProgram();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool has_value = false;
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    long long n = 0;
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return 0;
    } else if (a == "--show") {
      if (!take()) {
        err << "kiln-tune: --show needs a database directory\n" << kUsage;
        return 2;
      }
      show_dir = value;
      show_args = has_value ? 1 : 2;
    } else if (a == "--verify-only" || a == "--no-verify") {
      model_flags = true;
      if (a == "--verify-only") verify_only = true;
      else verify = false;
    } else if (a == "--verify-rounds" || a == "--verify-time" || a == "--bench-program") {
      if (!take()) {
        err << "kiln-tune: " << a << " needs a value\n" << kUsage;
        return 2;
      }
      model_flags = true;
      char* end = nullptr;
      if (a == "--bench-program") {
        check.bench_program = value;
      } else if (a == "--verify-rounds") {
        if (!ParseInt(value, 1, &n) || n > 1000) {
          err << "kiln-tune: --verify-rounds must be an integer from 1 to 1000, got '" << value << "'\n";
          return 2;
        }
        check.rounds = static_cast<int>(n);
      } else {
        double t = strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(t > 0)) {
          err << "kiln-tune: --verify-time must be a positive number of seconds, got '" << value << "'\n";
          return 2;
        }
        check.min_time_s = t;
      }
    } else if (a == "--cold-cache") {
      // The value only after '=': a flag that may stand alone.
      options.runner.cold_cache = true;
      if (has_value && !ParseBytes(value, &options.runner.cold_cache_bytes)) {
        err << "kiln-tune: --cold-cache=SIZE must be a size of at least 1M like 64M or 1G, got '" << value << "'\n";
        return 2;
      }
    } else if (a == "--function" || a == "--db" || a == "--trials" || a == "--seed" || a == "--threads" ||
               a == "--repeats" || a == "--timeout" || a == "--search" || a == "--space" || a == "--batch" ||
               a == "--cost-model" || a == "--space-file" || a == "--target" || a == "--cpu" || a == "--runner" ||
               a == "--measure-program" || a == "--time-budget" || a == "--tasks" || a == "--dim" || a == "--params" ||
               a == "--plot") {
      if (!take()) {
        err << "kiln-tune: " << a << " needs a value\n" << kUsage;
        return 2;
      }
      if (a == "--time-budget" || a == "--tasks" || a == "--dim" || a == "--params" || a == "--plot")
        model_flags = true;
      if (a == "--function") function = value;
      else if (a == "--time-budget") {
        if (!ParseDuration(value, &model.time_budget_s)) {
          err << "kiln-tune: --time-budget must be a duration like 20m, 90s or 1h30m, got '" << value << "'\n";
          return 2;
        }
      } else if (a == "--tasks") {
        size_t start = 0;
        while (start <= value.size()) {
          size_t comma = value.find(',', start);
          std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          if (!name.empty()) model.only_tasks.push_back(name);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      } else if (a == "--dim") {
        driver::OptionValues dims = {{"dim", {value}}};
        Status st = driver::ApplyCompileOptions(dims, &model.compile);
        if (!st.ok()) {
          err << "kiln-tune: " << st.message() << "\n";
          return 2;
        }
      } else if (a == "--params") model.compile.params_file = value;
      else if (a == "--plot") model.plot_path = value;
      else if (a == "--db") db_dir = value;
      else if (a == "--cost-model") cost_model = value;
      else if (a == "--space-file") space_file = value;
      else if (a == "--target") target = value;
      else if (a == "--cpu") cpu = value;
      else if (a == "--runner") {
        runner = value;
        runner_given = true;
      }
      else if (a == "--measure-program") measure_program = value;
      else if (a == "--search") {
        if (value == "evolutionary") options.search = SearchKind::kEvolutionary;
        else if (value == "random") options.search = SearchKind::kRandom;
        else {
          err << "kiln-tune: --search must be evolutionary or random, got '" << value << "'\n";
          return 2;
        }
      } else if (a == "--space") {
        if (value == "all") options.space = SpaceKind::kAll;
        else if (value == "default") options.space = SpaceKind::kDefault;
        else if (value == "generic") options.space = SpaceKind::kGeneric;
        else if (FindSpace(value)) space_name = value;
        else {
          std::string registered;
          for (const auto& n : RegisteredSpaceNames()) registered += (registered.empty() ? "" : ", ") + n;
          err << "kiln-tune: --space must be all, default or generic, got '" << value << "'"
              << (registered.empty() ? " (no space is registered in C++)" : " (registered spaces: " + registered + ")")
              << "\n";
          return 2;
        }
      }
      else if (a == "--timeout") {
        char* end = nullptr;
        double t = strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(t > 0)) {
          err << "kiln-tune: --timeout must be a positive number of seconds, got '" << value << "'\n";
          return 2;
        }
        options.runner.timeout_s = t;
      } else {
        long long lo = a == "--seed" || a == "--trials" ? 0 : 1;
        if (!ParseInt(value, lo, &n)) {
          err << "kiln-tune: " << a << " must be an integer >= " << lo << ", got '" << value << "'\n";
          return 2;
        }
        if (a == "--trials") options.trials = static_cast<int>(n);
        else if (a == "--seed") options.seed = static_cast<uint64_t>(n);
        else if (a == "--threads") options.runner.threads = static_cast<int>(n);
        else if (a == "--batch") options.batch = static_cast<int>(n);
        else options.runner.repeats = static_cast<int>(n);
      }
    } else if (a.rfind("-", 0) == 0) {
      err << "kiln-tune: unknown flag " << a << "\n" << kUsage;
      return 2;
    } else if (input.empty()) {
      input = a;
    } else {
      err << "kiln-tune: more than one input (" << input << ", " << a << ")\n";
      return 2;
    }
  }
  if (!show_dir.empty()) return ShowTool(show_dir, argc - 1 - show_args, out, err);
  if (input.empty() || db_dir.empty()) {
    err << "kiln-tune: MODULE and --db are required\n" << kUsage;
    return 2;
  }
  if (runner.empty()) {
    // Candidates on this machine run in kiln-measure-host, exec'd per
    // candidate (runner.h), never in a fork of this process.
    // $KILN_MEASURE_HOST names it where it is not beside kiln-tune.
    const char* env = getenv("KILN_MEASURE_HOST");
    options.runner.host_program = env != nullptr && *env ? std::string(env) : DefaultMeasureProgram("host");
    if (access(options.runner.host_program.c_str(), X_OK) != 0) {
      err << "kiln-tune: the measuring program " << options.runner.host_program
          << " is not an executable file (kiln-measure-host is built beside kiln-tune; $KILN_MEASURE_HOST names "
             "another)\n";
      return 2;
    }
  }
  if (function.empty()) {
    check.input = input;
    check.db_dir = db_dir;
    check.compile = model.compile;
    check.threads = options.runner.threads;
    check.cpu_time = check.threads == 1;
    check.cold_cache = options.runner.cold_cache;
    // Builds for another target cannot be timed here.
    bool can_check = options.runner.command.empty() && runner.empty() && target.empty();
    if (verify_only) {
      if (!can_check) {
        err << "kiln-tune: --verify-only times the model on this machine; drop --runner and --target\n";
        return 2;
      }
      return CheckModel(check, out, err);
    }
    model.input = input;
    model.db_dir = db_dir;
    options.cost_model_path = cost_model.empty() ? db_dir + "/cost_model.json" : cost_model;
    model.tune = options;
    // Ctrl-C: stop after the measurement under way, leave the database
    // whole, print the summary (tune_model.h). A second Ctrl-C kills.
    g_interrupted = 0;
    model.interrupted = &g_interrupted;
    struct sigaction sa = {}, old = {};
    sa.sa_handler = OnInterrupt;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int rc = TuneModel(model, out, err);
    sigaction(SIGINT, &old, nullptr);
    // The check after a whole run (an interrupted one is resumed first).
    if (rc == 0 && verify && can_check) {
      rc = CheckModel(check, out, err);
      if (rc != 0)
        err << "kiln-tune: the model check failed, so the records are not judged (kiln-compile --tuning-db applies "
               "every record that beat its default); fix the cause and run kiln-tune "
            << input << " --db " << db_dir << " --verify-only\n";
    }
    return rc;
  }
  if (model_flags) {
    err << "kiln-tune: --time-budget, --tasks, --dim, --params, --plot and the model check's flags (--verify-only, "
           "--no-verify, --verify-rounds, --verify-time, --bench-program) are for a whole model: drop --function\n";
    return 2;
  }
  if (!space_file.empty() && !space_name.empty()) {
    err << "kiln-tune: --space-file and --space " << space_name << " both name a user space; give one\n";
    return 2;
  }
  if (!space_file.empty()) {
    Result<TextSpace> space = LoadTextSpace(space_file);
    if (!space.ok()) {
      err << "kiln-tune: " << space.status().message() << "\n";
      return 1;
    }
    TextSpace parsed = std::move(*space);
    options.space = SpaceKind::kUser;
    options.user_space = [parsed](const ir::PrimFunc& f, uint64_t seed) { return ApplyTextSpace(f, parsed, seed); };
  } else if (!space_name.empty()) {
    options.space = SpaceKind::kUser;
    options.user_space = [space_name](const ir::PrimFunc& f, uint64_t seed) {
      return ApplyRegisteredSpace(f, space_name, seed);
    };
  }
  options.runner.codegen.triple = target;
  options.runner.codegen.cpu = cpu;
  if (runner_given && runner.find_first_not_of(" \t") == std::string::npos) {
    err << "kiln-tune: --runner needs a command (e.g. --runner \"qemu-aarch64 -L /usr/aarch64-linux-gnu\")\n";
    return 2;
  }
  if (!target.empty() && runner.empty()) {
    Result<std::string> host = codegen::ResolvedTargetName({});
    if (host.ok() && Arch(*host) != Arch(target)) {
      err << "kiln-tune: candidates built for " << target << " cannot run on this machine (" << Arch(*host)
          << "); give --runner \"CMD\" that runs a program of the target (e.g. --runner \"qemu-" << Arch(target)
          << " -L /usr/" << target << "\")\n";
      return 2;
    }
  }
  if (!runner.empty()) {
    std::string word;
    if (!CommandExists(runner, &word)) {
      err << "kiln-tune: --runner: '" << word << "' is not an executable file or a program on PATH\n";
      return 2;
    }
    options.runner.command = runner;
    options.runner.measure_program = measure_program.empty() ? DefaultMeasureProgram(target) : measure_program;
    if (access(options.runner.measure_program.c_str(), R_OK) != 0) {
      err << "kiln-tune: the measuring program " << options.runner.measure_program << " does not exist (kiln-measure"
          << (target.empty() ? "" : "-" + target) << " is built beside kiln-tune when the target's C compiler is "
          << "installed; or give --measure-program)\n";
      return 2;
    }
  } else if (!measure_program.empty()) {
    err << "kiln-tune: --measure-program is used with --runner only\n";
    return 2;
  }
  Result<ir::IRModule> mod = text::ParseModuleFile(input);
  if (!mod.ok()) {
    err << "kiln-tune: " << mod.status().ToString() << "\n";
    return 1;
  }
  ir::PrimFunc func = mod->FindPrim(function);
  if (!func) {
    err << "kiln-tune: " << input << " has no PrimFunc named " << function << "\n";
    return 1;
  }
  std::optional<Database> db = OpenReporting(db_dir, err);
  if (!db) return 1;
  options.cost_model_path = cost_model.empty() ? db_dir + "/cost_model.json" : cost_model;
  Result<TuneSummary> sum = TuneFunction(func, &*db, options, out);
  if (!sum.ok()) {
    err << "kiln-tune: " << sum.status().ToString() << "\n";
    return 1;
  }
  char line[256];
  out << "\nsummary\n";
  snprintf(line, sizeof line, "  %-16s %12s %12s %8s %8s %8s\n", "function", "default", "tuned", "speedup", "trials",
           "failed");
  out << line;
  double speedup = sum->best_us > 0 ? sum->default_us / sum->best_us : 0;
  snprintf(line, sizeof line, "  %-16s %9.1f us %9.1f us %7.2fx %8d %8d\n", sum->function.c_str(), sum->default_us,
           sum->best_us, speedup, sum->trials, sum->failures);
  out << line;
  if (!sum->best_trace.empty()) out << "best trace:\n" << sum->best_trace;
  else out << "best: the default schedule (no candidate beat it)\n";
  out << "database " << db_dir << ": " << db->num_workloads() << " workloads, " << db->num_records() << " records\n";
  return 0;
}

}  // namespace tune
}  // namespace kiln
