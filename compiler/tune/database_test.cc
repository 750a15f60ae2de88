// The tuning database: round trip through the directory, top_k, workloads
// by structural hash (another name is the same workload, other extents are
// not), and damaged lines reported by file and line while the rest loads.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/database.h"
#include "compiler/tune/database_test_util.h"
#include "compiler/tune/json.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {
namespace {

using tir::testing::ParseFunc;

using testing::MM;

using testing::TempDir;

TuningRecord Record(const std::string& w, const ir::PrimFunc& f, uint64_t seed, double us, const char* state = "ok") {
  Result<tir::Schedule> s = SampleGenericSpace(f, seed);
  KILN_CHECK(s.ok(), "%s", s.status().ToString().c_str());
  TuningRecord r;
  r.workload = w;
  r.target = "test-target";
  r.trace = s->trace();
  r.state = state;
  r.median_us = us;
  r.default_us = 100;
  r.times_us = {us, us + 1, us - 1};
  return r;
}

TEST(DatabaseTest, RoundTripAndTopK) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<std::string> w = db->CommitWorkload(f);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(*w, Database::WorkloadHash(f));
    ASSERT_TRUE(db->CommitRecord(Record(*w, f, 1, 30)).ok());
    ASSERT_TRUE(db->CommitRecord(Record(*w, f, 2, 10)).ok());
    ASSERT_TRUE(db->CommitRecord(Record(*w, f, 3, 1, "crashed")).ok());
    ASSERT_TRUE(db->CommitRecord(Record(*w, f, 4, 20)).ok());
    // Committing the same workload again adds nothing.
    ASSERT_TRUE(db->CommitWorkload(f).ok());
    EXPECT_EQ(db->num_workloads(), 1u);
  }
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE(damage.empty());
  EXPECT_EQ(db->num_records(), 4u);
  // The same function under another name is the same workload.
  std::string w = db->FindWorkload(ParseFunc(MM("other_name", 32), "other_name"));
  ASSERT_EQ(w, Database::WorkloadHash(f));
  EXPECT_EQ(db->FindWorkload(ParseFunc(MM("mm", 16), "mm")), "");
  // Other names of the buffers and variables (a model's equal kernels take
  // them from different Relax variables): the same workload.
  std::string renamed = MM("mm", 32);
  for (auto [from, to] : {std::pair<std::string, std::string>{"A[vi, vk]", "lhs[vi, red]"},
                          {"B[vk, vj]", "rhs[red, vj]"}, {"A:", "lhs:"}, {"B:", "rhs:"}, {"vi, vj, vk =", "vi, vj, red ="}}) {
    size_t p = renamed.find(from);
    ASSERT_NE(p, std::string::npos) << from;
    renamed.replace(p, from.size(), to);
  }
  ir::PrimFunc g = ParseFunc(renamed, "mm");
  EXPECT_EQ(Database::WorkloadHash(g), Database::WorkloadHash(f)) << renamed;
  EXPECT_EQ(db->FindWorkload(g), w);
  // The same names in another order is another function (B * A).
  std::string swapped = MM("mm", 32);
  swapped.replace(swapped.find("A[vi, vk] * B[vk, vj]"), 21, "B[vi, vk] * A[vk, vj]");
  EXPECT_NE(Database::WorkloadHash(ParseFunc(swapped, "mm")), Database::WorkloadHash(f));
  std::vector<TuningRecord> top = db->TopK(w, "test-target", 2);
  ASSERT_EQ(top.size(), 2u);  // the crashed one is never "best"
  EXPECT_EQ(top[0].median_us, 10);
  EXPECT_EQ(top[1].median_us, 20);
  EXPECT_EQ(top[0].times_us.size(), 3u);
  EXPECT_EQ(top[0].default_us, 100);
  EXPECT_EQ(top[0].trace.ToString(), Record(w, f, 2, 10).trace.ToString());
  Result<tir::Schedule> replayed = tir::Schedule::Replay(f, top[0].trace);
  EXPECT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_TRUE(db->TopK(w, "another-target", 2).empty());
}

TEST(DatabaseTest, DamagedLinesAreReportedAndSkipped) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  std::string w;
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    w = *db->CommitWorkload(f);
    ASSERT_TRUE(db->CommitRecord(Record(w, f, 1, 30)).ok());
    ASSERT_TRUE(db->CommitRecord(Record(w, f, 2, 10)).ok());
  }
  {
    // Damage: a cut-off line, a record of an unknown workload, a record
    // whose trace has a bad tag.
    std::ofstream out(dir + "/records.jsonl", std::ios::app);
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-tar\n";
    out << "{\"workload\":\"0000000000000000\",\"target\":\"t\",\"state\":\"ok\",\"median_us\":1,\"trace\":[]}\n";
    out << "{\"workload\":\"" << w
        << "\",\"target\":\"t\",\"state\":\"ok\",\"median_us\":1,\"trace\":[{\"inst\":\"split\",\"in\":[[\"zz\",1]],"
           "\"out\":[],\"out_kinds\":\"\"}]}\n";
  }
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  ASSERT_EQ(damage.size(), 3u);
  EXPECT_NE(damage[0].message().find("records.jsonl:3: "), std::string::npos) << damage[0].message();
  EXPECT_NE(damage[1].message().find("records.jsonl:4: unknown workload"), std::string::npos) << damage[1].message();
  EXPECT_NE(damage[2].message().find("records.jsonl:5: "), std::string::npos) << damage[2].message();
  EXPECT_NE(damage[2].message().find("unknown tag \"zz\""), std::string::npos) << damage[2].message();
  EXPECT_EQ(db->num_records(), 2u);
  EXPECT_EQ(db->TopK(w, "test-target", 5).size(), 2u);
}

// Each record keeps the threads it was measured with; lookups by thread
// count see only those; a line without the field reads as 1 thread; a bad
// count is a damaged line.
TEST(DatabaseTest, RecordsKeepTheirThreadCount) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  std::string w;
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    w = *db->CommitWorkload(f);
    ASSERT_TRUE(db->CommitRecord(Record(w, f, 1, 30)).ok());  // threads 1
    TuningRecord two = Record(w, f, 2, 10);
    two.threads = 2;
    ASSERT_TRUE(db->CommitRecord(two).ok());
  }
  {
    std::ofstream out(dir + "/records.jsonl", std::ios::app);
    // Written before the field: one thread.
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-target\",\"state\":\"ok\",\"median_us\":20,\"trace\":[]}\n";
    out << "{\"workload\":\"" << w
        << "\",\"target\":\"test-target\",\"state\":\"ok\",\"median_us\":5,\"trace\":[],\"threads\":0}\n";
  }
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  ASSERT_EQ(damage.size(), 1u);
  EXPECT_NE(damage[0].message().find("records.jsonl:4: threads must be an integer from 1 to 1024"), std::string::npos)
      << damage[0].message();
  std::vector<TuningRecord> one = db->TopK(w, "test-target", 5, 1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].median_us, 20);
  EXPECT_EQ(one[1].median_us, 30);
  std::vector<TuningRecord> two = db->TopK(w, "test-target", 5, 2);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].median_us, 10);
  EXPECT_EQ(two[0].threads, 2);
  EXPECT_TRUE(db->TopK(w, "test-target", 5, 4).empty());
  EXPECT_EQ(db->TopK(w, "test-target", 5).size(), 3u);  // any thread count
  EXPECT_EQ(db->Records(w, "test-target", 2).size(), 1u);
}

// Each record keeps how it was measured (warm, or cold with its flush size)
// through the file; lookups by regime see only those; a line without the
// field (written before it) reads as warm; a bad regime or a cold record
// without its flush size is a damaged line.
TEST(DatabaseTest, RecordsKeepTheirCacheRegime) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  std::string w;
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    w = *db->CommitWorkload(f);
    ASSERT_TRUE(db->CommitRecord(Record(w, f, 1, 30)).ok());  // warm
    TuningRecord cold = Record(w, f, 2, 50);
    cold.cold_cache = true;
    cold.flush_bytes = int64_t{3} << 30;  // past 32 bits
    ASSERT_TRUE(db->CommitRecord(cold).ok());
  }
  std::stringstream written;
  written << std::ifstream(dir + "/records.jsonl").rdbuf();
  EXPECT_NE(written.str().find("\"cache\":\"warm\""), std::string::npos) << written.str();
  EXPECT_NE(written.str().find("\"cache\":\"cold\""), std::string::npos) << written.str();
  EXPECT_NE(written.str().find("\"flush_bytes\":3221225472"), std::string::npos) << written.str();
  {
    std::ofstream out(dir + "/records.jsonl", std::ios::app);
    // Written before the field: warm.
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-target\",\"state\":\"ok\",\"median_us\":20,\"trace\":[]}\n";
    out << "{\"workload\":\"" << w
        << "\",\"target\":\"test-target\",\"state\":\"ok\",\"median_us\":5,\"trace\":[],\"cache\":\"lukewarm\"}\n";
    out << "{\"workload\":\"" << w
        << "\",\"target\":\"test-target\",\"state\":\"ok\",\"median_us\":5,\"trace\":[],\"cache\":\"cold\"}\n";
  }
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  ASSERT_EQ(damage.size(), 2u);
  EXPECT_NE(damage[0].message().find("records.jsonl:4: cache must be \"warm\" or \"cold\""), std::string::npos)
      << damage[0].message();
  EXPECT_NE(damage[1].message().find("records.jsonl:5: a cold-cache record needs flush_bytes, a positive integer"),
            std::string::npos)
      << damage[1].message();
  std::vector<TuningRecord> warm = db->TopK(w, "test-target", 5, 1, CacheRegime::kWarm);
  ASSERT_EQ(warm.size(), 2u);
  EXPECT_EQ(warm[0].median_us, 20);
  EXPECT_FALSE(warm[0].cold_cache);
  EXPECT_EQ(warm[0].flush_bytes, 0);
  EXPECT_EQ(warm[1].median_us, 30);
  std::vector<TuningRecord> cold = db->TopK(w, "test-target", 5, 1, CacheRegime::kCold);
  ASSERT_EQ(cold.size(), 1u);
  EXPECT_EQ(cold[0].median_us, 50);
  EXPECT_TRUE(cold[0].cold_cache);
  EXPECT_EQ(cold[0].flush_bytes, int64_t{3} << 30);
  EXPECT_EQ(db->TopK(w, "test-target", 5).size(), 3u);  // either regime
  EXPECT_EQ(db->Records(w, "test-target", 0, CacheRegime::kCold).size(), 1u);
  EXPECT_EQ(db->Records(w, "test-target", 0, CacheRegime::kWarm).size(), 2u);
}

// A database written when the hash was of the plain text (before names
// were ignored) still loads and applies.
TEST(DatabaseTest, PlainTextHashesOfEarlierDatabasesAreMapped) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  std::string w;
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    w = *db->CommitWorkload(f);
    ASSERT_TRUE(db->CommitRecord(Record(w, f, 1, 30)).ok());
  }
  std::stringstream ws, rs;
  ws << std::ifstream(dir + "/workloads.jsonl").rdbuf();
  rs << std::ifstream(dir + "/records.jsonl").rdbuf();
  Result<Json> j = ParseJson(ws.str().substr(0, ws.str().find('\n')));
  ASSERT_TRUE(j.ok());
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : j->Get("func")->s) h = (h ^ c) * 1099511628211ull;
  char old[17];
  snprintf(old, sizeof old, "%016llx", static_cast<unsigned long long>(h));
  ASSERT_NE(std::string(old), w);
  auto swap = [&](std::string s) {
    for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p)) s.replace(p, w.size(), old);
    return s;
  };
  std::ofstream(dir + "/workloads.jsonl") << swap(ws.str());
  std::ofstream(dir + "/records.jsonl") << swap(rs.str());
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE(damage.empty()) << damage[0].ToString();
  EXPECT_EQ(db->FindWorkload(f), w);
  EXPECT_EQ(db->TopK(w, "test-target", 5).size(), 1u);
}

// Verdicts of the model check (verdicts.jsonl): a round trip, the last line
// on a record wins, Selected leaves a dropped record out (and does not fall
// back to the second-best record, which nobody checked), a newer record is
// not covered by an older record's verdict, damaged verdict lines are
// reported and skipped, and a database without the file applies every
// record (an older database).
TEST(DatabaseTest, VerdictsRoundTripAndSelection) {
  std::string dir = TempDir();
  ir::PrimFunc f = ParseFunc(MM("mm", 32), "mm");
  std::string w;
  TuningRecord best, second;
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    w = *db->CommitWorkload(f);
    second = Record(w, f, 1, 30);
    best = Record(w, f, 2, 10);
    ASSERT_TRUE(db->CommitRecord(second).ok());
    ASSERT_TRUE(db->CommitRecord(best).ok());
    // Before any verdict: the best record applies, with or without verdicts.
    std::optional<TuningRecord> s = db->Selected(w, "test-target", 1, CacheRegime::kWarm, true);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->median_us, 10);
    EXPECT_FALSE(std::ifstream(dir + "/verdicts.jsonl").good());
  }
  EXPECT_NE(Database::RecordKey(best), Database::RecordKey(second));
  EXPECT_EQ(Database::RecordKey(best).size(), 16u);
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok());
    TuningVerdict v;
    v.workload = w;
    v.target = "test-target";
    v.record = Database::RecordKey(best);
    v.drop = false;
    ASSERT_TRUE(db->CommitVerdict(v).ok());
    v.drop = true;
    v.default_us = 41.5;
    v.tuned_us = 47.25;
    v.reason = "slower in the model";
    ASSERT_TRUE(db->CommitVerdict(v).ok());
    // Unknown workload: refused.
    TuningVerdict bad = v;
    bad.workload = "0000000000000000";
    EXPECT_FALSE(db->CommitVerdict(bad).ok());
  }
  std::vector<Status> damage;
  Result<Database> db = Database::Open(dir, &damage);
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE(damage.empty());
  const TuningVerdict* v = db->FindVerdict(best);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->drop);  // the later line
  EXPECT_EQ(v->default_us, 41.5);
  EXPECT_EQ(v->tuned_us, 47.25);
  EXPECT_EQ(v->reason, "slower in the model");
  EXPECT_EQ(v->threads, 1);
  EXPECT_FALSE(v->cold_cache);
  EXPECT_EQ(db->FindVerdict(second), nullptr);
  bool dropped = false;
  EXPECT_FALSE(db->Selected(w, "test-target", 1, CacheRegime::kWarm, true, &dropped));
  EXPECT_TRUE(dropped);
  std::optional<TuningRecord> ignoring = db->Selected(w, "test-target", 1, CacheRegime::kWarm, false);
  ASSERT_TRUE(ignoring);
  EXPECT_EQ(ignoring->median_us, 10);
  // The verdict is on that record at that thread count and regime only.
  TuningRecord at2 = best;
  at2.threads = 2;
  EXPECT_EQ(db->FindVerdict(at2), nullptr);
  // A newer, faster record of the workload applies until it is judged.
  TuningRecord newer = Record(w, f, 3, 5);
  ASSERT_TRUE(db->CommitRecord(newer).ok());
  std::optional<TuningRecord> s = db->Selected(w, "test-target", 1, CacheRegime::kWarm, true);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->median_us, 5);

  // Damage: cut off, a verdict neither keep nor drop, an unknown workload,
  // fields missing, a bad thread count. The good line after them loads.
  {
    std::ofstream out(dir + "/verdicts.jsonl", std::ios::app);
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-tar\n";
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-target\",\"record\":\"" << Database::RecordKey(newer)
        << "\",\"verdict\":\"maybe\"}\n";
    out << "{\"workload\":\"0000000000000000\",\"target\":\"t\",\"record\":\"x\",\"verdict\":\"drop\"}\n";
    out << "{\"workload\":\"" << w << "\",\"verdict\":\"drop\"}\n";
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-target\",\"record\":\"" << Database::RecordKey(newer)
        << "\",\"verdict\":\"drop\",\"threads\":0}\n";
    // An older writer's line: no threads, cache or times (reads as 1, warm).
    out << "{\"workload\":\"" << w << "\",\"target\":\"test-target\",\"record\":\"" << Database::RecordKey(newer)
        << "\",\"verdict\":\"drop\"}\n";
  }
  damage.clear();
  Result<Database> again = Database::Open(dir, &damage);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(damage.size(), 5u);
  EXPECT_NE(damage[0].message().find("verdicts.jsonl:3: "), std::string::npos) << damage[0].message();
  EXPECT_NE(damage[1].message().find("verdicts.jsonl:4: verdict must be \"keep\" or \"drop\""), std::string::npos)
      << damage[1].message();
  EXPECT_NE(damage[2].message().find("verdicts.jsonl:5: unknown workload"), std::string::npos) << damage[2].message();
  EXPECT_NE(damage[3].message().find("verdicts.jsonl:6: a verdict needs the strings workload, target, record and verdict"),
            std::string::npos)
      << damage[3].message();
  EXPECT_NE(damage[4].message().find("verdicts.jsonl:7: threads must be an integer from 1 to 1024"), std::string::npos)
      << damage[4].message();
  EXPECT_EQ(again->num_records(), 3u);
  ASSERT_NE(again->FindVerdict(newer), nullptr);
  EXPECT_TRUE(again->FindVerdict(newer)->drop);
  // Dropped: the workload keeps its default, not the second-best record.
  EXPECT_FALSE(again->Selected(w, "test-target", 1, CacheRegime::kWarm, true));
}

}  // namespace
}  // namespace tune
}  // namespace kiln
