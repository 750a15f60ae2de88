// The static schedule: row and column loops of constant extent
// (pool_schedule.h, pool_schedule_internal.h). The interior and every
// border row and column are decided at compile time by interval arithmetic.
#include <memory>
#include <utility>
#include <vector>

#include "compiler/arith/int_bounds.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/pool_schedule_internal.h"
#include "compiler/tir/substitute.h"
#include "compiler/tir/window_deinterleave.h"

namespace kiln {
namespace tir {
namespace pool {
namespace {

// Whether a comparison of integers holds (want = true) or fails (want =
// false) for every value in `bounds`: the bounds of a - b decide it.
bool Proven(const PrimExpr& t, const arith::VarBounds& bounds, bool want) {
  if (!t.defined() || !IsBinary(t->kind())) return false;
  const auto* b = static_cast<const BinaryNode*>(t.get());
  if (!b->a.dtype().is_int() || !b->b.dtype().is_int()) return false;
  arith::IntBounds d = arith::ConstIntBound(MakeBinary(TirKind::kSub, b->a, b->b), bounds);
  const bool lo = d.min != arith::kNegInf, hi = d.max != arith::kPosInf;
  switch (b->kind()) {
    case TirKind::kGE: return want ? lo && d.min >= 0 : hi && d.max < 0;
    case TirKind::kGT: return want ? lo && d.min > 0 : hi && d.max <= 0;
    case TirKind::kLE: return want ? hi && d.max <= 0 : lo && d.min > 0;
    case TirKind::kLT: return want ? hi && d.max < 0 : lo && d.min >= 0;
    default: return false;
  }
}

bool ProvenTrue(const PrimExpr& t, const arith::VarBounds& bounds) { return Proven(t, bounds, true); }
bool ProvenFalse(const PrimExpr& t, const arith::VarBounds& bounds) { return Proven(t, bounds, false); }

// `e` without the test conjuncts proven true under `bounds`; a test left
// with none becomes its true branch.
class DropProvenTests : public StmtExprMutator {
 public:
  explicit DropProvenTests(const arith::VarBounds& bounds) : bounds_(bounds) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    PrimExpr m = StmtExprMutator::MutateExpr(e);
    if (const auto* c = m.as<CallNode>()) {
      if (c->op != "if_then_else" || c->args.size() != 3) return m;
      if (AnyProvenFalse(c->args[0])) return c->args[2];
      PrimExpr cond = Keep(c->args[0]);
      if (!cond.defined()) return c->args[1];
      if (cond.get() == c->args[0].get()) return m;
      return PrimExpr(std::make_shared<CallNode>(c->dtype, c->op, std::vector<PrimExpr>{cond, c->args[1], c->args[2]}));
    }
    if (const auto* s = m.as<SelectNode>()) {
      if (AnyProvenFalse(s->cond)) return s->false_value;
      PrimExpr cond = Keep(s->cond);
      if (!cond.defined()) return s->true_value;
      if (cond.get() == s->cond.get()) return m;
      return PrimExpr(std::make_shared<SelectNode>(cond, s->true_value, s->false_value));
    }
    return m;
  }

 private:
  // Whether a conjunct of `cond` fails for every value in the bounds.
  bool AnyProvenFalse(const PrimExpr& cond) const {
    std::vector<PrimExpr> terms;
    Conjuncts(cond, &terms);
    for (const PrimExpr& t : terms)
      if (ProvenFalse(t, bounds_)) return true;
    return false;
  }
  // The conjunction of the terms not proven; null when all are.
  PrimExpr Keep(const PrimExpr& cond) const {
    std::vector<PrimExpr> terms;
    Conjuncts(cond, &terms);
    PrimExpr out;
    bool dropped = false;
    for (const PrimExpr& t : terms) {
      if (ProvenTrue(t, bounds_)) {
        dropped = true;
        continue;
      }
      out = out.defined() ? MakeBinary(TirKind::kAnd, out, t) : t;
    }
    return dropped ? out : cond;
  }
  const arith::VarBounds& bounds_;
};

// that uses v holds at every tap; empty (lo == hi) when that set is not one
// run. `base` bounds the other loops.
std::pair<int64_t, int64_t> InteriorRange(const std::vector<PrimExpr>& terms, const VarNode* v, int64_t ext,
                                          const arith::VarBounds& base) {
  std::vector<PrimExpr> uses;
  for (const PrimExpr& t : terms)
    if (Uses(t, {v})) uses.push_back(t);
  int64_t lo = -1, hi = -1;
  for (int64_t x = 0; x < ext; ++x) {
    arith::VarBounds b = base;
    b[v] = arith::IntBounds::Const(x);
    bool ok = true;
    for (size_t i = 0; i < uses.size() && ok; ++i) ok = ProvenTrue(uses[i], b);
    if (!ok) continue;
    if (lo < 0) lo = x;
    if (hi >= 0 && hi != x) return {0, 0};  // a hole: not one run
    hi = x + 1;
  }
  if (lo < 0) return {0, 0};
  return {lo, hi};
}

Stmt MakeLoop(const Var& v, int64_t extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), I64(extent), kind, std::move(body));
}

// Output columns [from, to) of one row storing `value` (null when empty).
Stmt RowPart(const Window& w, int64_t from, int64_t to, ForKind kind, const PrimExpr& value) {
  if (to <= from) return nullptr;
  const ForNode* xl = w.spatial.back();
  Var xv = MakeVar(xl->loop_var->name, xl->loop_var->dtype);
  PrimExpr at = from == 0 ? PrimExpr(xv) : PrimExpr(xv) + I64(from);
  return MakeLoop(xv, to - from, kind, Substitute(Store(w.out, value, w.idx), VarMap{{xl->loop_var.get(), at}}));
}

// A row's interior columns [lo, hi) storing `value` (its tests dropped):
// vectorized when its loads step through x contiguously, from even/odd
// copies of the input rows when that applies (window_deinterleave.h).
// (Whole vectors with an overlapping last one were tried: LLVM unrolls a
// 16-trip loop of strided loads fully and assembles its vectors from scalar
// loads, 3.5x slower than its own scalar remainder.)
Stmt InteriorRow(const Window& w, const PoolKnobs& knobs, int64_t lo, int64_t hi, const PrimExpr& value) {
  const VarNode* x = w.spatial.back()->loop_var.get();
  if (!knobs.vectorize || !ContiguousInX(value, x)) return RowPart(w, lo, hi, ForKind::kSerial, value);
  if (Stmt split = DeinterleavedInterior(w.out, w.idx, x, lo, hi, value, knobs.max_deinterleave)) return split;
  return RowPart(w, lo, hi, ForKind::kVectorized, value);
}

// OP over the tap values with every test decided that `bounds` decide (a
// tap whose test fails there is its else value).
PrimExpr ValueIn(const Window& w, const std::vector<PrimExpr>& taps, const arith::VarBounds& bounds) {
  DropProvenTests drop(bounds);
  std::vector<PrimExpr> values;
  for (const PrimExpr& v : taps) values.push_back(drop.MutateExpr(v));
  return Combine(w, values);
}

// The rows and columns outside the interior, each with its tests decided:
// a border column is one store per row with no test left, a border row is
// an interior-like row (vectorized, deinterleaved) whose out-of-plane taps
// are their padding value. With the tests kept, MobileNetV2's 3x3/2
// depthwise on 576 x 14^2 spent most of its time in the top row and left
// column (13 of 49 outputs, 9 tested scalar taps each).
Stmt StaticBorders(const Window& w, const PoolKnobs& knobs, const std::vector<PrimExpr>& taps, const arith::VarBounds& base, int64_t x_lo,
                   int64_t x_hi, int64_t y_lo, int64_t y_hi) {
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  const int64_t ext_x = w.spatial_ext.back();
  const ForNode* yl = w.spatial.size() >= 2 ? w.spatial[w.spatial.size() - 2] : nullptr;
  const VarNode* y = yl ? yl->loop_var.get() : nullptr;
  const int64_t ext_y = yl ? w.spatial_ext[w.spatial.size() - 2] : 1;
  // One row, y within `yb`.
  auto row_in = [&](const arith::VarBounds& yb) -> Stmt {
    std::vector<Stmt> parts;
    auto column = [&](int64_t xc) {
      arith::VarBounds b = yb;
      b[x] = arith::IntBounds::Const(xc);
      return Substitute(Store(w.out, ValueIn(w, taps, b), w.idx), VarMap{{x, I64(xc)}});
    };
    for (int64_t xc = 0; xc < x_lo; ++xc) parts.push_back(column(xc));
    arith::VarBounds b = yb;
    b[x] = arith::IntBounds::Range(x_lo, x_hi - 1);
    parts.push_back(InteriorRow(w, knobs, x_lo, x_hi, ValueIn(w, taps, b)));
    for (int64_t xc = x_hi; xc < ext_x; ++xc) parts.push_back(column(xc));
    return Seq(parts);
  };
  if (y == nullptr) return row_in(base);
  std::vector<Stmt> rows;
  auto fixed_row = [&](int64_t yc) {
    arith::VarBounds b = base;
    b[y] = arith::IntBounds::Const(yc);
    return Substitute(row_in(b), VarMap{{y, I64(yc)}});
  };
  for (int64_t yc = 0; yc < y_lo; ++yc) rows.push_back(fixed_row(yc));
  arith::VarBounds b = base;
  b[y] = arith::IntBounds::Range(y_lo, y_hi - 1);
  Var yv = MakeVar(yl->loop_var->name, yl->loop_var->dtype);
  PrimExpr at = y_lo == 0 ? PrimExpr(yv) : PrimExpr(yv) + I64(y_lo);
  ForKind y_kind = yl->for_kind == ForKind::kVectorized ? ForKind::kSerial : yl->for_kind;
  rows.push_back(MakeLoop(yv, y_hi - y_lo, y_kind, Substitute(row_in(b), VarMap{{y, at}})));
  for (int64_t yc = y_hi; yc < ext_y; ++yc) rows.push_back(fixed_row(yc));
  return Seq(rows);
}

}  // namespace

Stmt RewriteStatic(const Window& w, const PoolKnobs& knobs) {
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  int64_t ext_x = w.spatial_ext.back();
  const ForNode* yl = w.spatial.size() >= 2 ? w.spatial[w.spatial.size() - 2] : nullptr;
  const VarNode* y = yl ? yl->loop_var.get() : nullptr;
  int64_t ext_y = yl ? w.spatial_ext[w.spatial.size() - 2] : 1;

  std::vector<PrimExpr> full = TapValues(w);
  TestTerms tests;
  for (const PrimExpr& v : full) tests.VisitExpr(v);
  arith::VarBounds base;
  for (size_t d = 0; d < w.spatial.size(); ++d)
    if (w.spatial_ext[d] != kSymbolicExtent)  // a symbolic outer loop (the batch) stays unbounded
      base[w.spatial[d]->loop_var.get()] = arith::IntBounds::Range(0, w.spatial_ext[d] - 1);
  auto [x_lo, x_hi] = InteriorRange(tests.terms, x, ext_x, base);
  int64_t y_lo = 0, y_hi = ext_y;
  if (y != nullptr) std::tie(y_lo, y_hi) = InteriorRange(tests.terms, y, ext_y, base);
  arith::VarBounds inner = base;
  inner[x] = arith::IntBounds::Range(x_lo, x_hi - 1);
  if (y != nullptr) inner[y] = arith::IntBounds::Range(y_lo, y_hi - 1);
  bool has_interior = x_hi > x_lo && y_hi > y_lo;
  std::vector<PrimExpr> dropped;
  if (has_interior) {
    DropProvenTests drop(inner);
    for (const PrimExpr& v : full) dropped.push_back(drop.MutateExpr(v));
  }
  PrimExpr full_value = Combine(w, full);
  PrimExpr interior_value = has_interior ? Combine(w, dropped) : full_value;
  if (xl->for_kind == ForKind::kParallel) {
    has_interior = false;  // keep the parallel loop whole
  }

  // x from `from` to `to` of one row, storing `value`.
  auto part = [&](int64_t from, int64_t to, ForKind kind, const PrimExpr& value) {
    return RowPart(w, from, to, kind, value);
  };
  auto seq = [](std::vector<Stmt> parts) {
    std::vector<Stmt> kept;
    for (Stmt& s : parts)
      if (s) kept.push_back(std::move(s));
    return Seq(kept);
  };
  const int64_t y_border = y != nullptr ? y_lo + (ext_y - y_hi) : 0;
  const int64_t x_border = x_lo + (ext_x - x_hi);
  if (has_interior && y_border <= knobs.max_static_border && x_border <= knobs.max_static_border) {
    return WrapOuter(w, y != nullptr, StaticBorders(w, knobs, full, base, x_lo, x_hi, y_lo, y_hi));
  }
  ForKind x_kind = xl->for_kind == ForKind::kParallel ? ForKind::kParallel : ForKind::kSerial;
  Stmt border_row = part(0, ext_x, x_kind, full_value);
  Stmt row = border_row;
  if (has_interior) {
    row = seq({part(0, x_lo, ForKind::kSerial, full_value), InteriorRow(w, knobs, x_lo, x_hi, interior_value),
               part(x_hi, ext_x, ForKind::kSerial, full_value)});
  }
  Stmt nest = row;
  if (y != nullptr) {
    Var yv = MakeVar(yl->loop_var->name, yl->loop_var->dtype);
    Stmt body = row;
    if (has_interior && (y_lo > 0 || y_hi < ext_y)) {
      PrimExpr in = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, PrimExpr(yv), I64(y_lo)),
                               MakeBinary(TirKind::kLT, PrimExpr(yv), I64(y_hi)));
      body = std::make_shared<IfThenElseNode>(in, Substitute(row, VarMap{{y, PrimExpr(yv)}}),
                                              Substitute(border_row, VarMap{{y, PrimExpr(yv)}}));
    } else {
      body = Substitute(row, VarMap{{y, PrimExpr(yv)}});
    }
    ForKind y_kind = yl->for_kind == ForKind::kVectorized ? ForKind::kSerial : yl->for_kind;
    nest = MakeLoop(yv, ext_y, y_kind, body);
  }
  return WrapOuter(w, y != nullptr, nest);
}

}  // namespace pool
}  // namespace tir
}  // namespace kiln
