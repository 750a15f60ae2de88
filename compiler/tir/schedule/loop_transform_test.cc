// get_block / get_loops, split, fuse, reorder, loop kinds and tile: the
// scheduled function computes the same numbers, and each misuse is refused.
#include <gtest/gtest.h>

#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/schedule/tree.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

const char* kMatmul = R"(@T.prim_func
def matmul(A: T.Buffer((32, 40), "float32"), B: T.Buffer((40, 48), "float32"), C: T.Buffer((32, 48), "float32")):
    for i, j, k in T.grid(32, 48, 40):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
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

TEST(ScheduleLookupTest, GetBlockLoopsAndChildren) {
  Schedule sch = Make(kTwoNests, "two");
  Result<BlockRV> c = sch.GetBlock("C");
  ASSERT_TRUE(c.ok());
  Result<std::vector<LoopRV>> loops = sch.GetLoops(*c);
  ASSERT_TRUE(loops.ok());
  EXPECT_EQ(loops->size(), 2u);
  Result<std::vector<BlockRV>> kids = sch.GetChildBlocks((*loops)[0]);
  ASSERT_TRUE(kids.ok());
  ASSERT_EQ(kids->size(), 1u);
  EXPECT_EQ(*sch.BlockName((*kids)[0]), "C");
  EXPECT_ERROR(sch.GetBlock("nope").status(), "no block named \"nope\"");
  EXPECT_ERROR(sch.GetBlock("root").status(), "root block");
}

TEST(ScheduleLookupTest, NotBlockForm) {
  PrimFunc f = ParseFunc(R"(@T.prim_func
def plain(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = T.float32(0)
)", "plain");
  EXPECT_ERROR(Schedule::Create(f).status(), "not in block form");
}

TEST(SplitTest, DividingAndInferredFactor) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  Result<std::vector<LoopRV>> r = sch.Split(loops[1], {-1, 16});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(sch.GetLoops(*sch.GetBlock("C"))->size(), 4u);
  EXPECT_SAME(sch);
}

TEST(SplitTest, NonDividingFactorAddsPredicate) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Split(loops[2], {-1, 16}).ok());  // 40 = 3 * 16 - 8
  ASSERT_TRUE(sch.Split(loops[0], {5, 7}).ok());   // 35 > 32
  const auto* br = As<BlockRealizeNode>(sched::FindBlock(sch.func()->body, "C").stmt);
  EXPECT_FALSE(sched::IsConstTrue(br->predicate));
  EXPECT_SAME(sch);
}

TEST(SplitTest, Misuse) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_ERROR(sch.Split(loops[2], {-1, -1}).status(), "at most one factor may be None");
  EXPECT_ERROR(sch.Split(loops[2], {0, 40}).status(), "factor 0 is not positive");
  EXPECT_ERROR(sch.Split(loops[2], {2, 8}).status(), "factors multiply to 16, less than the extent 40");
  EXPECT_ERROR(sch.Split(loops[2], {40}).status(), "at least two factors");
  EXPECT_TRUE(sch.trace().instructions().size() == 2u);  // get_block, get_loops only
  ASSERT_TRUE(sch.Split(loops[2], {5, 8}).ok());
  EXPECT_ERROR(sch.Split(loops[2], {5, 8}).status(), "no longer exists");
}

TEST(SplitTest, SymbolicExtentNeedsInferredFactor) {
  Schedule sch = Make(R"(@T.prim_func
def scale(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        with T.block("C"):
            vi = T.axis.spatial(n, i)
            C[vi] = A[vi] * T.float32(2)
)", "scale");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_ERROR(sch.Split(loops[0], {4, 8}).status(), "symbolic extent n");
  ASSERT_TRUE(sch.Split(loops[0], {-1, 8}).ok());
  const auto* br = As<BlockRealizeNode>(sched::FindBlock(sch.func()->body, "C").stmt);
  EXPECT_FALSE(sched::IsConstTrue(br->predicate));
}

TEST(FuseTest, FusesAdjacentLoops) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  Result<LoopRV> f = sch.Fuse({loops[0], loops[1]});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(sch.GetLoops(*sch.GetBlock("C"))->size(), 2u);
  EXPECT_SAME(sch);
}

TEST(FuseTest, Misuse) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_ERROR(sch.Fuse({loops[0], loops[2]}).status(), "are not adjacent");
  EXPECT_ERROR(sch.Fuse({loops[0]}).status(), "at least two loops");
  ASSERT_TRUE(sch.Parallel(loops[0]).ok());
  EXPECT_ERROR(sch.Fuse({loops[0], loops[1]}).status(), "is parallel");
}

TEST(ReorderTest, ReductionLoopOutermost) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Reorder({loops[2], loops[0]}).ok());
  const auto* outer = As<ForNode>(As<BlockRealizeNode>(sch.func()->body)->block.body);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->loop_var->name, "k");
  EXPECT_SAME(sch);
}

TEST(ReorderTest, Misuse) {
  Schedule sch = Make(kTwoNests, "two");
  auto lb = *sch.GetLoops(*sch.GetBlock("B"));
  auto lc = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_ERROR(sch.Reorder({lb[0], lc[1]}), "not in one perfect loop nest");
  EXPECT_ERROR(sch.Reorder({lb[0], lb[0]}), "given twice");
}

TEST(LoopKindTest, ParallelVectorizeUnroll) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  EXPECT_ERROR(sch.Vectorize(loops[2]), "reduction iteration variable vk of block \"C\"");
  EXPECT_ERROR(sch.Parallel(loops[2]), "cannot parallelize loop k");
  ASSERT_TRUE(sch.Reorder({loops[2], loops[1]}).ok());
  ASSERT_TRUE(sch.Parallel(loops[0]).ok());
  EXPECT_ERROR(sch.Parallel(loops[0]), "already parallel");
  ASSERT_TRUE(sch.Vectorize(loops[1]).ok());
  ASSERT_TRUE(sch.Unroll(loops[2]).ok());
  EXPECT_SAME(sch);
}

TEST(TileTest, TilesTwoLoops) {
  Schedule sch = Make(kMatmul, "matmul");
  auto loops = *sch.GetLoops(*sch.GetBlock("C"));
  Result<std::vector<LoopRV>> t = sch.Tile({loops[0], loops[1]}, {8, 16});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 4u);
  auto now = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(now.size(), 5u);
  EXPECT_SAME(sch);
  // A refused tile leaves the schedule as it was.
  size_t n = sch.trace().instructions().size();
  PrimFunc before = sch.func();
  EXPECT_ERROR(sch.Tile({(*t)[2], now[4]}, {4, 0}).status(), "tile");
  EXPECT_EQ(sch.func(), before);
  EXPECT_EQ(sch.trace().instructions().size(), n);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
