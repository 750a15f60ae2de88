// Internal to the window-reduction schedule (pool_schedule.h, which
// documents the scheme). Its definitions are split where the interior is
// found, because that decides everything downstream:
//   pool_schedule.cc           matching a nest (window or tested copy), the
//                              helpers every path shares, and the choice of path
//   pool_schedule_static.cc    static row and column extents: the interior is
//                              a set of constants, proven at compile time,
//                              borders peeled one row / column at a time
//   pool_schedule_symbolic.cc  run-time extents: the interior is a run of
//                              columns computed from each test's linear bound,
//                              the other tests selects over clamped loads
//   pool_schedule_versions.cc  run-time extents: test-free nests ahead of the
//                              symbolic one for planes without a border, or
//                              whose tap rows are inside for all rows or none
//   pool_schedule_large.cc     windows too large to unroll (or too large over
//                              run-time planes): tap loops around vector rows,
//                              and the separable max / min over run-time planes
// Everything declared here is a pure function of its arguments.
#ifndef KILN_COMPILER_TIR_POOL_SCHEDULE_INTERNAL_H_
#define KILN_COMPILER_TIR_POOL_SCHEDULE_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/window_deinterleave.h"

namespace kiln {
namespace tir {
namespace pool {

using namespace ir;    // NOLINT: internal header of the pool schedule's files
using namespace nest;  // NOLINT: the shared nest helpers

// The extent recorded for a spatial loop whose extent is not a constant
// (a model compiled for every image size); such nests take RewriteSymbolic.
constexpr int64_t kSymbolicExtent = -1;

// A matched nest: spatial loops (the store's trailing indices, outermost
// first) and tap loops, with OP, the init (null for a tested copy, which
// has no taps) and f, the value at one tap.
struct Window {
  std::vector<const ForNode*> spatial, taps;
  std::vector<int64_t> spatial_ext, tap_ext;
  Buffer out;
  std::vector<PrimExpr> idx;
  TirKind op;
  PrimExpr init, f;
  bool large = false;  // more taps than are unrolled: RewriteLargeWindow
};

// The schedule's constants, the rule's or a tuning record's
// (ScheduleKnobs; pool_schedule.h lists the knobs).
struct PoolKnobs {
  int64_t max_taps = kMaxWindowTaps;
  int64_t max_static_border = 4;  // border rows and columns StaticBorders takes
  int64_t max_deinterleave = kMaxDeinterleaveColumns;
  bool vectorize = true;  // false: interior rows stay serial loops
};

// The bounds a set of tests puts on loop x: x >= each of `lower`, x < each
// of `upper`.
struct Run {
  std::vector<PrimExpr> lower, upper;
};

// Every conjunct of a bounds test (if_then_else or select condition) in `e`.
struct TestTerms : StmtExprVisitor {
  std::vector<PrimExpr> terms;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) {
      if (c->op == "if_then_else" && c->args.size() == 3) Conjuncts(c->args[0], &terms);
    } else if (const auto* s = e.as<SelectNode>()) {
      Conjuncts(s->cond, &terms);
    }
    StmtExprVisitor::VisitExpr(e);
  }
};

// ----------------------------------------------- shared (pool_schedule.cc)

// f at every tap, in the nest's iteration order (last tap loop fastest).
std::vector<PrimExpr> TapValues(const Window& w);

// Every load of `e` that uses `x` uses it only in its last index, with a
// stride of 1 or 2 (pooling's strides: wide loads and shuffles; larger
// strides would become gathers).
bool ContiguousInX(const PrimExpr& e, const VarNode* x, int64_t max_step = 2);

// OP over the init and the tap values. A sum keeps the nest's order (the
// same rounding as the loop) unless `reassociate` (the separable sum, which
// rounds differently anyway): then the values combine as a balanced tree,
// the init added last; max and min, whose result does not depend on the
// order, always combine as a balanced tree: a chain of 9 NaN-propagating
// maxima (compare, compare-unordered, mask or, blend each) was
// latency-bound.
PrimExpr Combine(const Window& w, const std::vector<PrimExpr>& values, bool reassociate = false);

// The nest's loops outside the row (and column) loops around `nest`.
Stmt WrapOuter(const Window& w, bool has_y, Stmt nest);

// ------------------------------------------------------ the four paths

// Static row and column extents (pool_schedule_static.cc).
Stmt RewriteStatic(const Window& w, const PoolKnobs& knobs);

// Symbolic row or column extents (pool_schedule_symbolic.cc); null when a
// test is not of the forms handled there (the nest is left as lowered).
Stmt RewriteSymbolic(const Window& w, const PoolKnobs& knobs);

// Windows of more taps than are unrolled (pool_schedule_large.cc): tap
// loops around vector rows; null when the nest is not of that form.
// A parallel column loop wider than kLargeWindowBlock splits into parallel
// blocks of that many columns (4 vectors: few enough rows per block to keep
// them in L1, enough blocks to share out).
constexpr int64_t kLargeWindowBlock = 64;
Stmt RewriteLargeWindow(const Window& w, const PoolKnobs& knobs);
// Max and min windows of two tap loops over run-time planes, one pass over
// the tap rows and one over the tap columns (pool_schedule_large.cc); null
// when the nest is not of that form.
Stmt RewriteSeparableWindow(const Window& w, const PoolKnobs& knobs);

// --------------------- run-time column runs (pool_schedule_symbolic.cc),
// also used by the large windows

// `t` (an integer comparison) as g >= 0; null for anything else.
PrimExpr AsNonNegative(const PrimExpr& t);

// Test terms by node (each term of TestTerms once).
using TermSet = std::unordered_set<const PrimExprNode*>;

// Whether the loads of `taps` step by 2 in x (else by 1); nullopt when one
// steps by more (such rows stay as lowered).
std::optional<bool> Strided(const Window& w, const std::vector<PrimExpr>& taps);

// Columns [lo, hi) of a row whose `taps` hold no test on x: one vector
// loop (masked tail) at stride 1, whole 16-column vectors at stride 2.
Stmt RunLoops(const Window& w, const PrimExpr& lo, const PrimExpr& hi, bool strided,
              const std::vector<PrimExpr>& taps);

// Columns [lo, lo + k) of such a row as one explicit vector of k lanes (a
// stride-2 row shorter than RunLoops' vectors, of a length known at run
// time to be k: pool_schedule_versions.cc).
constexpr int64_t kMaxRunVector = 15;
Stmt RunVector(const Window& w, const PrimExpr& lo, int64_t k, const std::vector<PrimExpr>& taps);

// `full` with the terms of `drop` gone from its tests, the other tests
// selects over clamped loads; false when a test's true side is no load.
bool ClampAll(const std::vector<PrimExpr>& full, const TermSet& drop,
              const std::unordered_set<const VarNode*>& nest_vars, std::vector<PrimExpr>* out);

// ------------------- plane-level versions (pool_schedule_versions.cc)

// `general` (the symbolic nest) behind run-time tests on the plane's
// extents that pick, where they hold, a nest with no test at all: every
// tap inside the plane for every output (no border), or, when a failed
// test gives OP's identity, the taps of a range of tap rows that are
// inside for every output row while the others are inside for none (the
// columns without a border). `x_run` / `y_run` bound the columns / rows
// whose taps are all inside (y_run null: no row tests or no such run),
// `x_terms` / `y_terms` their tests (x_terms with the tests that always
// hold). Returns `general` when no version applies.
Stmt PlaneVersions(const Window& w, const std::vector<PrimExpr>& full, const Run& x_run, const Run* y_run,
                   const TermSet& x_terms, const TermSet& y_terms, const std::unordered_set<const VarNode*>& nest_vars,
                   const std::unordered_set<const VarNode*>& others_y, Stmt general);

// Adds the bound term `t` puts on x (t linear in x with a nonzero constant
// step, its rest free of `others`); false when it is not of that form.
bool AddBound(const PrimExpr& t, const VarNode* x, const std::unordered_set<const VarNode*>& others, Run* run);

// A loop over [from, from + extent) of `v`'s values: `body` with `old` read
// as a new variable plus `from`.
Stmt LoopFrom(const Var& v, const PrimExpr& from, const PrimExpr& extent, ForKind kind, const Stmt& body,
              const VarNode* old);

}  // namespace pool
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_POOL_SCHEDULE_INTERNAL_H_
