// The search's parts: mutations (decisions stay in range, the trace still
// replays, a seed gives the same mutation), features of lowered TIR, and the
// XGBoost cost model (train, predict, save, load).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/cost_model.h"
#include "compiler/tune/features.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/mutate.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {
namespace {

using tir::testing::ParseFunc;

const char* kMM = R"(@T.prim_func
def mm(A: T.Buffer((128, 96), "float32"), B: T.Buffer((96, 64), "float32"), C: T.Buffer((128, 64), "float32")):
    for i, j, k in T.grid(128, 64, 96):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";

// Every decision of `t` in range for `f`: tiles multiply to their loop's
// extent with the innermost within bounds, categorical indices below the
// candidate count.
void ExpectInRange(const tir::Trace& t) {
  for (const auto& inst : t.instructions()) {
    if (inst.name == "sample_perfect_tile") {
      int64_t prod = 1;
      for (int64_t x : inst.decision) {
        EXPECT_GE(x, 1);
        prod *= x;
      }
      EXPECT_TRUE(prod == 128 || prod == 96 || prod == 64) << t.ToString();
      EXPECT_LE(inst.decision.back(), inst.inputs[2].i) << t.ToString();
    } else if (inst.name == "sample_categorical") {
      ASSERT_EQ(inst.decision.size(), 1u);
      EXPECT_GE(inst.decision[0], 0);
      EXPECT_LT(inst.decision[0], static_cast<int64_t>(inst.inputs[0].ints.size())) << t.ToString();
    }
  }
}

int ChangedDecisions(const tir::Trace& a, const tir::Trace& b) {
  int n = 0;
  for (size_t i = 0; i < a.instructions().size(); ++i)
    n += a.instructions()[i].decision != b.instructions()[i].decision;
  return n;
}

TEST(MutateTest, TileKeepsProductAndBound) {
  std::mt19937_64 rng(3);
  std::vector<int64_t> tile = {2, 4, 2, 8};
  int moved = 0;
  for (int i = 0; i < 50; ++i) {
    std::vector<int64_t> t = MutateTile(tile, 8, &rng);
    EXPECT_EQ(t[0] * t[1] * t[2] * t[3], 128);
    EXPECT_LE(t[3], 8);
    moved += t != tile;
  }
  EXPECT_GT(moved, 40);
  // Nothing to move: the same tile.
  EXPECT_EQ(MutateTile({1, 1, 1}, 4, &rng), (std::vector<int64_t>{1, 1, 1}));
}

void CheckMutations(const ir::PrimFunc& f, const tir::Trace& start) {
  std::string first;
  for (int round = 0; round < 2; ++round) {
    std::mt19937_64 rng(42);
    tir::Trace t = start;
    std::string all;
    for (int i = 0; i < 12; ++i) {
      Result<tir::Schedule> m = MutateTrace(f, t, &rng);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      EXPECT_EQ(ChangedDecisions(t, m->trace()), 1) << t.ToString() << "--\n" << m->trace().ToString();
      ExpectInRange(m->trace());
      // The mutated trace is its own replay: it stays a point of the space.
      Result<tir::Schedule> r = tir::Schedule::Replay(f, m->trace());
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(ir::StructuralEqual(r->func(), m->func()));
      t = m->trace();
      all += t.ToString();
    }
    if (round == 0) first = all;
    else EXPECT_EQ(all, first);  // deterministic for a seed
  }
}

TEST(MutateTest, GenericSpaceTraces) {
  ir::PrimFunc f = ParseFunc(kMM, "mm");
  Result<tir::Schedule> s = SampleGenericSpace(f, 9);
  ASSERT_TRUE(s.ok());
  CheckMutations(f, s->trace());
}

TEST(MutateTest, KnobSpaceTraces) {
  ir::PrimFunc f = ParseFunc(kMM, "mm");
  Result<tir::Schedule> s = tir::Schedule::Create(f, 2);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(ApplyDefaultSpace(&*s, DefaultSpaceKnobs(f, 2), 2).ok());
  CheckMutations(f, s->trace());
}

TEST(MutateTest, ComputeLocationMutationReplays) {
  ir::PrimFunc f = ParseFunc(R"(@T.prim_func
def two(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
    B = T.alloc_buffer((16, 32), "float32")
    for i, j in T.grid(16, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
)", "two");
  Result<tir::Schedule> s = tir::Schedule::Create(f, 1);
  ASSERT_TRUE(s.ok());
  Result<tir::BlockRV> b = s->GetBlock("B");
  ASSERT_TRUE(b.ok());
  Result<tir::LoopRV> loc = s->SampleComputeLocation(*b);
  ASSERT_TRUE(loc.ok());
  ASSERT_TRUE(s->ComputeAt(*b, *loc).ok());
  std::mt19937_64 rng(5);
  std::set<int64_t> seen;
  for (int i = 0; i < 8; ++i) {
    Result<tir::Schedule> m = MutateTrace(f, s->trace(), &rng);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    seen.insert(m->trace().instructions()[1].decision[0]);
    EXPECT_TRUE(tir::testing::SameNumbers(f, m->func()).ok());
  }
  EXPECT_GT(seen.size(), 1u);
}

TEST(MutateTest, NothingToMutateIsAnError) {
  ir::PrimFunc f = ParseFunc(kMM, "mm");
  Result<tir::Schedule> s = tir::Schedule::Create(f, 1);
  ASSERT_TRUE(s.ok());
  std::mt19937_64 rng(1);
  Result<tir::Schedule> m = MutateTrace(f, s->trace(), &rng);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("the trace has no decision that can change"), std::string::npos);
}

TEST(FeaturesTest, LoweredMatmul) {
  ir::PrimFunc f = ParseFunc(kMM, "mm");
  std::vector<float> naive = ExtractFeatures(tir::LowerBlocks(f));
  std::vector<float> tuned = ExtractFeatures(LowerWithDefaultSchedule(f, 1));
  ASSERT_EQ(naive.size(), static_cast<size_t>(kNumFeatures));
  ASSERT_EQ(tuned.size(), static_cast<size_t>(kNumFeatures));
  // 2 float ops (multiply, add) per point of the 128 x 64 x 96 nest.
  EXPECT_NEAR(naive[0], std::log2(1 + 2.0 * 128 * 64 * 96), 1e-3);
  EXPECT_EQ(naive[7], 0.0f);  // nothing vectorized
  EXPECT_GT(tuned[7], 0.0f);  // the register tile's columns are
  EXPECT_GT(tuned[8], 0.5f);  // most ops run in vector loops
  EXPECT_GT(tuned[14], 0.0f);  // a local accumulator
  // The naive nest's innermost loop is k: B[k, j] moves along a row.
  EXPECT_GT(naive[12], 0.0f);
}

// Real features of `n` points of mm's spaces with a score each.
std::vector<std::vector<float>> Points(const ir::PrimFunc& f, int n, std::vector<float>* vector_share) {
  std::vector<std::vector<float>> rows;
  for (int seed = 1; seed <= n; ++seed) {
    Result<tir::Schedule> s = SampleGenericSpace(f, seed);
    EXPECT_TRUE(s.ok());
    rows.push_back(ExtractFeatures(LowerScheduled(s->func())));
    vector_share->push_back(rows.back()[7]);
  }
  rows.push_back(ExtractFeatures(tir::LowerBlocks(f)));
  vector_share->push_back(rows.back()[7]);
  rows.push_back(ExtractFeatures(LowerWithDefaultSchedule(f, 1)));
  vector_share->push_back(rows.back()[7]);
  return rows;
}

TEST(CostModelTest, TrainPredictSaveLoad) {
  CostModel model;
  EXPECT_FALSE(model.trained());
  Result<std::vector<float>> untrained = model.Predict({std::vector<float>(kNumFeatures, 1.0f)});
  ASSERT_TRUE(untrained.ok());
  EXPECT_EQ((*untrained)[0], 0.0f);
  Status none = model.Train();
  EXPECT_NE(none.message().find("no measurements to train on"), std::string::npos);
  Status no_save = model.Save("/tmp/kiln_unused.json");
  EXPECT_NE(no_save.message().find("not trained"), std::string::npos);

  // Synthetic: a score that grows with feature 7 (vector width).
  for (int i = 0; i < 40; ++i) {
    std::vector<float> x(kNumFeatures, 0.5f);
    x[7] = static_cast<float>(i % 8);
    model.Add(x, static_cast<float>(i % 8));
  }
  ASSERT_TRUE(model.Train().ok());
  std::vector<float> lo(kNumFeatures, 0.5f), hi(kNumFeatures, 0.5f);
  lo[7] = 1;
  hi[7] = 6;
  Result<std::vector<float>> p = model.Predict({lo, hi});
  ASSERT_TRUE(p.ok());
  EXPECT_GT((*p)[1], (*p)[0] + 2);

  // Real features: points of mm's generic space scored by their vector width
  // (a stand-in for measured speed; the points' widths vary); the model must
  // rank the default schedule (16-float vectors) above the naive nest (none),
  // both held out.
  ir::PrimFunc f = ParseFunc(kMM, "mm");
  std::vector<float> share;
  std::vector<std::vector<float>> rows = Points(f, 24, &share);
  CostModel real;
  for (size_t i = 0; i + 2 < rows.size(); ++i) real.Add(rows[i], share[i]);
  ASSERT_TRUE(real.Train().ok());
  Result<std::vector<float>> q = real.Predict({rows[rows.size() - 2], rows.back()});
  ASSERT_TRUE(q.ok());
  EXPECT_LT((*q)[0], (*q)[1]);

  // Save and load give the same predictions.
  std::string path = testing::TempDir() + "/kiln_cost_model.json";
  ASSERT_TRUE(real.Save(path).ok());
  CostModel loaded;
  ASSERT_TRUE(loaded.Load(path).ok());
  EXPECT_TRUE(loaded.trained());
  Result<std::vector<float>> q2 = loaded.Predict({rows[rows.size() - 2], rows.back()});
  ASSERT_TRUE(q2.ok());
  EXPECT_EQ(*q, *q2);
  EXPECT_EQ(loaded.num_samples(), real.num_samples());  // the samples come back to refit on
  ASSERT_TRUE(loaded.Train().ok());
  std::remove(path.c_str());
  std::remove((path + ".samples").c_str());

  Status missing = loaded.Load(path);
  EXPECT_NE(missing.message().find("cannot read"), std::string::npos);
  std::ofstream(path) << "not a model";
  Status damaged = loaded.Load(path);
  EXPECT_FALSE(damaged.ok());
  EXPECT_NE(damaged.message().find("cost model: loading"), std::string::npos) << damaged.ToString();
  EXPECT_TRUE(loaded.trained());  // the earlier booster is kept
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tune
}  // namespace kiln
