// ScheduleWindowReductions: the structure it produces (interior vectorized
// without bounds tests, borders tested and serial) and the numbers of the
// rewritten function against the lowered original, for max and sum windows
// with and without padding, strides 1 to 3, and nests it must leave alone.
#include "compiler/tir/pool_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

std::string I(int64_t v) { return "T.int64(" + std::to_string(v) + ")"; }

// A lowered 2-D pooling nest over [1, C, H, W] (window k x k, stride s,
// padding p on every side) as legalize + LowerBlocks write it. `op`: "max"
// (init -inf, T.max) or "sum" (init 0, +).
std::string Pool(const std::string& op, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p) {
  int64_t ho = (h + 2 * p - k) / s + 1, wo = (w + 2 * p - k) / s + 1;
  std::string iy = "i2 * " + I(s) + " + k0 - " + I(p), ix = "i3 * " + I(s) + " + k1 - " + I(p);
  std::string pad = op == "max" ? "T.float32(\"-inf\")" : "T.float32(0)";
  std::string read = "T.if_then_else(" + iy + " >= " + I(0) + " and " + iy + " < " + I(h) + " and (" + ix + " >= " + I(0) +
                     " and " + ix + " < " + I(w) + "), data[i0, i1, " + iy + ", " + ix + "], " + pad + ")";
  std::string at = "out[i0, i1, i2, i3]";
  std::string update = op == "max" ? "T.max(" + at + ", " + read + ")" : at + " + " + read;
  return "@T.prim_func\ndef pool(data: T.Buffer((1, " + std::to_string(c) + ", " + std::to_string(h) + ", " +
         std::to_string(w) + "), \"float32\"), out: T.Buffer((1, " + std::to_string(c) + ", " + std::to_string(ho) +
         ", " + std::to_string(wo) + "), \"float32\")):\n    for i0, i1, i2, i3, k0, k1 in T.grid(" + I(1) + ", " +
         I(c) + ", " + I(ho) + ", " + I(wo) + ", " + I(k) + ", " + I(k) + "):\n        if k0 == " + I(0) +
         " and k1 == " + I(0) + ":\n            " + at + " = " + pad + "\n        " + at + " = " + update + "\n";
}

struct Census : StmtExprVisitor {
  int vectorized = 0, serial = 0, tests_in_vector = 0, tests = 0, depth_vec = 0, window_loops = 0;
  std::vector<std::string> allocated;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) {
      tests_in_vector += depth_vec > 0 && c->op == "if_then_else";
      tests += c->op == "if_then_else";
    }
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s)) allocated.push_back(a->buffer->name);
    const auto* f = As<ForNode>(s);
    if (f != nullptr) {
      vectorized += f->for_kind == ForKind::kVectorized;
      serial += f->for_kind == ForKind::kSerial;
      window_loops += f->loop_var->name == "k0" || f->loop_var->name == "k1";
      depth_vec += f->for_kind == ForKind::kVectorized;
    }
    StmtExprVisitor::VisitStmt(s);
    if (f != nullptr) depth_vec -= f->for_kind == ForKind::kVectorized;
  }
};

Census Count(const PrimFunc& f) {
  Census c;
  c.VisitStmt(f->body);
  return c;
}

TEST(PoolScheduleTest, PaddedMaxPoolGetsATestFreeVectorInterior) {
  // 80 -> 40: rows of 39 interior columns, longer than the even/odd split
  // takes (kMaxDeinterleaveColumns), so they load with stride 2.
  PrimFunc f = ParseFunc(Pool("max", 3, 80, 80, 3, 2, 1), "pool");
  PrimFunc out = ScheduleWindowReductions(f);
  ASSERT_NE(out, f);
  Census c = Count(out);
  EXPECT_EQ(c.window_loops, 0);  // the window is unrolled
  // The interior columns of the top row (its taps above the plane are the
  // padding value) and of the other rows; the left column is one store per
  // row. No bounds test is left anywhere.
  EXPECT_EQ(c.vectorized, 2);
  EXPECT_EQ(c.tests, 0) << testing::Print(out);
  EXPECT_TRUE(c.allocated.empty());
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

TEST(PoolScheduleTest, ShortStrideTwoRowsAreSplitIntoEvenAndOddColumns) {
  // 14 -> 7 with padding 1: interior rows of 6 columns (window_deinterleave.h).
  PrimFunc f = ParseFunc(Pool("max", 3, 14, 14, 3, 2, 1), "pool");
  PrimFunc out = ScheduleWindowReductions(f);
  Census c = Count(out);
  // Its three input rows split into even and odd columns (one loop each),
  // the row computed, then copied out; the top row the same from its two
  // input rows inside the plane.
  EXPECT_EQ(c.vectorized, 5 + 4);
  EXPECT_EQ(c.tests, 0);
  EXPECT_EQ(c.allocated.size(), 7u + 5u);  // 3 x (even, odd) + the row; 2 x (even, odd) + the row
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  // Stride 1: the interior loads are contiguous already; one vector loop
  // for the top row, the interior rows and the bottom row each.
  PrimFunc f1 = ParseFunc(Pool("max", 3, 14, 14, 3, 1, 1), "pool");
  Census c1 = Count(ScheduleWindowReductions(f1));
  EXPECT_EQ(c1.vectorized, 3);
  EXPECT_TRUE(c1.allocated.empty());
}

TEST(PoolScheduleTest, SameNumbersAcrossShapes) {
  struct Case {
    const char* op;
    int64_t c, h, w, k, s, p;
  };
  // Strides 1 and 2 vectorize; stride 3 keeps a serial interior; windows
  // larger than the input's border; a 1-wide output row.
  // Stride 2: rows of 55 and 56 (strided loads), 7 and 6 (split into even
  // and odd columns: a 3-tap window with padding, a 2-tap one without).
  for (const Case& t : {Case{"max", 2, 111, 111, 3, 2, 0}, Case{"max", 2, 112, 112, 3, 2, 1},
                        Case{"sum", 2, 15, 15, 3, 2, 1}, Case{"max", 1, 12, 12, 2, 2, 0},
                        Case{"sum", 3, 17, 23, 3, 1, 1}, Case{"sum", 2, 14, 14, 2, 2, 0},
                        Case{"max", 2, 20, 20, 5, 3, 2}, Case{"max", 1, 6, 6, 7, 1, 3}, Case{"sum", 1, 9, 3, 3, 1, 0}}) {
    PrimFunc f = ParseFunc(Pool(t.op, t.c, t.h, t.w, t.k, t.s, t.p), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << t.op << " " << t.h << "x" << t.w << " k" << t.k << " s" << t.s << " p" << t.p;
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
    // Interior: the outputs whose whole window is inside, in x and in y.
    auto inside = [&](int64_t n) { return (n + t.p - t.k) / t.s + 1 - (t.p + t.s - 1) / t.s; };
    EXPECT_EQ(Count(out).vectorized > 0, t.s <= 2 && inside(t.w) > 0 && inside(t.h) > 0)
        << t.op << " " << t.h << "x" << t.w << " k" << t.k << " s" << t.s << " p" << t.p;
  }
}

TEST(PoolScheduleTest, MaxPropagatesNaN) {
  // The unrolled max is a plain compare tree plus one any-NaN test: a window
  // holding a NaN (every 7th input, so some windows do and some don't) gives
  // NaN, as T.max does; interior, borders and the even/odd split.
  for (int64_t h : {14, 40}) {
    for (int64_t s : {1, 2}) {
      PrimFunc f = ParseFunc(Pool("max", 2, h, h, 3, s, 1), "pool");
      PrimFunc out = ScheduleWindowReductions(f);
      ASSERT_NE(out, f);
      Status st = SameNumbers(f, out, 7);
      EXPECT_TRUE(st.ok()) << h << " s" << s << ": " << st.ToString() << "\n" << testing::Print(out);
    }
  }
}

TEST(PoolScheduleTest, LargeWindowsAndOtherNestsAreLeftAlone) {
  // 9 x 9 = 81 taps > kMaxWindowTaps.
  PrimFunc big = ParseFunc(Pool("max", 1, 20, 20, 9, 1, 0), "pool");
  EXPECT_EQ(ScheduleWindowReductions(big), big);
  // A product reduction is not max, min or a sum.
  PrimFunc prod = ParseFunc(R"(@T.prim_func
def prod(a: T.Buffer((4, 8), "float32"), out: T.Buffer((4,), "float32")):
    for i, k in T.grid(T.int64(4), T.int64(8)):
        if k == T.int64(0):
            out[i] = T.float32(1)
        out[i] = out[i] * a[i, k]
)",
                            "prod");
  EXPECT_EQ(ScheduleWindowReductions(prod), prod);
  // A global 7 x 7 window (one output column) is a row reduction, left to
  // the row-reduction schedule; a global 3 x 3 (9 taps) still unrolls here.
  PrimFunc global = ParseFunc(Pool("sum", 8, 7, 7, 7, 1, 0), "pool");
  EXPECT_EQ(ScheduleWindowReductions(global), global);
  PrimFunc small = ParseFunc(Pool("sum", 8, 3, 3, 3, 1, 0), "pool");
  EXPECT_NE(ScheduleWindowReductions(small), small);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
