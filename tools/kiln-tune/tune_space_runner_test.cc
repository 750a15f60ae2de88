// kiln-tune with a user space file (space_text.h) and with a runner command
// (runner.h): the course's stochastic mm schedule tuned from a file; its
// errors (syntax, a statement that does not apply) name the file's line; the
// runner command's failures (missing, failing, killed, too slow, wrong
// numbers) become failed measurements with the reason; and candidates for
// aarch64-linux-gnu tuned under qemu-aarch64 as `make test` runs aarch64
// code (a few trials, each checked against the default schedule through the
// same runner; no timing asserted).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/database.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/runner.h"
#include "compiler/tune/tune_tool.h"

namespace kiln {
namespace {

const char kModule[] = R"(@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        T.func_attr({"global_symbol": "mm", "tir.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";

const char kSpace[] = R"(def stochastic_schedule_mm(sch):
    block_C = sch.get_block("C", "mm")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=16)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.vectorize(j_1)
    sch.decompose_reduction(block_C, k)
    return sch
)";

struct ToolRun {
  int rc;
  std::string out, err;
};

ToolRun Tune(std::vector<std::string> args) {
  args.insert(args.begin(), "kiln-tune");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  int rc = tune::TuneToolMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

std::string Work(const std::string& name) {
  std::string work = std::string(KILN_BINARY_DIR) + "/" + name;
  (void)system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  std::ofstream(work + "/mm.relax") << kModule;
  return work;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TuneSpaceFileTest, TunesThePointsOfTheFile) {
  std::string work = Work("space_file_work");
  std::ofstream(work + "/mm_space.py") << kSpace;
  ToolRun r = Tune({work + "/mm.relax", "--function", "mm", "--space-file", work + "/mm_space.py", "--db",
                    work + "/db", "--trials", "3", "--repeats", "2", "--search", "random", "--seed", "3"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out, "[3/3] mm: ")) << r.out;
  Result<tune::Database> db = tune::Database::Open(work + "/db", nullptr);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->num_records(), 4u);  // three points and the default's
  Result<ir::IRModule> mod = text::ParseModuleFile(work + "/mm.relax");
  ASSERT_TRUE(mod.ok());
  Result<std::string> target = codegen::ResolvedTargetName({});
  ASSERT_TRUE(target.ok());
  int from_file = 0;
  for (const auto& rec : db->TopK(db->FindWorkload(mod->FindPrim("mm")), *target, 10)) {
    std::string t = rec.trace.ToString();
    if (!Contains(t, "sample_perfect_tile")) continue;
    ++from_file;
    // The file's statements, its tile within its bound.
    EXPECT_TRUE(Contains(t, "sch.decompose_reduction(")) << t;
    EXPECT_TRUE(Contains(t, "max_innermost_factor=16")) << t;
  }
  EXPECT_GE(from_file, 1);
}

TEST(TuneSpaceFileTest, ErrorsNameTheFileAndLine) {
  std::string work = Work("space_file_errors");
  std::string space = work + "/bad.py";
  std::ofstream(space) << "b = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b)\nsch.split(j, factors=[None, 4)\n";
  ToolRun r = Tune({work + "/mm.relax", "--function", "mm", "--space-file", space, "--db", work + "/db"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-tune: " + space + ":3:30: ')' does not close the '[' opened at 3:22\n");

  std::ofstream(space) << "b = sch.get_block(\"C\")\ni, j = sch.get_loops(b)\n";
  r = Tune({work + "/mm.relax", "--function", "mm", "--space-file", space, "--db", work + "/db"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, space + ":2:1: `i, j = sch.get_loops(b)` does not apply to mm: get_loops gives 3 "
                                      "handles, the statement names 2"))
      << r.err;
  EXPECT_EQ(r.out, "");  // nothing measured

  r = Tune({work + "/mm.relax", "--function", "mm", "--space-file", work + "/absent.py", "--db", work + "/db"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-tune: cannot read the space file " + work + "/absent.py\n");

  r = Tune({work + "/mm.relax", "--function", "mm", "--space", "no_such_space", "--db", work + "/db"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-tune: --space must be all, default or generic, got 'no_such_space' (no space is registered "
                   "in C++)\n");
}

TEST(TuneRunnerTest, CommandLineErrors) {
  std::string work = Work("runner_errors");
  std::vector<std::string> base = {work + "/mm.relax", "--function", "mm", "--db", work + "/db"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return Tune(a);
  };
  Result<std::string> host = codegen::ResolvedTargetName({});
  ASSERT_TRUE(host.ok());
  std::string other = host->rfind("aarch64", 0) == 0 ? "x86_64-linux-gnu" : "aarch64-linux-gnu";
  std::string other_arch = other.substr(0, other.find('-'));
  ToolRun r = with({"--target", other});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "candidates built for " + other + " cannot run on this machine")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--runner \"qemu-" + other_arch + " -L /usr/" + other + "\"")) << r.err;
  r = with({"--runner", "/nonexistent/qemu-aarch64 -L /usr/aarch64-linux-gnu"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-tune: --runner: '/nonexistent/qemu-aarch64' is not an executable file or a program on PATH\n");
  r = with({"--runner", "kiln-no-such-runner-command"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "'kiln-no-such-runner-command' is not an executable file or a program on PATH")) << r.err;
  r = with({"--runner", "  "});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "--runner needs a command")) << r.err;
  r = with({"--runner", "env", "--measure-program", work + "/absent-kiln-measure"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "the measuring program " + work + "/absent-kiln-measure does not exist")) << r.err;
  r = with({"--measure-program", KILN_MEASURE_HOST});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "--measure-program is used with --runner only")) << r.err;
  // A runner that exists but fails: the default schedule cannot be measured.
  r = with({"--runner", "false", "--measure-program", KILN_MEASURE_HOST});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "the default schedule cannot be measured (run failed): the runner command `false ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "exited with status 1")) << r.err;
}

// The lowered default schedule of the module's mm, for direct measurements.
ir::PrimFunc LoweredMM() {
  return tune::LowerWithDefaultSchedule(tir::testing::ParseFunc(kModule, "mm"), 1);
}

tune::RunnerOptions HostRunner(const std::string& command) {
  tune::RunnerOptions o;
  o.command = command;
  o.measure_program = KILN_MEASURE_HOST;
  o.repeats = 3;
  o.timeout_s = 20;
  return o;
}

TEST(TuneRunnerTest, HostThroughACommandMatchesInProcess) {
  ir::PrimFunc f = LoweredMM();
  tune::Measurement in_process = tune::Measure(f, HostRunner(""));
  ASSERT_TRUE(in_process.ok()) << in_process.message;
  tune::Measurement via = tune::Measure(f, HostRunner("env"), &in_process);
  ASSERT_TRUE(via.ok()) << via.message;
  EXPECT_EQ(via.times_us.size(), 3u);
  EXPECT_GT(via.median_us, 0);
  // Two threads through the program's own parallel_for: the same numbers.
  tune::RunnerOptions two = HostRunner("env");
  two.threads = 2;
  tune::Measurement par = tune::Measure(tune::LowerWithDefaultSchedule(tir::testing::ParseFunc(kModule, "mm"), 2), two,
                                        &in_process);
  EXPECT_TRUE(par.ok()) << par.message;
}

TEST(TuneRunnerTest, CommandFailuresAreFailedMeasurements) {
  ir::PrimFunc f = LoweredMM();
  tune::Measurement ref = tune::Measure(f, HostRunner("env"));
  ASSERT_TRUE(ref.ok()) << ref.message;

  tune::Measurement m = tune::Measure(f, HostRunner("kiln-no-such-runner-command"));
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "could not be run (exit status 127; is the command installed?)")) << m.message;

  m = tune::Measure(f, HostRunner("sh -c 'echo board unreachable; exit 3'"));
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "exited with status 3: board unreachable")) << m.message;

  // A measuring program killed by a signal (as qemu reports a guest's crash).
  m = tune::Measure(f, HostRunner("sh -c 'kill -SEGV $$'"));
  EXPECT_EQ(m.state, tune::MeasureState::kCrashed) << m.message;
  EXPECT_TRUE(Contains(m.message, "signal 11")) << m.message;

  tune::RunnerOptions slow = HostRunner("sleep 30;");
  slow.timeout_s = 1;
  m = tune::Measure(f, slow);
  EXPECT_EQ(m.state, tune::MeasureState::kTimedOut);
  EXPECT_TRUE(Contains(m.message, "was still running after 1")) << m.message;

  // Exit 0 without the program's report (a runner that did not run it).
  m = tune::Measure(f, HostRunner("true ||"));
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "without the measuring program's report")) << m.message;

  tune::RunnerOptions missing = HostRunner("env");
  missing.measure_program = "/nonexistent/kiln-measure";
  m = tune::Measure(f, missing);
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "'/nonexistent/kiln-measure' does not exist")) << m.message;

  // Numbers that differ from the reference's.
  tune::Measurement other = ref;
  other.outputs[2][3] ^= 0x40;  // the first float's exponent
  m = tune::Measure(f, HostRunner("env"), &other);
  EXPECT_EQ(m.state, tune::MeasureState::kWrong) << m.message;
}

// --cold-cache (cache_evict.h): the job carries the flush's size to the
// measuring program (kiln-measure here, through a runner command that checks
// the job's last line), a bad size in a job is the program's error, and the
// forked child flushes too; the numbers stay the default schedule's.
TEST(TuneRunnerTest, ColdCacheReachesTheMeasuringProgram) {
  ir::PrimFunc f = LoweredMM();
  tune::Measurement ref = tune::Measure(f, HostRunner("env"));
  ASSERT_TRUE(ref.ok()) << ref.message;
  const std::string check =
      "sh -c 'grep -qx \"cold_cache_bytes 2097152\" \"$2\" || { echo no cold_cache line; exit 9; }; "
      "exec \"$1\" \"$2\"' sh";
  tune::RunnerOptions cold = HostRunner(check);
  cold.cold_cache = true;
  cold.cold_cache_bytes = 2 << 20;
  tune::Measurement m = tune::Measure(f, cold, &ref);
  EXPECT_TRUE(m.ok()) << m.message;
  EXPECT_EQ(m.times_us.size(), 3u);
  // kiln-measure's flush on two threads (its parallel_for) keeps the numbers.
  cold.threads = 2;
  m = tune::Measure(f, cold, &ref);
  EXPECT_TRUE(m.ok()) << m.message;
  cold.threads = 1;
  // Without the option the job has no such line.
  m = tune::Measure(f, HostRunner(check), &ref);
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "no cold_cache line")) << m.message;
  // 0: the measuring machine's own default.
  tune::RunnerOptions dflt = HostRunner("env");
  dflt.cold_cache = true;
  m = tune::Measure(f, dflt, &ref);
  EXPECT_TRUE(m.ok()) << m.message;

  tune::RunnerOptions bad = HostRunner("sh -c 'sed -i \"s/^cold_cache_bytes .*/cold_cache_bytes lots/\" \"$2\"; "
                                       "exec \"$1\" \"$2\"' sh");
  bad.cold_cache = true;
  m = tune::Measure(f, bad, &ref);
  EXPECT_EQ(m.state, tune::MeasureState::kRunFailed);
  EXPECT_TRUE(Contains(m.message, "kiln-measure: job: bad 'cold_cache_bytes'")) << m.message;

  tune::RunnerOptions fork = HostRunner("");
  fork.cold_cache = true;
  fork.cold_cache_bytes = 2 << 20;
  m = tune::Measure(f, fork, &ref);
  EXPECT_TRUE(m.ok()) << m.message;
}

// kiln-tune --cold-cache: a bad size is an error; a small run says it
// measured cold and keeps its records.
TEST(TuneRunnerTest, ColdCacheFlag) {
  std::string work = Work("cold_cache");
  std::vector<std::string> base = {work + "/mm.relax", "--function", "mm", "--db", work + "/db"};
  for (const char* size : {"lots", "512K", "0", "-4M", "64X", "100G"}) {
    std::vector<std::string> a = base;
    a.push_back(std::string("--cold-cache=") + size);
    ToolRun r = Tune(a);
    EXPECT_EQ(r.rc, 2) << size;
    EXPECT_EQ(r.err, std::string("kiln-tune: --cold-cache=SIZE must be a size of at least 1M like 64M or 1G, got '") +
                         size + "'\n");
  }
  std::vector<std::string> a = base;
  for (const char* more : {"--cold-cache=4M", "--trials", "3", "--repeats", "3"}) a.push_back(more);
  ToolRun r = Tune(a);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out + r.err, "evolutionary search, cold cache): default schedule")) << r.out << r.err;
  Result<tune::Database> db = tune::Database::Open(work + "/db", nullptr);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_GE(db->num_records(), 3u);
  // Every record says it was measured cold, with the flush's size.
  Result<ir::IRModule> mod = text::ParseModuleFile(work + "/mm.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string w = db->FindWorkload(mod->FindPrim("mm"));
  Result<std::string> target = codegen::ResolvedTargetName({});
  ASSERT_TRUE(target.ok());
  std::vector<tune::TuningRecord> all = db->Records(w, *target);
  ASSERT_EQ(all.size(), db->num_records());
  for (const tune::TuningRecord& rec : all) {
    EXPECT_TRUE(rec.cold_cache);
    EXPECT_EQ(rec.flush_bytes, 4 << 20);
  }
  // A warm run on the same database does not resume from the cold records
  // (their times bound nothing warm); its own records are warm. So does a
  // cold run with another flush size.
  for (const char* mode : {"", "--cold-cache=8M"}) {
    std::vector<std::string> again = base;
    for (const char* more : {"--trials", "2", "--repeats", "3"}) again.push_back(more);
    if (*mode) again.push_back(mode);
    r = Tune(again);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_FALSE(Contains(r.out + r.err, "trials in the database")) << mode << r.out << r.err;
  }
  // The same cold run again resumes from its own records.
  r = Tune(a);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out + r.err, "trials in the database")) << r.out << r.err;
  db = tune::Database::Open(work + "/db", nullptr);
  ASSERT_TRUE(db.ok());
  size_t warm = db->Records(w, *target, 0, tune::CacheRegime::kWarm).size();
  EXPECT_EQ(warm, 3u);  // two candidates and the default point
  for (const tune::TuningRecord& rec : db->Records(w, *target, 0, tune::CacheRegime::kWarm))
    EXPECT_EQ(rec.flush_bytes, 0);
  size_t eight = 0;
  for (const tune::TuningRecord& rec : db->Records(w, *target, 0, tune::CacheRegime::kCold))
    eight += rec.flush_bytes == (8 << 20);
  EXPECT_EQ(eight, 3u);
}

TEST(TuneRunnerTest, Aarch64UnderQemu) {
#if defined(KILN_QEMU_AARCH64) && defined(KILN_MEASURE_AARCH64)
  std::string qemu = KILN_QEMU_AARCH64, program = KILN_MEASURE_AARCH64;
#else
  std::string qemu, program;
#endif
  if (qemu.empty() || access(qemu.c_str(), X_OK) != 0 || access(program.c_str(), R_OK) != 0)
    GTEST_SKIP() << "needs aarch64-linux-gnu-gcc and qemu-aarch64 at configure time (scripts/setup.sh installs "
                    "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user)";
  std::string work = Work("runner_aarch64");
  std::ofstream(work + "/mm_space.py") << kSpace;
  ToolRun r = Tune({work + "/mm.relax", "--function", "mm", "--db", work + "/db", "--target", "aarch64-linux-gnu",
                    "--runner", qemu + " -L /usr/aarch64-linux-gnu", "--measure-program", program, "--space-file",
                    work + "/mm_space.py", "--trials", "3", "--repeats", "2", "--search", "random", "--timeout", "60"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out, "aarch64-unknown-linux-gnu -mcpu=generic")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[3/3] mm: ")) << r.out;
  // Every candidate matched the default schedule's numbers under qemu.
  EXPECT_TRUE(Contains(r.out, "failed 0\n\nsummary")) << r.out;
  Result<tune::Database> db = tune::Database::Open(work + "/db", nullptr);
  ASSERT_TRUE(db.ok());
  Result<ir::IRModule> mod = text::ParseModuleFile(work + "/mm.relax");
  ASSERT_TRUE(mod.ok());
  codegen::CodegenOptions arm;
  arm.triple = "aarch64-linux-gnu";
  Result<std::string> target = codegen::ResolvedTargetName(arm);
  ASSERT_TRUE(target.ok());
  std::vector<tune::TuningRecord> recs = db->TopK(db->FindWorkload(mod->FindPrim("mm")), *target, 10);
  EXPECT_EQ(recs.size(), 4u) << *target;
  for (const auto& rec : recs) EXPECT_EQ(rec.state, "ok") << rec.message;

  // A candidate that is wrong through the same runner: the default's
  // numbers disturbed.
  tune::RunnerOptions o;
  o.codegen = arm;
  o.command = qemu + " -L /usr/aarch64-linux-gnu";
  o.measure_program = program;
  o.repeats = 1;
  o.timeout_s = 60;
  tune::Measurement ref = tune::Measure(LoweredMM(), o);
  ASSERT_TRUE(ref.ok()) << ref.message;
  ref.outputs[2][3] ^= 0x40;
  tune::Measurement wrong = tune::Measure(LoweredMM(), o, &ref);
  EXPECT_EQ(wrong.state, tune::MeasureState::kWrong) << wrong.message;
}

}  // namespace
}  // namespace kiln
