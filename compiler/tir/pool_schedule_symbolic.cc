// The symbolic schedule: row or column loops of run-time extent
// (pool_schedule.h, pool_schedule_internal.h).
//
// With symbolic H and W (a model compiled for every image size) the
// interior is not a set of constants: each bounds test on x is linear in x
// (s * x + r >= 0, r symbolic), so the columns where every tap passes it
// are one run [x_lo, x_hi) of expressions computed at run time. There the
// x tests go and the row is one vector loop (masked tail: kernel_emitter).
// The y tests give a run of rows [y_lo, y_hi) the same way, a row loop of
// its own (a branch per row when the row loop is parallel), where the y
// tests go too, so the run's columns load with no test at all. In the other rows the y tests stay, as
// selects over loads whose row index is clamped into the plane: the load
// is always in bounds and the select's condition is the same for the
// whole row (the emitter splats it), so these rows vectorize too. Border
// columns keep their tests, as selects over clamped loads, one store each.
// Before: nudenet's SPPF 5 x 5 max pools ran one tested scalar tap at a
// time. Planes without a border at run time take test-free nests ahead of
// this one (pool_schedule_versions.cc).
#include <memory>
#include <optional>
#include <utility>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/pool_schedule_internal.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace pool {

// `t` (an integer comparison) as g >= 0; null for anything else.
PrimExpr AsNonNegative(const PrimExpr& t) {
  if (!t.defined() || !IsBinary(t->kind())) return PrimExpr();
  const auto* b = static_cast<const BinaryNode*>(t.get());
  if (!b->a.dtype().is_int() || !b->b.dtype().is_int()) return PrimExpr();
  switch (b->kind()) {
    case TirKind::kGE: return arith::Simplify(b->a - b->b);
    case TirKind::kGT: return arith::Simplify(b->a - b->b - I64(1));
    case TirKind::kLE: return arith::Simplify(b->b - b->a);
    case TirKind::kLT: return arith::Simplify(b->b - b->a - I64(1));
    default: return PrimExpr();
  }
}

// Adds the bound term `t` puts on x (t linear in x with a nonzero constant
// step, its rest free of `others`); false when it is not of that form.
bool AddBound(const PrimExpr& t, const VarNode* x, const std::unordered_set<const VarNode*>& others, Run* run) {
  PrimExpr g = AsNonNegative(t);
  if (!g.defined()) return false;
  auto at = [&](int64_t v) { return arith::Simplify(Substitute(g, VarMap{{x, I64(v)}})); };
  PrimExpr g0 = at(0), g1 = at(1), g2 = at(2);
  std::optional<int64_t> s = arith::AsConstInt(arith::Simplify(g1 - g0));
  std::optional<int64_t> s2 = arith::AsConstInt(arith::Simplify(g2 - g1));
  if (!s || !s2 || *s != *s2 || *s == 0 || Uses(g0, others) || Uses(g0, {x})) return false;
  // Linear: checked at a symbolic point too (x = a fresh variable v: g(v)
  // must simplify to g0 + s * v).
  Var v = MakeVar("v", x->dtype);
  PrimExpr gv = Substitute(g, VarMap{{x, PrimExpr(v)}});
  if (!arith::AsConstInt(arith::Simplify(gv - g0 - I64(*s) * PrimExpr(v)))) return false;
  // Each bound once: the taps of one window repeat them (a 3 x 3 window's
  // nine column tests are three bounds), and every copy would be one more
  // min or max computed per row.
  auto add = [](std::vector<PrimExpr>* bounds, PrimExpr b) {
    for (const PrimExpr& o : *bounds)
      if (arith::StructuralEqual(o, b)) return;
    bounds->push_back(std::move(b));
  };
  if (*s > 0) {
    // s x + g0 >= 0  <=>  x >= ceil(-g0 / s)
    add(&run->lower, arith::Simplify(MakeBinary(TirKind::kFloorDiv, I64(*s - 1) - g0, I64(*s))));
  } else {
    // g0 - a x >= 0  <=>  x <= floor(g0 / a)  <=>  x < floor(g0 / a) + 1
    add(&run->upper, arith::Simplify(MakeBinary(TirKind::kFloorDiv, g0, I64(-*s)) + I64(1)));
  }
  return true;
}

namespace {

// Clamps the indices of a load its test bounds (e >= c: max(e, c); e <= u:
// min(e, u)) so that it reads inside them whatever the test says.
PrimExpr ClampedLoad(const BufferLoadNode* l, const std::vector<PrimExpr>& terms,
                     const std::unordered_set<const VarNode*>& nest_vars) {
  std::vector<PrimExpr> idx = l->indices;
  std::vector<bool> lo(idx.size(), false), hi(idx.size(), false);
  for (const PrimExpr& t : terms) {
    PrimExpr g = AsNonNegative(t);
    if (!g.defined()) continue;
    // Matched against the load's own indices (idx collects the clamps).
    for (size_t d = 0; d < idx.size(); ++d) {
      const PrimExpr& e = l->indices[d];
      if (!e.dtype().is_int()) continue;
      // g = e + c >= 0: e >= -c.
      if (std::optional<int64_t> c = arith::AsConstInt(arith::Simplify(g - e))) {
        idx[d] = MakeBinary(TirKind::kMax, idx[d], I64(-*c));
        lo[d] = true;
        break;
      }
      // g = u - e >= 0 with u free of the nest's loops: e <= u.
      PrimExpr u = arith::Simplify(g + e);
      if (!Uses(u, nest_vars)) {
        idx[d] = MakeBinary(TirKind::kMin, idx[d], u);
        hi[d] = true;
        break;
      }
    }
  }
  // An index clamped on one side only gets the buffer's bound on the other:
  // the select evaluates the load whatever its test says, so it must be in
  // bounds everywhere.
  for (size_t d = 0; d < idx.size() && d < l->buffer->shape.size(); ++d) {
    if (lo[d] && !hi[d]) idx[d] = MakeBinary(TirKind::kMin, idx[d], arith::Simplify(l->buffer->shape[d] - I64(1)));
    if (hi[d] && !lo[d]) idx[d] = MakeBinary(TirKind::kMax, idx[d], I64(0));
  }
  return PrimExpr(std::make_shared<BufferLoadNode>(l->buffer, idx));
}

// Every bounds test `if_then_else(cond, X[idx], pad)` as
// `select(cond', X[clamped idx], pad)`, cond' without the terms in `drop`
// (proven for the region); a test left with no terms is its load. Fails
// (ok = false) on a test whose true side is not a load: such a value cannot
// be evaluated unconditionally.
class ClampTests : public StmtExprMutator {
 public:
  ClampTests(const std::unordered_set<const PrimExprNode*>& drop, const std::unordered_set<const VarNode*>& nest_vars)
      : drop_(drop), nest_vars_(nest_vars) {}
  bool ok = true;
  PrimExpr MutateExpr(const PrimExpr& e) override {
    const auto* c = e.as<CallNode>();
    if (c == nullptr || c->op != "if_then_else" || c->args.size() != 3) {
      if (const auto* s = e.as<SelectNode>()) {
        // A select already evaluates both sides; only its proven terms go.
        PrimExpr t = MutateExpr(s->true_value), f = MutateExpr(s->false_value);
        PrimExpr cond = Kept(s->cond);
        if (!cond.defined()) return t;
        return PrimExpr(std::make_shared<SelectNode>(cond, t, f));
      }
      return StmtExprMutator::MutateExpr(e);
    }
    PrimExpr cond = Kept(c->args[0]);
    const auto* l = c->args[1].as<BufferLoadNode>();
    if (l == nullptr) {
      ok = false;
      return e;
    }
    for (const PrimExpr& i : l->indices) {
      BufferRefs inner;
      inner.VisitExpr(i);
      if (!inner.load_nodes.empty()) ok = false;  // an index that loads: leave it alone
    }
    PrimExpr pad = MutateExpr(c->args[2]);
    if (!cond.defined()) return c->args[1];
    std::vector<PrimExpr> terms;
    Conjuncts(cond, &terms);
    return PrimExpr(std::make_shared<SelectNode>(cond, ClampedLoad(l, terms, nest_vars_), pad));
  }

 private:
  // `cond` without the dropped terms; null when none is left.
  PrimExpr Kept(const PrimExpr& cond) const {
    std::vector<PrimExpr> terms;
    Conjuncts(cond, &terms);
    PrimExpr out;
    for (const PrimExpr& t : terms) {
      if (drop_.count(t.get())) continue;
      out = out.defined() ? MakeBinary(TirKind::kAnd, out, t) : t;
    }
    return out;
  }
  const std::unordered_set<const PrimExprNode*>& drop_;
  const std::unordered_set<const VarNode*>& nest_vars_;
};

// Whether test term `t` holds everywhere in the nest: linear in one of its
// loops (symbolic extents allowed), true at that loop's end where it is
// smallest (`i2 + 2 < frames` in a loop over frames - 2 rows).
bool AlwaysHolds(const PrimExpr& t, const std::vector<const ForNode*>& loops) {
  PrimExpr g = AsNonNegative(t);
  if (!g.defined()) return false;
  const ForNode* only = nullptr;
  for (const ForNode* f : loops) {
    if (!Uses(g, {f->loop_var.get()})) continue;
    if (only != nullptr) return false;
    only = f;
  }
  auto at = [&](const PrimExpr& v) { return arith::Simplify(Substitute(g, VarMap{{only->loop_var.get(), v}})); };
  if (only == nullptr) {
    std::optional<int64_t> c = arith::AsConstInt(arith::Simplify(g));
    return c && *c >= 0;
  }
  std::optional<int64_t> s = arith::AsConstInt(arith::Simplify(at(I64(1)) - at(I64(0))));
  if (!s) return false;
  Var v = MakeVar("v", only->loop_var->dtype);
  if (!arith::AsConstInt(arith::Simplify(at(PrimExpr(v)) - at(I64(0)) - I64(*s) * PrimExpr(v)))) return false;
  std::optional<int64_t> low = arith::AsConstInt(*s >= 0 ? at(I64(0)) : at(arith::Simplify(only->extent - I64(1))));
  return low && *low >= 0;
}

}  // namespace

Stmt LoopFrom(const Var& v, const PrimExpr& from, const PrimExpr& extent, ForKind kind, const Stmt& body,
              const VarNode* old) {
  Var nv = MakeVar(v->name, v->dtype);
  PrimExpr at = IsZero(from) ? PrimExpr(nv) : PrimExpr(nv) + from;
  return std::make_shared<ForNode>(nv, I64(0), arith::Simplify(extent), kind, Substitute(body, VarMap{{old, at}}));
}

namespace {

// Columns [from, from + extent) of the row storing OP over `taps`. The taps
// move to the new loop variable before they are combined, so the max tree's
// shared operands stay shared (substituted after, each would be copied once
// per use: 2^depth copies of every tap).
Stmt PartLoop(const Window& w, const PrimExpr& from, const PrimExpr& extent, ForKind kind,
              const std::vector<PrimExpr>& taps) {
  const ForNode* xl = w.spatial.back();
  Var nv = MakeVar(xl->loop_var->name, xl->loop_var->dtype);
  VarMap map{{xl->loop_var.get(), IsZero(from) ? PrimExpr(nv) : PrimExpr(nv) + from}};
  std::vector<PrimExpr> moved, idx;
  for (const PrimExpr& t : taps) moved.push_back(Substitute(t, map));
  for (const PrimExpr& i : w.idx) idx.push_back(Substitute(i, map));
  return std::make_shared<ForNode>(nv, I64(0), arith::Simplify(extent), kind, Store(w.out, Combine(w, moved), idx));
}

// Columns of a stride-2 run-time interior per explicit vector.
constexpr int64_t kStridedLanes = 16;

// [lo, hi) of a loop of extent `ext` bounded by `run`:
// lo = min(max(0, lower..), ext), hi = max(min(ext, upper..), lo).
std::pair<PrimExpr, PrimExpr> RunRange(const Run& run, const PrimExpr& ext) {
  PrimExpr lo = I64(0), hi = ext;
  for (const PrimExpr& b : run.lower) lo = MakeBinary(TirKind::kMax, lo, b);
  for (const PrimExpr& b : run.upper) hi = MakeBinary(TirKind::kMin, hi, b);
  lo = arith::Simplify(MakeBinary(TirKind::kMin, lo, ext));
  hi = arith::Simplify(MakeBinary(TirKind::kMax, hi, lo));
  return {lo, hi};
}

// One output row: the columns outside the x run (all of them when `run` is
// null) with the terms of `border_drop` gone and the other tests selects
// over clamped loads, the run with those of `interior_drop` gone as well.
// Null when a test cannot be made a select or a load steps by more than 2.
Stmt SymbolicRow(const Window& w, const std::vector<PrimExpr>& full, const Run* run, const TermSet& border_drop,
                 const TermSet& interior_drop, const std::unordered_set<const VarNode*>& nest_vars) {
  const ForNode* xl = w.spatial.back();
  ClampTests border(border_drop, nest_vars);
  std::vector<PrimExpr> border_taps;
  for (const PrimExpr& v : full) border_taps.push_back(border.MutateExpr(v));
  if (!border.ok) return nullptr;
  const PrimExpr& ext_x = xl->extent;
  if (run == nullptr) {
    ForKind x_kind = xl->for_kind == ForKind::kParallel ? ForKind::kParallel : ForKind::kSerial;
    return PartLoop(w, I64(0), ext_x, x_kind, border_taps);
  }
  ClampTests interior(interior_drop, nest_vars);
  std::vector<PrimExpr> interior_taps;
  for (const PrimExpr& v : full) interior_taps.push_back(interior.MutateExpr(v));
  if (!interior.ok) return nullptr;
  auto [lo, hi] = RunRange(*run, ext_x);
  std::optional<bool> strided = Strided(w, interior_taps);
  if (!strided) return nullptr;
  std::vector<Stmt> parts;
  if (!IsZero(lo)) parts.push_back(PartLoop(w, I64(0), lo, ForKind::kSerial, border_taps));
  parts.push_back(RunLoops(w, lo, hi, *strided, interior_taps));
  parts.push_back(PartLoop(w, hi, ext_x - hi, ForKind::kSerial, border_taps));
  return Seq(parts);
}

}  // namespace

// Whether the run's loads step by 2 in x (else by 1); nullopt when one
// steps by more (those rows stay as lowered).
std::optional<bool> Strided(const Window& w, const std::vector<PrimExpr>& taps) {
  const VarNode* x = w.spatial.back()->loop_var.get();
  bool strided = false;
  for (const PrimExpr& t : taps) {
    if (ContiguousInX(t, x, 1)) continue;
    if (!ContiguousInX(t, x, 2)) return std::nullopt;
    strided = true;
  }
  return strided;
}

Stmt RunVector(const Window& w, const PrimExpr& lo, int64_t k, const std::vector<PrimExpr>& taps) {
  return PartLoop(w, lo, I64(k), ForKind::kVectorized, taps);
}

// Columns [lo, hi) of a row, every one of whose taps is inside the plane
// (`taps` hold no test on x). A run-time row at stride 1 is one masked loop
// (kernel_emitter).
// Masked stride-2 loads cost more than LLVM's own loop over the nest as
// lowered (3 x 3 / 2 max pool, 64 x 56^2, 1 thread: 0.22 -> 0.31 ms),
// so stride 2 runs whole vectors of kStridedLanes columns, each a loop
// of constant extent that kernel_emitter emits as explicit vectors
// (wide loads and shuffles, no mask), and a scalar tail: mtcnn_pnet's
// 2 x 2 / 2 max pool over 10 x 238 x 318 took 3.2x its static schedule
// as lowered, about 1x this way (busy machine). Strides above 2 stay as
// lowered (PLCMOS's 1 x 4 / 4 pools over 257 frequencies: LLVM
// vectorizes the lowered loop with interleaved loads, 0.6 ms for 32 x
// 311 x 64 outputs; unrolled here it did not, 1.8 ms).
Stmt RunLoops(const Window& w, const PrimExpr& lo, const PrimExpr& hi, bool strided,
              const std::vector<PrimExpr>& taps) {
  if (!strided) return PartLoop(w, lo, hi - lo, ForKind::kVectorized, taps);
  // Runs of kStridedLanes columns or more: ceil(run / lanes) vectors in
  // one loop, the last one starting at hi - lanes (overlapping the one
  // before it: the same values stored twice). Shorter runs: a scalar loop.
  PrimExpr len = arith::Simplify(hi - lo);
  PrimExpr chunks = arith::Simplify(MakeBinary(TirKind::kFloorDiv, len + I64(kStridedLanes - 1), I64(kStridedLanes)));
  Var xo = MakeVar("xo");
  PrimExpr start = MakeBinary(TirKind::kMin, lo + PrimExpr(xo) * I64(kStridedLanes), hi - I64(kStridedLanes));
  Stmt vectors = std::make_shared<ForNode>(xo, I64(0), chunks, ForKind::kSerial,
                                           PartLoop(w, start, I64(kStridedLanes), ForKind::kVectorized, taps));
  Stmt rest = PartLoop(w, lo, len, ForKind::kSerial, taps);
  return std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, len, I64(kStridedLanes)), vectors, rest);
}

// `full` with the terms of `drop` gone from its tests and the other tests
// selects over clamped loads (ClampTests); false when a test's true side
// is not a load.
bool ClampAll(const std::vector<PrimExpr>& full, const TermSet& drop,
              const std::unordered_set<const VarNode*>& nest_vars, std::vector<PrimExpr>* out) {
  ClampTests c(drop, nest_vars);
  out->clear();
  for (const PrimExpr& v : full) out->push_back(c.MutateExpr(v));
  return c.ok;
}

Stmt RewriteSymbolic(const Window& w, const PoolKnobs& knobs) {
  // A tested copy (pad) gains nothing here (32 x 40^2 -> 42^2: 7.6 us as
  // lowered, 7.9 rewritten, 1 thread), and nudenet's many pads took the
  // compile from 553 to 887 MB peak.
  if (!w.init.defined()) return nullptr;
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  const ForNode* yl = w.spatial.size() >= 2 ? w.spatial[w.spatial.size() - 2] : nullptr;
  std::unordered_set<const VarNode*> nest_vars, others, others_y;
  for (const ForNode* f : w.spatial) {
    nest_vars.insert(f->loop_var.get());
    if (f != xl) others.insert(f->loop_var.get());
    if (f != yl) others_y.insert(f->loop_var.get());
  }
  std::vector<PrimExpr> full = TapValues(w);
  TestTerms tests;
  for (const PrimExpr& v : full) tests.VisitExpr(v);
  // The x run: every term on x bounds it; terms on x and another loop
  // leave no run (the whole row keeps its tests).
  // Terms that hold in the whole nest go everywhere (the rows' tests of a
  // pool over frames - 2 rows).
  TermSet always, x_terms, y_terms;
  for (const PrimExpr& t : tests.terms)
    if (AlwaysHolds(t, w.spatial)) always.insert(t.get());
  Run run, y_run;
  bool has_run = xl->for_kind != ForKind::kParallel && knobs.vectorize;
  for (const PrimExpr& t : tests.terms) {
    if (!Uses(t, {x}) || !has_run || always.count(t.get())) continue;
    if (Uses(t, others) || !AddBound(t, x, others, &run)) has_run = false;
    x_terms.insert(t.get());
  }
  x_terms.insert(always.begin(), always.end());
  // The y run, likewise: the rows where every tap's row is inside the
  // plane. There the row tests go too, and the run's columns load with no
  // test at all, as the static schedule's interior rows do. Kept as
  // selects (the rows outside it) they cost a compare and a blend per tap
  // and column: ResNet's 3 x 3 / 2 pad-1 max pool over 64 x 112^2 took
  // 2.6x its static schedule, 1 thread.
  bool has_y_run = yl != nullptr && knobs.vectorize;
  for (const PrimExpr& t : tests.terms) {
    if (!has_y_run || yl == nullptr || !Uses(t, {yl->loop_var.get()}) || always.count(t.get())) continue;
    if (!AddBound(t, yl->loop_var.get(), others_y, &y_run)) has_y_run = false;
    y_terms.insert(t.get());
  }
  has_y_run = has_y_run && !y_terms.empty();
  Stmt row = SymbolicRow(w, full, has_run ? &run : nullptr, always, x_terms, nest_vars);
  if (!row) return nullptr;
  Stmt general;
  if (has_y_run) {
    TermSet border_drop = always, interior_drop = x_terms;
    border_drop.insert(y_terms.begin(), y_terms.end());
    interior_drop.insert(y_terms.begin(), y_terms.end());
    if (Stmt inner = SymbolicRow(w, full, has_run ? &run : nullptr, border_drop, interior_drop, nest_vars)) {
      auto [y_lo, y_hi] = RunRange(y_run, yl->extent);
      if (yl->for_kind == ForKind::kSerial) {
        // Three row loops (rows before the run, the run, rows after it):
        // one loop's addresses live at a time, where a branch per row kept
        // both kinds of row's in registers (and spilled them).
        const VarNode* yv = yl->loop_var.get();
        Stmt rows = Seq({LoopFrom(yl->loop_var, I64(0), y_lo, ForKind::kSerial, row, yv),
                         LoopFrom(yl->loop_var, y_lo, y_hi - y_lo, ForKind::kSerial, inner, yv),
                         LoopFrom(yl->loop_var, y_hi, yl->extent - y_hi, ForKind::kSerial, row, yv)});
        general = WrapOuter(w, true, rows);
      } else {
        PrimExpr y(yl->loop_var);
        PrimExpr in = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, y, y_lo), MakeBinary(TirKind::kLT, y, y_hi));
        row = std::make_shared<IfThenElseNode>(in, inner, row);
      }
    }
  }
  // The loops outside the row, as they were (a vectorized one serial).
  if (!general) general = WrapOuter(w, false, row);
  // Planes without a border at run time, or whose tap rows are each
  // inside the plane for every output row or for none, take nests with no
  // test (pool_schedule_versions.cc).
  bool y_ok = yl == nullptr || y_terms.empty() || has_y_run;
  if (!has_run || !y_ok) return general;
  return PlaneVersions(w, full, run, has_y_run ? &y_run : nullptr, x_terms, y_terms, nest_vars, others_y, general);
}

}  // namespace pool
}  // namespace tir
}  // namespace kiln
