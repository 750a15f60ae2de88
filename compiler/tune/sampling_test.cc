// Sampling instructions and traces: deterministic for a seed, every decision
// in range, replay with recorded and with new decisions, the JSON round trip,
// and a trace replayed on a workload it does not fit.
#include <gtest/gtest.h>

#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/json.h"
#include "compiler/tune/trace_json.h"

namespace kiln {
namespace tune {
namespace {

using tir::BlockRV;
using tir::ExprRV;
using tir::LoopRV;
using tir::Schedule;

std::string Matmul(int m, int n, int k) {
  std::string M = std::to_string(m), N = std::to_string(n), K = std::to_string(k);
  return "@I.ir_module\nclass Module:\n"
         "    @T.prim_func\n"
         "    def mm(A: T.Buffer((" + M + ", " + K + "), \"float32\"), B: T.Buffer((" + K + ", " + N +
         "), \"float32\"), C: T.Buffer((" + M + ", " + N + "), \"float32\")):\n"
         "        for i, j, k in T.grid(" + M + ", " + N + ", " + K + "):\n"
         "            with T.block(\"C\"):\n"
         "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
         "                with T.init():\n"
         "                    C[vi, vj] = T.float32(0)\n"
         "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";
}

const char* kProducer = R"(@I.ir_module
class Module:
    @T.prim_func
    def two(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
        Bt = T.alloc_buffer((16, 8), "float32")
        for i, j in T.grid(16, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                Bt[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(16, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = Bt[vi, vj] + T.float32(1)
)";

ir::PrimFunc Parse(const std::string& text, const char* name) {
  Result<ir::IRModule> m = text::ParseModule(text, "<sampling_test>");
  KILN_CHECK(m.ok(), "%s", m.status().ToString().c_str());
  return m->FindPrim(name);
}

// A small stochastic schedule: tile i and j with sampled sizes, pick an
// unroll choice, reorder.
Status TileProgram(Schedule* sch) {
  KILN_ASSIGN_OR_RETURN(BlockRV c, sch->GetBlock("C"));
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(c));
  KILN_ASSIGN_OR_RETURN(std::vector<ExprRV> fi, sch->SamplePerfectTile(loops[0], 3, 8));
  KILN_ASSIGN_OR_RETURN(std::vector<ExprRV> fj, sch->SamplePerfectTile(loops[1], 2, 16));
  KILN_ASSIGN_OR_RETURN(ExprRV u, sch->SampleCategorical({0, 16, 64}, {0.5, 0.25, 0.25}));
  (void)u;
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> is, sch->SplitSampled(loops[0], fi));
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> js, sch->SplitSampled(loops[1], fj));
  return sch->Reorder({is[0], js[0], is[1], loops[2], is[2], js[1]});
}

std::vector<std::vector<int64_t>> Decisions(const tir::Trace& t) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& inst : t.instructions())
    if (inst.is_sampling()) out.push_back(inst.decision);
  return out;
}

TEST(SamplingTest, DeterministicForASeedAndInRange) {
  ir::PrimFunc f = Parse(Matmul(96, 64, 32), "mm");
  std::set<std::vector<std::vector<int64_t>>> seen;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Result<Schedule> a = Schedule::Create(f, seed);
    Result<Schedule> b = Schedule::Create(f, seed);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(TileProgram(&*a).ok());
    ASSERT_TRUE(TileProgram(&*b).ok());
    auto da = Decisions(a->trace());
    EXPECT_EQ(da, Decisions(b->trace()));
    EXPECT_TRUE(ir::StructuralEqual(a->func(), b->func()));
    ASSERT_EQ(da.size(), 3u);
    EXPECT_EQ(da[0].size(), 3u);
    EXPECT_EQ(da[0][0] * da[0][1] * da[0][2], 96);
    EXPECT_LE(da[0][2], 8);
    EXPECT_EQ(da[1][0] * da[1][1], 64);
    EXPECT_LE(da[1][1], 16);
    ASSERT_EQ(da[2].size(), 1u);
    EXPECT_GE(da[2][0], 0);
    EXPECT_LT(da[2][0], 3);
    seen.insert(da);
  }
  // The seeds explore the space (96 has many 3-tilings).
  EXPECT_GT(seen.size(), 10u);
}

TEST(SamplingTest, ReplayWithRecordedAndNewDecisions) {
  ir::PrimFunc f = Parse(Matmul(96, 64, 32), "mm");
  Result<Schedule> s = Schedule::Create(f, 7);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(TileProgram(&*s).ok());
  Result<Schedule> again = Schedule::Replay(f, s->trace());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(ir::StructuralEqual(again->func(), s->func()));
  EXPECT_EQ(again->trace().ToString(), s->trace().ToString());

  Result<Schedule> n1 = Schedule::ReplayWithNewDecisions(f, s->trace(), 11);
  Result<Schedule> n2 = Schedule::ReplayWithNewDecisions(f, s->trace(), 11);
  ASSERT_TRUE(n1.ok() && n2.ok()) << n1.status().ToString();
  EXPECT_EQ(Decisions(n1->trace()), Decisions(n2->trace()));
  // The split follows the new decision: its loop extents are the new tiles.
  auto d = Decisions(n1->trace());
  std::string text = n1->trace().ToString();
  EXPECT_NE(text.find("decision=[" + std::to_string(d[0][0]) + ", "), std::string::npos) << text;
  int differing = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Result<Schedule> n = Schedule::ReplayWithNewDecisions(f, s->trace(), seed);
    ASSERT_TRUE(n.ok());
    differing += Decisions(n->trace()) != Decisions(s->trace());
  }
  EXPECT_GT(differing, 0);
}

TEST(SamplingTest, TracePrintsReadably) {
  ir::PrimFunc f = Parse(Matmul(96, 64, 32), "mm");
  Result<Schedule> s = Schedule::Create(f, 3);
  ASSERT_TRUE(TileProgram(&*s).ok());
  std::string text = s->trace().ToString();
  EXPECT_NE(text.find("= sch.sample_perfect_tile(loop=l1, n=3, max_innermost_factor=8, decision=["), std::string::npos)
      << text;
  EXPECT_NE(text.find("sch.split(l1, factors=[v"), std::string::npos) << text;
  EXPECT_NE(text.find("sch.sample_categorical(candidates=[0, 16, 64], probs=[0.5, 0.25, 0.25], decision="),
            std::string::npos)
      << text;
}

TEST(SamplingTest, ComputeLocation) {
  ir::PrimFunc f = Parse(kProducer, "two");
  std::set<int64_t> decisions;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Result<Schedule> s = Schedule::Create(f, seed);
    ASSERT_TRUE(s.ok());
    Result<BlockRV> b = s->GetBlock("B");
    Result<LoopRV> where = s->SampleComputeLocation(*b);
    ASSERT_TRUE(where.ok()) << where.status().ToString();
    ASSERT_TRUE(s->ComputeAt(*b, *where).ok());
    int64_t d = s->trace().instructions()[1].decision[0];
    // root, inline, or one of C's two loops.
    EXPECT_GE(d, tir::kInlineLoopId);
    EXPECT_LT(d, 2);
    decisions.insert(d);
    Result<Schedule> r = Schedule::Replay(f, s->trace());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(ir::StructuralEqual(r->func(), s->func()));
  }
  EXPECT_EQ(decisions.size(), 4u);
}

TEST(SamplingTest, JsonRoundTrip) {
  ir::PrimFunc f = Parse(Matmul(96, 64, 32), "mm");
  Result<Schedule> s = Schedule::Create(f, 5);
  ASSERT_TRUE(TileProgram(&*s).ok());
  Result<Json> j = TraceToJson(s->trace());
  ASSERT_TRUE(j.ok());
  std::string text = WriteJson(*j);
  Result<Json> back = ParseJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(WriteJson(*back), text);
  Result<tir::Trace> t = TraceFromJson(*back);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->ToString(), s->trace().ToString());
  Result<Schedule> r = Schedule::Replay(f, *t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ir::StructuralEqual(r->func(), s->func()));
}

TEST(SamplingTest, DamagedJsonIsAnError) {
  EXPECT_FALSE(ParseJson("[{\"inst\": \"split\",}]").ok());
  EXPECT_FALSE(ParseJson("[1, 2").ok());
  Result<Json> j = ParseJson(R"([{"inst":"sample_perfect_tile","in":[["l",0]],"out":[1],"out_kinds":"v"}])");
  ASSERT_TRUE(j.ok());
  Result<tir::Trace> t = TraceFromJson(*j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("without a decision"), std::string::npos);
  // Structurally valid JSON whose instruction lacks inputs: a replay error.
  ir::PrimFunc f = Parse(Matmul(8, 8, 8), "mm");
  j = ParseJson(R"([{"inst":"get_loops","in":[],"out":[],"out_kinds":""}])");
  ASSERT_TRUE(j.ok());
  t = TraceFromJson(*j);
  ASSERT_TRUE(t.ok());
  Result<Schedule> r = Schedule::Replay(f, *t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("get_loops takes 1 inputs"), std::string::npos) << r.status().ToString();
}

TEST(SamplingTest, WrongWorkloadIsAClearError) {
  ir::PrimFunc f = Parse(Matmul(96, 64, 32), "mm");
  Result<Schedule> s = Schedule::Create(f, 9);
  ASSERT_TRUE(TileProgram(&*s).ok());
  // Same structure, other extents: the recorded tiles do not fit.
  ir::PrimFunc other = Parse(Matmul(100, 64, 32), "mm");
  Result<Schedule> r = Schedule::Replay(other, s->trace());
  ASSERT_FALSE(r.ok());
  std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("sample_perfect_tile"), std::string::npos) << msg;
  EXPECT_NE(msg.find("extent 100"), std::string::npos) << msg;
  // Another function altogether: no block "C".
  r = Schedule::Replay(Parse(kProducer, "two"), s->trace());
  ASSERT_TRUE(r.ok() == false);
  // ... but new decisions fit the new extents.
  Result<Schedule> n = Schedule::ReplayWithNewDecisions(other, s->trace(), 3);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  // A decision out of range is refused, not used.
  tir::Trace bad = s->trace();
  for (size_t k = 0; k < bad.instructions().size(); ++k)
    if (bad.instructions()[k].name == "sample_categorical") bad.SetDecision(k, {3});
  r = Schedule::Replay(f, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("not an index below 3"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace tune
}  // namespace kiln
