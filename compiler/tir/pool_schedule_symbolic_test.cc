// The window schedule over run-time planes (pool_schedule_symbolic.cc):
// the rows whose every tap row is inside the plane load with no test and no
// clamp, and the schedule computes what the lowered nest computes at odd
// and even sizes, padding 0 and 1, stride 1 and 2, ceil mode, NCHW and
// NHWC, batch 2, NaN in the input.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

std::string I(int64_t v) { return "T.int64(" + std::to_string(v) + ")"; }

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
};

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
  std::string grid = t.nhwc ? ho + ", " + wo + ", " + I(t.c) : I(t.c) + ", " + ho + ", " + wo;
  std::string batch_extent = t.batch == "n" ? "n" : I(std::stoll(t.batch));
  return "@T.prim_func\ndef pool(data_handle: T.handle, out_handle: T.handle):\n" +
         std::string(t.batch == "n" ? "    n = T.int64()\n" : "") + "    h = T.int64()\n    w = T.int64()\n" +
         "    data = T.match_buffer(data_handle, (" + t.batch + ", " + in_shape + "), \"float32\")\n" +
         "    out = T.match_buffer(out_handle, (" + t.batch + ", " + out_shape + "), \"float32\")\n" +
         "    for i0, i1, i2, i3, k0, k1 in T.grid(" + batch_extent + ", " + grid + ", " + I(t.k) + ", " + I(t.k) +
         "):\n        if k0 == " + I(0) + " and k1 == " + I(0) + ":\n            " + out + " = " + pad +
         "\n        " + out + " = " + update + "\n";
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

// The row branch of the scheduled nest: the first IfThenElse.
const IfThenElseNode* RowBranch(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    const IfThenElseNode* found = nullptr;
    void VisitStmt(const Stmt& st) override {
      if (found != nullptr) return;
      if (const auto* i = As<IfThenElseNode>(st)) {
        found = i;
        return;
      }
      StmtExprVisitor::VisitStmt(st);
    }
  } f;
  f.VisitStmt(s);
  return f.found;
}

TEST(PoolScheduleSymbolicTest, InteriorRowsLoadWithoutTestsOrClamps) {
  // A padded 3 x 3 max pool (ResNet's stem pool), stride 2 and 1: the rows
  // whose taps are all inside the plane are one branch, and their vector
  // loops read the input directly; the other rows keep their row tests as
  // selects over clamped loads.
  for (int64_t s : {2, 1}) {
    PoolSpec t;
    t.s = s;
    PrimFunc f = ParseFunc(Lowered(t), "pool");
    PrimFunc out = ScheduleWindowReductions(f);
    ASSERT_NE(out, f);
    const IfThenElseNode* rows = RowBranch(out->body);
    ASSERT_NE(rows, nullptr) << testing::Print(out);
    ASSERT_TRUE(rows->else_case) << testing::Print(out);
    VectorCensus inner, border;
    inner.VisitStmt(rows->then_case);
    border.VisitStmt(rows->else_case);
    EXPECT_GE(inner.vector_loops, 1) << "s" << s;
    EXPECT_EQ(inner.int_selects, 0) << "s" << s << "\n" << testing::Print(out);
    EXPECT_EQ(inner.clamped_loads, 0) << "s" << s << "\n" << testing::Print(out);
    EXPECT_GT(border.int_selects, 0) << "s" << s;
  }
  // Stride 2: whole 16-column vectors, and the run's last columns one more
  // such vector (overlapping the last whole one) rather than a scalar loop
  // of up to 15 columns.
  std::string text = testing::Print(ScheduleWindowReductions(ParseFunc(Lowered(PoolSpec{}), "pool")));
  EXPECT_NE(text.find("T.vectorized(T.int64(16))"), std::string::npos);
  int sixteen = 0;
  const std::string vec16 = "T.vectorized(T.int64(16))";
  for (size_t at = text.find(vec16); at != std::string::npos; at = text.find(vec16, at + 1)) ++sixteen;
  EXPECT_EQ(sixteen, 4);  // whole vectors and the last one, in both kinds of row
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
    // and rows of 35 and 38 output columns at stride 2 (two whole vectors
    // and a part).
    for (auto [h, w] : {std::pair<int64_t, int64_t>{3, 3}, {9, 71}, {12, 76}}) {
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

}  // namespace
}  // namespace tir
}  // namespace kiln
