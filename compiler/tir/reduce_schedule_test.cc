// ScheduleRowReductions: the structure of each step on hand-built TIR (what
// fuses, sinks and vectorizes, and what must not), and the numbers of
// compiled softmax, layer_norm, rms_norm and row reductions of many shapes
// (static and symbolic rows, 1 and 2 threads) against double references,
// through the driver and the VM.
#include "compiler/tir/reduce_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/text/text.h"
#include "compiler/tir/matmul_schedule.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

// ---------------------------------------------------------------- structure

PrimExpr E(const Var& v) { return PrimExpr(std::static_pointer_cast<const PrimExprNode>(v)); }

Stmt Loop(const Var& v, PrimExpr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return std::make_shared<ForNode>(v, 0, std::move(extent), kind, std::move(body));
}

PrimFunc Func(Stmt body, std::vector<Buffer> params) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "f";
  for (const Buffer& b : params) {
    Var h = MakeVar(b->name + "_handle", HandleType());
    f->params.push_back(h);
    f->buffer_map.push_back({h, b});
  }
  f->body = std::move(body);
  return f;
}

// Allocations of the lane tree's halving steps ("<name>_h<lanes>") are
// counted apart from the others.
bool IsTreeStep(const std::string& n) {
  size_t p = n.rfind("_h");
  if (p == std::string::npos || p + 2 >= n.size()) return false;
  return n.find_first_not_of("0123456789", p + 2) == std::string::npos;
}

struct Census : StmtExprVisitor {
  int loops = 0, parallel = 0, vectorized = 0, allocs = 0, top_loops = 0, tree_steps = 0;
  std::vector<std::vector<PrimExpr>> alloc_shapes;
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      ++loops;
      parallel += f->for_kind == ForKind::kParallel;
      vectorized += f->for_kind == ForKind::kVectorized;
    }
    if (const auto* a = As<AllocateNode>(s)) {
      if (IsTreeStep(a->buffer->name)) {
        ++tree_steps;
      } else {
        ++allocs;
        alloc_shapes.push_back(a->buffer->shape);
      }
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

Census Count(const Stmt& s) {
  Census c;
  c.VisitStmt(s);
  return c;
}

// Loops reached from `s` without crossing a loop.
int TopLoops(const Stmt& s) {
  if (!s) return 0;
  if (As<ForNode>(s)) return 1;
  if (const auto* a = As<AllocateNode>(s)) return TopLoops(a->body);
  if (const auto* seq = As<SeqStmtNode>(s)) {
    int n = 0;
    for (const Stmt& c : seq->seq) n += TopLoops(c);
    return n;
  }
  return 0;
}

// for i: for k: T[i, k] = A[i, k] * 2    (parallel)
// for i: for k: B[i, k] = T[i, t(k)] + 1 (parallel), t(k) = k or, with
// `transpose`, T is read at [k, i] instead.
Stmt TwoStages(const Buffer& a, const Buffer& t, const Buffer& b, PrimExpr rows, bool transpose) {
  Var i = MakeVar("i"), k = MakeVar("k"), i2 = MakeVar("i2"), k2 = MakeVar("k2");
  DType f32 = DType::Float32();
  Stmt s1 = Loop(i, rows, Loop(k, 64, Store(t, Load(a, {E(i), E(k)}) * FloatImm(f32, 2), {E(i), E(k)}), ForKind::kVectorized),
                 ForKind::kParallel);
  std::vector<PrimExpr> read = transpose ? std::vector<PrimExpr>{E(k2), E(i2)} : std::vector<PrimExpr>{E(i2), E(k2)};
  Stmt s2 = Loop(i2, rows,
                 Loop(k2, 64, Store(b, Load(t, read) + FloatImm(f32, 1), {E(i2), E(k2)}), ForKind::kVectorized),
                 ForKind::kParallel);
  return std::make_shared<AllocateNode>(t, Seq({s1, s2}));
}

TEST(ReduceScheduleTest, RowStagesFuseAndTheIntermediateBecomesOneRow) {
  Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer t = MakeBuffer("T", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Stmt body = TwoStages(a, t, b, 64, false);
  Stmt fused = FuseRowLoops(body);
  EXPECT_EQ(TopLoops(body), 2);
  EXPECT_EQ(TopLoops(fused), 1);
  Census c = Count(fused);
  EXPECT_EQ(c.parallel, 1);
  // The inner loops (elementwise, same extent) fuse too and stay vectorized.
  EXPECT_EQ(c.loops, 2);
  EXPECT_EQ(c.vectorized, 1);
  Stmt sunk = SinkBuffers(fused);
  Census s = Count(sunk);
  ASSERT_EQ(s.allocs, 1);
  // Inner loops fused too, so T is used by one innermost loop: one element.
  ASSERT_EQ(s.alloc_shapes[0].size(), 1u);
  ASSERT_NE(s.alloc_shapes[0][0].as<IntImmNode>(), nullptr);
  EXPECT_LE(s.alloc_shapes[0][0].as<IntImmNode>()->value, 64);
  EXPECT_EQ(As<AllocateNode>(sunk), nullptr);  // moved inside the row loop
}

TEST(ReduceScheduleTest, StagesThatReadOtherRowsDoNotFuse) {
  Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer t = MakeBuffer("T", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Stmt body = TwoStages(a, t, b, 64, true);
  EXPECT_EQ(FuseRowLoops(body), body);
  EXPECT_EQ(SinkBuffers(body), body);  // two loops use T
  // Different extents do not fuse either.
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Stmt l1 = Loop(i, 64, Loop(k, 64, Store(t, FloatImm(DType::Float32(), 0), {E(i), E(k)})));
  Stmt l2 = Loop(j, 32, Loop(k, 64, Store(b, Load(t, {E(j), E(k)}), {E(j), E(k)})));
  Stmt two = Seq({l1, l2});
  EXPECT_EQ(FuseRowLoops(two), two);
}

TEST(ReduceScheduleTest, UnitLoopsFuseHoweverTheyIndex) {
  // A pinned batch of 1: the first stage stores T[b, i, k], the second sums
  // T[0, i, k] over k into S[b, i]. The unit loops fuse (each body runs once
  // either way), then the row loops inside them, and T sinks to one row.
  // Loops of extent 2 indexed that way stay apart (their iterations do not
  // touch disjoint slices of T), and so do unit loops around elementwise
  // stages only (no reduction: a conv's epilogue chain, which
  // InlineElementwise stores from the conv's tiles later).
  for (int64_t batch : {1, 2}) {
    for (bool reduce : {true, false}) {
      Buffer a = MakeBuffer("A", {PrimExpr(batch), PrimExpr(64), PrimExpr(64)}, DType::Float32());
      Buffer t = MakeBuffer("T", {PrimExpr(batch), PrimExpr(64), PrimExpr(64)}, DType::Float32());
      Buffer b = MakeBuffer("B", {PrimExpr(batch), PrimExpr(64), PrimExpr(64)}, DType::Float32());
      Buffer sum = MakeBuffer("S", {PrimExpr(batch), PrimExpr(64)}, DType::Float32());
      Var b1 = MakeVar("b1"), b2 = MakeVar("b2"), i = MakeVar("i"), k = MakeVar("k"), i2 = MakeVar("i2"), k2 = MakeVar("k2");
      DType f32 = DType::Float32();
      Stmt s1 = Loop(b1, batch,
                     Loop(i, 64,
                          Loop(k, 64, Store(t, Load(a, {E(b1), E(i), E(k)}) * FloatImm(f32, 2), {E(b1), E(i), E(k)}),
                               ForKind::kVectorized),
                          ForKind::kParallel));
      PrimExpr row = Load(t, {PrimExpr(0), E(i2), E(k2)});
      Stmt second = reduce ? Store(sum, Load(sum, {E(b2), E(i2)}) + row, {E(b2), E(i2)})
                           : Store(b, row + FloatImm(f32, 1), {E(b2), E(i2), E(k2)});
      Stmt s2 = Loop(b2, batch, Loop(i2, 64, Loop(k2, 64, second, reduce ? ForKind::kSerial : ForKind::kVectorized),
                                     ForKind::kParallel));
      Stmt body = std::make_shared<AllocateNode>(t, Seq({s1, s2}));
      Stmt fused = FuseRowLoops(body);
      if (batch == 2 || !reduce) {
        EXPECT_EQ(fused, body) << batch << (reduce ? " reduce" : " elementwise");
        continue;
      }
      EXPECT_EQ(TopLoops(fused), 1);
      Census c = Count(fused);
      EXPECT_EQ(c.parallel, 1);
      EXPECT_EQ(c.loops, 4);  // unit, rows, the stage's columns, the sum's
      Census sunk = Count(SinkBuffers(fused));
      ASSERT_EQ(sunk.allocs, 1);
      EXPECT_LE(sunk.alloc_shapes[0].size(), 1u);  // one row of T
    }
  }
}

TEST(ReduceScheduleTest, SymbolicRowsFuseAndStayParallel) {
  Var n = MakeVar("n");
  Buffer a = MakeBuffer("A", {E(n), PrimExpr(64)}, DType::Float32());
  Buffer t = MakeBuffer("T", {E(n), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {E(n), PrimExpr(64)}, DType::Float32());
  Stmt out = SinkBuffers(FuseRowLoops(TwoStages(a, t, b, E(n), false)));
  EXPECT_EQ(TopLoops(out), 1);
  EXPECT_EQ(As<ForNode>(out)->for_kind, ForKind::kParallel);
  Census c = Count(out);
  ASSERT_EQ(c.allocs, 1);
  ASSERT_NE(c.alloc_shapes[0][0].as<IntImmNode>(), nullptr);  // static row, no n
}

TEST(ReduceScheduleTest, RowsUnderTwoSymbolicLoopsSinkThroughBoth) {
  // T[n, s, 64] used in the fused nest for i < n: for j < s: (two stages
  // over k): its slice in the i loop is [s, 64] (symbolic, cannot be
  // allocated there), its row in the j loop 64 floats; softmax's exp buffer
  // at a symbolic batch and sequence (ppocrv4_rec's CTC head) is this case.
  Var n = MakeVar("n"), sv = MakeVar("s");
  std::vector<PrimExpr> shape = {E(n), E(sv), PrimExpr(64)};
  Buffer a = MakeBuffer("A", shape, DType::Float32());
  Buffer t = MakeBuffer("T", shape, DType::Float32());
  Buffer b = MakeBuffer("B", shape, DType::Float32());
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k"), k2 = MakeVar("k2");
  DType f32 = DType::Float32();
  Stmt s1 = Loop(k, 64, Store(t, Load(a, {E(i), E(j), E(k)}) * FloatImm(f32, 2), {E(i), E(j), E(k)}), ForKind::kVectorized);
  Stmt s2 = Loop(k2, 64, Store(b, Load(t, {E(i), E(j), E(k2)}) + FloatImm(f32, 1), {E(i), E(j), E(k2)}),
                 ForKind::kVectorized);
  Stmt body = std::make_shared<AllocateNode>(t, Loop(i, E(n), Loop(j, E(sv), Seq({s1, s2}), ForKind::kParallel)));
  Stmt out = SinkBuffers(body);
  EXPECT_EQ(As<AllocateNode>(out), nullptr);  // no longer around the nest
  Census c = Count(out);
  ASSERT_EQ(c.allocs, 1);
  ASSERT_EQ(c.alloc_shapes[0].size(), 1u);
  ASSERT_NE(c.alloc_shapes[0][0].as<IntImmNode>(), nullptr);
  EXPECT_EQ(c.alloc_shapes[0][0].as<IntImmNode>()->value, 64);
  // A row too large for a row-local buffer stays where it is.
  const int64_t cols = kMaxSunkBufferBytes / 4 + 1;
  std::vector<PrimExpr> big = {E(n), E(sv), PrimExpr(cols)};
  Buffer tb = MakeBuffer("T", big, DType::Float32());
  Buffer ab = MakeBuffer("A", big, DType::Float32());
  Buffer bb = MakeBuffer("B", big, DType::Float32());
  Stmt w = Loop(k, cols, Store(tb, Load(ab, {E(i), E(j), E(k)}), {E(i), E(j), E(k)}), ForKind::kVectorized);
  Stmt r = Loop(k2, cols, Store(bb, Load(tb, {E(i), E(j), E(k2)}), {E(i), E(j), E(k2)}), ForKind::kVectorized);
  Stmt kept = std::make_shared<AllocateNode>(tb, Loop(i, E(n), Loop(j, E(sv), Seq({w, r}), ForKind::kParallel)));
  EXPECT_EQ(SinkBuffers(kept), kept);
}

// for i: for k: if k == 0: S[i] = 0; S[i] = S[i] + A[i, k] (k < extent)
Stmt RowSum(const Buffer& a, const Buffer& s, PrimExpr rows, PrimExpr extent) {
  Var i = MakeVar("i"), k = MakeVar("k");
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, E(k), 0),
                                               Store(s, FloatImm(DType::Float32(), 0), {E(i)}), nullptr);
  Stmt upd = Store(s, Load(s, {E(i)}) + Load(a, {E(i), E(k)}), {E(i)});
  return Loop(i, std::move(rows), Loop(k, std::move(extent), Seq({init, upd})), ForKind::kParallel);
}

TEST(ReduceScheduleTest, RowReductionsGetVectorAccumulatorsAndATail) {
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(100)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(8)}, DType::Float32());
  Stmt out = VectorizeReductions(RowSum(a, s, 8, 100));
  Census c = Count(out);
  EXPECT_EQ(c.allocs, 1);                         // the lane accumulators
  EXPECT_GE(c.vectorized, 3);                     // identity, block, tree steps
  EXPECT_EQ(c.alloc_shapes[0][0].as<IntImmNode>()->value, 32);  // 100 / 2 >= 32 lanes
  EXPECT_EQ(c.tree_steps, 5);                     // 32 -> 16 -> 8 -> 4 -> 2 -> 1, each its own buffer
  // 100 = 3 * 32 + 4: a tail loop of 4 remains (the last top-level loop).
  const auto* row = As<ForNode>(out);
  ASSERT_NE(row, nullptr);
  const auto* seq = As<SeqStmtNode>(row->body);
  ASSERT_NE(seq, nullptr);
  const auto* tail = As<ForNode>(seq->seq.back());
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->extent.as<IntImmNode>()->value, 4);

  // Symbolic extent: blocks and tail computed from it; the tail's 16-lane
  // chunks go into the first lanes before the tree (one more vectorized
  // loop), and the last m % 16 elements as one 16-lane window ending at the
  // row's end (the lanes before them masked; two more vectorized loops: the
  // lane indices and the window) where that window is in bounds, else in a
  // scalar loop after the tree.
  Var m = MakeVar("m");
  Buffer a2 = MakeBuffer("A", {PrimExpr(8), E(m)}, DType::Float32());
  Stmt out2 = VectorizeReductions(RowSum(a2, s, 8, E(m)));
  Census c2 = Count(out2);
  EXPECT_EQ(c2.alloc_shapes.at(0)[0].as<IntImmNode>()->value, 64);
  EXPECT_EQ(c2.vectorized, 9);  // identity, block, tail chunks, lane indices, window, tree steps 32 16 8 4
  const auto* seq2 = As<SeqStmtNode>(As<ForNode>(out2)->body);
  ASSERT_NE(seq2, nullptr);
  const auto* guarded = As<IfThenElseNode>(seq2->seq.back());
  ASSERT_NE(guarded, nullptr);
  EXPECT_NE(guarded->cond.as<NotNode>(), nullptr);  // not where the window ran
  const auto* rest = As<ForNode>(guarded->then_case);
  ASSERT_NE(rest, nullptr);
  ASSERT_NE(rest->extent.as<FloorModNode>(), nullptr);
  EXPECT_EQ(rest->extent.as<FloorModNode>()->b.as<IntImmNode>()->value, 16);
  // The window: 16 lanes, each a select of the element or the identity.
  struct Windows : StmtExprVisitor {
    int loops = 0, selects = 0;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st); f != nullptr && f->for_kind == ForKind::kVectorized) {
        struct Sel : StmtExprVisitor {
          int n = 0;
          void VisitExpr(const PrimExpr& e) override {
            n += e.as<SelectNode>() != nullptr;
            StmtExprVisitor::VisitExpr(e);
          }
        } sel;
        sel.VisitStmt(f->body);
        if (sel.n > 0) {
          ++loops;
          selects += sel.n;
          const auto* ext = f->extent.as<IntImmNode>();
          EXPECT_TRUE(ext != nullptr && ext->value == 16);
        }
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } windows;
  windows.VisitStmt(out2);
  EXPECT_EQ(windows.loops, 1);
  EXPECT_EQ(windows.selects, 1);
  // A static extent has no window.
  Windows none;
  none.VisitStmt(out);
  EXPECT_EQ(none.loops, 0);
}

TEST(ReduceScheduleTest, MatmulMicroKernelsAreLeftAsTheyAre) {
  // for i, j, k: if k == 0: C[i, j] = 0; C[i, j] += A[i, k] * B[k, j]
  for (int64_t m : {1, 64}) {
    Buffer a = MakeBuffer("A", {PrimExpr(m), PrimExpr(784)}, DType::Float32());
    Buffer b = MakeBuffer("B", {PrimExpr(784), PrimExpr(128)}, DType::Float32());
    Buffer c = MakeBuffer("C", {PrimExpr(m), PrimExpr(128)}, DType::Float32());
    Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
    std::vector<PrimExpr> ij = {E(i), E(j)};
    Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, E(k), 0),
                                                 Store(c, FloatImm(DType::Float32(), 0), ij), nullptr);
    Stmt upd = Store(c, Load(c, ij) + Load(a, {E(i), E(k)}) * Load(b, {E(k), E(j)}), ij);
    PrimFunc f = Func(Loop(i, m, Loop(j, 128, Loop(k, 784, Seq({init, upd})))), {a, b, c});
    for (int threads : {1, 2}) {
      PrimFunc scheduled = ScheduleMatmuls(f, threads);
      ASSERT_NE(scheduled, f);
      EXPECT_EQ(ScheduleRowReductions(scheduled, threads), scheduled);
    }
  }
}

TEST(ReduceScheduleTest, UnrolledLoopsFuseOnlyWithUnrolledLoops) {
  Buffer t = MakeBuffer("T", {PrimExpr(8)}, DType::Float32());
  Buffer u = MakeBuffer("U", {PrimExpr(8)}, DType::Float32());
  Var i = MakeVar("i"), j = MakeVar("j");
  Stmt a = Loop(i, 8, Store(t, FloatImm(DType::Float32(), 0), {E(i)}), ForKind::kUnrolled);
  Stmt b = Loop(j, 8, Store(u, Load(t, {E(j)}), {E(j)}), ForKind::kVectorized);
  Stmt mixed = Seq({a, b});
  EXPECT_EQ(FuseRowLoops(mixed), mixed);
  Stmt b_unrolled = Loop(j, 8, Store(u, Load(t, {E(j)}), {E(j)}), ForKind::kUnrolled);
  Stmt both = FuseRowLoops(Seq({a, b_unrolled}));
  ASSERT_NE(As<ForNode>(both), nullptr);
  EXPECT_EQ(As<ForNode>(both)->for_kind, ForKind::kUnrolled);
}

TEST(ReduceScheduleTest, LongRowsOutsideParallelLoopsSplitAcrossThreads) {
  Buffer a = MakeBuffer("A", {PrimExpr(1), PrimExpr(100000)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(1)}, DType::Float32());
  Var i = MakeVar("i"), k = MakeVar("k");
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, E(k), 0),
                                               Store(s, FloatImm(DType::Float32(), 0), {E(i)}), nullptr);
  Stmt upd = Store(s, Load(s, {E(i)}) + Load(a, {E(i), E(k)}), {E(i)});
  Stmt one_row = Loop(i, 1, Loop(k, 100000, Seq({init, upd})));
  Census split = Count(VectorizeReductions(one_row, 4));
  EXPECT_EQ(split.parallel, 1);
  // The 4 x kSplitChunksPerThread partial results, the lanes of each, the
  // lane indices of each chunk's window (its length is a run-time value).
  EXPECT_EQ(split.allocs, 3);
  EXPECT_EQ(split.alloc_shapes[0][0].as<IntImmNode>()->value, 4 * kSplitChunksPerThread);
  // One thread, or a row loop that is already parallel: lanes only.
  EXPECT_EQ(Count(VectorizeReductions(one_row, 1)).parallel, 0);
  Stmt par_rows = Loop(i, 1, Loop(k, 100000, Seq({init, upd})), ForKind::kParallel);
  Census inner = Count(VectorizeReductions(par_rows, 4));
  EXPECT_EQ(inner.parallel, 1);
  EXPECT_EQ(inner.allocs, 1);
}

TEST(ReduceScheduleTest, ShortOrStridedReductionsAreLeftAlone) {
  Buffer s = MakeBuffer("S", {PrimExpr(8)}, DType::Float32());
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(8)}, DType::Float32());
  Stmt short_row = RowSum(a, s, 8, 8);
  EXPECT_EQ(VectorizeReductions(short_row), short_row);
  // A column sum reads A[k, i]: k is not the last index.
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(8)}, DType::Float32());
  Var i = MakeVar("i"), k = MakeVar("k");
  Stmt col = Loop(i, 8, Loop(k, 64, Store(s, Load(s, {E(i)}) + Load(b, {E(k), E(i)}), {E(i)})));
  EXPECT_EQ(VectorizeReductions(col), col);
  // A product is not one of the reassociated reductions.
  Stmt prod = Loop(i, 8, Loop(k, 64, Store(s, Load(s, {E(i)}) * Load(b, {E(k), E(i)}), {E(i)})));
  EXPECT_EQ(VectorizeReductions(prod), prod);
}

TEST(ReduceScheduleTest, InvariantRowDivisorsBecomeOneReciprocal) {
  // for k vectorized: B[k] = A[k] / S[0]  ->  rcp = 1 / S[0]; B[k] = A[k] * rcp
  Buffer a = MakeBuffer("A", {PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(1)}, DType::Float32());
  Var k = MakeVar("k");
  auto div = [&](PrimExpr d) {
    return Loop(k, 64, Store(b, MakeBinary(TirKind::kDiv, Load(a, {E(k)}), std::move(d)), {E(k)}),
                ForKind::kVectorized);
  };
  Stmt out = HoistReciprocals(div(Load(s, {PrimExpr(0)})));
  const auto* let = As<LetStmtNode>(out);
  ASSERT_NE(let, nullptr);
  EXPECT_NE(let->value.as<DivNode>(), nullptr);
  const auto* store = As<BufferStoreNode>(As<ForNode>(let->body)->body);
  EXPECT_NE(store->value.as<MulNode>(), nullptr);
  // Constants, per-element divisors and divisors the loop writes stay.
  Stmt by_const = div(FloatImm(DType::Float32(), 3.0));
  EXPECT_EQ(HoistReciprocals(by_const), by_const);
  Stmt per_element = div(Load(a, {E(k)}));
  EXPECT_EQ(HoistReciprocals(per_element), per_element);
  Stmt written = Loop(k, 64, Store(s, MakeBinary(TirKind::kDiv, Load(a, {E(k)}), Load(s, {PrimExpr(0)})), {PrimExpr(0)}),
                      ForKind::kVectorized);
  EXPECT_EQ(HoistReciprocals(written), written);
}

TEST(ReduceScheduleTest, RoundedQuotientsKeepTheirDivision) {
  // for k vectorized: B[k] = round(A[k] / S[0]) (a quantization) stays a
  // division, as does a quotient cast to an integer type.
  Buffer a = MakeBuffer("A", {PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64)}, DType::Float32());
  Buffer q = MakeBuffer("Q", {PrimExpr(64)}, DType::Int32());
  Buffer s = MakeBuffer("S", {PrimExpr(1)}, DType::Float32());
  Var k = MakeVar("k");
  PrimExpr quot = MakeBinary(TirKind::kDiv, Load(a, {E(k)}), Load(s, {PrimExpr(0)}));
  for (const char* op : {"round", "floor", "ceil", "trunc", "nearbyint"}) {
    PrimExpr r(std::make_shared<CallNode>(DType::Float32(), op, std::vector<PrimExpr>{quot}));
    Stmt rounded = Loop(k, 64, Store(b, r, {E(k)}), ForKind::kVectorized);
    EXPECT_EQ(HoistReciprocals(rounded), rounded) << op;
  }
  Stmt cast = Loop(k, 64, Store(q, Cast(DType::Int32(), quot), {E(k)}), ForKind::kVectorized);
  EXPECT_EQ(HoistReciprocals(cast), cast);
  // The same quotient not rounded still becomes a product.
  Stmt plain = Loop(k, 64, Store(b, quot, {E(k)}), ForKind::kVectorized);
  EXPECT_NE(As<LetStmtNode>(HoistReciprocals(plain)), nullptr);
}

// ---------------------------------------------------------------- numbers

TEST(ReduceScheduleTest, DriverSoftmaxIsOneParallelRowLoop) {
  Result<IRModule> mod = text::ParseModule(
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((512, 128), dtype=\"float32\")) -> "
      "R.Tensor((512, 128), dtype=\"float32\"):\n        with R.dataflow():\n            y = R.nn.softmax(x, "
      "axis=-1)\n            R.output(y)\n        return y\n",
      "softmax.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  driver::CompileOptions options;
  options.num_threads_hint = 2;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  int prims = 0;
  for (const auto& e : lowered->entries) {
    if (!e.prim) continue;
    ++prims;
    const auto* row = As<ForNode>(e.prim->body);  // no function-level buffer left
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->for_kind, ForKind::kParallel);
    Census c = Count(e.prim->body);
    EXPECT_EQ(c.allocs, 5);  // max, exp row, sum, two lane accumulators
  }
  EXPECT_EQ(prims, 1);
}

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  return CompileAndLoad(source, options, threads);
}

enum class Op { kSoftmax, kLayerNorm, kRmsNorm, kSum, kMax, kMeanThenScale };

// main(x: (rows..., cols) [, g, b: (cols,)]) -> op(x) over the last axis;
// `sym` names a symbolic first dimension ("" for none), or with `sym_last`
// a symbolic last one (the reduced axis: run-time tails).
std::string Module(Op op, const std::vector<int64_t>& shape, const std::string& sym, bool sym_last = false) {
  std::string dims;
  std::string red_dims;
  size_t sym_dim = sym_last ? shape.size() - 1 : 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string v = (d == sym_dim && !sym.empty()) ? "\"" + sym + "\"" : std::to_string(shape[d]);
    dims += (d ? ", " : "") + v;
    if (d + 1 < shape.size()) red_dims += (d ? ", " : "") + v;
  }
  if (shape.size() == 2) red_dims += ",";
  std::string cols = "(" + (sym_last ? "\"" + sym + "\"" : std::to_string(shape.back())) + ",)";
  std::string in = "R.Tensor((" + dims + "), dtype=\"float32\")";
  std::string vec = "R.Tensor(" + cols + ", dtype=\"float32\")";
  std::string out = in, expr;
  switch (op) {
    case Op::kSoftmax:
      expr = "R.nn.softmax(x, axis=-1)";
      break;
    case Op::kLayerNorm:
      expr = "R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)";
      break;
    case Op::kRmsNorm:
      expr = "R.nn.rms_norm(x, g, axes=[-1])";
      break;
    case Op::kSum:
      expr = "R.sum(x, axis=[-1])";
      out = "R.Tensor((" + red_dims + "), dtype=\"float32\")";
      break;
    case Op::kMax:
      expr = "R.max(x, axis=[-1])";
      out = "R.Tensor((" + red_dims + "), dtype=\"float32\")";
      break;
    case Op::kMeanThenScale:
      expr = "R.multiply(x, R.mean(x, axis=[-1], keepdims=True))";
      break;
  }
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + in + ", g: " + vec + ", b: " + vec +
                    ") -> " + out + ":\n";
  if (!sym.empty()) src += "        " + sym + " = T.int64()\n";
  src += "        with R.dataflow():\n            y = " + expr + "\n            R.output(y)\n        return y\n";
  return src;
}

// The double reference, row by row.
std::vector<double> Reference(Op op, const std::vector<float>& x, const std::vector<float>& g,
                              const std::vector<float>& b, int64_t rows, int64_t cols) {
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double sum = 0, mx = -INFINITY, sq = 0;
    for (int64_t c = 0; c < cols; ++c) {
      sum += row[c];
      mx = std::max(mx, double(row[c]));
      sq += double(row[c]) * row[c];
    }
    double mean = sum / double(cols), var = 0, esum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      var += (row[c] - mean) * (row[c] - mean);
      esum += std::exp(row[c] - mx);
    }
    var /= double(cols);
    if (op == Op::kSum) out.push_back(sum);
    if (op == Op::kMax) out.push_back(mx);
    for (int64_t c = 0; c < cols && op != Op::kSum && op != Op::kMax; ++c) {
      switch (op) {
        case Op::kSoftmax:
          out.push_back(std::exp(row[c] - mx) / esum);
          break;
        case Op::kLayerNorm:
          out.push_back((row[c] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c]);
          break;
        case Op::kRmsNorm:
          out.push_back(row[c] / std::sqrt(sq / double(cols) + 1e-5) * g[c]);
          break;
        case Op::kMeanThenScale:
          out.push_back(row[c] * mean);
          break;
        default:
          break;
      }
    }
  }
  return out;
}

void RunAndCheck(const vm::Module& mod, Op op, const std::vector<int64_t>& shape);

// `run_rows`: the symbolic dimension's value (the columns with `sym_last`).
void Check(Op op, const std::vector<int64_t>& compiled_shape, const std::string& sym, int64_t run_rows, int threads,
           bool sym_last = false) {
  SCOPED_TRACE(Module(op, compiled_shape, sym, sym_last) + " rows=" + std::to_string(run_rows) +
               " threads=" + std::to_string(threads));
  auto mod = Compile(Module(op, compiled_shape, sym, sym_last), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<int64_t> shape = compiled_shape;
  if (!sym.empty()) shape[sym_last ? shape.size() - 1 : 0] = run_rows;
  RunAndCheck(*mod, op, shape);
}

// Runs `mod` (a Module(op, ...)) on random x of `shape` and checks it
// against the reference.
void RunAndCheck(const vm::Module& mod, Op op, const std::vector<int64_t>& shape) {
  int64_t cols = shape.back(), rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  std::vector<float> x = RandomFloats(rows * cols, 7, 3.0f), g = RandomFloats(cols, 8, 1.0f), b = RandomFloats(cols, 9, 1.0f);
  std::vector<Any> args = {FloatTensor(shape, x), FloatTensor({cols}, g), FloatTensor({cols}, b)};
  std::unique_ptr<vm::Context> ctx = mod.CreateContext();
  Any ret;
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Result<Tensor> t = ret.AsTensor();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<double> want = Reference(op, x, g, b, rows, cols);
  ASSERT_EQ(t->NumElements(), static_cast<int64_t>(want.size()));
  const float* got = t->data<float>();
  double tol = op == Op::kSum ? 1e-5 * double(cols) * 3.0 : 2e-5;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

TEST(ReduceScheduleTest, SoftmaxMatchesReference) {
  for (int threads : {1, 2}) {
    Check(Op::kSoftmax, {512, 128}, "", 0, threads);
    Check(Op::kSoftmax, {7, 33}, "", 0, threads);
    Check(Op::kSoftmax, {3, 1000}, "", 0, threads);
    Check(Op::kSoftmax, {2, 9}, "", 0, threads);  // rows shorter than a vector
    Check(Op::kSoftmax, {2, 5, 40}, "", 0, threads);
    Check(Op::kSoftmax, {1, 100}, "n", 5, threads);
    Check(Op::kSoftmax, {1, 100}, "n", 300, threads);
  }
}

TEST(ReduceScheduleTest, SoftmaxOverTwoSymbolicRowDimensionsMatchesReference) {
  // x [n, s, 300], n and s symbolic: the exp row is local to the s loop.
  for (int threads : {1, 2}) {
    std::string src = Module(Op::kSoftmax, {1, 1, 300}, "n");
    const std::string from = "\"n\", 1, 300";  // the input's and the result's type
    for (size_t at = src.find(from); at != std::string::npos; at = src.find(from))
      src.replace(at, from.size(), "\"n\", \"s\", 300");
    src.replace(src.find("        n = T.int64()\n"), 0, "        s = T.int64()\n");
    SCOPED_TRACE(src + " threads=" + std::to_string(threads));
    auto mod = Compile(src, threads);
    ASSERT_NE(mod, nullptr);
    for (auto ns : {std::vector<int64_t>{1, 40, 300}, {2, 7, 300}, {3, 1, 300}}) RunAndCheck(*mod, Op::kSoftmax, ns);
  }
}

TEST(ReduceScheduleTest, SymbolicRowLengthsMatchReference) {
  // The reduced axis symbolic: lengths below, at and above the 64 lanes, so
  // the run-time tail (masked vector lanes) is empty, short, or nearly a
  // block; khmersm's 96-column attention rows. layer_norm over 64 rows:
  // its loops split before the row schedule (default_schedule.cc).
  for (int threads : {1, 2}) {
    for (auto oc : {std::pair<Op, std::vector<int64_t>>{Op::kSoftmax, {6, 0}}, {Op::kLayerNorm, {3, 0}},
                    {Op::kLayerNorm, {64, 0}}, {Op::kSum, {5, 0}}, {Op::kMax, {2, 3, 0}}}) {
      SCOPED_TRACE(Module(oc.first, oc.second, "n", true) + " threads=" + std::to_string(threads));
      auto mod = Compile(Module(oc.first, oc.second, "n", true), threads);
      ASSERT_NE(mod, nullptr);
      // 7, 9, 15, 23, 40: a window over the row's last 16 elements from the
      // rows whose window starts inside the buffer on (all of them from 16
      // columns), the scalar tail in the first rows under 16 columns.
      for (int64_t cols : {1, 7, 9, 15, 16, 23, 40, 63, 64, 65, 96, 200}) {
        std::vector<int64_t> shape = oc.second;
        shape.back() = cols;
        SCOPED_TRACE("cols=" + std::to_string(cols));
        RunAndCheck(*mod, oc.first, shape);
      }
    }
  }
}

TEST(ReduceScheduleTest, NormalizationsMatchReference) {
  for (int threads : {1, 2}) {
    Check(Op::kLayerNorm, {128, 256}, "", 0, threads);
    Check(Op::kLayerNorm, {5, 77}, "", 0, threads);
    Check(Op::kLayerNorm, {1, 40}, "n", 3, threads);
    Check(Op::kLayerNorm, {1, 40}, "n", 600, threads);
    Check(Op::kRmsNorm, {64, 96}, "", 0, threads);
    Check(Op::kRmsNorm, {1, 130}, "n", 17, threads);
    // Norms split before the row schedule (default_schedule.cc): static rows
    // and columns of the transformer sizes, and symbolic rows of 384 (70:
    // two blocks of 32 and a tail of 6).
    Check(Op::kLayerNorm, {256, 384}, "", 0, threads);
    Check(Op::kLayerNorm, {128, 768}, "", 0, threads);
    Check(Op::kLayerNorm, {1, 384}, "n", 70, threads);
    Check(Op::kRmsNorm, {128, 768}, "", 0, threads);
  }
}

TEST(ReduceScheduleTest, RowReductionsMatchReference) {
  for (int threads : {1, 2}) {
    Check(Op::kSum, {10, 300}, "", 0, threads);
    Check(Op::kSum, {1, 64}, "n", 1000, threads);
    Check(Op::kMax, {9, 17}, "", 0, threads);
    Check(Op::kMax, {1, 257}, "n", 33, threads);
    Check(Op::kMeanThenScale, {256, 128}, "", 0, threads);
    // Long rows, split across threads when there are two.
    Check(Op::kSum, {1, 100000}, "", 0, threads);
    Check(Op::kMax, {1, 50001}, "", 0, threads);
    Check(Op::kSoftmax, {1, 40000}, "", 0, threads);
  }
}

// ---------------------------------------------------------------- one long row

// One row of `cols` through the whole pipeline (schedule, allocate scopes,
// native code), with errors measured relative to the row's magnitudes: a long
// row's softmax outputs are tiny (about 1/cols), so Check's absolute tolerance
// would say nothing about them. Sums and means get positive inputs, so that a
// missing or doubled chunk of the split row moves the result by far more than
// rounding does.
void CheckLongRow(Op op, int64_t cols, int threads) {
  SCOPED_TRACE(Module(op, {1, cols}, "") + " threads=" + std::to_string(threads));
  auto mod = Compile(Module(op, {1, cols}, ""), threads);
  ASSERT_NE(mod, nullptr);
  bool positive = op == Op::kSum || op == Op::kMeanThenScale;
  std::vector<float> x = RandomFloats(cols, 11, 3.0f), g = RandomFloats(cols, 12, 1.0f), b = RandomFloats(cols, 13, 1.0f);
  if (positive) {
    for (float& v : x) v = std::fabs(v);
  }
  std::vector<Any> args = {FloatTensor({1, cols}, x), FloatTensor({cols}, g), FloatTensor({cols}, b)};
  std::unique_ptr<vm::Context> ctx = mod->CreateContext();
  Any ret;
  Status st = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  ASSERT_TRUE(st.ok()) << st.ToString();
  Result<Tensor> t = ret.AsTensor();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<double> want = Reference(op, x, g, b, 1, cols);
  ASSERT_EQ(t->NumElements(), static_cast<int64_t>(want.size()));
  const float* got = t->data<float>();
  double max_rel = 0, total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
    max_rel = std::max(max_rel, std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), 1e-30));
    total += got[i];
  }
  switch (op) {
    case Op::kSoftmax:
      EXPECT_NEAR(total, 1.0, 1e-4);
      EXPECT_LT(max_rel, 1e-4);
      break;
    case Op::kMax:
      EXPECT_EQ(max_rel, 0.0);  // a max is exact in any order
      break;
    case Op::kSum:
    case Op::kMeanThenScale:
      EXPECT_LT(max_rel, 1e-4);
      break;
    default: {  // layer_norm: outputs near zero are differences, so absolute
      double max_abs = 0;
      for (size_t i = 0; i < want.size(); ++i) max_abs = std::max(max_abs, std::fabs(got[i] - want[i]));
      EXPECT_LT(max_abs, 1e-3);
      break;
    }
  }
}

// The long-row split beside the row's other parallel loops (softmax's exp and
// output loops, layer_norm's output loop): it used to leave an Allocate owned
// only by a temporary sequence, which ExtendAllocateScopes then read after
// freeing it (bad_alloc or a crash in code generation; ASan names it).
TEST(ReduceScheduleTest, OneLongRowSplitsBesideOtherParallelLoopsAndMatchesReference) {
  for (int threads : {1, 2}) {
    CheckLongRow(Op::kSoftmax, int64_t{1} << 20, threads);
    CheckLongRow(Op::kSum, int64_t{1} << 20, threads);
    CheckLongRow(Op::kMeanThenScale, int64_t{1} << 20, threads);
    CheckLongRow(Op::kMax, int64_t{1} << 20, threads);
    CheckLongRow(Op::kLayerNorm, 262144, threads);
    CheckLongRow(Op::kSoftmax, 100003, threads);  // chunks and lanes with tails
  }
}

TEST(ReduceScheduleTest, DriverSoftmaxOverOneLongRowSplitsBothReductions) {
  Result<IRModule> mod = text::ParseModule(Module(Op::kSoftmax, {1, 1 << 20}, ""), "long.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  driver::CompileOptions options;
  options.num_threads_hint = 2;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  int prims = 0;
  for (const auto& e : lowered->entries) {
    if (!e.prim) continue;
    ++prims;
    // The exp and output loops, and one loop over the partial results of
    // each of the max and the sum.
    EXPECT_EQ(Count(e.prim->body).parallel, 4);
  }
  EXPECT_EQ(prims, 1);
}

// ---------------------------------------------------------------- softmax's plain max

// Select nodes (the plain max) and Max nodes (T.max) in a function.
struct MaxCensus : StmtExprVisitor {
  int selects = 0, maxes = 0, fmas = 0;
  void VisitExpr(const PrimExpr& e) override {
    selects += e->kind() == TirKind::kSelect;
    maxes += e->kind() == TirKind::kMax;
    if (const auto* c = e.as<CallNode>()) fmas += c->op == "fma";
    StmtExprVisitor::VisitExpr(e);
  }
};

MaxCensus LoweredMaxes(Op op, const std::vector<int64_t>& shape, const std::string& sym) {
  Result<IRModule> mod = text::ParseModule(Module(op, shape, sym), "max.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  driver::CompileOptions options;
  options.num_threads_hint = 2;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  MaxCensus c;
  for (const auto& e : lowered->entries) {
    if (e.prim) c.VisitStmt(e.prim->body);
  }
  return c;
}

TEST(ReduceScheduleTest, SoftmaxRowMaxIsPlainButMaxReductionsKeepNaN) {
  MaxCensus sm = LoweredMaxes(Op::kSoftmax, {512, 128}, "");
  EXPECT_GT(sm.selects, 0);
  EXPECT_EQ(sm.maxes, 0);  // lane steps, tree and tail all plain
  MaxCensus sym = LoweredMaxes(Op::kSoftmax, {1, 100}, "n");
  EXPECT_GT(sym.selects, 0);
  EXPECT_EQ(sym.maxes, 0);
  // R.max's result is observable: its NaN propagation stays.
  MaxCensus mx = LoweredMaxes(Op::kMax, {9, 300}, "");
  EXPECT_EQ(mx.selects, 0);
  EXPECT_GT(mx.maxes, 0);
}

TEST(ReduceScheduleTest, NormalizationsAccumulateAndFinishWithFma) {
  // layer_norm: the variance's lane step, its tail-free row, and the output.
  EXPECT_EQ(LoweredMaxes(Op::kLayerNorm, {128, 256}, "").fmas, 2);
  EXPECT_EQ(LoweredMaxes(Op::kRmsNorm, {64, 96}, "").fmas, 1);  // sum of squares (output has no add)
  EXPECT_EQ(LoweredMaxes(Op::kSum, {10, 300}, "").fmas, 0);     // a plain sum has no product
}

// What the unscheduled softmax computes, in double: T.max propagates NaN, so
// a row with a NaN, with +inf, or of only -inf is all NaN.
std::vector<double> SoftmaxReference(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double mx = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) mx = (std::isnan(mx) || std::isnan(row[c])) ? NAN : std::max(mx, double(row[c]));
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(row[c]) - mx);
    for (int64_t c = 0; c < cols; ++c) out.push_back(std::exp(double(row[c]) - mx) / sum);
  }
  return out;
}

// Softmax over rows holding NaN, +-inf (at the first, a middle and the last,
// tail, position) against the NaN-propagating reference.
void CheckSpecialRows(const std::vector<int64_t>& compiled_shape, const std::string& sym, int64_t run_rows,
                      int threads) {
  SCOPED_TRACE(Module(Op::kSoftmax, compiled_shape, sym) + " rows=" + std::to_string(run_rows) +
               " threads=" + std::to_string(threads));
  auto mod = Compile(Module(Op::kSoftmax, compiled_shape, sym), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<int64_t> shape = compiled_shape;
  if (!sym.empty()) shape[0] = run_rows;
  int64_t rows = shape[0], cols = shape[1];
  ASSERT_GE(rows, 10);
  std::vector<float> x = RandomFloats(rows * cols, 11, 3.0f);
  auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * cols + c)]; };
  const float inf = INFINITY, nan = NAN;
  at(1, cols / 2) = nan;                          // NaN inside
  at(2, 0) = nan;                                 // NaN first
  at(3, cols - 1) = nan;                          // NaN last (in the tail when cols % 16)
  at(4, cols / 3) = inf;                          // +inf: exp(inf - inf) is NaN
  at(5, 1) = -inf;                                // -inf: a zero, the rest normal
  at(5, cols - 1) = -inf;
  for (int64_t c = 0; c < cols; ++c) at(6, c) = -inf;  // only -inf: -inf - -inf is NaN
  at(7, 0) = inf;
  at(7, cols - 1) = nan;                          // +inf and NaN
  at(8, cols / 2) = -inf;
  at(8, cols / 2 + 1) = nan;                      // -inf then NaN
  std::vector<Any> args = {FloatTensor(shape, x), FloatTensor({cols}, std::vector<float>(cols, 1.0f)),
                           FloatTensor({cols}, std::vector<float>(cols, 0.0f))};
  std::unique_ptr<vm::Context> ctx = mod->CreateContext();
  Any ret;
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Result<Tensor> t = ret.AsTensor();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<double> want = SoftmaxReference(x, rows, cols);
  const float* got = t->data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " (row " << i / cols << "): got " << got[i];
    } else {
      ASSERT_NEAR(got[i], want[i], 2e-5 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
    }
  }
}

TEST(ReduceScheduleTest, SoftmaxWithNaNAndInfRowsMatchesTheNaNPropagatingReference) {
  for (int threads : {1, 2}) {
    CheckSpecialRows({16, 128}, "", 0, threads);
    CheckSpecialRows({12, 33}, "", 0, threads);   // tail of 1 after 32 lanes
    CheckSpecialRows({10, 1000}, "", 0, threads);
    CheckSpecialRows({1, 100}, "n", 11, threads);  // symbolic rows
    CheckSpecialRows({10, 12}, "", 0, threads);   // too short to vectorize: T.max kept
  }
}

TEST(ReduceScheduleTest, SymbolicRowWindowsIgnoreTheRowBeforeAndKeepTheirOwnNaN) {
  // Rows of 7 (symbolic): each row's window of 16 reads the 9 elements
  // before it (the row before) in lanes that the identity replaces, so a NaN
  // or infinity there changes nothing; a NaN of the row itself still comes
  // out of max and sum.
  for (int threads : {1, 2}) {
    for (Op op : {Op::kMax, Op::kSum}) {
      auto mod = Compile(Module(op, {4, 0}, "n", true), threads);
      ASSERT_NE(mod, nullptr);
      std::vector<float> x = RandomFloats(4 * 7, 13, 3.0f);
      x[0 * 7 + 6] = NAN;       // row 0's last element: in rows 1 and 2's windows
      x[1 * 7 + 5] = INFINITY;  // row 1: in rows 2 and 3's windows
      x[3 * 7 + 2] = NAN;       // row 3's own
      std::vector<Any> args = {FloatTensor({4, 7}, x), FloatTensor({7}, std::vector<float>(7, 1.0f)),
                               FloatTensor({7}, std::vector<float>(7, 0.0f))};
      std::unique_ptr<vm::Context> ctx = mod->CreateContext();
      Any ret;
      ASSERT_TRUE(ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret).ok());
      Result<Tensor> t = ret.AsTensor();
      ASSERT_TRUE(t.ok());
      const float* got = t->data<float>();
      EXPECT_TRUE(std::isnan(got[0]));
      EXPECT_TRUE(std::isinf(got[1]) && got[1] > 0);
      double want2 = op == Op::kMax ? -INFINITY : 0.0;
      for (int c = 0; c < 7; ++c) want2 = op == Op::kMax ? std::max(want2, double(x[14 + c])) : want2 + x[14 + c];
      EXPECT_NEAR(got[2], want2, 1e-4);
      EXPECT_TRUE(std::isnan(got[3]));
    }
  }
}

TEST(ReduceScheduleTest, MaxReductionStillPropagatesNaN) {
  for (int threads : {1, 2}) {
    auto mod = Compile(Module(Op::kMax, {3, 300}, ""), threads);
    ASSERT_NE(mod, nullptr);
    std::vector<float> x = RandomFloats(3 * 300, 12, 3.0f);
    x[5] = NAN;          // row 0, in the vector part
    x[300 + 299] = NAN;  // row 1, in the tail
    std::vector<Any> args = {FloatTensor({3, 300}, x), FloatTensor({300}, std::vector<float>(300, 1.0f)),
                             FloatTensor({300}, std::vector<float>(300, 0.0f))};
    std::unique_ptr<vm::Context> ctx = mod->CreateContext();
    Any ret;
    ASSERT_TRUE(ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret).ok());
    Result<Tensor> t = ret.AsTensor();
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(std::isnan(t->data<float>()[0]));
    EXPECT_TRUE(std::isnan(t->data<float>()[1]));
    EXPECT_FALSE(std::isnan(t->data<float>()[2]));
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
