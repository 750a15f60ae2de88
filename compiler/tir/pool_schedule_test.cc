// ScheduleWindowReductions: the structure it produces (interior vectorized
// without bounds tests, borders tested and serial) and the numbers of the
// rewritten function against the lowered original, for max and sum windows
// with and without padding, strides 1 to 3, and nests it must leave alone.
#include "compiler/tir/pool_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// Short names: the PrimFunc texts below are built from many of these.
const auto I = &testing::Int64Text;

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
  // Each of its three input rows split into even and odd columns (one loop)
  // and the even columns one over (a loop of their own, so that no half is
  // read at an offset), the row computed, then copied out; the top row the
  // same from its two input rows inside the plane.
  EXPECT_EQ(c.vectorized, 8 + 6);
  EXPECT_EQ(c.tests, 0);
  EXPECT_EQ(c.allocated.size(), 10u + 7u);  // 3 x (even, odd, even + 1) + the row; 2 x 3 + the row
  // Every read of a half is at the row loop's variable itself.
  struct HalfReads : StmtExprVisitor {
    int offset = 0, total = 0;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer->scope == "local" && l->indices.size() == 1) {
        ++total;
        offset += l->indices[0].as<VarNode>() == nullptr;
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } reads;
  reads.VisitStmt(out->body);
  EXPECT_GT(reads.total, 0);
  EXPECT_EQ(reads.offset, 0) << testing::Print(out);
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
    // A stride-1 max of more than 9 taps is separable: vector rows whatever
    // its interior.
    auto inside = [&](int64_t n) { return (n + t.p - t.k) / t.s + 1 - (t.p + t.s - 1) / t.s; };
    const bool separable = std::string(t.op) == "max" && t.s == 1 && t.k * t.k > 9;
    EXPECT_EQ(Count(out).vectorized > 0, separable || (t.s <= 2 && inside(t.w) > 0 && inside(t.h) > 0))
        << t.op << " " << t.h << "x" << t.w << " k" << t.k << " s" << t.s << " p" << t.p;
  }
}

TEST(PoolScheduleTest, ASelectOnLoadedValuesIsNoBoundsTest) {
  // A PReLU over a row (as a convolution's write-back stores it): its
  // select tests the sign of a loaded value, not an index, so the nest is
  // no tested copy and is left as it is, vector loop included. It was taken
  // for one, and rewritten into a serial row.
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def prelu(a: T.Buffer((8, 46), "float32"), s: T.Buffer((8,), "float32"), out: T.Buffer((8, 46), "float32")):
    for c in T.unroll(T.int64(8)):
        for x in T.vectorized(T.int64(46)):
            out[c, x] = T.Select(a[c, x] >= T.float32(0), a[c, x], a[c, x] * s[c])
)",
                         "prelu");
  EXPECT_EQ(ScheduleWindowReductions(f), f);
  // A bounds test on the same row is one (pad's copy): rewritten.
  PrimFunc pad = ParseFunc(R"(
@T.prim_func
def pad(a: T.Buffer((8, 46), "float32"), out: T.Buffer((8, 48), "float32")):
    for c, x in T.grid(T.int64(8), T.int64(48)):
        out[c, x] = T.Select(x >= T.int64(1) and x < T.int64(47), a[c, T.max(T.min(x - T.int64(1), T.int64(45)), T.int64(0))], T.float32(0))
)",
                           "pad");
  EXPECT_NE(ScheduleWindowReductions(pad), pad);
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

// The same nest over [1, C, "h", "w"], as lowering writes a model compiled
// for every image size (stride s, padding p, window k x k).
std::string SymbolicPool(const std::string& op, int64_t c, int64_t k, int64_t s, int64_t p) {
  std::string ho = "(h + " + I(2 * p - k + s) + ") // " + I(s), wo = "(w + " + I(2 * p - k + s) + ") // " + I(s);
  std::string iy = "i2 * " + I(s) + " + k0 - " + I(p), ix = "i3 * " + I(s) + " + k1 - " + I(p);
  std::string pad = op == "max" ? "T.float32(\"-inf\")" : "T.float32(0)";
  std::string read = "T.if_then_else(" + iy + " >= " + I(0) + " and " + iy + " < h and (" + ix + " >= " + I(0) + " and " +
                     ix + " < w), data[i0, i1, " + iy + ", " + ix + "], " + pad + ")";
  std::string at = "out[i0, i1, i2, i3]";
  std::string update = op == "max" ? "T.max(" + at + ", " + read + ")" : at + " + " + read;
  std::string cs = std::to_string(c);
  return "@T.prim_func\ndef pool(data_handle: T.handle, out_handle: T.handle):\n    h = T.int64()\n    w = T.int64()\n"
         "    data = T.match_buffer(data_handle, (1, " + cs + ", h, w), \"float32\")\n"
         "    out = T.match_buffer(out_handle, (1, " + cs + ", " + ho + ", " + wo + "), \"float32\")\n"
         "    for i0, i1, i2, i3, k0, k1 in T.grid(" + I(1) + ", " + I(c) + ", " + ho + ", " + wo + ", " + I(k) + ", " + I(k) +
         "):\n        if k0 == " + I(0) + " and k1 == " + I(0) + ":\n            " + at + " = " + pad + "\n        " + at +
         " = " + update + "\n";
}

TEST(PoolScheduleTest, SymbolicPlanesGetATestFreeVectorInterior) {
  // A 3 x 3 max and sum and an unpadded 2 x 2 max over symbolic planes:
  // every row is three loops, border columns [0, lo), the interior
  // [lo, hi) vectorized with no test on x, border columns [hi, W). What
  // tests are left (on y, and on x in the borders) are selects over loads
  // clamped into the plane: no if_then_else, no window loop.
  for (const auto& [op, k, st, p] : {std::tuple<const char*, int64_t, int64_t, int64_t>{"max", 3, 1, 1},
                                     {"sum", 3, 1, 1}, {"max", 2, 1, 0}}) {
    PrimFunc f = ParseFunc(SymbolicPool(op, 4, k, st, p), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << op << " k" << k;
    Census c = Count(out);
    EXPECT_EQ(c.window_loops, 0);
    EXPECT_EQ(c.tests, 0);
    // With padding the rows whose taps are all inside the plane are a row
    // loop of their own (no row test), between the rows before and after
    // them: a vector loop each.
    EXPECT_EQ(c.vectorized, p > 0 ? 3 : 1) << op << " k" << k;
    // With padding, the border loads are clamped into the plane (below the
    // first row, above the last row and column). Without, the row tests
    // hold in the whole nest (AlwaysHolds) and go: no row clamp.
    std::string text = testing::Print(out);
    EXPECT_EQ(text.find(", h - 1), ") != std::string::npos, p > 0) << op << " k" << k;
    EXPECT_EQ(text.find("T.max(i2") != std::string::npos, p > 0) << op << " k" << k;
    if (p > 0) EXPECT_NE(text.find(", w - 1)]"), std::string::npos) << op << " k" << k;
  }
  // More than 9 taps over a run-time plane (SPPF's 5 x 5; the unrolled
  // tree cost compile memory): a max and a sum are separable
  // (RewriteSeparableWindow: padded rows of OP over the tap rows, then the
  // output rows over them, each one vector loop with its taps unrolled).
  for (const char* op : {"max", "sum"}) {
    Census big = Count(ScheduleWindowReductions(ParseFunc(SymbolicPool(op, 4, 5, 1, 2), "pool")));
    EXPECT_EQ(big.window_loops, 0) << op;  // both tap loops unrolled into trees
    EXPECT_EQ(big.vectorized, 3) << op;    // the padded rows' init, their tap rows, the output rows
    EXPECT_EQ(big.tests, 0) << op;
  }
  // Stride 2 over a run-time row: vectors of 16 columns (a loop of
  // constant extent inside a serial loop over them), the last one ending at
  // the run's end (or a scalar loop when the run is shorter), no masked
  // strided loads; in each of the three row loops. Stride 4 loses to
  // LLVM's loop over the nest as lowered: left alone.
  PrimFunc s2 = ParseFunc(SymbolicPool("max", 4, 3, 2, 1), "pool");
  PrimFunc s2_out = ScheduleWindowReductions(s2);
  ASSERT_NE(s2_out, s2);
  Census c2 = Count(s2_out);
  EXPECT_EQ(c2.window_loops, 0);
  EXPECT_EQ(c2.tests, 0);
  EXPECT_EQ(c2.vectorized, 3);
  EXPECT_NE(testing::Print(s2_out).find("T.vectorized(T.int64(16))"), std::string::npos) << testing::Print(s2_out);
  PrimFunc s4 = ParseFunc(SymbolicPool("max", 4, 4, 4, 0), "pool");
  EXPECT_EQ(ScheduleWindowReductions(s4), s4);
}

// `f` (over run-time h and w) with h and w fixed, as text parsed again: the
// schedule's output for symbolic planes run at one size.
PrimFunc AtSize(const PrimFunc& f, int64_t h, int64_t w) {
  std::string text = testing::Print(f);
  text = std::regex_replace(text, std::regex("\\n *[hw] = T\\.int64\\(\\)"), "");
  text = std::regex_replace(text, std::regex("\\bh\\b"), I(h));
  text = std::regex_replace(text, std::regex("\\bw\\b"), I(w));
  return ParseFunc(text, "pool");
}

TEST(PoolScheduleTest, SymbolicPlanesComputeTheSameNumbers) {
  // The symbolic schedules (the unrolled run-time interior, stride 1 and 2,
  // the separable max with its padded row, the tap loops of a sum) run at
  // odd and even sizes, narrower than the window too, and rows of one to
  // four whole 16-column vectors and a tail, against the static lowered
  // nest.
  struct Case {
    const char* op;
    int64_t k, s, p;
  };
  for (const Case& t : {Case{"max", 5, 1, 2}, Case{"max", 3, 1, 1}, Case{"sum", 3, 1, 1}, Case{"max", 2, 1, 0},
                        Case{"sum", 5, 1, 2}, Case{"max", 3, 2, 1}, Case{"max", 9, 1, 4}, Case{"min", 5, 1, 1},
                        Case{"sum", 3, 2, 1}, Case{"max", 2, 2, 0}, Case{"max", 3, 2, 0}}) {
    std::string op = t.op == std::string("min") ? "max" : t.op;
    std::string sym_text = SymbolicPool(op, 3, t.k, t.s, t.p);
    if (std::string(t.op) == "min") {  // min with +inf: the separable path's other OP
      sym_text = std::regex_replace(sym_text, std::regex("T\\.max\\("), "T.min(");
      sym_text = std::regex_replace(sym_text, std::regex("-inf"), "inf");
    }
    PrimFunc sym = ParseFunc(sym_text, "pool");
    PrimFunc out = ScheduleWindowReductions(sym);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{10, 10}, {7, 13}, {4, 3}, {17, 9}, {5, 45}, {3, 70}}) {
      if (h + 2 * t.p < t.k || w + 2 * t.p < t.k) continue;
      std::string st_text = Pool(op, 3, h, w, t.k, t.s, t.p);
      if (std::string(t.op) == "min") {
        st_text = std::regex_replace(st_text, std::regex("T\\.max\\("), "T.min(");
        st_text = std::regex_replace(st_text, std::regex("-inf"), "inf");
      }
      Status same = SameNumbers(ParseFunc(st_text, "pool"), AtSize(out, h, w));
      EXPECT_TRUE(same.ok()) << t.op << " k" << t.k << " s" << t.s << " p" << t.p << " at " << h << "x" << w << ": "
                             << same.ToString() << "\n" << testing::Print(out);
    }
  }
}

// The window schedule under every value of each pool knob, one knob at a
// time (compiler/tune/space_default.cc offers them): the points differ, and
// each computes what the lowered nest computes.
TEST(PoolScheduleTest, KnobPointsDifferAndComputeTheSameNumbers) {
  struct Point {
    const char* knob;
    int64_t value;
  };
  const std::vector<Point> points = {{"", 0},
                                     {"pool.taps", 9},
                                     {"pool.taps", 25},
                                     {"pool.borders", 1},
                                     {"pool.borders", 2},
                                     {"pool.deinterleave", 1},
                                     {"pool.deinterleave", 2},
                                     {"pool.vector", 1}};
  // A 3 x 3 / 2 max pool with 14- and 80-column rows (the even/odd split
  // and the strided interior), a 3 x 3 / 1 sum with padding 1 (static
  // borders of one row and column on each side) and a 5 x 5 / 1 sum with
  // padding 2 (25 taps: separable whatever pool.taps and pool.borders say,
  // so only pool.vector gives it another schedule).
  for (const auto& [op, hw, k, st, p] :
       {std::tuple<const char*, int64_t, int64_t, int64_t, int64_t>{"max", 14, 3, 2, 1}, {"max", 80, 3, 2, 1},
        {"sum", 12, 3, 1, 1}, {"sum", 12, 5, 1, 2}}) {
    PrimFunc f = ParseFunc(Pool(op, 2, hw, hw, k, st, p), "pool");
    std::vector<PrimFunc> distinct;
    for (const Point& pt : points) {
      ScheduleKnobs knobs;
      if (pt.knob[0] != '\0') knobs.values[pt.knob] = pt.value;
      PrimFunc out = ScheduleWindowReductions(f, knobs);
      Status same = SameNumbers(f, out);
      EXPECT_TRUE(same.ok()) << op << " " << hw << " " << pt.knob << "=" << pt.value << ": " << same.ToString();
      bool seen = false;
      for (const PrimFunc& d : distinct) seen = seen || ir::StructuralEqual(d, out);
      if (!seen) distinct.push_back(out);
    }
    EXPECT_GE(distinct.size(), k == 5 ? 2u : 3u) << op << " " << hw << " k" << k;
  }
}

TEST(PoolScheduleTest, StaticStrideOneMaxAndMinOfMoreThanNineTapsAreSeparable) {
  // SPP's 5 x 5 / 9 x 9 / 13 x 13 max pools over static planes (odd and
  // even sizes, planes narrower than the window, no padding and padding
  // wider than the plane): kh + kw row vectors an output row instead of a
  // tree of kh * kw taps (or 169 masked tap rows). The same numbers as the
  // lowered nest, min too; a 3 x 3 keeps its unrolled tree, a stride-2 max
  // is not separable (sums: StrideOneSumsOfMoreThanNineTapsAreSeparable).
  struct Case {
    int64_t h, w, k, p;
  };
  for (const Case& t : {Case{20, 20, 5, 2}, Case{40, 37, 5, 2}, Case{20, 20, 9, 4}, Case{7, 11, 13, 6},
                        Case{23, 19, 7, 0}, Case{3, 3, 5, 2}}) {
    for (const char* op : {"max", "min"}) {
      std::string text = Pool("max", 2, t.h, t.w, t.k, 1, t.p);
      if (std::string(op) == "min") {
        text = std::regex_replace(text, std::regex("T\\.max\\("), "T.min(");
        text = std::regex_replace(text, std::regex("-inf"), "inf");
      }
      PrimFunc f = ParseFunc(text, "pool");
      PrimFunc out = ScheduleWindowReductions(f);
      ASSERT_NE(out, f) << op << " k" << t.k;
      Census c = Count(out);
      EXPECT_EQ(c.window_loops, 0) << op << " k" << t.k << "\n" << testing::Print(out);
      EXPECT_EQ(c.tests, 0) << op << " k" << t.k;
      EXPECT_EQ(c.vectorized, 3) << op << " k" << t.k << "\n" << testing::Print(out);
      ASSERT_EQ(c.allocated.size(), 1u) << op << " k" << t.k;
      EXPECT_NE(c.allocated[0].find("_window_rows"), std::string::npos);
      Status s = SameNumbers(f, out);
      EXPECT_TRUE(s.ok()) << op << " " << t.h << "x" << t.w << " k" << t.k << ": " << s.ToString();
    }
  }
  for (const char* op : {"max", "sum"}) {
    for (int64_t k : {3, 5}) {
      PrimFunc f = ParseFunc(Pool(op, 2, 20, 20, k, k == 5 ? 2 : 1, k / 2), "pool");
      Census c = Count(ScheduleWindowReductions(f));
      for (const std::string& a : c.allocated) EXPECT_EQ(a.find("_window_rows"), std::string::npos) << op << " k" << k;
    }
  }
}

// Pool(), the row loop parallel (the default schedule's choice when every
// loop outside it has extent 1).
std::string PoolParallelRows(const std::string& op, int64_t c, int64_t h, int64_t w, int64_t k, int64_t p) {
  std::string text = Pool(op, c, h, w, k, 1, p);
  int64_t ho = h + 2 * p - k + 1, wo = w + 2 * p - k + 1;
  std::string grid = "    for i0, i1, i2, i3, k0, k1 in T.grid(" + I(1) + ", " + I(c) + ", " + I(ho) + ", " + I(wo) + ", " +
                     I(k) + ", " + I(k) + "):\n";
  size_t at = text.find(grid);
  KILN_CHECK(at != std::string::npos, "no grid in %s", text.c_str());
  std::string body = text.substr(at + grid.size()), indented;
  for (size_t pos = 0; pos < body.size();) {
    size_t nl = body.find('\n', pos);
    indented += "        " + body.substr(pos, nl - pos + 1);
    pos = nl + 1;
  }
  return text.substr(0, at) + "    for i0, i1 in T.grid(" + I(1) + ", " + I(c) + "):\n        for i2 in T.parallel(" + I(ho) +
         "):\n            for i3, k0, k1 in T.grid(" + I(wo) + ", " + I(k) + ", " + I(k) + "):\n" + indented;
}

// The window sum of Pool("sum", ..) at stride 1 in double precision, and
// the bound on a float32 sum of the same taps in any order where each tap
// goes through at most kh + kw adds (the separable form's: pairwise trees,
// or chains of kh and kw for the widest windows): (kh + kw) * 2^-24 times
// the sum of the taps' magnitudes.
struct SumReference {
  std::vector<double> sum, bound;
};
SumReference WindowSums(const Tensor& data, int64_t c, int64_t h, int64_t w, int64_t k, int64_t p) {
  int64_t ho = h + 2 * p - k + 1, wo = w + 2 * p - k + 1;
  const float* x = data.data<float>();
  SumReference ref;
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t y = 0; y < ho; ++y) {
      for (int64_t xo = 0; xo < wo; ++xo) {
        double s = 0, mag = 0;
        for (int64_t ky = 0; ky < k; ++ky) {
          for (int64_t kx = 0; kx < k; ++kx) {
            int64_t iy = y + ky - p, ix = xo + kx - p;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            double v = x[(ch * h + iy) * w + ix];
            s += v;
            mag += std::fabs(v);
          }
        }
        ref.sum.push_back(s);
        ref.bound.push_back(static_cast<double>(2 * k) * std::ldexp(1.0, -24) * mag);
      }
    }
  }
  return ref;
}

// Runs `f` (data, out) on random data; empty when every output is within
// the bound of the reference sum, else the first one that is not.
std::string CheckSums(const PrimFunc& f, int64_t c, int64_t h, int64_t w, int64_t k, int64_t p) {
  std::vector<Tensor> params;
  Status st = testing::RunOnRandomInputs(f, &params, 7);
  if (!st.ok()) return st.ToString();
  SumReference ref = WindowSums(params[0], c, h, w, k, p);
  const float* out = params[1].data<float>();
  if (static_cast<int64_t>(ref.sum.size()) != params[1].NumElements()) return "output size";
  for (size_t i = 0; i < ref.sum.size(); ++i) {
    if (!(std::fabs(out[i] - ref.sum[i]) <= ref.bound[i]))
      return "output " + std::to_string(i) + ": " + std::to_string(out[i]) + ", reference " + std::to_string(ref.sum[i]) +
             " (bound " + std::to_string(ref.bound[i]) + ")";
  }
  return "";
}

TEST(PoolScheduleTest, StrideOneSumsOfMoreThanNineTapsAreSeparable) {
  // An average pool's sum (count_include_pad 0 or 1 divide the same sum;
  // tests/ops/op_pool_test.cc runs the whole op) at stride 1 over more than
  // 3 x 3 taps: two passes over rows of vectors, as the max. Its taps add
  // in another order than the nest's, so the numbers are checked against
  // the sum in double precision within the float32 bound of that order
  // (WindowSums). Odd and even planes, narrower and shorter than the
  // window, no padding, padding wider than the plane; 17 x 17 (wider than
  // the 16 taps a pass unrolls: chains of tap rows and column runs).
  struct Case {
    int64_t h, w, k, p;
  };
  for (const Case& t : {Case{20, 20, 5, 2}, Case{21, 17, 7, 3}, Case{20, 20, 13, 6}, Case{7, 11, 13, 6},
                        Case{23, 19, 7, 0}, Case{3, 3, 5, 2}, Case{5, 40, 9, 4}, Case{30, 26, 17, 8}}) {
    SCOPED_TRACE(std::to_string(t.h) + "x" + std::to_string(t.w) + " k" + std::to_string(t.k) + " p" +
                 std::to_string(t.p));
    PrimFunc f = ParseFunc(Pool("sum", 3, t.h, t.w, t.k, 1, t.p), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f);
    Census c = Count(out);
    const bool unrolled = t.k <= 16;
    // Unrolled: V's init (once, where it is allocated), the pass over the
    // tap rows into a block of V rows, the output rows from them. 17 x 17:
    // V's init, a loop over the tap rows around a vector row, the output
    // row's init and a loop over the tap columns around a vector run.
    EXPECT_EQ(c.window_loops, unrolled ? 0 : 2) << testing::Print(out);
    EXPECT_EQ(c.vectorized, unrolled ? 3 : 4) << testing::Print(out);
    EXPECT_EQ(c.tests, 0);
    ASSERT_EQ(c.allocated.size(), 1u);
    EXPECT_NE(c.allocated[0].find("_window_rows"), std::string::npos);
    EXPECT_EQ(CheckSums(out, 3, t.h, t.w, t.k, t.p), "") << testing::Print(out);
    // The nest as lowered (taps in order) is within the same bound: the
    // check is not looser than the original's own rounding.
    EXPECT_EQ(CheckSums(f, 3, t.h, t.w, t.k, t.p), "");
  }
  // A parallel row loop: blocks of 4 rows shared out, V allocated in each
  // block (a last block of 2 rows at 18 rows).
  PrimFunc par = ParseFunc(PoolParallelRows("sum", 1, 18, 24, 7, 3), "pool");
  PrimFunc par_out = ScheduleWindowReductions(par);
  ASSERT_NE(par_out, par);
  std::string text = testing::Print(par_out);
  EXPECT_NE(text.find("T.parallel(T.int64(5))"), std::string::npos) << text;
  EXPECT_EQ(CheckSums(par_out, 1, 18, 24, 7, 3), "") << text;
  // Over run-time planes, at odd sizes and planes narrower than the window.
  for (const Case& t : {Case{0, 0, 5, 2}, Case{0, 0, 13, 6}, Case{0, 0, 7, 0}}) {
    PrimFunc sym = ScheduleWindowReductions(ParseFunc(SymbolicPool("sum", 2, t.k, 1, t.p), "pool"));
    Census c = Count(sym);
    EXPECT_EQ(c.window_loops, 0) << t.k;
    EXPECT_EQ(c.tests, 0) << t.k;
    for (auto [h, w] : {std::pair<int64_t, int64_t>{10, 10}, {7, 13}, {4, 3}, {17, 9}, {5, 45}, {40, 70}}) {
      if (h + 2 * t.p < t.k || w + 2 * t.p < t.k) continue;
      EXPECT_EQ(CheckSums(AtSize(sym, h, w), 2, h, w, t.k, t.p), "")
          << "k" << t.k << " p" << t.p << " at " << h << "x" << w << "\n" << testing::Print(sym);
    }
  }
  // 3 x 3 keeps the taps' order (the unrolled interior, no V row).
  Census small = Count(ScheduleWindowReductions(ParseFunc(Pool("sum", 2, 20, 20, 3, 1, 1), "pool")));
  EXPECT_TRUE(small.allocated.empty());
}

TEST(PoolScheduleTest, LargeWindowsLoopOverTapsAroundVectorRows) {
  // 9 x 9 and 13 x 13 windows (81 and 169 taps > kMaxWindowTaps) keep their
  // tap loops, now outside the row: per tap one vector loop over the columns
  // its test passes at, the test on y one branch per row. Static planes
  // (numbers against the lowered nest) and symbolic ones. A stride-1 max is
  // separable instead on static planes too (a padded row of maxima over the
  // tap rows, then the output row over it: no tap loop left).
  struct Case {
    const char* op;
    int64_t hw, k, s, p;
  };
  for (const Case& t : {Case{"max", 20, 9, 1, 0}, Case{"max", 10, 13, 1, 6}, Case{"sum", 17, 9, 2, 4}}) {
    PrimFunc f = ParseFunc(Pool(t.op, 2, t.hw, t.hw, t.k, t.s, t.p), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << t.op << " k" << t.k;
    Census c = Count(out);
    const bool separable = std::string(t.op) == "max" && t.s == 1;
    EXPECT_EQ(c.window_loops, separable ? 0 : 2);
    EXPECT_EQ(c.tests, 0) << testing::Print(out);
    // The init row and the tap row; separable: the padded row's init, its
    // tap rows, the output row.
    EXPECT_EQ(c.vectorized, separable ? 3 : 2) << testing::Print(out);
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
    // Over a run-time plane: stride 1 only (stride 2 is left as lowered).
    PrimFunc sym = ParseFunc(SymbolicPool(t.op, 2, t.k, t.s, t.p), "pool");
    PrimFunc sym_out = ScheduleWindowReductions(sym);
    if (t.s != 1) {
      EXPECT_EQ(sym_out, sym);
      continue;
    }
    Census cs = Count(sym_out);
    const bool max = std::string(t.op) == "max";
    EXPECT_EQ(cs.tests, 0);
    // A max is separable: a padded row of maxima over the tap rows (its
    // init, then one vector loop with the ry taps unrolled), then one vector
    // loop over the output row with its rx taps unrolled; a sum keeps both
    // tap loops.
    EXPECT_EQ(cs.window_loops, max ? 0 : 2);
    EXPECT_EQ(cs.vectorized, max ? 3 : 2);
  }
  // A padding value that is not OP's identity (a sum padded with 1) cannot
  // skip its taps: left alone.
  std::string odd = Pool("sum", 1, 20, 20, 9, 1, 4);
  odd.replace(odd.find("], T.float32(0))"), 16, "], T.float32(1))");
  PrimFunc f = ParseFunc(odd, "pool");
  EXPECT_EQ(ScheduleWindowReductions(f), f);
}

// A sum or max over axis 1 of [1, R, C] as the default schedule leaves it
// for threads >= 2: the batch loop has extent 1, so the column loop is the
// parallel one, and each column's R taps were a scalar chain.
std::string ColumnReduction(const std::string& op, int64_t rows, int64_t cols) {
  std::string at = "out[i0, i1]";
  std::string init = op == "max" ? "T.float32(\"-inf\")" : "T.float32(0)";
  std::string update = op == "max" ? "T.max(" + at + ", a[i0, k, i1])" : at + " + a[i0, k, i1]";
  return "@T.prim_func\ndef col(a: T.Buffer((1, " + std::to_string(rows) + ", " + std::to_string(cols) +
         "), \"float32\"), out: T.Buffer((1, " + std::to_string(cols) + "), \"float32\")):\n    for i0 in range(" +
         I(1) + "):\n        for i1 in T.parallel(" + I(cols) + "):\n            for k in range(" + I(rows) +
         "):\n                if k == " + I(0) + ":\n                    " + at + " = " + init + "\n                " +
         at + " = " + update + "\n";
}

TEST(PoolScheduleTest, ParallelColumnsOfALargeWindowRunInVectorBlocks) {
  // Wider than kLargeWindowBlock: a parallel loop over blocks of columns,
  // each an init row and the tap loop around a vector row (200 columns: a
  // last block of 8); 48 columns: one serial row. Same numbers as the
  // lowered nest (a sum keeps each column's order).
  struct Case {
    const char* op;
    int64_t rows, cols, blocks;
  };
  for (const Case& t : {Case{"sum", 512, 256, 4}, Case{"sum", 70, 200, 4}, Case{"max", 100, 48, 0}}) {
    PrimFunc f = ParseFunc(ColumnReduction(t.op, t.rows, t.cols), "col");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << t.op << " " << t.cols;
    struct Parallel : StmtExprVisitor {
      int count = 0;
      int64_t extent = 0;
      void VisitStmt(const Stmt& st) override {
        if (const auto* l = As<ForNode>(st); l != nullptr && l->for_kind == ForKind::kParallel) {
          ++count;
          if (const auto* e = l->extent.as<IntImmNode>()) extent = e->value;
        }
        StmtExprVisitor::VisitStmt(st);
      }
    } par;
    par.VisitStmt(out->body);
    int parallel = par.count;
    int64_t par_extent = par.extent;
    EXPECT_EQ(parallel, t.blocks > 0 ? 1 : 0) << testing::Print(out);
    EXPECT_EQ(par_extent, t.blocks) << testing::Print(out);
    EXPECT_EQ(Count(out).vectorized, 2) << testing::Print(out);  // the init row and the tap row
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  }
}

TEST(PoolScheduleTest, OtherNestsAreLeftAlone) {
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
