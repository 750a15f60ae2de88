#include "compiler/tir/default_schedule.h"

#include <gtest/gtest.h>

#include <memory>

#include "compiler/tir/lower_blocks.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

PrimFunc Func(Stmt body) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "f";
  f->body = std::move(body);
  return f;
}

Stmt Loop(const Var& v, PrimExpr extent, Stmt body) {
  return std::make_shared<ForNode>(v, 0, std::move(extent), ForKind::kSerial, std::move(body));
}

const ForNode* ForAt(const Stmt& s) { return As<ForNode>(s); }

TEST(DefaultScheduleTest, SymbolicElementwiseLoopIsParallel) {
  Var n = MakeVar("n"), i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n)}, DType::Float32());
  PrimFunc f = Func(Loop(i, PrimExpr(n), Store(c, Load(a, {PrimExpr(i)}), {PrimExpr(i)})));
  PrimFunc out = ApplyDefaultSchedule(f, 4);
  EXPECT_EQ(ForAt(out->body)->for_kind, ForKind::kParallel);
  // One thread: nothing to parallelize, and the loop is the one candidate
  // for vectorization.
  EXPECT_EQ(ForAt(ApplyDefaultSchedule(f, 1)->body)->for_kind, ForKind::kVectorized);
}

TEST(DefaultScheduleTest, OuterParallelInnerVectorized) {
  Var n = MakeVar("n"), i = MakeVar("i"), j = MakeVar("j");
  Buffer y = MakeBuffer("Y", {PrimExpr(n), PrimExpr(128)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(128)}, DType::Float32());
  Buffer z = MakeBuffer("Z", {PrimExpr(n), PrimExpr(128)}, DType::Float32());
  Stmt body = Store(z, Load(y, {PrimExpr(i), PrimExpr(j)}) + Load(b, {PrimExpr(j)}), {PrimExpr(i), PrimExpr(j)});
  PrimFunc out = ApplyDefaultSchedule(Func(Loop(i, PrimExpr(n), Loop(j, 128, body))), 8);
  const ForNode* fi = ForAt(out->body);
  EXPECT_EQ(fi->for_kind, ForKind::kParallel);
  EXPECT_EQ(ForAt(fi->body)->for_kind, ForKind::kVectorized);
}

TEST(DefaultScheduleTest, ReductionLoopIsNeverParallelOrVectorized) {
  // for i in 1: for j in 128: for k in 784: Y[i, j] = Y[i, j] + X[i, k] * W[j, k]
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Buffer x = MakeBuffer("X", {PrimExpr(1), PrimExpr(784)}, DType::Float32());
  Buffer w = MakeBuffer("W", {PrimExpr(128), PrimExpr(784)}, DType::Float32());
  Buffer y = MakeBuffer("Y", {PrimExpr(1), PrimExpr(128)}, DType::Float32());
  Stmt upd = Store(y, Load(y, {PrimExpr(i), PrimExpr(j)}) +
                          Load(x, {PrimExpr(i), PrimExpr(k)}) * Load(w, {PrimExpr(j), PrimExpr(k)}),
                   {PrimExpr(i), PrimExpr(j)});
  PrimFunc out = ApplyDefaultSchedule(Func(Loop(i, 1, Loop(j, 128, Loop(k, 784, upd)))), 8);
  const ForNode* fi = ForAt(out->body);
  const ForNode* fj = ForAt(fi->body);
  EXPECT_EQ(fi->for_kind, ForKind::kSerial);    // extent 1: skipped
  EXPECT_EQ(fj->for_kind, ForKind::kParallel);  // 128 x 784 iterations, independent
  // The k reduction is not parallel nor vectorized in place: the row-reduction
  // schedule (reduce_schedule.h) gives it lane accumulators (784 = 12 * 64 +
  // a tail of 16).
  const auto* red = As<SeqStmtNode>(fj->body);
  ASSERT_NE(red, nullptr);
  EXPECT_NE(As<AllocateNode>(red->seq.front()), nullptr);
  EXPECT_EQ(ForAt(red->seq.back())->for_kind, ForKind::kSerial);  // the tail

  // for k in 1000: for j in 100: S[j] = S[j] + A[k, j]: k is a reduction.
  Var k2 = MakeVar("k"), j2 = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(1000), PrimExpr(100)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(100)}, DType::Float32());
  Stmt acc = Store(s, Load(s, {PrimExpr(j2)}) + Load(a, {PrimExpr(k2), PrimExpr(j2)}), {PrimExpr(j2)});
  PrimFunc out2 = ApplyDefaultSchedule(Func(Loop(k2, 1000, Loop(j2, 100, acc))), 8);
  EXPECT_EQ(ForAt(out2->body)->for_kind, ForKind::kSerial);
  EXPECT_EQ(ForAt(ForAt(out2->body)->body)->for_kind, ForKind::kVectorized);
}

TEST(DefaultScheduleTest, SmallLoopsStaySerial) {
  Var i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(2)}, DType::Float32());
  PrimFunc f = Func(Loop(i, 2, Store(a, FloatImm(DType::Float32(), 1), {PrimExpr(i)})));
  EXPECT_EQ(ApplyDefaultSchedule(f, 8), f);  // unchanged: same node

  Var i2 = MakeVar("i");
  Buffer b = MakeBuffer("B", {PrimExpr(64)}, DType::Float32());
  PrimFunc g = Func(Loop(i2, 64, Store(b, FloatImm(DType::Float32(), 1), {PrimExpr(i2)})));
  EXPECT_EQ(ForAt(ApplyDefaultSchedule(g, 8)->body)->for_kind, ForKind::kVectorized);  // too little work to parallelize
}

TEST(DefaultScheduleTest, MatmulNestGetsTheMicroKernel) {
  // for i, j, k: if k == 0: C[i, j] = 0; C[i, j] = C[i, j] + A[i, k] * B[k, j]
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), ij), nullptr);
  Stmt upd = Store(c, Load(c, ij) + Load(a, {PrimExpr(i), PrimExpr(k)}) * Load(b, {PrimExpr(k), PrimExpr(j)}), ij);
  PrimFunc out = ApplyDefaultSchedule(Func(Loop(i, 64, Loop(j, 64, Loop(k, 64, Seq({init, upd}))))), 2);
  // One loop over 11 row tiles of 6 x 64 (the last of 4 rows), parallel
  // (64^3 multiply-adds; N >= 64 takes the 6 x 64 register tile).
  const ForNode* tiles = ForAt(out->body);
  ASSERT_NE(tiles, nullptr);
  EXPECT_EQ(tiles->for_kind, ForKind::kParallel);
  ASSERT_NE(tiles->extent.as<IntImmNode>(), nullptr);
  EXPECT_EQ(tiles->extent.as<IntImmNode>()->value, 11);
}

TEST(DefaultScheduleTest, ShiftedAccessBlocksParallelism) {
  // for i in n: A[i] = A[i - 1] + 1 carries a dependence.
  Var n = MakeVar("n"), i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Stmt body = Store(a, Load(a, {PrimExpr(i) - 1}) + FloatImm(DType::Float32(), 1), {PrimExpr(i)});
  PrimFunc f = Func(std::make_shared<ForNode>(i, 1, PrimExpr(n) - 1, ForKind::kSerial, body));
  EXPECT_EQ(ApplyDefaultSchedule(f, 8), f);
}


TEST(DefaultScheduleTest, RowOffsetStoreIsVectorized) {
  // for y in h: for x in w: Y[y * w + x] = A[y, x] (a flat index split
  // into rows and columns): unit stride in x, vectorized.
  Var h = MakeVar("h"), w = MakeVar("w"), y = MakeVar("y"), x = MakeVar("x");
  Buffer a = MakeBuffer("A", {PrimExpr(h), PrimExpr(w)}, DType::Float32());
  Buffer out = MakeBuffer("Y", {PrimExpr(h) * PrimExpr(w)}, DType::Float32());
  PrimExpr at = PrimExpr(y) * PrimExpr(w) + PrimExpr(x);
  Stmt body = Store(out, Load(a, {PrimExpr(y), PrimExpr(x)}), {at});
  PrimFunc f = Func(Loop(y, PrimExpr(h), Loop(x, PrimExpr(w), body)));
  // The scheduled functions are kept alive while their loops are read.
  PrimFunc scheduled = ApplyDefaultSchedule(f, 1);
  const ForNode* fy = ForAt(scheduled->body);
  EXPECT_EQ(fy->for_kind, ForKind::kSerial);
  EXPECT_EQ(ForAt(fy->body)->for_kind, ForKind::kVectorized);
  // Y[y * w + x] and Y[y * w + x + 1] (two offsets): iterations overlap.
  Stmt two = Store(out, Load(out, {at + 1}), {at});
  PrimFunc scheduled_two = ApplyDefaultSchedule(Func(Loop(y, PrimExpr(h), Loop(x, PrimExpr(w), two))), 1);
  const ForNode* ty = ForAt(scheduled_two->body);
  EXPECT_NE(ForAt(ty->body)->for_kind, ForKind::kVectorized);
}

TEST(DefaultScheduleTest, OffsetVaryingInsideTheLoopBlocksParallelism) {
  // for i in n: for j in 64: Y[j + i] = A[i, j]: iterations (i, j + 1) and
  // (i + 1, j) write the same element; i is not parallel.
  Var n = MakeVar("n"), i = MakeVar("i"), j = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(n), PrimExpr(64)}, DType::Float32());
  Buffer out = MakeBuffer("Y", {PrimExpr(n) + 64}, DType::Float32());
  Stmt body = Store(out, Load(a, {PrimExpr(i), PrimExpr(j)}), {PrimExpr(j) + PrimExpr(i)});
  PrimFunc scheduled = ApplyDefaultSchedule(Func(Loop(i, PrimExpr(n), Loop(j, 64, body))), 8);
  const ForNode* fi = ForAt(scheduled->body);
  EXPECT_NE(fi->for_kind, ForKind::kParallel);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
