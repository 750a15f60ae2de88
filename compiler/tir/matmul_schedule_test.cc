// ScheduleMatmuls: the structure it produces (no code generation), and the
// numbers of compiled matmuls of many shapes against a double-precision
// reference (through the driver and the VM).
#include "compiler/tir/matmul_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/simplify.h"
#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/text/text.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"
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

Stmt Loop(const Var& v, PrimExpr extent, Stmt body) {
  return std::make_shared<ForNode>(v, 0, std::move(extent), ForKind::kSerial, std::move(body));
}

// for i, j, k: if k == 0: C[i, j] = 0; C[i, j] = C[i, j] + A[i, k] * B[k, j]
Stmt MatmulNest(const Buffer& a, const Buffer& b, const Buffer& c, PrimExpr m, PrimExpr n, PrimExpr k_ext) {
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), ij), nullptr);
  Stmt upd = Store(c, Load(c, ij) + Load(a, {PrimExpr(i), PrimExpr(k)}) * Load(b, {PrimExpr(k), PrimExpr(j)}), ij);
  return Loop(i, m, Loop(j, n, Loop(k, k_ext, Seq({init, upd}))));
}

struct Census : StmtExprVisitor {
  int fma = 0, parallel = 0, vectorized = 0, unrolled = 0, allocs = 0;
  std::vector<std::string> stored;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) fma += c->op == "fma";
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      parallel += f->for_kind == ForKind::kParallel;
      vectorized += f->for_kind == ForKind::kVectorized;
      unrolled += f->for_kind == ForKind::kUnrolled;
    }
    if (As<AllocateNode>(s)) ++allocs;
    if (const auto* st = As<BufferStoreNode>(s)) stored.push_back(st->buffer->name);
    StmtExprVisitor::VisitStmt(s);
  }
};

Census Count(const PrimFunc& f) {
  Census c;
  c.VisitStmt(f->body);
  return c;
}

TEST(MatmulScheduleTest, StaticMatmulBecomesParallelMicroKernel) {
  Buffer a = MakeBuffer("A", {PrimExpr(96), PrimExpr(784)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(784), PrimExpr(128)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(96), PrimExpr(128)}, DType::Float32());
  PrimFunc f = Func(MatmulNest(a, b, c, 96, 128, 784), {a, b, c});
  PrimFunc out = ScheduleMatmuls(f, 2);
  ASSERT_NE(out, f);
  const auto* tile = As<ForNode>(out->body);
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->for_kind, ForKind::kParallel);
  ASSERT_NE(tile->extent.as<IntImmNode>(), nullptr);
  // N >= 64: 6 x 64 tiles; exact tiles: one kernel.
  EXPECT_EQ(tile->extent.as<IntImmNode>()->value, (96 / 6) * (128 / 64));
  Census census = Count(out);
  EXPECT_EQ(census.fma, 1);
  EXPECT_EQ(census.allocs, 1);        // the accumulator
  EXPECT_EQ(census.vectorized, 3);    // zero, update, store
  EXPECT_EQ(census.unrolled, 3);
  // One thread: the same kernel, serial.
  EXPECT_EQ(As<ForNode>(ScheduleMatmuls(f, 1)->body)->for_kind, ForKind::kSerial);
}

TEST(MatmulScheduleTest, SmallWorkStaysSerialAndEdgesGetTheirKernels) {
  Buffer a = MakeBuffer("A", {PrimExpr(7), PrimExpr(5)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(5), PrimExpr(10)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(7), PrimExpr(10)}, DType::Float32());
  PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, c, 7, 10, 5), {a, b, c}), 8);
  EXPECT_EQ(As<ForNode>(out->body)->for_kind, ForKind::kSerial);
  EXPECT_EQ(Count(out).fma, 1);  // 7 < 8 rows: one 7x10 tile, no edge kernel

  Var n = MakeVar("n");
  Buffer a2 = MakeBuffer("A", {PrimExpr(n), PrimExpr(64)}, DType::Float32());
  Buffer b2 = MakeBuffer("B", {PrimExpr(64), PrimExpr(100)}, DType::Float32());
  Buffer c2 = MakeBuffer("C", {PrimExpr(n), PrimExpr(100)}, DType::Float32());
  PrimFunc out2 = ScheduleMatmuls(Func(MatmulNest(a2, b2, c2, PrimExpr(n), 100, 64), {a2, b2, c2}), 8);
  EXPECT_EQ(As<ForNode>(out2->body)->for_kind, ForKind::kParallel);  // symbolic rows
  // Full tiles, the leftover tile of 4 rows and the exact tail of 1, 2 or 3;
  // N = 100 is static, so the last column block ends at 100 (overlapping)
  // and needs no partial-width kernel.
  EXPECT_EQ(Count(out2).fma, 5);
  // With a symbolic N the partial block gets its own kernels (16-column
  // blocks, and a masked one for N < 16); 100 rows are 12 full tiles and one
  // of 4 rows: 3 x 2.
  Buffer b3 = MakeBuffer("B", {PrimExpr(64), PrimExpr(n)}, DType::Float32());
  Buffer c3 = MakeBuffer("C", {PrimExpr(100), PrimExpr(n)}, DType::Float32());
  Buffer a3 = MakeBuffer("A", {PrimExpr(100), PrimExpr(64)}, DType::Float32());
  PrimFunc out3 = ScheduleMatmuls(Func(MatmulNest(a3, b3, c3, 100, PrimExpr(n), 64), {a3, b3, c3}), 8);
  EXPECT_EQ(Count(out3).fma, 6);
}

TEST(MatmulScheduleTest, RaggedColumnsTakeThirtyTwoColumnTiles) {
  // N past 64 with at most 32 columns in the last 64-column block: 6 x 32
  // tiles, so the last block overlaps at most 31 columns. 196 (ResNet-18's
  // F(4x4) products): 7 blocks (224 columns computed) instead of 4 of 64
  // (256); 64 rows = 10 tiles of 6 and one of 4. 160 (= 2 x 64 + 32): 5
  // blocks, none overlapping. 100 (36 left) and 128 keep 6 x 64 tiles.
  struct Case {
    int64_t n, col_blocks, width;
  };
  for (const Case& c : {Case{196, 7, 32}, Case{160, 5, 32}, Case{100, 2, 64}, Case{128, 2, 64}}) {
    Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
    Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(c.n)}, DType::Float32());
    Buffer o = MakeBuffer("C", {PrimExpr(64), PrimExpr(c.n)}, DType::Float32());
    PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, o, 64, c.n, 64), {a, b, o}), 1);
    const auto* tiles = As<ForNode>(out->body);
    ASSERT_NE(tiles, nullptr);
    EXPECT_EQ(tiles->extent.as<IntImmNode>()->value, 11 * c.col_blocks) << c.n;
    struct Widths : StmtExprVisitor {
      std::vector<int64_t> acc_cols;
      void VisitStmt(const Stmt& st) override {
        if (const auto* al = As<AllocateNode>(st); al != nullptr && al->buffer->name == "acc")
          acc_cols.push_back(al->buffer->shape[1].as<IntImmNode>()->value);
        StmtExprVisitor::VisitStmt(st);
      }
    } widths;
    widths.VisitStmt(out->body);
    ASSERT_FALSE(widths.acc_cols.empty()) << c.n;
    for (int64_t w : widths.acc_cols) EXPECT_EQ(w, c.width) << c.n;
  }
  // A tuned tile still replaces the rule: matmul.nr 64 gives 4 blocks of 64.
  Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(196)}, DType::Float32());
  Buffer o = MakeBuffer("C", {PrimExpr(64), PrimExpr(196)}, DType::Float32());
  ScheduleKnobs knobs;
  knobs.values["matmul.nr"] = 64;
  PrimFunc tuned = ScheduleMatmuls(Func(MatmulNest(a, b, o, 64, 196, 64), {a, b, o}), 1, knobs);
  EXPECT_EQ(As<ForNode>(tuned->body)->extent.as<IntImmNode>()->value, 11 * 4);
}

// The prefetch hints of a scheduled function, printed.
std::vector<std::string> PrefetchHints(const PrimFunc& f) {
  struct Finder : StmtExprVisitor {
    std::vector<std::string> found;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<CallNode>(); c != nullptr && c->op == "prefetch")
        found.push_back(arith::ToDebugString(c->args[0]));
      StmtExprVisitor::VisitExpr(e);
    }
  } finder;
  finder.VisitStmt(f->body);
  return finder.found;
}

TEST(MatmulScheduleTest, WeightsOfTwoMebibytesArePrefetchedAhead) {
  // B of 512 x 1088 floats (2.2 MB, more than L2 holds between calls): each
  // k step of a 6 x 64 tile hints the 4 lines of its panel's row 16 rows
  // (4 KiB of the panel) ahead, clamped to the last row; one hint a line, in
  // the full tiles and in the leftover ones. 512 x 960 (1.9 MB): none.
  // matmul.prefetch 1: none; 2: hints for the small B too.
  for (int64_t n : {1088, 960}) {
    Buffer a = MakeBuffer("A", {PrimExpr(20), PrimExpr(512)}, DType::Float32());
    Buffer b = MakeBuffer("B", {PrimExpr(512), PrimExpr(n)}, DType::Float32());
    Buffer c = MakeBuffer("C", {PrimExpr(20), PrimExpr(n)}, DType::Float32());
    PrimFunc f = Func(MatmulNest(a, b, c, 20, n, 512), {a, b, c});
    std::vector<std::string> hints = PrefetchHints(ScheduleMatmuls(f, 1));
    if (n == 1088) {
      // 20 rows: tiles of 6 rows and a leftover of 2, each kernel 4 hints.
      ASSERT_EQ(hints.size(), 8u);
      EXPECT_NE(hints[0].find("B[min(k + 16, 512 - 1), col0"), std::string::npos) << hints[0];
      EXPECT_NE(hints[1].find("col0 + 16"), std::string::npos) << hints[1];
    } else {
      EXPECT_TRUE(hints.empty());
    }
    ScheduleKnobs off, on;
    off.values["matmul.prefetch"] = 1;
    on.values["matmul.prefetch"] = 2;
    EXPECT_TRUE(PrefetchHints(ScheduleMatmuls(f, 1, off)).empty()) << n;
    EXPECT_EQ(PrefetchHints(ScheduleMatmuls(f, 1, on)).size(), 8u) << n;
  }
}

TEST(MatmulScheduleTest, LeftoverRowsRunAsTilesOfFourTwoAndOneRows) {
  // 48 columns (8 x 32 tiles): 23 rows = 2 full 8-row tiles + 4 + 2 + 1:
  // five row blocks per column block (not 2 + 7 one-row blocks), four
  // kernels (8, 4, 2 and 1 rows).
  Buffer a = MakeBuffer("A", {PrimExpr(23), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(48)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(23), PrimExpr(48)}, DType::Float32());
  PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, c, 23, 48, 64), {a, b, c}), 1);
  const auto* tiles = As<ForNode>(out->body);
  ASSERT_NE(tiles, nullptr);
  EXPECT_EQ(tiles->extent.as<IntImmNode>()->value, 5 * 2);  // 48 columns: two 32-wide blocks, overlapping
  EXPECT_EQ(Count(out).fma, 4);
  // 20 rows (captcha_crnn's 20 LSTM steps): 8 + 8 + 4, three row blocks.
  Buffer a2 = MakeBuffer("A", {PrimExpr(20), PrimExpr(64)}, DType::Float32());
  Buffer c2 = MakeBuffer("C", {PrimExpr(20), PrimExpr(48)}, DType::Float32());
  PrimFunc out2 = ScheduleMatmuls(Func(MatmulNest(a2, b, c2, 20, 48, 64), {a2, b, c2}), 1);
  EXPECT_EQ(As<ForNode>(out2->body)->extent.as<IntImmNode>()->value, 3 * 2);
  EXPECT_EQ(Count(out2).fma, 2);
  // 64 columns and more: 6 x 64 tiles. 23 rows = 3 x 6 + 4 + 1 (three
  // kernels), 20 rows = 3 x 6 + 2 (two), 100 columns: two 64-wide blocks,
  // the last ending at N.
  Buffer b3 = MakeBuffer("B", {PrimExpr(64), PrimExpr(100)}, DType::Float32());
  Buffer c3 = MakeBuffer("C", {PrimExpr(23), PrimExpr(100)}, DType::Float32());
  PrimFunc out3 = ScheduleMatmuls(Func(MatmulNest(a, b3, c3, 23, 100, 64), {a, b3, c3}), 1);
  EXPECT_EQ(As<ForNode>(out3->body)->extent.as<IntImmNode>()->value, 5 * 2);
  EXPECT_EQ(Count(out3).fma, 3);
  Buffer c4 = MakeBuffer("C", {PrimExpr(20), PrimExpr(100)}, DType::Float32());
  PrimFunc out4 = ScheduleMatmuls(Func(MatmulNest(a2, b3, c4, 20, 100, 64), {a2, b3, c4}), 1);
  EXPECT_EQ(As<ForNode>(out4->body)->extent.as<IntImmNode>()->value, 4 * 2);
  EXPECT_EQ(Count(out4).fma, 2);
}

TEST(MatmulScheduleTest, EpilogueIsFusedAndItsIntermediateDropped) {
  // C = A @ B (allocated); D[i, j] = max(C[i, j] + bias[j], 0) (output).
  Buffer a = MakeBuffer("A", {PrimExpr(16), PrimExpr(8)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(8), PrimExpr(32)}, DType::Float32());
  Buffer bias = MakeBuffer("bias", {PrimExpr(32)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(16), PrimExpr(32)}, DType::Float32());
  Buffer d = MakeBuffer("D", {PrimExpr(16), PrimExpr(32)}, DType::Float32());
  Var i = MakeVar("i"), j = MakeVar("j");
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  Stmt epi = Loop(i, 16, Loop(j, 32, Store(d, MakeBinary(TirKind::kMax, Load(c, ij) + Load(bias, {PrimExpr(j)}),
                                                              FloatImm(DType::Float32(), 0)),
                                           ij)));
  Stmt body = std::make_shared<AllocateNode>(c, Seq({MatmulNest(a, b, c, 16, 32, 8), epi}));
  PrimFunc out = ScheduleMatmuls(Func(body, {a, b, bias, d}), 1);
  Census census = Count(out);
  EXPECT_EQ(census.allocs, 1);  // C is gone; only the accumulator remains
  for (const std::string& s : census.stored) EXPECT_NE(s, "C");
  EXPECT_EQ(census.stored.back(), "D");

  // When the intermediate is read again later, it must still be stored.
  Buffer e = MakeBuffer("E", {PrimExpr(16), PrimExpr(32)}, DType::Float32());
  Var i2 = MakeVar("i"), j2 = MakeVar("j");
  Stmt reuse = Loop(i2, 16, Loop(j2, 32, Store(e, Load(c, {PrimExpr(i2), PrimExpr(j2)}), {PrimExpr(i2), PrimExpr(j2)})));
  Stmt body2 = std::make_shared<AllocateNode>(c, Seq({MatmulNest(a, b, c, 16, 32, 8), epi, reuse}));
  Census census2 = Count(ScheduleMatmuls(Func(body2, {a, b, bias, d, e}), 1));
  EXPECT_EQ(census2.allocs, 2);
  EXPECT_EQ(census2.fma, 1);
}

// for b, i, j, k: C[b, i, j] += A[b, i, k] * B[k, j] (B shared by the batch)
Stmt BatchedNest(const Buffer& a, const Buffer& b, const Buffer& c, int64_t batch, int64_t m, int64_t n, int64_t k_ext) {
  Var p = MakeVar("p"), i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> pij = {PrimExpr(p), PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), pij), nullptr);
  Stmt upd = Store(c, Load(c, pij) + Load(a, {PrimExpr(p), PrimExpr(i), PrimExpr(k)}) * Load(b, {PrimExpr(k), PrimExpr(j)}),
                   pij);
  return Loop(p, batch, Loop(i, m, Loop(j, n, Loop(k, k_ext, Seq({init, upd})))));
}

TEST(MatmulScheduleTest, UnitBatchEpilogueAndStagesReadingSeveralChainBuffers) {
  // C[1, 16, 32] = A @ B; D = C + bias; E = D * 0.5; F = D * E, each stage
  // loading at [0, i, j] as lowering writes a unit batch dimension. F reads
  // two chain buffers (GELU's x * f(x) shape). All fuse; C, D, E are never stored.
  auto buf = [](const char* name) { return MakeBuffer(name, {PrimExpr(1), PrimExpr(16), PrimExpr(32)}, DType::Float32()); };
  Buffer a = MakeBuffer("A", {PrimExpr(1), PrimExpr(16), PrimExpr(8)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(8), PrimExpr(32)}, DType::Float32());
  Buffer bias = MakeBuffer("bias", {PrimExpr(32)}, DType::Float32());
  Buffer c = buf("C"), d = buf("D"), e = buf("E"), f = buf("F"), g = buf("G");
  auto stage = [&](const Buffer& dst, const std::function<PrimExpr(const std::vector<PrimExpr>&, const PrimExpr&)>& value) {
    Var p = MakeVar("p"), i = MakeVar("i"), j = MakeVar("j");
    std::vector<PrimExpr> at = {PrimExpr(0), PrimExpr(i), PrimExpr(j)};
    return Loop(p, 1, Loop(i, 16, Loop(j, 32, Store(dst, value(at, PrimExpr(j)), {PrimExpr(p), PrimExpr(i), PrimExpr(j)}))));
  };
  Stmt sd = stage(d, [&](const std::vector<PrimExpr>& at, const PrimExpr& j) { return Load(c, at) + Load(bias, {j}); });
  Stmt se = stage(e, [&](const std::vector<PrimExpr>& at, const PrimExpr&) { return Load(d, at) * FloatImm(DType::Float32(), 0.5); });
  Stmt sf = stage(f, [&](const std::vector<PrimExpr>& at, const PrimExpr&) { return Load(d, at) * Load(e, at); });
  Stmt body = std::make_shared<AllocateNode>(
      c, std::make_shared<AllocateNode>(
             d, std::make_shared<AllocateNode>(e, Seq({BatchedNest(a, b, c, 1, 16, 32, 8), sd, se, sf}))));
  Census census = Count(ScheduleMatmuls(Func(body, {a, b, bias, f}), 1));
  EXPECT_EQ(census.fma, 1);
  EXPECT_EQ(census.allocs, 1);  // only the accumulator
  EXPECT_EQ(census.stored.back(), "F");
  for (const std::string& s : census.stored) EXPECT_TRUE(s != "C" && s != "D" && s != "E") << s;

  // D read again after the chain: only the longest prefix whose
  // intermediates nothing else reads fuses (C -> D); D, E and F are stored.
  Stmt sg = stage(g, [&](const std::vector<PrimExpr>& at, const PrimExpr&) { return Load(d, at); });
  Stmt body2 = std::make_shared<AllocateNode>(
      c, std::make_shared<AllocateNode>(
             d, std::make_shared<AllocateNode>(e, Seq({BatchedNest(a, b, c, 1, 16, 32, 8), sd, se, sf, sg}))));
  Census census2 = Count(ScheduleMatmuls(Func(body2, {a, b, bias, f, g}), 1));
  EXPECT_EQ(std::count(census2.stored.begin(), census2.stored.end(), "C"), 0);
  EXPECT_EQ(std::count(census2.stored.begin(), census2.stored.end(), "D"), 1);
  EXPECT_EQ(std::count(census2.stored.begin(), census2.stored.end(), "E"), 1);
}

TEST(MatmulScheduleTest, BatchSharingItsWeightIsFoldedIntoRows) {
  // 128 batches of one row times one weight: one 128-row matrix, 21 full
  // 6-row tiles and one of 2 rows per column block instead of 128 one-row
  // GEMVs.
  Buffer a = MakeBuffer("A", {PrimExpr(128), PrimExpr(1), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(96)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(128), PrimExpr(1), PrimExpr(96)}, DType::Float32());
  PrimFunc out = ScheduleMatmuls(Func(BatchedNest(a, b, c, 128, 1, 96, 64), {a, b, c}), 2);
  const auto* tile = As<ForNode>(out->body);
  ASSERT_NE(tile, nullptr);
  ASSERT_NE(tile->extent.as<IntImmNode>(), nullptr);
  EXPECT_EQ(tile->extent.as<IntImmNode>()->value, (128 / 6 + 1) * 3);  // 96 columns: 3 blocks of 32
  // A batch with its own B per element is not folded.
  Buffer b3 = MakeBuffer("B", {PrimExpr(128), PrimExpr(64), PrimExpr(96)}, DType::Float32());
  Var p = MakeVar("p"), i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> pij = {PrimExpr(p), PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), pij), nullptr);
  Stmt upd = Store(c, Load(c, pij) + Load(a, {PrimExpr(p), PrimExpr(i), PrimExpr(k)}) *
                                         Load(b3, {PrimExpr(p), PrimExpr(k), PrimExpr(j)}),
                   pij);
  Stmt nest = Loop(p, 128, Loop(i, 1, Loop(j, 96, Loop(k, 64, Seq({init, upd})))));
  PrimFunc out3 = ScheduleMatmuls(Func(nest, {a, b3, c}), 2);
  EXPECT_EQ(As<ForNode>(out3->body)->extent.as<IntImmNode>()->value, 128 * 2);  // one row, 64-wide blocks
}

TEST(MatmulScheduleTest, SymbolicBatchSharingItsWeightIsFoldedIntoRows) {
  // [s, b, 64] x [64, 96] with both s and b symbolic (a sequence-first
  // projection): one (s * b)-row matrix. The tile number no longer binds a
  // batch index; each tile divides its first flat row by b once and counts
  // on from there into a table that A's loads in the k loop read.
  Var sv = MakeVar("s"), bv = MakeVar("b");
  Buffer a = MakeBuffer("A", {PrimExpr(sv), PrimExpr(bv), PrimExpr(64)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(64), PrimExpr(96)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(sv), PrimExpr(bv), PrimExpr(96)}, DType::Float32());
  Var p = MakeVar("p"), i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> pij = {PrimExpr(p), PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), pij), nullptr);
  Stmt upd = Store(c, Load(c, pij) + Load(a, {PrimExpr(p), PrimExpr(i), PrimExpr(k)}) * Load(b, {PrimExpr(k), PrimExpr(j)}),
                   pij);
  Stmt nest = Loop(p, PrimExpr(sv), Loop(i, PrimExpr(bv), Loop(j, 96, Loop(k, 64, Seq({init, upd})))));
  PrimFunc out = ScheduleMatmuls(Func(nest, {a, b, c}), 1);
  struct Lets : StmtExprVisitor {
    std::vector<std::string> names;
    int table_divisions = 0, a_table_reads = 0, a_divisions = 0;
    void VisitStmt(const Stmt& st) override {
      if (const auto* l = As<LetStmtNode>(st)) names.push_back(l->var->name);
      if (const auto* t = As<BufferStoreNode>(st); t != nullptr && t->buffer->name == "row_index")
        table_divisions += t->value.as<FloorDivNode>() != nullptr;
      StmtExprVisitor::VisitStmt(st);
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->name == "A") {
        const auto* at = l->indices[0].as<BufferLoadNode>();
        a_table_reads += at != nullptr && at->buffer->name == "p_of_row";
        a_divisions += l->indices[0].as<FloorDivNode>() != nullptr;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } lets;
  lets.VisitStmt(out->body);
  EXPECT_EQ(std::count(lets.names.begin(), lets.names.end(), "p"), 0);
  EXPECT_EQ(lets.table_divisions, 5);  // per kernel, one for the tile's first row
  EXPECT_GT(lets.a_table_reads, 0);
  EXPECT_EQ(lets.a_divisions, 0);
  EXPECT_EQ(Count(out).fma, 5);  // full tiles, a leftover of 4 rows and the tails of 3, 2 and 1
}

// Names of the buffers a statement allocates.
struct Allocs : StmtExprVisitor {
  std::vector<std::string> names;
  void VisitStmt(const Stmt& st) override {
    if (const auto* al = As<AllocateNode>(st)) names.push_back(al->buffer->name);
    StmtExprVisitor::VisitStmt(st);
  }
};

// The row counts of the register tiles ("acc"), in the order they appear.
struct AccRows : StmtExprVisitor {
  std::vector<int64_t> rows;
  void VisitStmt(const Stmt& st) override {
    if (const auto* al = As<AllocateNode>(st)) {
      if (al->buffer->name == "acc") rows.push_back(*nest::ConstInt(al->buffer->shape[0]));
    }
    StmtExprVisitor::VisitStmt(st);
  }
};

TEST(MatmulScheduleTest, ShortWideProductsTakeOneTileOfAllRows) {
  // 1-8 rows against a 256 x 4096 B (4 MiB, read in place): every row in
  // one register tile, as wide as 24 accumulator vectors allow (at most
  // 128), and no prefetch hints. Without the rule: 6 x 64 tiles and
  // leftovers of 1 or 2 rows for 7 and 8, 64 columns for 2-6 rows, hints
  // (one row: its 128-wide GEMV tile, whose partial sums never took hints).
  struct Case {
    int64_t m, width;
  };
  for (const Case& c : {Case{1, 128}, Case{2, 128}, Case{3, 128}, Case{4, 96}, Case{5, 64}, Case{6, 64},
                        Case{7, 48}, Case{8, 48}}) {
    Buffer a = MakeBuffer("A", {PrimExpr(c.m), PrimExpr(256)}, DType::Float32());
    Buffer b = MakeBuffer("B", {PrimExpr(256), PrimExpr(4096)}, DType::Float32());
    Buffer o = MakeBuffer("C", {PrimExpr(c.m), PrimExpr(4096)}, DType::Float32());
    PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, o, c.m, 4096, 256), {a, b, o}), 1);
    AccRows rows;
    rows.VisitStmt(out->body);
    // One row: two partial sums, each a row of the accumulator.
    EXPECT_EQ(rows.rows, std::vector<int64_t>{c.m == 1 ? 2 : c.m}) << c.m;
    const auto* tiles = As<ForNode>(out->body);
    ASSERT_NE(tiles, nullptr);
    EXPECT_EQ(tiles->extent.as<IntImmNode>()->value, (4096 + c.width - 1) / c.width) << c.m;
    EXPECT_TRUE(PrefetchHints(out).empty()) << c.m;
  }
  // Not short-wide: 9 rows (tiles of 6, then leftovers), and 2 rows against
  // 256 columns (64-wide tiles).
  Buffer a9 = MakeBuffer("A", {PrimExpr(9), PrimExpr(256)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(256), PrimExpr(4096)}, DType::Float32());
  Buffer c9 = MakeBuffer("C", {PrimExpr(9), PrimExpr(4096)}, DType::Float32());
  AccRows nine;
  nine.VisitStmt(ScheduleMatmuls(Func(MatmulNest(a9, b, c9, 9, 4096, 256), {a9, b, c9}), 1)->body);
  ASSERT_FALSE(nine.rows.empty());
  EXPECT_EQ(nine.rows.front(), 6);
  Buffer a2 = MakeBuffer("A", {PrimExpr(2), PrimExpr(256)}, DType::Float32());
  Buffer b2 = MakeBuffer("B", {PrimExpr(256), PrimExpr(256)}, DType::Float32());
  Buffer c2 = MakeBuffer("C", {PrimExpr(2), PrimExpr(256)}, DType::Float32());
  PrimFunc narrow = ScheduleMatmuls(Func(MatmulNest(a2, b2, c2, 2, 256, 256), {a2, b2, c2}), 1);
  EXPECT_EQ(As<ForNode>(narrow->body)->extent.as<IntImmNode>()->value, 256 / 64);
  // Tuned knobs still replace the rule: matmul.nr 64 and matmul.prefetch 2.
  Buffer a4 = MakeBuffer("A", {PrimExpr(4), PrimExpr(256)}, DType::Float32());
  Buffer c4 = MakeBuffer("C", {PrimExpr(4), PrimExpr(4096)}, DType::Float32());
  ScheduleKnobs knobs;
  knobs.values["matmul.nr"] = 64;
  knobs.values["matmul.prefetch"] = 2;
  PrimFunc tuned = ScheduleMatmuls(Func(MatmulNest(a4, b, c4, 4, 4096, 256), {a4, b, c4}), 1, knobs);
  EXPECT_EQ(As<ForNode>(tuned->body)->extent.as<IntImmNode>()->value, 4096 / 64);
  EXPECT_FALSE(PrefetchHints(tuned).empty());
}

TEST(MatmulScheduleTest, SymbolicRemainderRunsAsOneTileOfItsRows) {
  // n x 128 times 128 x 512 (Silero VAD's LSTM input projection with a
  // symbolic batch): the rows left after the 6-row tiles run as a 4-row
  // tile when there are 4 or more, then one tile of exactly the rows left,
  // so 3 rows read each 64-column panel once (a 3-row tile, as the pinned
  // build's), not twice (tiles of 2 and 1).
  Var n = MakeVar("n");
  Buffer a = MakeBuffer("A", {PrimExpr(n), PrimExpr(128)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(128), PrimExpr(512)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n), PrimExpr(512)}, DType::Float32());
  PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, c, PrimExpr(n), 512, 128), {a, b, c}), 1);
  AccRows acc;
  acc.VisitStmt(out->body);
  // The one-row tile keeps 4 partial sums: 4 accumulator rows. Twice: the
  // rows choose at run time between B as it is and B packed per call.
  EXPECT_EQ(acc.rows, (std::vector<int64_t>{6, 4, 3, 2, 4, 6, 4, 3, 2, 4}));
  // The tile count at run time: n / 6 full tiles, one of 4 rows for a
  // remainder of 4 or 5, one for the rows left after those.
  struct TileLoops : StmtExprVisitor {
    std::vector<PrimExpr> extents;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st)) {
        if (f->loop_var->name == "tile") extents.push_back(f->extent);
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } loops;
  loops.VisitStmt(out->body);
  ASSERT_EQ(loops.extents.size(), 2u);
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11}) {
    VarMap at;
    at[n.get()] = PrimExpr(m);
    const int64_t row_tiles = m / 6 + (m % 6 >= 4) + (m % 6 % 4 > 0);
    // Keep the simplified extent alive: ConstInt points into it.
    const PrimExpr extent = arith::Simplify(Substitute(loops.extents[0], at));
    const int64_t* tiles = nest::ConstInt(extent);
    ASSERT_NE(tiles, nullptr) << m;
    EXPECT_EQ(*tiles, row_tiles * 8) << m;
  }
}

bool AllocatesPackedB(const Stmt& s) {
  Allocs a;
  a.VisitStmt(s);
  return std::count(a.names.begin(), a.names.end(), "B_packed") == 1;
}

TEST(MatmulScheduleTest, SymbolicRowsChoosePackedWeightPanelsAtRunTime) {
  // n x 130 times 130 x 128 (rows of B 512 bytes apart, 130 x 64 panels
  // over 32 KiB): the rows are known only at run time, so both kernels are
  // built and `n >= 256` picks the packed one.
  Var n = MakeVar("n");
  Buffer a = MakeBuffer("A", {PrimExpr(n), PrimExpr(130)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(130), PrimExpr(128)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n), PrimExpr(128)}, DType::Float32());
  PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, c, PrimExpr(n), 128, 130), {a, b, c}), 2);
  const auto* choice = As<IfThenElseNode>(out->body);
  ASSERT_NE(choice, nullptr);
  const auto* ge = choice->cond.as<GENode>();
  ASSERT_NE(ge, nullptr);
  ASSERT_NE(ge->b.as<IntImmNode>(), nullptr);
  EXPECT_EQ(ge->b.as<IntImmNode>()->value, 256);
  EXPECT_TRUE(AllocatesPackedB(choice->then_case));
  ASSERT_NE(choice->else_case, nullptr);
  EXPECT_FALSE(AllocatesPackedB(choice->else_case));
  // The same B with static rows follows the static rule: packed from 256
  // rows only (rows 1536 bytes apart: 384 columns, MiniLM's width).
  for (int64_t m : {255, 256}) {
    Buffer a2 = MakeBuffer("A", {PrimExpr(m), PrimExpr(130)}, DType::Float32());
    Buffer b2 = MakeBuffer("B", {PrimExpr(130), PrimExpr(384)}, DType::Float32());
    Buffer c2 = MakeBuffer("C", {PrimExpr(m), PrimExpr(384)}, DType::Float32());
    PrimFunc st = ScheduleMatmuls(Func(MatmulNest(a2, b2, c2, m, 384, 130), {a2, b2, c2}), 1);
    EXPECT_EQ(As<IfThenElseNode>(st->body), nullptr);
    EXPECT_EQ(AllocatesPackedB(st->body), m >= 256) << m;
  }
  // Rows of B 1 KiB + 64 bytes apart (272 columns): no choice, never packed.
  Buffer b3 = MakeBuffer("B", {PrimExpr(130), PrimExpr(272)}, DType::Float32());
  Buffer c3 = MakeBuffer("C", {PrimExpr(n), PrimExpr(272)}, DType::Float32());
  PrimFunc odd = ScheduleMatmuls(Func(MatmulNest(a, b3, c3, PrimExpr(n), 272, 130), {a, b3, c3}), 1);
  EXPECT_EQ(As<IfThenElseNode>(odd->body), nullptr);
  EXPECT_FALSE(AllocatesPackedB(odd->body));
}

TEST(MatmulScheduleTest, BlockedWeightIsReadPanelByPanelWithoutACopy) {
  // C[i, j] += A[i, k] * Bp[j / 64, k, j % 64] (R.matmul weight_layout
  // KN64n): 64-column tiles that load Bp[cb, k, jj], no packing copy, even
  // with 300 rows (where a plain B 1 KiB per row would be copied).
  Buffer a = MakeBuffer("A", {PrimExpr(300), PrimExpr(130)}, DType::Float32());
  Buffer b = MakeBuffer("Bp", {PrimExpr(4), PrimExpr(130), PrimExpr(64)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(300), PrimExpr(256)}, DType::Float32());
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), 0),
                                               Store(c, FloatImm(DType::Float32(), 0), ij), nullptr);
  PrimExpr bl = Load(b, {MakeBinary(TirKind::kFloorDiv, PrimExpr(j), 64), PrimExpr(k), MakeBinary(TirKind::kFloorMod, PrimExpr(j), 64)});
  Stmt upd = Store(c, Load(c, ij) + Load(a, {PrimExpr(i), PrimExpr(k)}) * bl, ij);
  PrimFunc f = Func(Loop(i, 300, Loop(j, 256, Loop(k, 130, Seq({init, upd})))), {a, b, c});
  PrimFunc out = ScheduleMatmuls(f, 1);
  ASSERT_NE(out, f);
  Allocs allocs;
  allocs.VisitStmt(out->body);
  EXPECT_EQ(std::count(allocs.names.begin(), allocs.names.end(), "acc"), static_cast<long>(allocs.names.size()));
  struct BLoads : StmtExprVisitor {
    int loads = 0, divided = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->name == "Bp") {
        ++loads;
        divided += l->indices[0].as<FloorDivNode>() != nullptr || l->indices[2].as<FloorModNode>() != nullptr;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } bl_visit;
  bl_visit.VisitStmt(out->body);
  EXPECT_GT(bl_visit.loads, 0);
  EXPECT_EQ(bl_visit.divided, 0);
  // 300 = 50 full tiles of 6 rows, 4 column blocks of 64.
  const auto* tile = As<ForNode>(out->body);
  ASSERT_NE(tile, nullptr);
  ASSERT_NE(tile->extent.as<IntImmNode>(), nullptr);
  EXPECT_EQ(tile->extent.as<IntImmNode>()->value, 50 * 4);
}

// Vectorized loops over the tile's columns whose extent is not a constant
// and that compute an FMA (the k loop's), and those of run-time extent.
struct ColumnLoops : StmtExprVisitor {
  int run_time_fma = 0, run_time = 0;
  void VisitStmt(const Stmt& st) override {
    if (const auto* f = As<ForNode>(st); f != nullptr && f->for_kind == ForKind::kVectorized &&
                                         f->extent.as<IntImmNode>() == nullptr) {
      ++run_time;
      Census c;
      c.VisitStmt(f->body);
      run_time_fma += c.fma;
    }
    StmtExprVisitor::VisitStmt(st);
  }
};

TEST(MatmulScheduleTest, SymbolicColumnsUnderSixteenUseAZeroPaddedPanel) {
  // A symbolic N (under 16 at run time: an attention score matrix over a
  // short sequence): the FMAs run at 16 static lanes over B_narrow, a K x 16
  // copy of B's panel, and only that copy and the store have a run-time
  // width. A K whose panel would pass 16 KiB keeps the masked loops.
  Var n = MakeVar("n");
  for (int64_t kk : {32, 300}) {
    Buffer a = MakeBuffer("A", {PrimExpr(n), PrimExpr(kk)}, DType::Float32());
    Buffer b = MakeBuffer("B", {PrimExpr(kk), PrimExpr(n)}, DType::Float32());
    Buffer c = MakeBuffer("C", {PrimExpr(n), PrimExpr(n)}, DType::Float32());
    PrimFunc out = ScheduleMatmuls(Func(MatmulNest(a, b, c, PrimExpr(n), PrimExpr(n), kk), {a, b, c}), 1);
    Allocs allocs;
    allocs.VisitStmt(out->body);
    long panels = std::count(allocs.names.begin(), allocs.names.end(), "B_narrow");
    ColumnLoops loops;
    loops.VisitStmt(out->body);
    if (kk == 32) {
      // One panel per row tile kind: 6 rows, the leftover 4 and the tails
      // of 3, 2 and 1.
      EXPECT_EQ(panels, 5);
      EXPECT_EQ(loops.run_time_fma, 0);
      EXPECT_EQ(loops.run_time, 2 * 5);  // each tile's copy and store
    } else {
      EXPECT_EQ(panels, 0);  // 300 x 16 floats: 18.75 KiB
      EXPECT_GT(loops.run_time_fma, 0);
    }
  }
}

TEST(MatmulScheduleTest, OneRowMatmulOfATransposedCopyBecomesDotProducts) {
  // Bt[j2, k2] = S[k2, j2]... as lowered: a copy Bt[k, j] = S[j, k], then
  // C[0, j] = sum_k A[0, k] * Bt[k, j]. One row: dot products of A's row and
  // S's rows, read in place (no copy, no Bt), 16-lane fmas along k, four
  // columns at a time. Two rows, or a Bt read elsewhere, keep the tiles.
  Var n = MakeVar("n");
  for (int64_t rows : {1, 2}) {
    Buffer a = MakeBuffer("A", {PrimExpr(rows), PrimExpr(int64_t{40})}, DType::Float32());
    Buffer src = MakeBuffer("S", {PrimExpr(n), PrimExpr(int64_t{40})}, DType::Float32());
    Buffer bt = MakeBuffer("Bt", {PrimExpr(int64_t{40}), PrimExpr(n)}, DType::Float32());
    Buffer c = MakeBuffer("C", {PrimExpr(rows), PrimExpr(n)}, DType::Float32());
    Var x = MakeVar("x"), y = MakeVar("y");
    Stmt copy = Loop(x, 40, Loop(y, PrimExpr(n), Store(bt, Load(src, {PrimExpr(y), PrimExpr(x)}), {PrimExpr(x), PrimExpr(y)})));
    Stmt body = std::make_shared<AllocateNode>(bt, Seq({copy, MatmulNest(a, bt, c, rows, PrimExpr(n), 40)}));
    PrimFunc out = ScheduleMatmuls(Func(body, {a, src, c}), 1);
    Census census = Count(out);
    bool stores_bt = std::count(census.stored.begin(), census.stored.end(), "Bt") > 0;
    struct Loaded : StmtExprVisitor {
      std::set<std::string> names;
      void VisitExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>()) names.insert(l->buffer->name);
        StmtExprVisitor::VisitExpr(e);
      }
    } loaded;
    loaded.VisitStmt(out->body);
    if (rows == 1) {
      EXPECT_FALSE(stores_bt);
      EXPECT_EQ(loaded.names.count("Bt"), 0u);
      EXPECT_EQ(loaded.names.count("S"), 1u);
      EXPECT_EQ(loaded.names.count("dot_acc"), 1u);
      EXPECT_GE(census.vectorized, 2);  // the 16-lane fmas (and their init)
    } else {
      EXPECT_TRUE(stores_bt);
      EXPECT_EQ(loaded.names.count("dot_acc"), 0u);
    }
  }
}

TEST(MatmulScheduleTest, EpilogueStoringIntoAnOperandIsNotFused) {
  // A[i, j] = C[i, j] + 1 after C = A @ B: later tiles still read A, so the
  // stage must run after the whole matmul.
  Buffer a = MakeBuffer("A", {PrimExpr(16), PrimExpr(16)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(16), PrimExpr(16)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(16), PrimExpr(16)}, DType::Float32());
  Var i = MakeVar("i"), j = MakeVar("j");
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  Stmt epi = Loop(i, 16, Loop(j, 16, Store(a, Load(c, ij) + FloatImm(DType::Float32(), 1), ij)));
  Stmt body = std::make_shared<AllocateNode>(c, Seq({MatmulNest(a, b, c, 16, 16, 16), epi}));
  Census census = Count(ScheduleMatmuls(Func(body, {a, b}), 1));
  EXPECT_EQ(census.fma, 1);
  EXPECT_EQ(census.allocs, 2);  // C is still stored and read
  EXPECT_NE(std::find(census.stored.begin(), census.stored.end(), "C"), census.stored.end());
}

TEST(MatmulScheduleTest, NonMatmulNestsAreLeftAlone) {
  // The reduction is over j, not a matmul: S[i] += A[i, j].
  Var i = MakeVar("i"), j = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(8)}, DType::Float32());
  Buffer s = MakeBuffer("S", {PrimExpr(8)}, DType::Float32());
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(j), 0),
                                               Store(s, FloatImm(DType::Float32(), 0), {PrimExpr(i)}), nullptr);
  Stmt upd = Store(s, Load(s, {PrimExpr(i)}) + Load(a, {PrimExpr(i), PrimExpr(j)}), {PrimExpr(i)});
  PrimFunc f = Func(Loop(i, 8, Loop(j, 8, Seq({init, upd}))), {a, s});
  EXPECT_EQ(ScheduleMatmuls(f, 8), f);
}

// ---------------------------------------------------------------- numbers

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  return CompileAndLoad(source, options, 0);
}

std::string Shape(const std::vector<std::string>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    bool sym = !std::isdigit(static_cast<unsigned char>(dims[i][0]));
    s += (i ? ", " : "") + (sym ? "\"" + dims[i] + "\"" : dims[i]);
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

// main(a: (.., M, K), b: (K, N) [, bias: (N,)]) -> epilogue(a @ b)
std::string Module(const std::vector<std::string>& a, const std::vector<std::string>& b,
                   const std::vector<std::string>& out, const std::string& epilogue) {
  std::vector<std::string> syms, dims = a;
  dims.insert(dims.end(), b.begin(), b.end());
  for (const auto& d : dims)
    if (!d.empty() && !std::isdigit(static_cast<unsigned char>(d[0])) &&
        std::find(syms.begin(), syms.end(), d) == syms.end()) {
      syms.push_back(d);
    }
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor(" + Shape(a) +
                    ", dtype=\"float32\"), b: R.Tensor(" + Shape(b) + ", dtype=\"float32\"), bias: R.Tensor(" +
                    Shape({b.back()}) + ", dtype=\"float32\"), r: R.Tensor(" + Shape(out) +
                    ", dtype=\"float32\")) -> R.Tensor(" + Shape(out) + ", dtype=\"float32\"):\n";
  for (const auto& sym : syms) src += "        " + sym + " = T.int64()\n";
  src += "        with R.dataflow():\n            c = R.matmul(a, b, out_dtype=\"void\")\n";
  if (epilogue == "none") {
    src += "            gv = c\n";
  } else if (epilogue == "bias_relu") {
    src += "            d = R.add(c, bias)\n            gv = R.nn.relu(d)\n";
  } else if (epilogue == "bias_gelu_residual") {
    src += "            d = R.add(c, bias)\n            e = R.nn.gelu(d)\n            gv = R.add(e, r)\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

float Epilogue(const std::string& kind, double acc, float bias, float res) {
  if (kind == "none") return static_cast<float>(acc);
  double v = acc + bias;
  if (kind == "bias_relu") return static_cast<float>(v > 0 ? v : 0);
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))) + res);
}

// Runs `mod` on random inputs of batch x m x k and k x n and checks every
// element against the reference.
// `lead` (optional) splits the batch into several leading dimensions.
void CheckMatmul(const vm::Module& mod, int64_t batch, int64_t m, int64_t k, int64_t n, const std::string& epi,
                 std::vector<int64_t> lead = {}, bool blocked = false) {
  if (lead.empty() && batch) lead = {batch};
  std::vector<int64_t> a_shape = lead, o_shape = lead;
  a_shape.insert(a_shape.end(), {m, k});
  o_shape.insert(o_shape.end(), {m, n});
  int64_t nb = 1;
  for (int64_t d : lead) nb *= d;
  std::vector<float> a = RandomFloats(nb * m * k, 1), b = RandomFloats(k * n, 2), bias = RandomFloats(n, 3), r = RandomFloats(nb * m * n, 4);
  // blocked: B passed as the weight_layout KN64n weight [ceil(n / 64), k, 64];
  // the last block's padding past n is NaN, which no stored column may see.
  std::vector<float> bp;
  const int64_t blocks = (n + 63) / 64;
  if (blocked) {
    bp.assign(blocks * k * 64, std::numeric_limits<float>::quiet_NaN());
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) bp[((j / 64) * k + t) * 64 + j % 64] = b[t * n + j];
  }
  std::vector<Any> args = {FloatTensor(a_shape, a), blocked ? FloatTensor({blocks, k, 64}, bp) : FloatTensor({k, n}, b),
                           FloatTensor({n}, bias), FloatTensor(o_shape, r)};
  Any ret;
  std::unique_ptr<vm::Context> ctx = mod.CreateContext();
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Result<Tensor> out = ret.AsTensor();
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->shape(), o_shape);
  const float* got = out->data<float>();
  int bad = 0;
  for (int64_t p = 0; p < nb; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += double(a[(p * m + i) * k + t]) * b[t * n + j];
        float want = Epilogue(epi, acc, bias[j], r[(p * m + i) * n + j]);
        float g = got[(p * m + i) * n + j];
        if (!(std::fabs(g - want) <= 1e-5f * float(k) + 1e-5f) && bad++ < 5) {
          ADD_FAILURE() << "batch " << p << " row " << i << " col " << j << ": got " << g << ", want " << want
                        << " (m=" << m << " k=" << k << " n=" << n << " " << epi << ")";
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// main(q: (b, 1, K), mem: (b, n, K)) -> q @ permute_dims(mem): attention of
// one query row over a memory, each score a dot product of two rows.
std::string DotModule(const std::string& b, const std::string& k, const std::string& n) {
  // b empty: no batch, q (1, K) and mem (n, K).
  std::vector<std::string> qs = {"1", k}, ms = {n, k}, os = {"1", n};
  if (!b.empty()) {
    qs.insert(qs.begin(), b);
    ms.insert(ms.begin(), b);
    os.insert(os.begin(), b);
  }
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(q: R.Tensor(" + Shape(qs) +
                    ", dtype=\"float32\"), mem: R.Tensor(" + Shape(ms) + ", dtype=\"float32\")) -> R.Tensor(" +
                    Shape(os) + ", dtype=\"float32\"):\n";
  for (const std::string& d : {b, n})
    if (!d.empty() && !std::isdigit(static_cast<unsigned char>(d[0]))) src += "        " + d + " = T.int64()\n";
  src += std::string("        with R.dataflow():\n            t = R.permute_dims(mem, axes=") +
         (b.empty() ? "[1, 0]" : "[0, 2, 1]") + ")\n";
  src += "            gv = R.matmul(q, t, out_dtype=\"void\")\n            R.output(gv)\n        return gv\n";
  return src;
}

// b 0: no batch dimension (one batch).
void CheckDot(const vm::Module& mod, int64_t b, int64_t k, int64_t n) {
  bool batched = b > 0;
  b = std::max<int64_t>(b, 1);
  std::vector<float> q = RandomFloats(b * k, 5), mem = RandomFloats(b * n * k, 6);
  std::vector<Any> args = {batched ? FloatTensor({b, 1, k}, q) : FloatTensor({1, k}, q),
                           batched ? FloatTensor({b, n, k}, mem) : FloatTensor({n, k}, mem)};
  Any ret;
  std::unique_ptr<vm::Context> ctx = mod.CreateContext();
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Result<Tensor> out = ret.AsTensor();
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->shape(), (batched ? std::vector<int64_t>{b, 1, n} : std::vector<int64_t>{1, n}));
  const float* got = out->data<float>();
  int bad = 0;
  for (int64_t p = 0; p < b; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t t = 0; t < k; ++t) want += double(q[p * k + t]) * mem[(p * n + j) * k + t];
      float g = got[p * n + j];
      if (!(std::fabs(g - want) <= 1e-5 * double(k) + 1e-5) && bad++ < 5)
        ADD_FAILURE() << "batch " << p << " col " << j << ": got " << g << ", want " << want << " (k=" << k << " n=" << n << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(MatmulScheduleNumbersTest, OneRowTransposedDotProducts) {
  // K under 16 (tail only), odd K (blocks and a tail), whole blocks; N of
  // whole 4-column groups and of leftover columns, symbolic and static; a
  // symbolic and a static batch and none, one and two threads.
  for (int64_t k : {5, 37, 256}) {
    std::string ks = std::to_string(k);
    for (int threads : {1, 2}) {
      auto mod = Compile(DotModule("b", ks, "n"), threads);
      ASSERT_NE(mod, nullptr);
      for (int64_t b : {1, 3})
        for (int64_t n : {1, 3, 4, 7, 23, 64}) CheckDot(*mod, b, k, n);
    }
    auto pinned = Compile(DotModule("2", ks, "9"), 1);
    ASSERT_NE(pinned, nullptr);
    CheckDot(*pinned, 2, k, 9);
    // No batch: two threads take groups of columns.
    auto flat = Compile(DotModule("", ks, "n"), 2);
    ASSERT_NE(flat, nullptr);
    for (int64_t n : {1, 5, 8, 23, 101}) CheckDot(*flat, 0, k, n);
  }
}

TEST(MatmulScheduleNumbersTest, StaticShapes) {
  const int64_t ms[] = {1, 7, 17, 20, 23, 64, 128, 1000};
  const int64_t ns[][2] = {{37, 10}, {64, 128}, {19, 1000}, {128, 48}, {64, 196}};
  int variant = 0;
  for (int64_t m : ms) {
    for (const auto& kn : ns) {
      if (m == 1000 && kn[1] == 1000) continue;  // the reference would dominate the test's time
      int threads = (variant++ % 2) ? 2 : 1;
      std::string ms_ = std::to_string(m), ks = std::to_string(kn[0]), nss = std::to_string(kn[1]);
      auto mod = Compile(Module({ms_, ks}, {ks, nss}, {ms_, nss}, "none"), threads);
      ASSERT_NE(mod, nullptr);
      CheckMatmul(*mod, 0, m, kn[0], kn[1], "none");
    }
  }
}

TEST(MatmulScheduleNumbersTest, PrefetchedWeight) {
  // A 2.2 MB B (prefetched ahead, clamped at the last row): the same numbers.
  for (int threads : {1, 2}) {
    auto mod = Compile(Module({"20", "512"}, {"512", "1088"}, {"20", "1088"}, "none"), threads);
    ASSERT_NE(mod, nullptr);
    CheckMatmul(*mod, 0, 20, 512, 1088, "none");
  }
}

TEST(MatmulScheduleNumbersTest, WideOneRowTiles) {
  // One row and 1000 columns (a classifier): 128-column tiles with two
  // partial sums each, the last tile ending at N, the epilogue fused; K odd
  // (a partial-sum tail) and even.
  for (int64_t k : {301, 64}) {
    for (int threads : {1, 2}) {
      std::string ks = std::to_string(k);
      auto mod = Compile(Module({"1", ks}, {ks, "1000"}, {"1", "1000"}, "bias_relu"), threads);
      ASSERT_NE(mod, nullptr);
      CheckMatmul(*mod, 0, 1, k, 1000, "bias_relu");
    }
  }
}

TEST(MatmulScheduleNumbersTest, PackedWeightPanels) {
  // 300 rows, rows of B 1 KiB apart, K x 32 panels over 32 KiB: B is packed
  // per call (300 = 37 full tiles + 4 single rows).
  Buffer a = MakeBuffer("A", {PrimExpr(300), PrimExpr(260)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(260), PrimExpr(256)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(300), PrimExpr(256)}, DType::Float32());
  PrimFunc f = ScheduleMatmuls(Func(MatmulNest(a, b, c, 300, 256, 260), {a, b, c}), 2);
  const auto* alloc = As<AllocateNode>(f->body);
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->buffer->name, "B_packed");
  for (int threads : {1, 2}) {
    auto mod = Compile(Module({"300", "260"}, {"260", "256"}, {"300", "256"}, "bias_relu"), threads);
    ASSERT_NE(mod, nullptr);
    CheckMatmul(*mod, 0, 300, 260, 256, "bias_relu");
  }
}

TEST(MatmulScheduleNumbersTest, SymbolicRowsPackedFromTwoHundredFiftySixRows) {
  // Symbolic rows over a B the rule packs (rows 512 bytes apart): row counts
  // on both sides of 256 (the plain kernel below, the packed one from
  // there), with the GELU epilogue; a folded symbolic batch too (2 x 128
  // rows: MiniLM's batch and sequence).
  for (int threads : {1, 2}) {
    auto mod = Compile(Module({"n", "130"}, {"130", "128"}, {"n", "128"}, "bias_gelu_residual"), threads);
    ASSERT_NE(mod, nullptr);
    for (int64_t m : {1, 7, 255, 256, 257, 301}) CheckMatmul(*mod, 0, m, 130, 128, "bias_gelu_residual");
  }
  auto folded = Compile(Module({"b", "s", "130"}, {"130", "384"}, {"b", "s", "384"}, "bias_relu"), 2);
  ASSERT_NE(folded, nullptr);
  for (auto bs : {std::pair<int64_t, int64_t>{1, 7}, {2, 128}, {3, 100}}) CheckMatmul(*folded, bs.first, bs.second, 130, 384, "bias_relu");
}

// Module() with B a blocked weight [ceil(N / 64), K, 64] (weight_layout
// KN64n; weight_columns N when N is not a multiple of 64).
std::string BlockedModule(const std::vector<std::string>& a, int64_t k, int64_t n, const std::vector<std::string>& out,
                          const std::string& epilogue) {
  std::string src = Module(a, {std::to_string(k), std::to_string(n)}, out, epilogue);
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = src.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) src.replace(at, from.size(), to);
  };
  replace("b: R.Tensor((" + std::to_string(k) + ", " + std::to_string(n) + ")",
          "b: R.Tensor((" + std::to_string((n + 63) / 64) + ", " + std::to_string(k) + ", 64)");
  replace("out_dtype=\"void\"", "weight_layout=\"KN64n\"" +
                                    (n % 64 ? ", weight_columns=" + std::to_string(n) : std::string()));
  return src;
}

TEST(MatmulScheduleNumbersTest, BlockedWeights) {
  // A blocked weight read panel by panel: symbolic rows (every leftover tile
  // of 6, and 256+), a folded symbolic batch, static rows below a tile, one
  // row (where plain B takes 128-column tiles), K odd, one and two threads.
  for (int threads : {1, 2}) {
    auto mod = Compile(BlockedModule({"n", "33"}, 33, 192, {"n", "192"}, "bias_gelu_residual"), threads);
    ASSERT_NE(mod, nullptr);
    for (int64_t m : {1, 2, 3, 5, 6, 7, 13, 257}) CheckMatmul(*mod, 0, m, 33, 192, "bias_gelu_residual", {}, true);
  }
  auto folded = Compile(BlockedModule({"b", "s", "40"}, 40, 128, {"b", "s", "128"}, "bias_relu"), 2);
  ASSERT_NE(folded, nullptr);
  for (auto bs : {std::pair<int64_t, int64_t>{1, 7}, {2, 9}}) CheckMatmul(*folded, bs.first, bs.second, 40, 128, "bias_relu", {}, true);
  for (int64_t m : {1, 4}) {
    auto st = Compile(BlockedModule({std::to_string(m), "70"}, 70, 640, {std::to_string(m), "640"}, "none"), 1);
    ASSERT_NE(st, nullptr);
    CheckMatmul(*st, 0, m, 70, 640, "none", {}, true);
  }
}

TEST(MatmulScheduleNumbersTest, BlockedWeightsWithAPaddedLastPanel) {
  // N not a multiple of 64 (a CTC head's 6625 classes): the last panel is
  // padded (NaN in CheckMatmul), its tile stores only the columns before N.
  // Static and symbolic rows with every leftover tile, the epilogue reading
  // the bias and the residual per column, one and two threads, N below and
  // above one block.
  for (int threads : {1, 2}) {
    auto mod = Compile(BlockedModule({"n", "33"}, 33, 200, {"n", "200"}, "bias_gelu_residual"), threads);
    ASSERT_NE(mod, nullptr);
    for (int64_t m : {1, 2, 3, 5, 6, 7, 13, 40}) CheckMatmul(*mod, 0, m, 33, 200, "bias_gelu_residual", {}, true);
  }
  for (int64_t n : {40, 65, 127, 1000}) {
    auto st = Compile(BlockedModule({"40", "24"}, 24, n, {"40", std::to_string(n)}, "bias_relu"), 2);
    ASSERT_NE(st, nullptr);
    CheckMatmul(*st, 0, 40, 24, n, "bias_relu", {}, true);
  }
  auto folded = Compile(BlockedModule({"b", "s", "40"}, 40, 100, {"b", "s", "100"}, "none"), 1);
  ASSERT_NE(folded, nullptr);
  for (auto bs : {std::pair<int64_t, int64_t>{1, 7}, {2, 9}}) CheckMatmul(*folded, bs.first, bs.second, 40, 100, "none", {}, true);
}

TEST(MatmulScheduleNumbersTest, SymbolicRows) {
  for (int threads : {1, 2}) {
    auto mod = Compile(Module({"n", "40"}, {"40", "100"}, {"n", "100"}, "none"), threads);
    ASSERT_NE(mod, nullptr);
    // Every leftover of 8 rows (with and without the 4-row block), and
    // larger counts.
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 17, 20, 23, 64, 1000})
      CheckMatmul(*mod, 0, m, 40, 100, "none");
  }
}

TEST(MatmulScheduleNumbersTest, LeftoverRowTiles) {
  // Every remainder of 8 (tiles of 4, 2 and 1 rows, each present or
  // skipped), with K odd (the partial sums' k tail) and even, 40 columns (a
  // last column block ending at N), symbolic and static rows.
  for (int64_t k : {33, 64}) {
    std::string ks = std::to_string(k);
    auto mod = Compile(Module({"n", ks}, {ks, "40"}, {"n", "40"}, "bias_gelu_residual"), 1);
    ASSERT_NE(mod, nullptr);
    for (int64_t m = 1; m <= 16; ++m) CheckMatmul(*mod, 0, m, k, 40, "bias_gelu_residual");
    CheckMatmul(*mod, 0, 23, k, 40, "bias_gelu_residual");
  }
  for (int64_t m : {3, 6, 12, 14, 15, 22}) {
    auto mod = Compile(Module({std::to_string(m), "33"}, {"33", "72"}, {std::to_string(m), "72"}, "bias_relu"), 2);
    ASSERT_NE(mod, nullptr);
    CheckMatmul(*mod, 0, m, 33, 72, "bias_relu");
  }
}

TEST(MatmulScheduleNumbersTest, SymbolicBatchFoldedIntoRows) {
  // [s, b, K] x [K, N] with s and b symbolic: rows of several batch
  // elements share tiles whatever b is (1: khmersm's sequence-first
  // projections; 3 and 9: tiles straddling batch elements).
  for (int threads : {1, 2}) {
    auto mod = Compile(Module({"s", "b", "33"}, {"33", "70"}, {"s", "b", "70"}, "bias_relu"), threads);
    ASSERT_NE(mod, nullptr);
    for (auto sb : {std::pair<int64_t, int64_t>{1, 1}, {13, 1}, {96, 1}, {7, 3}, {2, 9}, {4, 4}})
      CheckMatmul(*mod, sb.first, sb.second, 33, 70, "bias_relu");
  }
  // Two symbolic batch dimensions and symbolic rows: the row counter
  // carries through two levels (rows 1 and 2: every tile wraps both).
  auto mod = Compile(Module({"s", "t", "b", "20"}, {"20", "40"}, {"s", "t", "b", "40"}, "bias_gelu_residual"), 1);
  ASSERT_NE(mod, nullptr);
  for (auto stb : {std::vector<int64_t>{3, 1, 1}, {2, 3, 2}, {5, 2, 3}, {1, 7, 5}})
    CheckMatmul(*mod, 0, stb[2], 20, 40, "bias_gelu_residual", {stb[0], stb[1]});
}

TEST(MatmulScheduleNumbersTest, SymbolicColumns) {
  // A symbolic N: full 32-column blocks, then 16-column blocks with the
  // last moved back to end at N (N >= 16), or masked lanes (N < 16); one,
  // two and eight rows (64-column blocks for one or two).
  for (int64_t m : {1, 2, 8, 13}) {
    std::string ms = std::to_string(m);
    auto mod = Compile(Module({ms, "37"}, {"37", "n"}, {ms, "n"}, "bias_relu"), 1);
    ASSERT_NE(mod, nullptr);
    for (int64_t n : {1, 5, 15, 16, 17, 23, 31, 33, 48, 63, 64, 65, 100})
      CheckMatmul(*mod, 0, m, 37, n, "bias_relu");
  }
}

TEST(MatmulScheduleNumbersTest, SymbolicColumnsUnderSixteenWithSymbolicRows) {
  // Rows and columns both symbolic (attention scores, a batch of heads),
  // N under 16 through the zero-padded panel (K 32, 37) and over it; K 300
  // keeps the masked loops. Every row-tile kind (6, 4, 2, 1 rows) is hit.
  for (int64_t k : {32, 37, 300}) {
    std::string ks = std::to_string(k);
    auto mod = Compile(Module({"h", "s", ks}, {ks, "n"}, {"h", "s", "n"}, "bias_relu"), k == 37 ? 2 : 1);
    ASSERT_NE(mod, nullptr);
    for (int64_t s : {1, 2, 5, 7, 13})
      for (int64_t n : {1, 3, 7, 15, 16, 21}) CheckMatmul(*mod, 3, s, k, n, "bias_relu");
  }
}

TEST(MatmulScheduleNumbersTest, WideTiles) {
  // 6 x 64 tiles (N >= 64 or symbolic): every remainder of 6 rows (tiles of
  // 4, 2 and 1 rows, present or not) with symbolic rows, N a multiple of 64
  // and not (the last block moved back to end at N), a symbolic N (64-wide
  // blocks, then 16-wide ones), the GELU epilogue, K odd and even.
  for (int64_t k : {31, 64}) {
    std::string ks = std::to_string(k);
    for (const char* n : {"64", "136"}) {
      auto mod = Compile(Module({"m", ks}, {ks, n}, {"m", n}, "bias_gelu_residual"), 1);
      ASSERT_NE(mod, nullptr);
      for (int64_t m = 1; m <= 13; ++m) CheckMatmul(*mod, 0, m, k, std::stoll(n), "bias_gelu_residual");
      CheckMatmul(*mod, 0, 256, k, std::stoll(n), "bias_gelu_residual");
    }
  }
  auto sym = Compile(Module({"m", "40"}, {"40", "n"}, {"m", "n"}, "bias_relu"), 2);
  ASSERT_NE(sym, nullptr);
  for (int64_t m : {1, 5, 6, 7, 11, 30})
    for (int64_t n : {15, 64, 65, 80, 127, 128, 200}) CheckMatmul(*sym, 0, m, 40, n, "bias_relu");
  // MiniLM's FFN pair at a quarter of the rows, static (B packed per call
  // for the first).
  for (int threads : {1, 2}) {
    auto up = Compile(Module({"64", "384"}, {"384", "1536"}, {"64", "1536"}, "bias_gelu_residual"), threads);
    ASSERT_NE(up, nullptr);
    CheckMatmul(*up, 0, 64, 384, 1536, "bias_gelu_residual");
    auto down = Compile(Module({"2", "32", "1536"}, {"1536", "384"}, {"2", "32", "384"}, "bias_relu"), threads);
    ASSERT_NE(down, nullptr);
    CheckMatmul(*down, 2, 32, 1536, 384, "bias_relu");
  }
}

TEST(MatmulScheduleNumbersTest, ShortWideTiles) {
  // 2-8 rows against 600 columns (one tile of all rows, 128 / 96 / 64 / 48
  // wide, the last block moved back to end at N), with a fused epilogue,
  // K odd and even, one and two threads.
  for (int64_t k : {37, 64}) {
    std::string ks = std::to_string(k);
    for (int64_t m : {2, 3, 4, 5, 7, 8}) {
      std::string mss = std::to_string(m);
      auto mod = Compile(Module({mss, ks}, {ks, "600"}, {mss, "600"}, "bias_relu"), m % 2 ? 2 : 1);
      ASSERT_NE(mod, nullptr);
      CheckMatmul(*mod, 0, m, k, 600, "bias_relu");
    }
  }
}

TEST(MatmulScheduleNumbersTest, FusedEpilogues) {
  auto relu = Compile(Module({"n", "784"}, {"784", "128"}, {"n", "128"}, "bias_relu"), 2);
  ASSERT_NE(relu, nullptr);
  for (int64_t m : {1, 9, 64}) CheckMatmul(*relu, 0, m, 784, 128, "bias_relu");
  auto gelu = Compile(Module({"17", "64"}, {"64", "72"}, {"17", "72"}, "bias_gelu_residual"), 1);
  ASSERT_NE(gelu, nullptr);
  CheckMatmul(*gelu, 0, 17, 64, 72, "bias_gelu_residual");
}

TEST(MatmulScheduleNumbersTest, BatchedWithBroadcastWeight) {
  auto mod = Compile(Module({"3", "n", "33"}, {"33", "40"}, {"3", "n", "40"}, "bias_relu"), 2);
  ASSERT_NE(mod, nullptr);
  for (int64_t m : {1, 9, 20}) CheckMatmul(*mod, 3, m, 33, 40, "bias_relu");
}

TEST(MatmulScheduleNumbersTest, StaticBatchFoldedIntoRows) {
  // Static batch with a shared weight: rows of several batch elements share
  // a tile (3 rows per element: tiles straddle elements), with the GELU
  // epilogue whose stages read the bias-added value twice; a unit batch
  // (epilogue loads at [0, i, j]); PyTorch attention's 128 x 1-row batch.
  struct Case {
    int64_t batch, m, k, n;
    const char* epi;
    int threads;
  };
  for (const Case& c : {Case{5, 3, 40, 70, "bias_gelu_residual", 1}, Case{5, 3, 40, 70, "bias_relu", 2},
                        Case{1, 17, 64, 72, "bias_gelu_residual", 2}, Case{128, 1, 64, 96, "bias_relu", 2}}) {
    std::string b = std::to_string(c.batch), m = std::to_string(c.m), k = std::to_string(c.k), n = std::to_string(c.n);
    auto mod = Compile(Module({b, m, k}, {k, n}, {b, m, n}, c.epi), c.threads);
    ASSERT_NE(mod, nullptr);
    CheckMatmul(*mod, c.batch, c.m, c.k, c.n, c.epi);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
