// The window schedule over run-time planes (pool_schedule_symbolic.cc):
// the rows whose every tap row is inside the plane load with no test and no
// clamp, and the schedule computes what the lowered nest computes at odd
// and even sizes, padding 0 and 1, stride 1 and 2, ceil mode, NCHW and
// NHWC, batch 2, NaN in the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/pool_schedule.h"
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

// A pooling nest as lowering writes it for a model compiled for every
// image size: `op` "max" (init and padding -inf) or "sum" (0), window
// k x k, stride s, padding p on every side, the output size rounded down
// or (ceil) up. Layout NCHW or NHWC; the batch is "n" (symbolic) or a
// number.
struct PoolSpec {
  std::string op = "max";
  bool nhwc = false;
  std::string batch = "n";
  int64_t c = 3, k = 3, s = 2, p = 1;
  bool ceil = false;
  bool parallel_rows = false;  // the output-row loop T.parallel (else serial)
};

// One loop line of the nest at `depth` (4 spaces each).
std::string Loop(const std::string& var, const std::string& extent, bool parallel, int depth) {
  return std::string(4 * depth, ' ') + "for " + var + " in " + (parallel ? "T.parallel(" : "range(") + extent +
         "):\n";
}

std::string Lowered(const PoolSpec& t) {
  const int64_t round = t.ceil ? 2 * t.s - 1 : t.s;
  std::string ho = "(h + " + I(2 * t.p - t.k + round) + ") // " + I(t.s);
  std::string wo = "(w + " + I(2 * t.p - t.k + round) + ") // " + I(t.s);
  // Loop names: i0 batch, then the output's other axes in layout order.
  std::string y = t.nhwc ? "i1" : "i2", x = t.nhwc ? "i2" : "i3";
  std::string iy = y + " * " + I(t.s) + " + k0 - " + I(t.p), ix = x + " * " + I(t.s) + " + k1 - " + I(t.p);
  std::string pad = t.op == "max" ? "T.float32(\"-inf\")" : "T.float32(0)";
  std::string cs = std::to_string(t.c);
  std::string at = t.nhwc ? "data[i0, " + iy + ", " + ix + ", i3]" : "data[i0, i1, " + iy + ", " + ix + "]";
  std::string read = "T.if_then_else(" + iy + " >= " + I(0) + " and " + iy + " < h and (" + ix + " >= " + I(0) +
                     " and " + ix + " < w), " + at + ", " + pad + ")";
  std::string out = "out[i0, i1, i2, i3]";
  std::string update = t.op == "max" ? "T.max(" + out + ", " + read + ")" : out + " + " + read;
  std::string in_shape = t.nhwc ? "h, w, " + cs : cs + ", h, w";
  std::string out_shape = t.nhwc ? ho + ", " + wo + ", " + cs : cs + ", " + ho + ", " + wo;
  std::string batch_extent = t.batch == "n" ? "n" : I(std::stoll(t.batch));
  return "@T.prim_func\ndef pool(data_handle: T.handle, out_handle: T.handle):\n" +
         std::string(t.batch == "n" ? "    n = T.int64()\n" : "") + "    h = T.int64()\n    w = T.int64()\n" +
         "    data = T.match_buffer(data_handle, (" + t.batch + ", " + in_shape + "), \"float32\")\n" +
         "    out = T.match_buffer(out_handle, (" + t.batch + ", " + out_shape + "), \"float32\")\n" +
         "    for i0 in range(" + batch_extent + "):\n" + Loop("i1", t.nhwc ? ho : I(t.c), t.parallel_rows && t.nhwc, 2) +
         Loop("i2", t.nhwc ? wo : ho, t.parallel_rows && !t.nhwc, 3) + Loop("i3", t.nhwc ? I(t.c) : wo, false, 4) +
         Loop("k0", I(t.k), false, 5) + Loop("k1", I(t.k), false, 6) + std::string(28, ' ') + "if k0 == " + I(0) +
         " and k1 == " + I(0) + ":\n" + std::string(32, ' ') + out + " = " + pad + "\n" + std::string(28, ' ') + out +
         " = " + update + "\n";
}

// `f` with its run-time sizes fixed (text parsed again): n, h, w.
PrimFunc AtSizes(const PrimFunc& f, const std::map<std::string, int64_t>& sizes) {
  std::string text = testing::Print(f);
  for (const auto& [name, v] : sizes) {
    text = std::regex_replace(text, std::regex("\\n *" + name + " = T\\.int64\\(\\)"), "");
    text = std::regex_replace(text, std::regex("\\b" + name + "\\b"), I(v));
  }
  return ParseFunc(text, "pool");
}

// What the vector loops inside `s` hold: selects on integer conditions
// (bounds tests) and loads with a clamped index (min / max in an index).
struct VectorCensus : StmtExprVisitor {
  int vector_loops = 0, int_selects = 0, clamped_loads = 0, depth = 0;
  void VisitExpr(const PrimExpr& e) override {
    if (depth > 0) {
      if (const auto* sel = e.as<SelectNode>()) {
        // The first comparison of the condition (under and / or): integer
        // for a bounds test, float for the NaN test and the max tree.
        const PrimExpr* c = &sel->cond;
        while ((*c)->kind() == TirKind::kAnd || (*c)->kind() == TirKind::kOr)
          c = &static_cast<const BinaryNode*>(c->get())->a;
        if (IsBinary((*c)->kind()) && static_cast<const BinaryNode*>(c->get())->a.dtype().is_int()) ++int_selects;
      }
      if (const auto* l = e.as<BufferLoadNode>()) {
        for (const PrimExpr& i : l->indices)
          if (i->kind() == TirKind::kMin || i->kind() == TirKind::kMax) ++clamped_loads;
      }
    }
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    bool vec = f != nullptr && f->for_kind == ForKind::kVectorized;
    vector_loops += vec;
    depth += vec;
    StmtExprVisitor::VisitStmt(s);
    depth -= vec;
  }
};

// The rows inside the plane's run and the others: the two sides of the
// row branch (a parallel row loop), or the middle and the outer two of
// three row loops in sequence (a serial one), in the general nest (the
// last of the plane-level versions). False when neither is there.
bool RowKinds(const Stmt& s, std::vector<Stmt>* inner, std::vector<Stmt>* border) {
  Stmt general = s;
  while (const auto* i = As<IfThenElseNode>(general)) {
    if (!i->else_case) break;
    general = i->else_case;
  }
  struct Finder : StmtExprVisitor {
    std::vector<Stmt>*inner, *border;
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (found) return;
      if (const auto* i = As<IfThenElseNode>(st); i != nullptr && i->else_case) {
        *inner = {i->then_case};
        *border = {i->else_case};
        found = true;
        return;
      }
      if (const auto* seq = As<SeqStmtNode>(st); seq != nullptr && seq->seq.size() == 3) {
        const auto* a = As<ForNode>(seq->seq[0]);
        const auto* b = As<ForNode>(seq->seq[1]);
        const auto* c = As<ForNode>(seq->seq[2]);
        if (a && b && c && a->loop_var->name == b->loop_var->name && b->loop_var->name == c->loop_var->name) {
          *inner = {seq->seq[1]};
          *border = {seq->seq[0], seq->seq[2]};
          found = true;
          return;
        }
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.inner = inner;
  f.border = border;
  f.VisitStmt(general);
  return f.found;
}

// The plane-level versions ahead of the general nest: IfThenElse on the
// run-time sizes, then-branch a nest, in the order they are tested.
std::vector<Stmt> Versions(const Stmt& s) {
  std::vector<Stmt> out;
  Stmt at = s;
  while (const auto* i = As<IfThenElseNode>(at)) {
    if (!i->else_case) break;
    out.push_back(i->then_case);
    at = i->else_case;
  }
  return out;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PoolScheduleSymbolicTest, InteriorRowsLoadWithoutTestsOrClamps) {
  // A padded 3 x 3 max pool (ResNet's stem pool), stride 2 and 1, its row
  // loop serial and parallel: the rows whose taps are all inside the plane
  // are a loop of their own (a branch when the row loop is parallel), and
  // their vector loops read the input directly; the other rows keep their
  // row tests as selects over clamped loads.
  for (int64_t s : {2, 1}) {
    for (bool parallel : {false, true}) {
      PoolSpec t;
      t.s = s;
      t.parallel_rows = parallel;
      PrimFunc f = ParseFunc(Lowered(t), "pool");
      PrimFunc out = ScheduleWindowReductions(f);
      ASSERT_NE(out, f);
      std::vector<Stmt> inner_rows, border_rows;
      ASSERT_TRUE(RowKinds(out->body, &inner_rows, &border_rows)) << testing::Print(out);
      EXPECT_EQ(border_rows.size(), parallel ? 1u : 2u);
      VectorCensus inner, border;
      for (const Stmt& r : inner_rows) inner.VisitStmt(r);
      for (const Stmt& r : border_rows) border.VisitStmt(r);
      EXPECT_GE(inner.vector_loops, 1) << "s" << s;
      EXPECT_EQ(inner.int_selects, 0) << "s" << s << "\n" << testing::Print(out);
      EXPECT_EQ(inner.clamped_loads, 0) << "s" << s << "\n" << testing::Print(out);
      EXPECT_GT(border.int_selects, 0) << "s" << s;
      // Stride 2: 16-column vectors, the last one ending at the run's end
      // (overlapping the one before) rather than a scalar loop of up to 15
      // columns, all in one loop: one vector loop in every row loop (two
      // before, the last vector a loop of its own after them).
      // (The plane-level versions ahead of the general nest hold more.)
      if (s == 2) {
        Stmt general = out->body;
        while (const auto* i = As<IfThenElseNode>(general)) general = i->else_case;
        EXPECT_EQ(Count(testing::Print(nest::WithBody(out, general)), "T.vectorized(T.int64(16))"), parallel ? 2 : 3);
      }
    }
  }
}

TEST(PoolScheduleSymbolicTest, SameNumbersAsTheLoweredNest) {
  std::vector<PoolSpec> specs;
  for (bool nhwc : {false, true}) {
    for (int64_t s : {1, 2}) {
      for (int64_t p : {0, 1}) {
        PoolSpec t;
        t.nhwc = nhwc;
        t.s = s;
        t.p = p;
        t.batch = s == 2 ? "2" : "n";
        specs.push_back(t);
      }
    }
  }
  PoolSpec parallel;  // the rows a parallel loop: one branch per row
  parallel.parallel_rows = true;
  specs.push_back(parallel);
  parallel.nhwc = true;
  specs.push_back(parallel);
  PoolSpec sum;
  sum.op = "sum";
  specs.push_back(sum);
  PoolSpec ceil;
  ceil.p = 0;
  ceil.ceil = true;
  specs.push_back(ceil);
  PoolSpec two;  // MTCNN's 2 x 2 / 2, SAME_UPPER over an odd plane: padding on the far side only
  two.k = 2;
  two.p = 0;
  two.ceil = true;
  specs.push_back(two);
  for (const PoolSpec& t : specs) {
    PrimFunc f = ParseFunc(Lowered(t), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << Lowered(t);
    // Odd and even; 3 x 3 (a single row and column of outputs at stride 2),
    // rows of 35 and 38 output columns at stride 2 (two whole vectors and a
    // part), and of 16 to 33 (runs of about 15, 16, 17 and 32 columns
    // inside the borders: a scalar loop, one vector, one overlapping
    // another, two).
    for (auto [h, w] : {std::pair<int64_t, int64_t>{3, 3}, {9, 71}, {12, 76}, {7, 33}, {7, 35}, {6, 31}, {5, 65}}) {
      std::map<std::string, int64_t> sizes{{"h", h}, {"w", w}};
      if (t.batch == "n") sizes["n"] = 2;
      // NaN in every 13th element for max (it must come out where the
      // lowered nest gives one).
      Status same = SameNumbers(AtSizes(f, sizes), AtSizes(out, sizes), t.op == "max" ? 13 : 0);
      EXPECT_TRUE(same.ok()) << t.op << (t.nhwc ? " NHWC" : " NCHW") << " k" << t.k << " s" << t.s << " p" << t.p
                             << (t.ceil ? " ceil" : "") << " at " << h << "x" << w << ": " << same.ToString() << "\n"
                             << testing::Print(out);
    }
  }
}

// Distinct loads of `data` (the taps) in the first vector loop of `s`.
int DataLoadsPerVector(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    int loads = -1, depth = 0;
    std::vector<PrimExpr> seen;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && depth > 0 && l->buffer->name == "data") {
        bool known = false;
        for (const PrimExpr& o : seen) known = known || arith::StructuralEqual(o, e);
        if (!known) {
          seen.push_back(e);
          ++loads;
        }
      }
      StmtExprVisitor::VisitExpr(e);
    }
    void VisitStmt(const Stmt& st) override {
      const auto* f = As<ForNode>(st);
      if (f != nullptr && f->for_kind == ForKind::kVectorized) {
        if (loads >= 0) return;  // the first one only
        loads = 0;
        ++depth;
        StmtExprVisitor::VisitStmt(st);
        --depth;
        return;
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.loads;
}

TEST(PoolScheduleSymbolicTest, PlanesWithoutBorderTakeATestFreeNest) {
  // MTCNN's 2 x 2 / 2 (SAME_UPPER: padded on the far side when odd): first
  // a nest for planes with no border (no select, no clamp; every tap),
  // then one per range of tap rows that are inside for every output row
  // (a 1-row plane keeps the first tap row: half the loads), then the
  // general nest.
  PoolSpec t;
  t.k = 2;
  t.p = 0;
  t.ceil = true;
  PrimFunc f = ParseFunc(Lowered(t), "pool");
  PrimFunc out = ScheduleWindowReductions(f);
  ASSERT_NE(out, f);
  std::vector<Stmt> versions = Versions(out->body);
  ASSERT_EQ(versions.size(), 3u) << testing::Print(out);
  int all_taps = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    VectorCensus c;
    c.VisitStmt(versions[i]);
    EXPECT_GE(c.vector_loops, 1) << i;
    EXPECT_EQ(c.int_selects, 0) << i << "\n" << testing::Print(out);
    EXPECT_EQ(c.clamped_loads, 0) << i << "\n" << testing::Print(out);
    int loads = DataLoadsPerVector(versions[i]);
    if (i == 0) {
      all_taps = loads;
      EXPECT_GT(loads, 0);
    } else {
      EXPECT_EQ(2 * loads, all_taps) << i << "\n" << testing::Print(out);
    }
  }
  // Taps whose padding is not OP's identity (a max over zero padding)
  // cannot be left out: only the nest without a border.
  std::regex inf_pad("T\\.if_then_else\\((.*), T\\.float32\\(\"-inf\"\\)\\)");
  std::string zero_pad = std::regex_replace(Lowered(t), inf_pad, "T.if_then_else($1, T.float32(0))");
  ASSERT_NE(zero_pad, Lowered(t));
  PrimFunc z = ScheduleWindowReductions(ParseFunc(zero_pad, "pool"));
  EXPECT_EQ(Versions(z->body).size(), 1u) << testing::Print(z);
}

// Whether `s` holds a loop named `name`.
bool HasLoop(const Stmt& s, const std::string& name) {
  struct Finder : StmtExprVisitor {
    std::string name;
    bool found = false;
    void VisitStmt(const Stmt& st) override {
      if (const auto* f = As<ForNode>(st); f != nullptr && f->loop_var->name == name) found = true;
      StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.name = name;
  f.VisitStmt(s);
  return f.found;
}

TEST(PoolScheduleSymbolicTest, OneRowPlanesOfTwiceTheColumnsRunFlat) {
  // ppocr_cls_v2's last 2 x 2 / 2 at height 32: 200 planes of 1 x 50 per
  // image, one output row each, the second tap row outside. The version
  // of the first tap row holds a flat nest (output k from inputs 2k and
  // 2k + 1 of the tensor seen flat, blocks of 1024 outputs) for planes of
  // one output row over input rows of exactly 2 * Wo columns.
  PoolSpec t;
  t.k = 2;
  t.p = 0;
  t.ceil = true;
  t.c = 41;
  PrimFunc f = ParseFunc(Lowered(t), "pool");
  PrimFunc out = ScheduleWindowReductions(f);
  ASSERT_NE(out, f);
  std::vector<Stmt> versions = Versions(out->body);
  ASSERT_EQ(versions.size(), 3u) << testing::Print(out);
  EXPECT_FALSE(HasLoop(versions[0], "flat_blk")) << testing::Print(out);
  EXPECT_TRUE(HasLoop(versions[1], "flat_blk")) << testing::Print(out);
  // The flat nest's sizes (1 x 50, 1 x 34: several blocks, the last of
  // 2050 outputs 2 long, a scalar loop; 1 x 2: 41 outputs per image) and
  // sizes beside them that take the row nests (1 x 51, 2 x 50, 3 x 50).
  for (auto [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{2, 1, 50}, {5, 1, 50}, {2, 1, 34}, {1, 1, 2},
                         {2, 1, 51}, {2, 2, 50}, {2, 3, 50}}) {
    std::map<std::string, int64_t> sizes{{"n", n}, {"h", h}, {"w", w}};
    Status same = SameNumbers(AtSizes(f, sizes), AtSizes(out, sizes), 13);
    EXPECT_TRUE(same.ok()) << n << "x" << h << "x" << w << ": " << same.ToString() << "\n" << testing::Print(out);
  }
}

TEST(PoolScheduleSymbolicTest, SmallPlanesSameNumbersAsTheLoweredNest) {
  // Planes of one row or column, smaller than the window, padding larger
  // than half the window, each version's plane and the ones beside it.
  // {op, k, s, p, ceil}: MTCNN's and ppocr_cls_v2's 2 x 2 / 2, ResNet's
  // 3 x 3 / 2 pad 1, padding of more than half the window, stride 1, sums,
  // and a 3 x 3 / 2 ceil whose 2-row plane keeps its first two tap rows.
  struct Case {
    const char* op;
    int64_t k, s, p;
    bool ceil;
  };
  std::vector<PoolSpec> specs;
  for (Case c : {Case{"max", 2, 2, 0, true}, Case{"max", 3, 2, 1, false}, Case{"max", 3, 2, 2, false},
                 Case{"max", 3, 1, 1, false}, Case{"max", 2, 1, 1, true}, Case{"sum", 3, 2, 1, false},
                 Case{"sum", 2, 2, 0, true}, Case{"sum", 3, 1, 0, false}, Case{"max", 3, 2, 0, true}}) {
    PoolSpec t;
    t.op = c.op;
    t.k = c.k;
    t.s = c.s;
    t.p = c.p;
    t.ceil = c.ceil;
    t.batch = "2";
    specs.push_back(t);
  }
  for (const PoolSpec& t : specs) {
    PrimFunc f = ParseFunc(Lowered(t), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f) << Lowered(t);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {1, 50}, {2, 2}, {3, 1}, {2, 33}, {10, 10}}) {
      // Sizes the window does not fit even padded have no output.
      // Nor are windows wholly in the padding compared (-inf both ways).
      const int64_t round = t.ceil ? 2 * t.s - 1 : t.s;
      const int64_t ho = (h + 2 * t.p - t.k + round) / t.s, wo = (w + 2 * t.p - t.k + round) / t.s;
      if (ho < 1 || wo < 1 || (ho - 1) * t.s - t.p >= h || (wo - 1) * t.s - t.p >= w) continue;
      Status same = SameNumbers(AtSizes(f, {{"h", h}, {"w", w}}), AtSizes(out, {{"h", h}, {"w", w}}),
                                t.op == "max" ? 13 : 0);
      EXPECT_TRUE(same.ok()) << t.op << " k" << t.k << " s" << t.s << " p" << t.p << (t.ceil ? " ceil" : "") << " at "
                             << h << "x" << w << ": " << same.ToString() << "\n"
                             << testing::Print(out);
    }
  }
}


// Extents of the static vectorized loops of `s`.
std::vector<int64_t> VectorExtents(const Stmt& s) {
  struct Find : StmtExprVisitor {
    std::vector<int64_t> extents;
    void VisitStmt(const Stmt& st) override {
      const auto* f = As<ForNode>(st);
      if (f != nullptr && f->for_kind == ForKind::kVectorized) {
        if (const auto* e = f->extent.as<IntImmNode>()) extents.push_back(e->value);
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } find;
  find.VisitStmt(s);
  return find.extents;
}

TEST(PoolScheduleSymbolicTest, ShortStridedRowsWithoutBorderAreOneVectorOfTheirLength) {
  // Planes without a border whose stride-2 rows are under 16 columns
  // (mtcnn_pnet's 2 x 2 / 2 at 12 x 12: rows of 5) take a nest per row
  // length 2 to 15, each row one vector of that length, where a scalar loop
  // loaded every tap of every column, with the same numbers as the lowered
  // nest. A 3 x 3 / 2 padded by 1 has a border at every size: none of
  // these nests.
  for (auto [k, p, ceil] : {std::tuple<int64_t, int64_t, bool>{2, 0, true}, {3, 1, false}}) {
    PoolSpec t;
    t.k = k;
    t.p = p;
    t.ceil = ceil;
    t.s = 2;
    t.c = 2;
    t.batch = "2";
    PrimFunc f = ParseFunc(Lowered(t), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f);
    std::vector<int64_t> ext = VectorExtents(out->body);
    for (int64_t len : {2, 5, 15}) {
      // Only planes without a border (the 2 x 2 / 2: at even sizes) have them.
      EXPECT_EQ(std::find(ext.begin(), ext.end(), len) != ext.end(), p == 0) << "length " << len;
    }
    if (p != 0) continue;
    // Rows of 2, 5 and 15 columns without a border (even widths), 5 and 15
    // with one (odd), 17 (the 16-column vectors), 1 to 4 rows.
    for (auto [h, w] : {std::pair<int64_t, int64_t>{4, 4}, {4, 10}, {7, 9}, {2, 30}, {3, 31}, {8, 34}, {1, 10}}) {
      Status same = SameNumbers(AtSizes(f, {{"h", h}, {"w", w}}), AtSizes(out, {{"h", h}, {"w", w}}), 13);
      EXPECT_TRUE(same.ok()) << "at " << h << "x" << w << ": " << same.ToString();
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
