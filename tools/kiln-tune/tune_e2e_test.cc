// A small tuning run end to end: kiln-tune on the MLC course's mm (a few
// trials) fills a database; kiln-compile --tuning-db then builds the module
// with the best record (the lowered TIR shows the record's tiles), while a
// function without a record keeps the default schedule. No timing asserted.
// (add1 reads the input, not mm's result, so fusion leaves mm a kernel of
// its own: fused into an epilogue it would be another workload.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/compile_tool.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/database.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/space.h"
#include "compiler/tune/tune.h"
#include "compiler/tune/tune_tool.h"

namespace kiln {
namespace {

const char kModule[] = R"(@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm", "tir.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def add1(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @R.function
    def main(a: R.Tensor((128, 128), dtype="float32"), b: R.Tensor((128, 128), dtype="float32")) -> R.Tuple(R.Tensor((128, 128), dtype="float32"), R.Tensor((128, 128), dtype="float32")):
        cls = Module
        with R.dataflow():
            c = R.call_tir(cls.mm, (a, b), out_sinfo=R.Tensor((128, 128), dtype="float32"))
            d = R.call_tir(cls.add1, (a,), out_sinfo=R.Tensor((128, 128), dtype="float32"))
            R.output(c, d)
        return (c, d)
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

TEST(TuneE2ETest, TuneThenCompileWithTheDatabase) {
  std::string work = std::string(KILN_BINARY_DIR) + "/tune_e2e_work";
  std::string db = work + "/db";
  (void)system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  std::string module = work + "/mm.relax";
  std::ofstream(module) << kModule;

  // Random points of the generic space only, so the record applied below
  // shows block tiling.
  // A generous timeout: the sanitizer builds under CI's parallel tests have
  // taken over the default 10 s to measure the default schedule.
  ToolRun tune_run = Call(tune::TuneToolMain, {"kiln-tune", module, "--function", "mm", "--db", db, "--trials", "3",
                                       "--repeats", "3", "--seed", "5", "--search", "random", "--space", "generic",
                                       "--timeout", "120"});
  ASSERT_EQ(tune_run.rc, 0) << tune_run.err << tune_run.out;
  EXPECT_NE(tune_run.out.find("[3/3] mm: "), std::string::npos) << tune_run.out;
  EXPECT_NE(tune_run.out.find("summary"), std::string::npos) << tune_run.out;
  EXPECT_NE(tune_run.out.find("random search"), std::string::npos) << tune_run.out;

  std::vector<Status> damage;
  Result<tune::Database> opened = tune::Database::Open(db, &damage);
  ASSERT_TRUE(opened.ok());
  EXPECT_TRUE(damage.empty());
  // Three candidates and the default point's record.
  EXPECT_EQ(opened->num_records(), 4u);

  // Pretend the best record beat the default by a wide margin, whatever this
  // busy machine measured, so that the compiler applies it: rewrite the
  // records with default_us raised, without the default point's record
  // (timings are not what this test checks).
  {
    std::ifstream in(db + "/records.jsonl");
    std::string s, line, patched;
    int default_points = 0;
    while (std::getline(in, line)) {
      if (line.find("the default schedule") != std::string::npos) {
        ++default_points;
        continue;
      }
      s += line + "\n";
    }
    EXPECT_EQ(default_points, 1);
    size_t pos = 0;
    while (true) {
      size_t k = s.find("\"default_us\":", pos);
      if (k == std::string::npos) break;
      size_t end = s.find(',', k);
      patched += s.substr(pos, k - pos) + "\"default_us\":1e30";
      pos = end;
    }
    patched += s.substr(pos);
    std::ofstream(db + "/records.jsonl") << patched;
  }
  Result<tune::Database> patched = tune::Database::Open(db, nullptr);
  ASSERT_TRUE(patched.ok());
  Result<ir::IRModule> mod = driver::LoadModuleFile(module, {});
  ASSERT_TRUE(mod.ok());
  std::string w = patched->FindWorkload(mod->FindPrim("mm"));
  ASSERT_FALSE(w.empty());
  Result<std::string> target = codegen::ResolvedTargetName({});
  ASSERT_TRUE(target.ok());
  std::vector<tune::TuningRecord> best = patched->TopK(w, *target, 1);
  ASSERT_EQ(best.size(), 1u) << tune_run.out;
  EXPECT_NE(best[0].trace.ToString().find("sch.sample_perfect_tile"), std::string::npos) << best[0].trace.ToString();
  std::string tir = work + "/mm.tir";
  ToolRun tuned = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db, "--threads", "1", "--emit=tir", "-o", tir});
  ASSERT_EQ(tuned.rc, 0) << tuned.err;
  std::stringstream lowered;
  lowered << std::ifstream(tir).rdbuf();
  std::string text = lowered.str();
  // The lowered mm is the best record's schedule: replayed here by hand, it
  // gives the same function (attributes aside, which fusion annotates).
  driver::CompileOptions with_db;
  with_db.tuning_db = db;
  with_db.num_threads_hint = 1;  // the records were measured with one thread
  Result<ir::IRModule> compiled = driver::LowerModule(*mod, with_db);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  Result<tir::Schedule> replayed = tir::Schedule::Replay(mod->FindPrim("mm"), best[0].trace);
  ASSERT_TRUE(replayed.ok());
  auto expected = std::make_shared<ir::PrimFuncNode>(*tune::LowerScheduled(replayed->func()));
  expected->attrs = compiled->FindPrim("mm")->attrs;
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(ir::PrimFunc(expected), compiled->FindPrim("mm"), &why)) << why << "\n" << text;
  // ... and the text shows the tiling: the outer spatial tiles fused and parallel.
  EXPECT_NE(text.find("for i_0_j_0_fused in T.parallel("), std::string::npos) << text;
  // The untuned add1 keeps the default schedule (no split loops).
  size_t add1 = text.find("def add1");
  ASSERT_NE(add1, std::string::npos);
  EXPECT_EQ(text.find("i_0", add1), std::string::npos) << text.substr(add1);

  // Without the database: the default schedule, no split loops.
  ToolRun plain = Call(driver::CompileToolMain, {"kiln-compile", module, "--emit=tir", "-o", work + "/plain.tir"});
  ASSERT_EQ(plain.rc, 0) << plain.err;
  std::stringstream p;
  p << std::ifstream(work + "/plain.tir").rdbuf();
  EXPECT_EQ(p.str().find("i_1"), std::string::npos);

  // And the whole pipeline builds it into a .vmfb.
  ToolRun vmfb = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db, "--threads", "1", "-o", work + "/mm.vmfb"});
  EXPECT_EQ(vmfb.rc, 0) << vmfb.err;

  // A damaged database line is reported by file and line; the rest applies.
  std::ofstream(db + "/records.jsonl", std::ios::app) << "{not json\n";
  ToolRun damaged = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db, "--threads", "1", "--emit=tir", "-o", tir});
  EXPECT_EQ(damaged.rc, 0) << damaged.err;
  EXPECT_NE(damaged.err.find("records.jsonl:4: "), std::string::npos) << damaged.err;  // 3 kept + the damage

  // A database path that is a file is an error, not an empty database.
  ToolRun not_dir = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", module, "--emit=tir"});
  EXPECT_NE(not_dir.rc, 0);
  EXPECT_NE(not_dir.err.find("is not a directory"), std::string::npos) << not_dir.err;
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The evolutionary search end to end, small: two rounds of two candidates
// from both spaces; the second round's picks come from the cost model fitted
// on the first, which is saved beside the database. Invariants only (no
// timing): the best never exceeds the default and never rises.
TEST(TuneE2ETest, EvolutionarySearchWithCostModel) {
  std::string work = std::string(KILN_BINARY_DIR) + "/tune_evo_work";
  std::string db_dir = work + "/db";
  (void)system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  std::string module = work + "/mm.relax";
  std::ofstream(module) << kModule;
  ToolRun run = Call(tune::TuneToolMain, {"kiln-tune", module, "--function", "mm", "--db", db_dir, "--trials", "4",
                                         "--batch", "2", "--repeats", "3", "--seed", "3", "--timeout", "120"});
  ASSERT_EQ(run.rc, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("evolutionary search"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(model)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[4/4] mm: "), std::string::npos) << run.out;
  EXPECT_TRUE(std::ifstream(db_dir + "/cost_model.json").good());

  // A second run on the same database loads the model and seeds its
  // population from the records; through the API for the summary.
  Result<ir::IRModule> mod = driver::LoadModuleFile(module, {});
  ASSERT_TRUE(mod.ok());
  Result<tune::Database> db = tune::Database::Open(db_dir, nullptr);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->num_records(), 5u);  // 4 candidates, the default point
  tune::TuneOptions options;
  options.trials = 3;
  options.batch = 3;
  options.seed = 11;
  options.runner.repeats = 3;
  options.cost_model_path = db_dir + "/cost_model.json";
  std::ostringstream progress;
  Result<tune::TuneSummary> sum = tune::TuneFunction(mod->FindPrim("mm"), &*db, options, progress);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_NE(progress.str().find("cost model loaded"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("(model)"), std::string::npos) << progress.str();
  EXPECT_EQ(sum->trials, 3);
  ASSERT_EQ(sum->best_after.size(), 3u);
  EXPECT_LE(sum->best_us, sum->default_us);
  for (size_t i = 0; i < sum->best_after.size(); ++i) {
    EXPECT_LE(sum->best_after[i], sum->default_us);
    if (i > 0) {
      EXPECT_LE(sum->best_after[i], sum->best_after[i - 1]);
    }
  }
  EXPECT_EQ(db->num_records(), 9u);
  // The database's best record is never slower than the default measured.
  Result<std::string> target = codegen::ResolvedTargetName({});
  ASSERT_TRUE(target.ok());
  std::vector<tune::TuningRecord> top = db->TopK(sum->workload, *target, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_LE(top[0].median_us, sum->default_us);

  // A record of the knob space applies through kiln-compile: a 4 x 16
  // register tile recorded as twice as fast as the default.
  Result<tir::Schedule> knob = tir::Schedule::Create(mod->FindPrim("mm"), 1);
  ASSERT_TRUE(knob.ok());
  ASSERT_TRUE(tune::ApplyDefaultSpace(&*knob, tune::DefaultSpaceKnobs(mod->FindPrim("mm"), 1), 1).ok());
  Result<tir::Trace> t = tune::DefaultPoint(knob->trace());
  ASSERT_TRUE(t.ok());
  for (size_t i = 0; i + 1 < t->instructions().size(); ++i) {
    const auto& next = t->instructions()[i + 1];
    if (next.name != "annotate") continue;
    if (next.inputs[0].s == "kiln.knob.matmul.mr") t->SetDecision(i, {4});  // candidates 0..8: 4
    if (next.inputs[0].s == "kiln.knob.matmul.nr") t->SetDecision(i, {1});  // 0, 16, ...: 16
  }
  tune::TuningRecord rec;
  rec.workload = sum->workload;
  rec.target = *target;
  rec.trace = *t;
  rec.median_us = sum->default_us / 2;
  rec.default_us = sum->default_us;
  ASSERT_TRUE(db->CommitRecord(rec).ok());
  std::string tir_path = work + "/knob.tir";
  ToolRun built = Call(driver::CompileToolMain,
                       {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "1", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(built.rc, 0) << built.err;
  std::stringstream text;
  text << std::ifstream(tir_path).rdbuf();
  EXPECT_NE(text.str().find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text.str();
  // Measured with one thread (kiln-tune's default): a build planned for two
  // threads takes none of the records and keeps its default schedule.
  ToolRun two = Call(driver::CompileToolMain,
                     {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "2", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(two.rc, 0) << two.err;
  std::stringstream text2;
  text2 << std::ifstream(tir_path).rdbuf();
  EXPECT_EQ(text2.str().find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text2.str();
  EXPECT_NE(two.err.find("note: --tuning-db: 1 kernel(s) have records measured with 1 thread(s) but this build plans "
                         "for 2 (--threads 2); build with --threads 1 to use them"),
            std::string::npos)
      << two.err;
  // The same record stored as measured with two threads applies to it.
  rec.threads = 2;
  ASSERT_TRUE(db->CommitRecord(rec).ok());
  two = Call(driver::CompileToolMain,
             {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "2", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(two.rc, 0) << two.err;
  std::stringstream text3;
  text3 << std::ifstream(tir_path).rdbuf();
  EXPECT_NE(text3.str().find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text3.str();

  // Records say how they were measured: a cold-cache record (kiln-tune
  // --cold-cache) of a 4 x 32 tile at three threads applies only to a build
  // with --tuning-cache=cold; a warm build keeps the default and says why.
  rec.threads = 3;
  rec.cold_cache = true;
  rec.flush_bytes = 64 << 20;
  for (size_t i = 0; i + 1 < t->instructions().size(); ++i)
    if (t->instructions()[i + 1].name == "annotate" && t->instructions()[i + 1].inputs[0].s == "kiln.knob.matmul.nr")
      t->SetDecision(i, {2});  // 32
  rec.trace = *t;
  ASSERT_TRUE(db->CommitRecord(rec).ok());
  ToolRun warm = Call(driver::CompileToolMain,
                      {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "3", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(warm.rc, 0) << warm.err;
  std::stringstream text4;
  text4 << std::ifstream(tir_path).rdbuf();
  EXPECT_EQ(text4.str().find("acc = T.decl_buffer((4, 32)"), std::string::npos) << text4.str();
  EXPECT_NE(warm.err.find("note: --tuning-db: 1 kernel(s) have records measured with a cold cache (kiln-tune "
                          "--cold-cache) only; build with --tuning-cache=cold to use them"),
            std::string::npos)
      << warm.err;
  ToolRun cold = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "3",
                                                "--tuning-cache=cold", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(cold.rc, 0) << cold.err;
  EXPECT_EQ(cold.err.find("note:"), std::string::npos) << cold.err;
  std::stringstream text5;
  text5 << std::ifstream(tir_path).rdbuf();
  EXPECT_NE(text5.str().find("acc = T.decl_buffer((4, 32)"), std::string::npos) << text5.str();
  // And the reverse: a cold build of a kernel with only warm records.
  ToolRun cold1 = Call(driver::CompileToolMain, {"kiln-compile", module, "--tuning-db", db_dir, "--threads", "1",
                                                 "--tuning-cache", "cold", "--emit=tir", "-o", tir_path});
  ASSERT_EQ(cold1.rc, 0) << cold1.err;
  EXPECT_NE(cold1.err.find("note: --tuning-db: 1 kernel(s) have records measured warm only; build with "
                           "--tuning-cache=warm to use them"),
            std::string::npos)
      << cold1.err;
}

TEST(TuneToolTest, UsageAndInputErrors) {
  std::string work = std::string(KILN_BINARY_DIR) + "/tune_errors_work";
  (void)system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  std::string module = work + "/m.relax";
  std::ofstream(module) << R"(@I.ir_module
class Module:
    @T.prim_func
    def relu(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n,), "float32")
        Y = T.match_buffer(y, (n,), "float32")
        for i in range(n):
            with T.block("Y"):
                vi = T.axis.spatial(n, i)
                Y[vi] = T.max(X[vi], T.float32(0))
)";
  struct Case {
    std::vector<std::string> args;
    int rc;
    const char* message;
  };
  std::string db = work + "/db";
  const Case cases[] = {
      {{module, "--function", "relu"}, 2, "MODULE and --db are required"},
      {{module, "--function", "relu", "--db", db, "--speed"}, 2, "unknown flag --speed"},
      {{module, "--function", "relu", "--db", db, "--trials", "x"}, 2, "--trials must be an integer >= 0, got 'x'"},
      {{module, "--function", "relu", "--db", db, "--threads", "0"}, 2, "--threads must be an integer >= 1"},
      {{module, "--function", "relu", "--db", db, "--timeout", "-1"}, 2, "--timeout must be a positive number"},
      {{module, "--function", "relu", "--db"}, 2, "--db needs a value"},
      {{module, "--function", "relu", "--db", db, "--search", "grid"}, 2, "--search must be evolutionary or random, got 'grid'"},
      {{module, "--function", "relu", "--db", db, "--space", "mine"}, 2, "--space must be all, default or generic, got 'mine'"},
      {{module, "--function", "relu", "--db", db, "--batch", "0"}, 2, "--batch must be an integer >= 1"},
      {{module, module, "--function", "relu", "--db", db}, 2, "more than one input"},
      {{work + "/missing.relax", "--function", "relu", "--db", db}, 1, "missing.relax"},
      {{module, "--function", "nope", "--db", db}, 1, "has no PrimFunc named nope"},
      {{module, "--function", "relu", "--db", db}, 1, "the default schedule cannot be measured (build failed): "
                                                       "parameter x has a symbolic shape"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"kiln-tune"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ToolRun r = Call(tune::TuneToolMain, args);
    EXPECT_EQ(r.rc, c.rc) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // Candidates run in kiln-measure-host; without it kiln-tune says so first.
  setenv("KILN_MEASURE_HOST", (work + "/no-such-program").c_str(), 1);
  ToolRun no_host = Call(tune::TuneToolMain, {"kiln-tune", module, "--function", "relu", "--db", db});
  unsetenv("KILN_MEASURE_HOST");
  EXPECT_EQ(no_host.rc, 2) << no_host.err;
  EXPECT_NE(no_host.err.find("the measuring program " + work +
                             "/no-such-program is not an executable file (kiln-measure-host is built beside"),
            std::string::npos)
      << no_host.err;
  ToolRun help = Call(tune::TuneToolMain, {"kiln-tune", "--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("usage: kiln-tune"), std::string::npos);
}

}  // namespace
}  // namespace kiln
