// TileTransposes: which nests move 16 x 16 register tiles (every class of
// permutation that moves the innermost axis, plain and fused with
// arithmetic), the structure they get, the same numbers as the nest before
// it, that the default schedule applies it, and nests it must leave alone.
#include "compiler/tir/transpose_tiles.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// Short name: the PrimFunc text below is built from several of these.
const auto Shape = &testing::ShapeText;

// A lowered 4-D transpose as the default schedule leaves it before this
// rule: out[i0, i1, i2, i3] = `value` over loops of the output's extents,
// i1 parallel, i3 vectorized; A has shape `in`, b (a per-i3 bias) `out[3]`.
std::string Transpose(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::string& value) {
  return "@T.prim_func\ndef transpose(A: T.Buffer(" + Shape(in) + ", \"float32\"), b: T.Buffer(" + Shape({out[3]}) +
         ", \"float32\"), T_out: T.Buffer(" + Shape(out) +
         ", \"float32\")):\n    for i0 in range(T.int64(" + std::to_string(out[0]) +
         ")):\n        for i1 in T.parallel(T.int64(" + std::to_string(out[1]) +
         ")):\n            for i2 in range(T.int64(" + std::to_string(out[2]) +
         ")):\n                for i3 in T.vectorized(T.int64(" + std::to_string(out[3]) +
         ")):\n                    T_out[i0, i1, i2, i3] = " + value + "\n";
}

struct Census : StmtExprVisitor {
  std::vector<std::pair<std::string, int64_t>> loops;  // name, extent, outermost first
  int transposes = 0, allocations = 0;
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      const auto* e = f->extent.as<IntImmNode>();
      loops.push_back({f->loop_var->name, e ? e->value : -1});
    }
    if (As<AllocateNode>(s)) ++allocations;
    StmtExprVisitor::VisitStmt(s);
  }
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>())
      if (c->op == "transpose16") ++transposes;
    StmtExprVisitor::VisitExpr(e);
  }
};

Census Count(const PrimFunc& f) {
  Census c;
  c.VisitStmt(f->body);
  return c;
}

using Loops = std::vector<std::pair<std::string, int64_t>>;

TEST(TransposeTilesTest, PlainTransposesMoveRegisterTiles) {
  struct Case {
    std::vector<int64_t> in, out;
    std::string read;
    Loops loops;  // after the rewrite
  };
  std::vector<Case> cases = {
      // NCHW -> NHWC: the tile's rows are along w (i2, the serial loop).
      {{1, 48, 32, 64}, {1, 32, 64, 48}, "A[i0, i3, i1, i2]", {{"i0", 1}, {"i1", 32}, {"i2_o", 4}, {"i3_o", 3}}},
      // NHWC -> NCHW: along c (i1, the parallel loop), a loop between.
      {{1, 16, 32, 48}, {1, 48, 16, 32}, "A[i0, i2, i3, i1]", {{"i0", 1}, {"i1_o", 3}, {"i2", 16}, {"i3_o", 2}}},
      // [.., s, d] -> [.., d, s] (attention's K^T).
      {{2, 8, 128, 64}, {2, 8, 64, 128}, "A[i0, i1, i3, i2]", {{"i0", 2}, {"i1", 8}, {"i2_o", 4}, {"i3_o", 8}}},
      // Three axes rotated the other way, the batch moved too.
      {{16, 3, 32, 5}, {5, 3, 16, 32}, "A[i2, i1, i3, i0]", {}},
  };
  for (const Case& c : cases) {
    PrimFunc f = ParseFunc(Transpose(c.in, c.out, c.read), "transpose");
    PrimFunc out = TileTransposes(f);
    if (c.loops.empty()) {
      // The last case: its rows would run along i0 (extent 5), not a tile.
      EXPECT_EQ(out, f) << c.read;
      continue;
    }
    ASSERT_NE(out, f) << c.read;
    Census n = Count(out);
    EXPECT_EQ(n.loops, c.loops) << testing::Print(out);
    EXPECT_EQ(n.transposes, 1) << testing::Print(out);
    EXPECT_EQ(n.allocations, 0) << testing::Print(out);
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  }
}

TEST(TransposeTilesTest, OddSizesTakeTheirLastRowsAndColumnsAsTheyWere) {
  struct Case {
    std::vector<int64_t> in, out;
    std::string read;
    int loops;  // after the rewrite
  };
  std::vector<Case> cases = {
      // NCHW -> NHWC, w = 20 rows of tiles and 40 channels: both tails.
      // i0, i1, i2_o, i3_o; i2_t, i3_t (columns); i2_t, i3 (rows).
      {{1, 40, 16, 20}, {1, 16, 20, 40}, "A[i0, i3, i1, i2]", 8},
      // [s, d] -> [d, s] at 33 x 17: a row tail of 1, a column tail of 1.
      {{1, 2, 33, 17}, {1, 2, 17, 33}, "A[i0, i1, i3, i2]", 8},
      // NHWC -> NCHW with 24 channels (the rows, i1, outside a loop over
      // h): i0, i1_o, i2, i3_o, i1_t, i3_t; i1_t, i2_t, i3 (rows).
      {{1, 16, 20, 24}, {1, 24, 16, 20}, "A[i0, i2, i3, i1]", 9},
      // A column tail only (48 rows, 20 columns).
      {{1, 3, 20, 48}, {1, 3, 48, 20}, "A[i0, i1, i3, i2]", 6},
  };
  for (const Case& c : cases) {
    PrimFunc f = ParseFunc(Transpose(c.in, c.out, c.read), "transpose");
    PrimFunc out = TileTransposes(f);
    ASSERT_NE(out, f) << c.read;
    Census n = Count(out);
    EXPECT_EQ(n.transposes, 1) << testing::Print(out);
    EXPECT_EQ(static_cast<int>(n.loops.size()), c.loops) << testing::Print(out);
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  }
}

TEST(TransposeTilesTest, ArithmeticAroundTheReadGoesThroughALocalTile) {
  PrimFunc f = ParseFunc(Transpose({1, 32, 16, 48}, {1, 16, 48, 32},
                                   "T.max(A[i0, i3, i1, i2] * T.float32(0.5) + b[i3], T.float32(0))"),
                         "transpose");
  PrimFunc out = TileTransposes(f);
  ASSERT_NE(out, f);
  Census n = Count(out);
  EXPECT_EQ(n.transposes, 1);
  EXPECT_EQ(n.allocations, 1);
  // i0, i1, i2_o (48 / 16), i3_o (32 / 16), then the tile's 16 rows of 16 lanes.
  Loops want = {{"i0", 1}, {"i1", 16}, {"i2_o", 3}, {"i3_o", 2}, {"i2_i", 16}, {"i3_i", 16}};
  EXPECT_EQ(n.loops, want) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  // Odd sizes (w = 19 rows, 21 channels): the tails keep the arithmetic.
  PrimFunc odd = ParseFunc(Transpose({1, 21, 5, 19}, {1, 5, 19, 21},
                                     "T.max(A[i0, i3, i1, i2] * T.float32(0.5) + b[i3], T.float32(0))"),
                           "transpose");
  PrimFunc odd_out = TileTransposes(odd);
  ASSERT_NE(odd_out, odd);
  s = SameNumbers(odd, odd_out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(odd_out);
}

TEST(TransposeTilesTest, DefaultScheduleTilesALoweredTranspose) {
  // As legalize lowers it: serial loops; the default schedule picks the
  // parallel and vector loops, then this rule (1 and 2 threads).
  PrimFunc f = ParseFunc(R"(@T.prim_func
def transpose(A: T.Buffer((1, 64, 80, 80), "float32"), T_out: T.Buffer((1, 80, 80, 64), "float32")):
    for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(80), T.int64(80), T.int64(64)):
        T_out[i0, i1, i2, i3] = A[i0, i3, i1, i2]
)",
                         "transpose");
  for (int threads : {1, 2}) {
    PrimFunc out = ApplyDefaultSchedule(f, threads);
    EXPECT_EQ(Count(out).transposes, 1) << testing::Print(out);
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  }
}

TEST(TransposeTilesTest, OtherNestsAreLeftAlone) {
  std::vector<std::string> kept = {
      // Less than a tile: the rows' axis (w = 14) or the vector axis (c = 12).
      Transpose({1, 48, 32, 14}, {1, 32, 14, 48}, "A[i0, i3, i1, i2]"),
      Transpose({1, 12, 32, 64}, {1, 32, 64, 12}, "A[i0, i3, i1, i2]"),
      // The innermost axis kept (attention heads swapped): contiguous rows.
      Transpose({1, 32, 16, 64}, {1, 16, 32, 64}, "A[i0, i2, i1, i3]"),
      // Two transposed reads.
      Transpose({1, 48, 32, 64}, {1, 32, 64, 48}, "A[i0, i3, i1, i2] + A[i0, i3, i1, i2]"),
      // The row index not a whole loop variable.
      Transpose({1, 48, 32, 64}, {1, 32, 64, 48}, "A[i0, i3, i1, T.int64(63) - i2]"),
  };
  for (const std::string& src : kept) {
    PrimFunc f = ParseFunc(src, "transpose");
    EXPECT_EQ(TileTransposes(f), f) << src;
  }
  PrimFunc self = ParseFunc(R"(@T.prim_func
def self(x: T.Buffer((64, 64), "float32")):
    for i in T.parallel(T.int64(64)):
        for j in T.vectorized(T.int64(64)):
            x[i, j] = x[j, i] + T.float32(1)
)",
                            "self");
  EXPECT_EQ(TileTransposes(self), self);
  PrimFunc half = ParseFunc(R"(@T.prim_func
def half(x: T.Buffer((64, 64), "float16"), y: T.Buffer((64, 64), "float16")):
    for i in T.parallel(T.int64(64)):
        for j in T.vectorized(T.int64(64)):
            y[i, j] = x[j, i]
)",
                            "half");
  EXPECT_EQ(TileTransposes(half), half);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
