// The generic design space: hand-written TIR (the MLC course's mm and
// mm_relu, an elementwise sigmoid) gets tiled, parallel and vectorized
// points; every sampled point computes what the original computes, and its
// trace replays to the same function.
#include <gtest/gtest.h>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/space.h"
#include "compiler/tune/tune_test_workloads.h"

namespace kiln {
namespace tune {
namespace {

using testing::kCourseMM;
using testing::kMMRelu;
using tir::testing::CountStmts;
using tir::testing::ParseFunc;
using tir::testing::SameNumbers;

const char* kSigmoid = R"(@T.prim_func
def sigmoid(A: T.Buffer((96, 64), "float32"), C: T.Buffer((96, 64), "float32")):
    E = T.alloc_buffer((96, 64), "float32")
    for i, j in T.grid(96, 64):
        with T.block("E"):
            vi, vj = T.axis.remap("SS", [i, j])
            E[vi, vj] = T.exp(T.float32(0) - A[vi, vj])
    for i, j in T.grid(96, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.float32(1) / (T.float32(1) + E[vi, vj])
)";

int CountInstructions(const tir::Trace& t, const std::string& name) {
  int n = 0;
  for (const auto& inst : t.instructions()) n += inst.name == name;
  return n;
}

void CheckSpace(const char* text, const char* name, int tiles_expected) {
  ir::PrimFunc f = ParseFunc(text, name);
  std::set<std::string> traces;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Result<tir::Schedule> s = SampleGenericSpace(f, seed);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    const tir::Trace& t = s->trace();
    EXPECT_EQ(CountInstructions(t, "sample_perfect_tile"), tiles_expected) << t.ToString();
    EXPECT_GE(CountInstructions(t, "vectorize"), 1) << t.ToString();
    EXPECT_GE(CountStmts(s->func()).vectorized, 1);
    Status same = SameNumbers(f, s->func());
    EXPECT_TRUE(same.ok()) << same.ToString() << "\n" << t.ToString() << tir::testing::Print(s->func());
    Result<tir::Schedule> r = tir::Schedule::Replay(f, t);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(ir::StructuralEqual(r->func(), s->func()));
    traces.insert(t.ToString());
  }
  EXPECT_GT(traces.size(), 1u);  // the seeds pick different points
}

TEST(GenericSpaceTest, MatmulIsTiledParallelVectorized) {
  // i, j in 4 tiles, k in 2.
  CheckSpace(kCourseMM, "mm", 3);
  Result<tir::Schedule> s = SampleGenericSpace(ParseFunc(kCourseMM, "mm"), 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(CountInstructions(s->trace(), "parallel"), 1) << s->trace().ToString();
  EXPECT_EQ(CountInstructions(s->trace(), "decompose_reduction"), 1) << s->trace().ToString();
}

TEST(GenericSpaceTest, MatmulWithEpilogue) {
  // Y tiled (3 samples), the relu block C split on its last loop (1).
  CheckSpace(kMMRelu, "mm_relu", 4);
}

TEST(GenericSpaceTest, ElementwiseChainIsInlinedThenVectorized) {
  CheckSpace(kSigmoid, "sigmoid", 1);
  Result<tir::Schedule> s = SampleGenericSpace(ParseFunc(kSigmoid, "sigmoid"), 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(CountInstructions(s->trace(), "compute_inline"), 1) << s->trace().ToString();
}

TEST(GenericSpaceTest, SymbolicExtentsAreLeftAlone) {
  ir::PrimFunc f = ParseFunc(R"(@T.prim_func
def relu(x: T.handle, y: T.handle):
    n = T.int64()
    X = T.match_buffer(x, (1, n), "float32")
    Y = T.match_buffer(y, (1, n), "float32")
    for i, j in T.grid(1, n):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = T.max(X[vi, vj], T.float32(0))
)", "relu");
  Result<tir::Schedule> s = SampleGenericSpace(f, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(ir::StructuralEqual(s->func(), f));
}

}  // namespace
}  // namespace tune
}  // namespace kiln
