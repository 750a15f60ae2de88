// Trace printing and replay; compute_inline, reverse_compute_inline,
// compute_at, reverse_compute_at, cache_read/write, decompose_reduction,
// transform_layout and storage_align: same numbers, and each misuse refused.
#include <gtest/gtest.h>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/schedule/tree.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

const char* kMatmulRelu = R"(@T.prim_func
def mm_relu(A: T.Buffer((32, 40), "float32"), B: T.Buffer((40, 48), "float32"), Z: T.Buffer((32, 48), "float32")):
    Y = T.alloc_buffer((32, 48), "float32")
    for i, j, k in T.grid(32, 48, 40):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(Y[vi, vj])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(32, 48):
        with T.block("R"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = T.max(Y[vi, vj], T.float32(0))
)";

const char* kTwoNests = R"(@T.prim_func
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

Schedule Make(const char* text, const char* name) {
  Result<Schedule> s = Schedule::Create(ParseFunc(text, name));
  KILN_CHECK(s.ok(), "%s", s.status().ToString().c_str());
  return *s;
}

#define EXPECT_SAME(sch) \
  do { Status st_ = SameNumbers((sch).original(), (sch).func()); EXPECT_TRUE(st_.ok()) << st_.ToString() << "\n" << testing::Print((sch).func()); } while (0)
#define EXPECT_ERROR(expr, text)                                                   \
  do {                                                                             \
    Status st_ = (expr);                                                           \
    ASSERT_FALSE(st_.ok());                                                        \
    EXPECT_NE(st_.ToString().find(text), std::string::npos) << st_.ToString();     \
  } while (0)
#define ASSERT_OK(expr)                                      \
  do {                                                       \
    Status st_ = (expr);                                     \
    ASSERT_TRUE(st_.ok()) << st_.ToString();                 \
  } while (0)

void ExpectReplays(const Schedule& sch) {
  Result<Schedule> again = Schedule::Replay(sch.original(), sch.trace());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::string why;
  EXPECT_TRUE(StructuralEqual(again->func(), sch.func(), &why)) << why << "\n" << sch.trace().ToString();
}

TEST(TraceTest, PrintsAndReplays) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  BlockRV c = *sch.GetBlock("C");
  auto loops = *sch.GetLoops(c);
  auto ij = *sch.Split(loops[1], {-1, 16});
  ASSERT_OK(sch.Reorder({loops[2], ij[1]}));
  ASSERT_OK(sch.Parallel(loops[0]));
  ASSERT_OK(sch.Vectorize(ij[1]));
  std::string text = sch.trace().ToString();
  EXPECT_NE(text.find("b0 = sch.get_block(\"C\")\n"), std::string::npos) << text;
  EXPECT_NE(text.find("l1, l2, l3 = sch.get_loops(b0)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("l4, l5 = sch.split(l2, factors=[None, 16])\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sch.reorder(l3, l5)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sch.vectorize(l5)\n"), std::string::npos) << text;
  ExpectReplays(sch);
  EXPECT_SAME(sch);
}

TEST(TraceTest, ReplayOnADifferentFunctionFails) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  ASSERT_TRUE(sch.GetBlock("R").ok());
  EXPECT_ERROR(Schedule::Replay(ParseFunc(kTwoNests, "two"), sch.trace()).status(), "replay: instruction 0");
}

TEST(ComputeInlineTest, InlinesProducer) {
  Schedule sch = Make(kTwoNests, "two");
  ASSERT_OK(sch.ComputeInline(*sch.GetBlock("B")));
  EXPECT_FALSE(sched::FindBlock(sch.func()->body, "B").found());
  EXPECT_TRUE(As<BlockRealizeNode>(sch.func()->body)->block.alloc_buffers.empty());
  EXPECT_SAME(sch);
  ExpectReplays(sch);
}

TEST(ComputeInlineTest, Misuse) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  EXPECT_ERROR(sch.ComputeInline(*sch.GetBlock("C")), "is a reduction block");
  EXPECT_ERROR(sch.ComputeInline(*sch.GetBlock("R")), "writes the function parameter Z");
}

TEST(ReverseComputeInlineTest, InlinesConsumer) {
  Schedule sch = Make(kTwoNests, "two");
  ASSERT_OK(sch.ReverseComputeInline(*sch.GetBlock("C")));
  EXPECT_FALSE(sched::FindBlock(sch.func()->body, "C").found());
  EXPECT_SAME(sch);
  ExpectReplays(sch);
}

TEST(ReverseComputeInlineTest, Misuse) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  EXPECT_ERROR(sch.ReverseComputeInline(*sch.GetBlock("R")), "producer \"C\" is a reduction block");
  EXPECT_ERROR(sch.ReverseComputeInline(*sch.GetBlock("C")), "is a reduction block");
  Schedule two = Make(kTwoNests, "two");
  EXPECT_ERROR(two.ReverseComputeInline(*two.GetBlock("B")), "reads no buffer produced by another block");
}

TEST(ComputeAtTest, ProducerUnderConsumerTile) {
  Schedule sch = Make(kTwoNests, "two");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  auto io = *sch.Split(loops[0], {-1, 4});
  ASSERT_OK(sch.ComputeAt(*sch.GetBlock("B"), io[0]));
  auto bl = *sch.GetLoops(*sch.GetBlock("B"));
  ASSERT_EQ(bl.size(), 3u);  // i_0, ax0 (4), ax1 (8)
  EXPECT_SAME(sch);
  ExpectReplays(sch);
}

TEST(ComputeAtTest, Misuse) {
  Schedule sch = Make(kTwoNests, "two");
  auto bl = *sch.GetLoops(*sch.GetBlock("B"));
  EXPECT_ERROR(sch.ComputeAt(*sch.GetBlock("C"), bl[0]), "writes the function parameter C");
  EXPECT_ERROR(sch.ComputeAt(*sch.GetBlock("B"), bl[0]), "is already under loop i");
  Schedule mm = Make(kMatmulRelu, "mm_relu");
  auto cl = *mm.GetLoops(*mm.GetBlock("C"));
  auto rl = *mm.GetLoops(*mm.GetBlock("R"));
  EXPECT_ERROR(mm.ReverseComputeAt(*mm.GetBlock("R"), cl[2]), "is not complete within loop k");
  EXPECT_ERROR(mm.ReverseComputeAt(*mm.GetBlock("C"), rl[0]), "is a reduction block");
}

TEST(ReverseComputeAtTest, ReluUnderMatmulRow) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  auto cl = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_OK(sch.ReverseComputeAt(*sch.GetBlock("R"), cl[1]));
  EXPECT_EQ(sch.GetLoops(*sch.GetBlock("R"))->size(), 4u);  // i, j, then unit loops ax0, ax1
  EXPECT_SAME(sch);
  ExpectReplays(sch);
}

TEST(DecomposeReductionTest, InitHoisted) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  BlockRV c = *sch.GetBlock("C");
  auto cl = *sch.GetLoops(c);
  Result<BlockRV> init = sch.DecomposeReduction(c, cl[2]);
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  EXPECT_EQ(*sch.BlockName(*init), "C_init");
  EXPECT_EQ(As<BlockRealizeNode>(sched::FindBlock(sch.func()->body, "C").stmt)->block.init, nullptr);
  EXPECT_SAME(sch);
  ExpectReplays(sch);
  EXPECT_ERROR(sch.DecomposeReduction(c, cl[2]).status(), "has no init");
}

TEST(DecomposeReductionTest, Misuse) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  BlockRV c = *sch.GetBlock("C");
  auto cl = *sch.GetLoops(c);
  auto rl = *sch.GetLoops(*sch.GetBlock("R"));
  EXPECT_ERROR(sch.DecomposeReduction(c, rl[0]).status(), "is not one of its loops");
  ASSERT_OK(sch.Reorder({cl[2], cl[0]}));
  EXPECT_ERROR(sch.DecomposeReduction(c, cl[0]).status(), "depends on a loop outside i");
}

TEST(CacheTest, CacheReadThenComputeAt) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  BlockRV c = *sch.GetBlock("C");
  Result<BlockRV> a_local = sch.CacheRead(c, 0, "local");
  ASSERT_TRUE(a_local.ok()) << a_local.status().ToString();
  EXPECT_EQ(*sch.BlockName(*a_local), "A_local");
  EXPECT_SAME(sch);
  auto cl = *sch.GetLoops(c);
  ASSERT_OK(sch.ComputeAt(*a_local, cl[0]));
  EXPECT_SAME(sch);
  ExpectReplays(sch);
  EXPECT_ERROR(sch.CacheRead(c, 7, "local").status(), "index 7 is out of range");
}

TEST(CacheTest, CacheWriteThenReverseComputeAt) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  BlockRV r = *sch.GetBlock("R");
  Result<BlockRV> z_local = sch.CacheWrite(r, 0, "local");
  ASSERT_TRUE(z_local.ok()) << z_local.status().ToString();
  EXPECT_SAME(sch);
  auto rl = *sch.GetLoops(r);
  ASSERT_OK(sch.ReverseComputeAt(*z_local, rl[0]));
  EXPECT_SAME(sch);
  ExpectReplays(sch);
}

TEST(TransformLayoutTest, TransposeIntermediate) {
  Schedule sch = Make(kTwoNests, "two");
  Var i = MakeVar("i"), j = MakeVar("j");
  ASSERT_OK(sch.TransformLayout("Bt", IndexMap{{i, j}, {PrimExpr(j), PrimExpr(i)}}));
  EXPECT_SAME(sch);
  ExpectReplays(sch);
  EXPECT_NE(sch.trace().ToString().find("sch.transform_layout(\"Bt\", lambda i, j: (j, i))"), std::string::npos)
      << sch.trace().ToString();
}

TEST(TransformLayoutTest, PackWeightAndMisuse) {
  Schedule sch = Make(kMatmulRelu, "mm_relu");
  Var k = MakeVar("k"), n = MakeVar("n");
  PrimExpr pk = MakeBinary(TirKind::kFloorDiv, PrimExpr(n), PrimExpr(16));
  PrimExpr pn = MakeBinary(TirKind::kFloorMod, PrimExpr(n), PrimExpr(16));
  EXPECT_ERROR(sch.TransformLayout("B", IndexMap{{k, n}, {PrimExpr(k)}}), "not injective");
  EXPECT_ERROR(sch.TransformLayout("B", IndexMap{{k}, {PrimExpr(k)}}), "has 2 dimensions");
  EXPECT_ERROR(sch.TransformLayout("nope", IndexMap{{k}, {PrimExpr(k)}}), "no buffer named nope");
  ASSERT_OK(sch.TransformLayout("B", IndexMap{{k, n}, {pk, PrimExpr(k), pn}}));
  Buffer b = sch.func()->BufferOf(sch.func()->params[1]);
  ASSERT_EQ(b->shape.size(), 3u);
  EXPECT_EQ(b->shape[0].as<IntImmNode>()->value, 3);
  EXPECT_EQ(b->shape[1].as<IntImmNode>()->value, 40);
  EXPECT_EQ(b->shape[2].as<IntImmNode>()->value, 16);
  ExpectReplays(sch);
}

TEST(StorageAlignTest, PadsRows) {
  Schedule sch = Make(kTwoNests, "two");
  ASSERT_OK(sch.StorageAlign("Bt", 0, 16, 1));
  const Buffer& b = As<BlockRealizeNode>(sch.func()->body)->block.alloc_buffers[0];
  EXPECT_EQ(b->shape[1].as<IntImmNode>()->value, 17);
  EXPECT_SAME(sch);
  ExpectReplays(sch);
  EXPECT_ERROR(sch.StorageAlign("A", 0, 16, 1), "is a function parameter");
  EXPECT_ERROR(sch.StorageAlign("Bt", 1, 16, 1), "must be below the last");
}

}  // namespace
}  // namespace tir
}  // namespace kiln
