// kiln-tune --show: what it says of applied, dropped and losing records,
// knob traces as "knob=value", other traces in full, and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/database.h"
#include "compiler/tune/database_show.h"
#include "compiler/tune/database_test_util.h"
#include "compiler/tune/space.h"
#include "compiler/tune/tune_tool.h"

namespace kiln {
namespace tune {
namespace {

using tir::testing::ParseFunc;

using testing::MM;

std::string TempDir() { return testing::TempDir("kiln-db-show-test"); }

// A default-space trace: one categorical choice per knob, then its annotation.
tir::Trace KnobTrace(const std::vector<std::pair<std::string, int64_t>>& knobs) {
  tir::Trace t;
  int64_t id = 0;
  for (const auto& [name, value] : knobs) {
    tir::Instruction s;
    s.name = "sample_categorical";
    s.inputs = {tir::TraceArg::Ints({0, value}), tir::TraceArg::Floats({1.0, 1.0})};
    s.keywords = {"candidates", "probs"};
    s.decision = {1};
    s.outputs = {id};
    s.output_kinds = {tir::Instruction::Output::kExpr};
    t.Append(s);
    tir::Instruction a;
    a.name = "annotate";
    a.inputs = {tir::TraceArg::Str("kiln.knob." + name), tir::TraceArg::Exprs({tir::ExprRV(id)})};
    t.Append(a);
    ++id;
  }
  return t;
}

TuningRecord Rec(const std::string& w, tir::Trace trace, double us, double default_us, const char* state = "ok") {
  TuningRecord r;
  r.workload = w;
  r.target = "test-target";
  r.trace = std::move(trace);
  r.state = state;
  r.median_us = us;
  r.default_us = default_us;
  r.times_us = {us};
  return r;
}

// Three workloads: one whose best record applies (a knob trace, kept by a
// verdict), one whose best was dropped, one whose records all lost.
std::string MakeDatabase() {
  std::string dir = TempDir();
  Result<Database> db = Database::Open(dir, nullptr);
  KILN_CHECK(db.ok(), "open");
  ir::PrimFunc f32 = ParseFunc(MM("mm32", 32), "mm32"), f16 = ParseFunc(MM("mm16", 16), "mm16"),
               f8 = ParseFunc(MM("mm8", 8), "mm8");
  std::string a = *db->CommitWorkload(f32), b = *db->CommitWorkload(f16), c = *db->CommitWorkload(f8);
  TuningRecord kept = Rec(a, KnobTrace({{"matmul.nr", 32}, {"matmul.mr", 0}, {"threads", 2}}), 60, 100);
  KILN_CHECK(db->CommitRecord(kept).ok(), "commit");
  KILN_CHECK(db->CommitRecord(Rec(a, KnobTrace({{"matmul.nr", 16}}), 1, 100, "crashed")).ok(), "commit");
  TuningVerdict keep;
  keep.workload = a, keep.target = "test-target", keep.record = Database::RecordKey(kept);
  keep.default_us = 98, keep.tuned_us = 61, keep.reason = "its kernels were faster in the model";
  KILN_CHECK(db->CommitVerdict(keep).ok(), "verdict");
  Result<tir::Schedule> generic = SampleGenericSpace(f16, 3);
  KILN_CHECK(generic.ok(), "sample");
  TuningRecord dropped = Rec(b, generic->trace(), 40, 50);
  KILN_CHECK(db->CommitRecord(dropped).ok(), "commit");
  TuningVerdict drop = keep;
  drop.workload = b, drop.record = Database::RecordKey(dropped), drop.drop = true;
  drop.default_us = 50, drop.tuned_us = 57, drop.reason = "its kernels were slower in the model";
  KILN_CHECK(db->CommitVerdict(drop).ok(), "verdict");
  KILN_CHECK(db->CommitRecord(Rec(c, KnobTrace({{"matmul.nr", 48}}), 12, 10)).ok(), "commit");
  return dir;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DatabaseShowTest, SaysWhatABuildApplies) {
  std::string dir = MakeDatabase();
  Result<Database> db = Database::Open(dir, nullptr);
  ASSERT_TRUE(db.ok());
  std::ostringstream out;
  ShowDatabase(*db, dir, out);
  std::string s = out.str();
  EXPECT_TRUE(Has(s, "3 workload(s), 4 record(s), 1 failed")) << s;
  EXPECT_TRUE(Has(s, "mm32 (workload " + Database::WorkloadHash(ParseFunc(MM("mm32", 32), "mm32")) + "): 2 record(s)"))
      << s;
  EXPECT_TRUE(Has(s, "test-target, 1 thread, warm: 2 record(s), 1 failed; default 100.0 us, best 60.0 us (1.67x): "
                     "kiln-compile --tuning-db applies it (model check: kept, its kernels 98.0 us -> 61.0 us per "
                     "model call)"))
      << s;
  // The knobs left to the rule (0) are not listed; a knob trace is not
  // printed in full.
  EXPECT_TRUE(Has(s, "    knobs: matmul.nr=32, threads=2\n")) << s;
  EXPECT_FALSE(Has(s, "sample_categorical(candidates=[0, 32]")) << s;
  EXPECT_TRUE(Has(s, "best 40.0 us (1.25x): dropped by the model check (its kernels were slower in the model; its "
                     "kernels 50.0 us -> 57.0 us per model call), builds keep the default"))
      << s;
  // A generic-space trace (no knobs) is printed in full.
  EXPECT_TRUE(Has(s, "builds keep the default\n    b0 = sch.get_block(\"C\")\n")) << s;
  EXPECT_TRUE(Has(s, "default 10.0 us, best 12.0 us: no record beat the default, builds keep it")) << s;
  EXPECT_TRUE(Has(s, "1 record(s) applied by kiln-compile --tuning-db " + dir)) << s;
  EXPECT_TRUE(Has(s, "1 dropped by the model check")) << s;
  std::filesystem::remove_all(dir);
}

int Tool(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "kiln-tune");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream o, e;
  int rc = TuneToolMain(static_cast<int>(argv.size()), argv.data(), o, e);
  *out = o.str(), *err = e.str();
  return rc;
}

TEST(DatabaseShowTest, ToolShowsAndRefusesWhatIsNotADatabase) {
  std::string dir = MakeDatabase(), out, err;
  EXPECT_EQ(Tool({"--show", dir}, &out, &err), 0) << err;
  EXPECT_TRUE(Has(out, "knobs: matmul.nr=32, threads=2")) << out;
  EXPECT_EQ(Tool({"--show=" + dir}, &out, &err), 0) << err;
  std::string empty = TempDir();
  EXPECT_EQ(Tool({"--show", empty}, &out, &err), 2);
  EXPECT_TRUE(Has(err, "kiln-tune: --show: " + empty + " is not a tuning database (no " + empty + "/workloads.jsonl)"))
      << err;
  EXPECT_EQ(Tool({"--show", empty + "/absent"}, &out, &err), 2);
  EXPECT_TRUE(Has(err, "is not a tuning database")) << err;
  EXPECT_EQ(Tool({"--show", dir, "--trials", "4"}, &out, &err), 2);
  EXPECT_TRUE(Has(err, "kiln-tune: --show DIR takes no other arguments")) << err;
  EXPECT_EQ(Tool({"--show=" + dir, "model.onnx"}, &out, &err), 2);
  EXPECT_TRUE(Has(err, "kiln-tune: --show DIR takes no other arguments")) << err;
  EXPECT_EQ(Tool({"--show"}, &out, &err), 2);
  EXPECT_TRUE(Has(err, "kiln-tune: --show needs a database directory")) << err;
  // A damaged line is reported; the rest shows.
  {
    std::ofstream f(dir + "/records.jsonl", std::ios::app);
    f << "{not json\n";
  }
  EXPECT_EQ(Tool({"--show", dir}, &out, &err), 0);
  EXPECT_TRUE(Has(err, "records.jsonl:")) << err;
  EXPECT_TRUE(Has(out, "3 workload(s), 4 record(s)")) << out;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace tune
}  // namespace kiln
