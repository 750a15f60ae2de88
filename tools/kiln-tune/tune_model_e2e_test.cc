// Whole-model tuning end to end (a few trials, no timing asserted): kiln-tune
// on a small fused model (two equal dense layers and one other: two tasks,
// the first of two calls) fills a database with rounds of trials, writes the
// summary and the plot; a rerun continues (resume); Ctrl-C (SIGINT to the
// kiln-tune process) leaves a database that loads whole; kiln-compile
// --tuning-db then builds both kernels of the shared task with its best
// record (the lowered TIR is the record's schedule).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/compile_tool.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/database.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/tasks.h"
#include "compiler/tune/tune_model.h"
#include "compiler/tune/tune_tool.h"

namespace kiln {
namespace {

const char kModel[] = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 64), dtype="float32"), w0: R.Tensor((64, 64), dtype="float32"), b0: R.Tensor((64,), dtype="float32"), w1: R.Tensor((64, 64), dtype="float32"), b1: R.Tensor((64,), dtype="float32"), w2: R.Tensor((64, 16), dtype="float32")) -> R.Tensor((8, 16), dtype="float32"):
        with R.dataflow():
            a0 = R.matmul(x, w0, out_dtype="void")
            a1 = R.add(a0, b0)
            a2 = R.nn.relu(a1)
            c0 = R.matmul(a2, w1, out_dtype="void")
            c1 = R.add(c0, b1)
            c2 = R.nn.relu(c1)
            gv = R.matmul(c2, w2, out_dtype="void")
            R.output(gv)
        return gv
)";

struct ToolRun {
  int rc;
  std::string out, err;
};

template <typename Main>
ToolRun Call(Main main, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  int rc = main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

std::string Work(const std::string& name) {
  std::string work = std::string(KILN_BINARY_DIR) + "/" + name;
  (void)system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  return work;
}

std::string Read(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

// Records of the database that are candidates (not the default point's).
int Candidates(const std::string& db) {
  std::ifstream in(db + "/records.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.find("the default schedule") == std::string::npos) ++n;
  return n;
}

std::vector<std::string> Tune(const std::string& module, const std::string& db, int trials) {
  return {"kiln-tune", module, "--db", db, "--trials", std::to_string(trials), "--batch", "2", "--repeats", "3",
          "--search", "random", "--space", "generic", "--seed", "3", "--timeout", "120", "--no-verify"};
}

TEST(TuneModelE2ETest, TuneResumeAndCompileWithTheDatabase) {
  std::string work = Work("tune_model_e2e_work");
  std::string module = work + "/mlp.relax", db = work + "/db", svg = work + "/plot.svg";
  std::ofstream(module) << kModel;

  std::vector<std::string> args = Tune(module, db, 4);
  args.push_back("--plot");
  args.push_back(svg);
  ToolRun run = Call(tune::TuneToolMain, args);
  ASSERT_EQ(run.rc, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("3 kernels, 3 calls, 2 distinct (tasks)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[round 1] 2/4 trials, "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[round 2] 4/4 trials, "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("summary (4 trials, 4 in this run"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("model (sum of calls x time)"), std::string::npos) << run.out;
  // The first round goes to a task (each gets one: two tasks, two rounds).
  EXPECT_EQ(Candidates(db), 4);
  std::string plot = Read(svg);
  EXPECT_EQ(plot.rfind("<svg", 0), 0u) << plot.substr(0, 100);
  EXPECT_NE(plot.find("estimated model time (ms)"), std::string::npos);
  EXPECT_NE(plot.find("<polyline"), std::string::npos);
  EXPECT_NE(plot.find("</svg>"), std::string::npos);

  // Resume: the database's 4 trials count, so --trials 4 measures nothing
  // more and --trials 6 measures 2.
  ToolRun again = Call(tune::TuneToolMain, Tune(module, db, 4));
  ASSERT_EQ(again.rc, 0) << again.err << again.out;
  EXPECT_NE(again.out.find("summary (4 trials, 0 in this run"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("trials in the database"), std::string::npos) << again.out;
  EXPECT_EQ(Candidates(db), 4);
  ToolRun more = Call(tune::TuneToolMain, Tune(module, db, 6));
  ASSERT_EQ(more.rc, 0) << more.err << more.out;
  EXPECT_NE(more.out.find("summary (6 trials, 2 in this run"), std::string::npos) << more.out;
  EXPECT_EQ(Candidates(db), 6);
  std::vector<Status> damage;
  ASSERT_TRUE(tune::Database::Open(db, &damage).ok());
  EXPECT_TRUE(damage.empty());

  // --tuning-db: make the shared task's best record beat the default by a
  // wide margin (timings are not what this test checks), then both of its
  // kernels are built with that record.
  Result<ir::IRModule> mod = driver::LoadModuleFile(module, {});
  ASSERT_TRUE(mod.ok());
  Result<ir::IRModule> kernels = driver::LowerModuleToKernels(*mod, {});
  ASSERT_TRUE(kernels.ok());
  std::vector<tune::TuneTask> tasks = tune::ExtractTasks(*kernels);
  ASSERT_EQ(tasks.size(), 2u);
  const tune::TuneTask& shared = tasks[0].calls == 2 ? tasks[0] : tasks[1];
  ASSERT_EQ(shared.kernels.size(), 2u);
  {
    std::string s, line;
    std::ifstream in(db + "/records.jsonl");
    while (std::getline(in, line)) {
      if (line.find("the default schedule") != std::string::npos) continue;
      size_t k = line.find("\"default_us\":");
      if (k != std::string::npos) line = line.substr(0, k) + "\"default_us\":1e30" + line.substr(line.find(',', k));
      s += line + "\n";
    }
    std::ofstream(db + "/records.jsonl") << s;
  }
  Result<tune::Database> patched = tune::Database::Open(db, nullptr);
  ASSERT_TRUE(patched.ok());
  Result<std::string> target = codegen::ResolvedTargetName({});
  ASSERT_TRUE(target.ok());
  std::vector<tune::TuningRecord> best = patched->TopK(shared.workload, *target, 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_NE(best[0].trace.ToString().find("sch.sample_perfect_tile"), std::string::npos) << best[0].trace.ToString();
  driver::CompileOptions with_db;
  with_db.tuning_db = db;
  with_db.num_threads_hint = 1;  // the records were measured with one thread
  Result<ir::IRModule> compiled = driver::LowerModule(*mod, with_db);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  Result<ir::IRModule> plain = driver::LowerModule(*mod, {});
  ASSERT_TRUE(plain.ok());
  for (const std::string& name : shared.kernels) {
    ir::PrimFunc kernel = kernels->FindPrim(name);
    Result<tir::Schedule> replayed = tir::Schedule::Replay(kernel, best[0].trace);
    ASSERT_TRUE(replayed.ok()) << name << ": " << replayed.status().ToString();
    auto expected = std::make_shared<ir::PrimFuncNode>(*tune::LowerScheduled(replayed->func()));
    expected->attrs = compiled->FindPrim(name)->attrs;
    std::string why;
    EXPECT_TRUE(ir::StructuralEqual(ir::PrimFunc(expected), compiled->FindPrim(name), &why)) << name << ": " << why;
    EXPECT_FALSE(ir::StructuralEqual(compiled->FindPrim(name), plain->FindPrim(name))) << name;
  }
  // The tiling shows in the lowered text (the generic space's tiles).
  ToolRun tir = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db, "--threads", "1", "--emit=tir", "-o",
                                               work + "/tuned.tir"});
  ASSERT_EQ(tir.rc, 0) << tir.err;
  std::string text = Read(work + "/tuned.tir");
  EXPECT_NE(text.find("_0_"), std::string::npos) << text;
  // And the whole pipeline builds the model.
  ToolRun vmfb = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db, "--threads", "1", "-o", work + "/mlp.vmfb"});
  EXPECT_EQ(vmfb.rc, 0) << vmfb.err;
  // A "drop" verdict on the shared task's best record (what the model check
  // writes when the record cost time in the model): the build leaves it out,
  // and both kernels get the default schedule; without verdicts it applies.
  {
    Result<tune::Database> d = tune::Database::Open(db, nullptr);
    ASSERT_TRUE(d.ok());
    tune::TuningVerdict v;
    v.workload = best[0].workload;
    v.target = best[0].target;
    v.threads = best[0].threads;
    v.record = tune::Database::RecordKey(best[0]);
    v.drop = true;
    v.reason = "test";
    ASSERT_TRUE(d->CommitVerdict(v).ok());
  }
  std::ostringstream notes;
  with_db.dump_stream = &notes;
  Result<ir::IRModule> dropped = driver::LowerModule(*mod, with_db);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_NE(notes.str().find("2 kernel(s) keep the default schedule: kiln-tune's model check"), std::string::npos)
      << notes.str();
  driver::CompileOptions ignoring = with_db;
  ignoring.tuning_verdicts = false;
  Result<ir::IRModule> ignored = driver::LowerModule(*mod, ignoring);
  ASSERT_TRUE(ignored.ok());
  for (const std::string& name : shared.kernels) {
    ir::PrimFunc def = plain->FindPrim(name), got = dropped->FindPrim(name);
    auto same_attrs = std::make_shared<ir::PrimFuncNode>(*def);
    same_attrs->attrs = got->attrs;
    std::string why;
    EXPECT_TRUE(ir::StructuralEqual(ir::PrimFunc(same_attrs), got, &why)) << name << ": " << why;
    EXPECT_TRUE(ir::StructuralEqual(ignored->FindPrim(name), compiled->FindPrim(name))) << name;
  }

  // The model check on request: both builds timed (two short rounds), every
  // applied record judged, the verdicts written (timings not asserted).
  // "keep" (a later line) reinstates the record above first, so both records
  // are candidates again.
  {
    Result<tune::Database> d = tune::Database::Open(db, nullptr);
    ASSERT_TRUE(d.ok());
    tune::TuningVerdict v;
    v.workload = best[0].workload;
    v.target = best[0].target;
    v.threads = best[0].threads;
    v.record = tune::Database::RecordKey(best[0]);
    v.drop = false;
    ASSERT_TRUE(d->CommitVerdict(v).ok());
  }
  ToolRun check = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--verify-only", "--verify-rounds", "2",
                                            "--verify-time", "0.02", "--bench-program", KILN_BENCH_PROGRAM});
  ASSERT_EQ(check.rc, 0) << check.err << check.out;
  if (getenv("KILN_TEST_VERBOSE")) std::cerr << check.out;
  EXPECT_NE(check.out.find("model check: "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("2 of 2 tasks have a record that beat the default"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("tuned/default "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("model time (CPU per call): default "), std::string::npos) << check.out;
  size_t at = check.out.find("records: ");
  ASSERT_NE(at, std::string::npos) << check.out;
  int kept = -1, dropped_n = -1;
  ASSERT_EQ(sscanf(check.out.c_str() + at, "records: %d kept, %d dropped", &kept, &dropped_n), 2) << check.out;
  EXPECT_EQ(kept + dropped_n, 2) << check.out;
  Result<tune::Database> judged = tune::Database::Open(db, &damage);
  ASSERT_TRUE(judged.ok());
  EXPECT_TRUE(damage.empty());
  for (const tune::TuneTask& t : tasks) {
    std::vector<tune::TuningRecord> b = judged->TopK(t.workload, *target, 1, 1);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_NE(judged->FindVerdict(b[0]), nullptr) << t.name;
  }
}

// Without --no-verify the model check follows the trials (one short round
// here; whether a record beat its default in two trials is chance, so either
// outcome of the check is accepted); its flags' errors.
TEST(TuneModelE2ETest, TheModelCheckFollowsTheTrials) {
  std::string work = Work("tune_model_check_work");
  std::string module = work + "/mlp.relax", db = work + "/db";
  std::ofstream(module) << kModel;
  std::vector<std::string> args = Tune(module, db, 2);
  args.pop_back();  // --no-verify
  for (const char* a : {"--verify-rounds", "1", "--verify-time", "0.02", "--bench-program", KILN_BENCH_PROGRAM})
    args.push_back(a);
  ToolRun run = Call(tune::TuneToolMain, args);
  ASSERT_EQ(run.rc, 0) << run.err << run.out;
  size_t summary = run.out.find("summary (2 trials"), check = run.out.find("model check: ");
  ASSERT_NE(check, std::string::npos) << run.out;
  EXPECT_LT(summary, check) << run.out;
  EXPECT_TRUE(run.out.find("nothing to check", check) != std::string::npos ||
              run.out.find("records: ", check) != std::string::npos)
      << run.out;

  // The check failing after the trials says the records are unjudged.
  args = Tune(module, db, 2);
  args.pop_back();
  args.push_back("--bench-program=" + work + "/no-such-kiln-bench");
  ToolRun failed = Call(tune::TuneToolMain, args);
  EXPECT_EQ(failed.rc, 1);
  EXPECT_NE(failed.err.find("the model check failed, so the records are not judged"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("--db " + db + " --verify-only"), std::string::npos) << failed.err;

  ToolRun rounds = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--verify-only", "--verify-rounds", "0"});
  EXPECT_EQ(rounds.rc, 2);
  EXPECT_NE(rounds.err.find("--verify-rounds must be an integer from 1 to 1000, got '0'"), std::string::npos)
      << rounds.err;
  ToolRun time = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--verify-only", "--verify-time", "-1"});
  EXPECT_EQ(time.rc, 2);
  EXPECT_NE(time.err.find("--verify-time must be a positive number of seconds, got '-1'"), std::string::npos)
      << time.err;
  ToolRun cross = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--verify-only", "--target",
                                            "aarch64-linux-gnu"});
  EXPECT_EQ(cross.rc, 2);
  EXPECT_NE(cross.err.find("--verify-only times the model on this machine; drop --runner and --target"),
            std::string::npos)
      << cross.err;
  ToolRun no_bench = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--verify-only", "--bench-program",
                                               work + "/no-such-kiln-bench"});
  EXPECT_EQ(no_bench.rc, 1);
  EXPECT_NE(no_bench.err.find("the model check needs kiln-bench (" + work +
                              "/no-such-kiln-bench is not an executable file)"),
            std::string::npos)
      << no_bench.err;
  ToolRun one = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--function", "main", "--verify-only"});
  EXPECT_EQ(one.rc, 2);
  EXPECT_NE(one.err.find("are for a whole model: drop --function"), std::string::npos) << one.err;
}

TEST(TuneModelE2ETest, SigintLeavesAWholeDatabase) {
  std::string work = Work("tune_model_sigint_work");
  std::string module = work + "/mlp.relax", db = work + "/db";
  std::ofstream(module) << kModel;
  std::string tool = std::string(KILN_BINARY_DIR) + "/kiln-tune";
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execl(tool.c_str(), tool.c_str(), module.c_str(), "--db", db.c_str(), "--trials", "10000", "--batch", "1",
          "--repeats", "3", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // Interrupt after the first round.
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool sent = false;
  char buf[4096];
  while (true) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 1000) > 0) {
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    if (!sent && text.find("[round 1]") != std::string::npos) {
      kill(pid, SIGINT);
      sent = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      break;
    }
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(sent) << text;
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find("interrupted: the database holds every trial measured so far"), std::string::npos) << text;
  EXPECT_NE(text.find("summary ("), std::string::npos) << text;
  std::vector<Status> damage;
  Result<tune::Database> opened = tune::Database::Open(db, &damage);
  ASSERT_TRUE(opened.ok());
  EXPECT_TRUE(damage.empty()) << damage[0].ToString();
  // Every line whole: at least the first round's record and both tasks'
  // default points.
  EXPECT_GE(Candidates(db), 1);
  EXPECT_GE(static_cast<int>(opened->num_records()) - Candidates(db), 2);
  // A rerun continues from there.
  ToolRun rerun = Call(tune::TuneToolMain, Tune(module, db, Candidates(db) + 1));
  EXPECT_EQ(rerun.rc, 0) << rerun.err << rerun.out;
  EXPECT_NE(rerun.out.find(" 1 in this run"), std::string::npos) << rerun.out;
}

TEST(TuneModelE2ETest, SkipsBudgetAndErrors) {
  std::string work = Work("tune_model_errors_work");
  std::string module = work + "/mlp.relax", db = work + "/db";
  std::ofstream(module) << kModel;
  // A symbolic batch: every kernel is skipped, with why.
  std::string symbolic = kModel;
  symbolic.replace(symbolic.find("x: R.Tensor((8, 64)"), 19, "x: R.Tensor((\"n\", 64)");
  symbolic.replace(symbolic.find("R.Tensor((8, 16)"), 16, "R.Tensor((\"n\", 16)");
  std::ofstream(work + "/sym.relax") << symbolic;
  ToolRun sym = Call(tune::TuneToolMain, Tune(work + "/sym.relax", db, 4));
  EXPECT_EQ(sym.rc, 0) << sym.err;
  EXPECT_NE(sym.out.find("skip "), std::string::npos) << sym.out;
  EXPECT_NE(sym.out.find("has a symbolic shape (the runner needs static shapes; fix the dimension with --dim)"),
            std::string::npos)
      << sym.out;
  EXPECT_NE(sym.out.find("summary (0 trials"), std::string::npos) << sym.out;

  // The time budget is checked between rounds: spent before the first.
  std::vector<std::string> args = Tune(module, db, 100);
  args.push_back("--time-budget");
  args.push_back("0.001s");
  ToolRun budget = Call(tune::TuneToolMain, args);
  EXPECT_EQ(budget.rc, 0) << budget.err;
  EXPECT_NE(budget.out.find("the time budget is spent"), std::string::npos) << budget.out;
  EXPECT_NE(budget.out.find("summary (0 trials"), std::string::npos) << budget.out;

  // --tasks selects by kernel name; an unknown name is an error naming the tasks.
  args = Tune(module, db, 2);
  args.push_back("--tasks");
  args.push_back("nope");
  ToolRun unknown = Call(tune::TuneToolMain, args);
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_NE(unknown.err.find("--tasks: the model has no kernel named nope (tasks: "), std::string::npos)
      << unknown.err;
  args.back() = "matmul2";
  ToolRun one = Call(tune::TuneToolMain, args);
  EXPECT_EQ(one.rc, 0) << one.err;
  EXPECT_NE(one.out.find("[round 1] 2/2 trials, 0 failed  matmul2 (x1)"), std::string::npos) << one.out;

  ToolRun bad_budget = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--time-budget", "20x"});
  EXPECT_EQ(bad_budget.rc, 2);
  EXPECT_NE(bad_budget.err.find("--time-budget must be a duration like 20m, 90s or 1h30m, got '20x'"),
            std::string::npos)
      << bad_budget.err;
  ToolRun bad_dim = Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--dim", "batch"});
  EXPECT_EQ(bad_dim.rc, 2);
  EXPECT_NE(bad_dim.err.find("--dim: expected NAME=N"), std::string::npos) << bad_dim.err;
  ToolRun mixed =
      Call(tune::TuneToolMain, {"kiln-tune", module, "--db", db, "--function", "mm", "--plot", work + "/p.svg"});
  EXPECT_EQ(mixed.rc, 2);
  EXPECT_NE(mixed.err.find("are for a whole model: drop --function"), std::string::npos) << mixed.err;
}

TEST(TuneModelE2ETest, Durations) {
  double s = 0;
  EXPECT_TRUE(tune::ParseDuration("20m", &s));
  EXPECT_DOUBLE_EQ(s, 1200);
  EXPECT_TRUE(tune::ParseDuration("1h30m", &s));
  EXPECT_DOUBLE_EQ(s, 5400);
  EXPECT_TRUE(tune::ParseDuration("45", &s));
  EXPECT_DOUBLE_EQ(s, 45);
  EXPECT_TRUE(tune::ParseDuration("0.5s", &s));
  EXPECT_DOUBLE_EQ(s, 0.5);
  EXPECT_FALSE(tune::ParseDuration("", &s));
  EXPECT_FALSE(tune::ParseDuration("1h30", &s));
  EXPECT_FALSE(tune::ParseDuration("m", &s));
  EXPECT_FALSE(tune::ParseDuration("0s", &s));
}

}  // namespace
}  // namespace kiln
