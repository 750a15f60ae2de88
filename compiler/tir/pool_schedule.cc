#include "compiler/tir/pool_schedule.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/arith/int_bounds.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"
#include "compiler/tir/window_deinterleave.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers


// The extent recorded for a spatial loop whose extent is not a constant
// (a model compiled for every image size); such nests take RewriteSymbolic.
constexpr int64_t kSymbolicExtent = -1;

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

PoolKnobs ResolveKnobs(const ScheduleKnobs& k) {
  PoolKnobs p;
  if (int64_t v = k.Get("pool.taps"); v > 0) p.max_taps = v;
  if (int64_t v = k.Get("pool.borders"); v > 0) p.max_static_border = v == 1 ? 0 : 8;
  if (int64_t v = k.Get("pool.deinterleave"); v > 0) p.max_deinterleave = v == 1 ? 0 : 64;
  if (k.Get("pool.vector") == 1) p.vectorize = false;
  return p;
}

bool SameIndex(const PrimExpr& a, const PrimExpr& b) {
  if (a.get() == b.get()) return true;
  const int64_t *ca = ConstInt(a), *cb = ConstInt(b);
  return ca != nullptr && cb != nullptr && *ca == *cb;
}

bool IsLoadAt(const PrimExpr& e, const Buffer& b, const std::vector<PrimExpr>& idx) {
  const auto* l = e.as<BufferLoadNode>();
  if (l == nullptr || l->buffer != b || l->indices.size() != idx.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!SameIndex(l->indices[d], idx[d])) return false;
  return true;
}

bool MatchWindow(const Stmt& s, int64_t max_taps, Window* w) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(s, &body);
  if (loops.size() < 2) return false;
  std::vector<int64_t> ext;
  for (const ForNode* f : loops) {
    const int64_t* e = ConstInt(f->extent);
    if (!IsZero(f->min) || (e != nullptr && *e <= 0)) return false;
    ext.push_back(e != nullptr ? *e : kSymbolicExtent);
  }
  const auto* seq = As<SeqStmtNode>(body);
  if (seq == nullptr || seq->seq.size() != 2) return false;
  const auto* guard = As<IfThenElseNode>(seq->seq[0]);
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  if (guard == nullptr || guard->else_case || update == nullptr) return false;
  const auto* init = As<BufferStoreNode>(guard->then_case);
  if (init == nullptr || init->buffer != update->buffer || init->value.as<FloatImmNode>() == nullptr) return false;
  if (update->buffer->dtype != DType::Float32() || !update->buffer->strides.empty()) return false;
  // Spatial loops: a prefix of the nest, the store's trailing indices in order.
  const auto& idx = update->indices;
  size_t m = 0;
  for (size_t k = 1; k <= loops.size() - 1 && k <= idx.size(); ++k) {
    bool ok = true;
    for (size_t d = 0; d < k && ok; ++d) ok = IsVar(idx[idx.size() - k + d], loops[d]->loop_var.get());
    if (ok) m = k;
  }
  if (m == 0) return false;
  std::unordered_set<const VarNode*> nest_vars;
  for (const ForNode* f : loops) nest_vars.insert(f->loop_var.get());
  for (size_t d = 0; d + m < idx.size(); ++d)
    if (Uses(idx[d], nest_vars)) return false;
  if (init->indices.size() != idx.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d)
    if (!SameIndex(init->indices[d], idx[d])) return false;
  // The guard: every tap loop of extent > 1 compared to 0, nothing else.
  if (!IsInitGuard(guard->cond, loops, m)) return false;
  int64_t taps = 1;
  for (size_t d = m; d < loops.size(); ++d) {
    if (ext[d] == kSymbolicExtent) return false;  // static taps only
    taps *= ext[d];
  }
  w->large = taps > max_taps;
  // A global window (one output column: nothing for the interior's x loop
  // to vectorize) of 16 taps or more is a plain row reduction, which the
  // row-reduction schedule vectorizes over the taps; unrolled here it was
  // one scalar chain per output (MobileNetV2's 7 x 7 mean of 1280 channels:
  // 49 dependent adds each, 47 us where ONNX Runtime took 14).
  if (ext[m - 1] == 1 && taps >= 16) return false;
  // OP(S[idx], f), f free of S.
  if (!IsBinary(update->value->kind())) return false;
  const auto* bin = static_cast<const BinaryNode*>(update->value.get());
  TirKind op = bin->kind();
  if (op != TirKind::kMax && op != TirKind::kMin && op != TirKind::kAdd) return false;
  PrimExpr f;
  if (IsLoadAt(bin->a, update->buffer, idx)) {
    f = bin->b;
  } else if (IsLoadAt(bin->b, update->buffer, idx)) {
    f = bin->a;
  } else {
    return false;
  }
  BufferRefs refs;
  refs.VisitExpr(f);
  if (refs.loads.count(update->buffer->data.get())) return false;
  w->spatial.assign(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(m));
  w->taps.assign(loops.begin() + static_cast<std::ptrdiff_t>(m), loops.end());
  w->spatial_ext.assign(ext.begin(), ext.begin() + static_cast<std::ptrdiff_t>(m));
  w->tap_ext.assign(ext.begin() + static_cast<std::ptrdiff_t>(m), ext.end());
  w->out = update->buffer;
  w->idx = idx;
  w->op = op;
  w->init = init->value;
  w->f = f;
  return true;
}

// Whether `e` holds a bounds test (if_then_else or select) whose condition
// uses one of `vars`.
bool HasTestOn(const PrimExpr& e, const std::unordered_set<const VarNode*>& vars) {
  struct Finder : StmtExprVisitor {
    const std::unordered_set<const VarNode*>* vars;
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (const auto* c = x.as<CallNode>()) {
        if (c->op == "if_then_else" && c->args.size() == 3 && Uses(c->args[0], *vars)) found = true;
      } else if (const auto* sel = x.as<SelectNode>()) {
        if (Uses(sel->cond, *vars)) found = true;
      }
      if (!found) StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.vars = &vars;
  f.VisitExpr(e);
  return f.found;
}

// A bounds-tested copy (pad, and anything lowering writes the same way): a
// perfect nest whose body is S[.., s..] = f with a test on one of its two
// innermost loops in f, f not reading S; a window of no taps. Other
// elementwise nests are left to the default schedule.
bool MatchTestedCopy(const Stmt& s, Window* w) {
  Stmt body;
  std::vector<const ForNode*> loops = PeelNest(s, &body);
  std::vector<int64_t> ext;
  for (const ForNode* f : loops) {
    const int64_t* e = ConstInt(f->extent);
    if (!IsZero(f->min) || (e != nullptr && *e <= 0)) return false;
    ext.push_back(e != nullptr ? *e : kSymbolicExtent);
  }
  const auto* st = As<BufferStoreNode>(body);
  if (loops.empty() || st == nullptr || st->buffer->dtype != DType::Float32() || !st->buffer->strides.empty()) {
    return false;
  }
  const auto& idx = st->indices;
  if (idx.size() < loops.size()) return false;
  for (size_t d = 0; d < loops.size(); ++d)
    if (!IsVar(idx[idx.size() - loops.size() + d], loops[d]->loop_var.get())) return false;
  std::unordered_set<const VarNode*> nest_vars, inner;
  for (const ForNode* f : loops) nest_vars.insert(f->loop_var.get());
  for (size_t d = 0; d + loops.size() < idx.size(); ++d)
    if (Uses(idx[d], nest_vars)) return false;
  for (size_t d = loops.size() >= 2 ? loops.size() - 2 : 0; d < loops.size(); ++d) inner.insert(loops[d]->loop_var.get());
  if (!HasTestOn(st->value, inner)) return false;
  BufferRefs refs;
  refs.VisitExpr(st->value);
  if (refs.loads.count(st->buffer->data.get())) return false;
  w->spatial = loops;
  w->spatial_ext = ext;
  w->taps.clear();
  w->tap_ext.clear();
  w->out = st->buffer;
  w->idx = idx;
  w->op = TirKind::kAdd;
  w->init = PrimExpr();  // no reduction: the value is f itself
  w->f = st->value;
  return true;
}

// f at every tap, in the nest's iteration order (last tap loop fastest).
std::vector<PrimExpr> TapValues(const Window& w) {
  std::vector<PrimExpr> out;
  int64_t count = 1;
  for (int64_t e : w.tap_ext) count *= e;
  for (int64_t t = 0; t < count; ++t) {
    VarMap map;
    int64_t rest = t;
    for (size_t d = w.taps.size(); d-- > 0;) {
      map[w.taps[d]->loop_var.get()] = I64(rest % w.tap_ext[d]);
      rest /= w.tap_ext[d];
    }
    out.push_back(arith::Simplify(Substitute(w.f, map)));
  }
  return out;
}

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

// Every load of `e` that uses `x` uses it only in its last index, with a
// stride of 1 or 2 (pooling's strides: wide loads and shuffles; larger
// strides would become gathers).
bool ContiguousInX(const PrimExpr& e, const VarNode* x, int64_t max_step = 2) {
  BufferRefs refs;
  refs.VisitExpr(e);
  for (const BufferLoadNode* l : refs.load_nodes) {
    for (size_t d = 0; d + 1 < l->indices.size(); ++d)
      if (Uses(l->indices[d], {x})) return false;
    if (l->indices.empty() || !Uses(l->indices.back(), {x})) continue;
    PrimExpr at0 = Substitute(l->indices.back(), VarMap{{x, I64(0)}});
    PrimExpr at1 = Substitute(l->indices.back(), VarMap{{x, I64(1)}});
    std::optional<int64_t> step = arith::AsConstInt(arith::Simplify(MakeBinary(TirKind::kSub, at1, at0)));
    if (!step || *step < 1 || *step > max_step) return false;
    // Linear in x: the same step from 1 to 2.
    PrimExpr at2 = Substitute(l->indices.back(), VarMap{{x, I64(2)}});
    std::optional<int64_t> step2 = arith::AsConstInt(arith::Simplify(MakeBinary(TirKind::kSub, at2, at1)));
    if (!step2 || *step2 != *step) return false;
  }
  return true;
}

// [lo, hi): the values of loop `v` (extent `ext`) at which every test term
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

// OP over the init and the tap values. A sum keeps the nest's order (the
// same rounding as the loop); max and min, whose result does not depend on
// the order, combine as a balanced tree: a chain of 9 NaN-propagating maxima
// (compare, compare-unordered, mask or, blend each) was latency-bound.
PrimExpr Combine(const Window& w, const std::vector<PrimExpr>& values) {
  if (!w.init.defined()) return values[0];  // a tested copy: one value, no reduction
  if (w.op == TirKind::kAdd) {
    PrimExpr acc = w.init;
    for (const PrimExpr& v : values) acc = MakeBinary(w.op, acc, v);
    return acc;
  }
  std::vector<PrimExpr> level = values;
  level.push_back(w.init);
  // Float max / min: T.max gives NaN when either operand is NaN, which costs
  // two compares and two blends a step. The tree instead takes the plain
  // a > b ? a : b (one vmaxps), and one test at the end, whether any tap is
  // NaN (LLVM pairs the x != x tests into one unordered compare per two
  // taps), gives NaN: the same values, NaN included (a zero's sign may
  // differ). SqueezeNet's 3x3/2 max pool on 128 x 55^2: the row loop had 48
  // compares and 24 blends.
  bool fp = values[0]->dtype.code == kDLFloat;
  auto step = [&](const PrimExpr& a, const PrimExpr& b) -> PrimExpr {
    if (!fp) return MakeBinary(w.op, a, b);
    PrimExpr pick_a = MakeBinary(w.op == TirKind::kMax ? TirKind::kGT : TirKind::kLT, a, b);
    return PrimExpr(std::make_shared<const SelectNode>(std::move(pick_a), a, b));
  };
  while (level.size() > 1) {
    std::vector<PrimExpr> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(step(level[i], level[i + 1]));
    if (level.size() % 2 == 1) next.push_back(level.back());
    level.swap(next);
  }
  if (!fp) return level[0];
  PrimExpr any_nan;
  for (const PrimExpr& v : values) {
    PrimExpr nan = MakeBinary(TirKind::kNE, v, v);
    any_nan = any_nan.defined() ? MakeBinary(TirKind::kOr, any_nan, nan) : nan;
  }
  DType t = values[0]->dtype;
  return PrimExpr(std::make_shared<const SelectNode>(any_nan, FloatImm(t, std::numeric_limits<double>::quiet_NaN()),
                                                     level[0]));
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

// The nest's loops outside the row (and column) loops around `nest`.
Stmt WrapOuter(const Window& w, bool has_y, Stmt nest) {
  size_t outer = w.spatial.size() - (has_y ? 2 : 1);
  for (size_t d = outer; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
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

Stmt Rewrite(const Window& w, const PoolKnobs& knobs) {
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

// ------------------------------------------------------- symbolic extents
//
// With symbolic H and W (a model compiled for every image size) the
// interior is not a set of constants: each bounds test on x is linear in x
// (s * x + r >= 0, r symbolic), so the columns where every tap passes it
// are one run [x_lo, x_hi) of expressions computed at run time. There the
// x tests go and the row is one vector loop (masked tail: kernel_emitter).
// The y tests stay, but as selects over loads whose row index is clamped
// into the plane: the load is always in bounds, the select's condition is
// the same for the whole row, so no row needs a branch or a scalar loop
// (the static schedule's border rows). Border columns keep every test, as
// selects over clamped loads too, one store each. Before: nudenet's SPPF
// 5 x 5 max pools ran one tested scalar tap at a time.

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

// The bounds a set of tests puts on loop x: x >= each of `lower`, x < each
// of `upper`.
struct Run {
  std::vector<PrimExpr> lower, upper;
};

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
  if (*s > 0) {
    // s x + g0 >= 0  <=>  x >= ceil(-g0 / s)
    run->lower.push_back(arith::Simplify(MakeBinary(TirKind::kFloorDiv, I64(*s - 1) - g0, I64(*s))));
  } else {
    // g0 - a x >= 0  <=>  x <= floor(g0 / a)  <=>  x < floor(g0 / a) + 1
    run->upper.push_back(arith::Simplify(MakeBinary(TirKind::kFloorDiv, g0, I64(-*s)) + I64(1)));
  }
  return true;
}

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

Stmt LoopFrom(const Var& v, const PrimExpr& from, const PrimExpr& extent, ForKind kind, const Stmt& body,
              const VarNode* old) {
  Var nv = MakeVar(v->name, v->dtype);
  PrimExpr at = IsZero(from) ? PrimExpr(nv) : PrimExpr(nv) + from;
  return std::make_shared<ForNode>(nv, I64(0), arith::Simplify(extent), kind, Substitute(body, VarMap{{old, at}}));
}

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

// The nest with symbolic spatial extents; null when a test is not of the
// forms above (the nest is left as lowered).
// Columns of a stride-2 run-time interior per explicit vector.
constexpr int64_t kStridedLanes = 16;

Stmt RewriteSymbolic(const Window& w, const PoolKnobs& knobs) {
  // A tested copy (pad) gains nothing here (32 x 40^2 -> 42^2: 7.6 us as
  // lowered, 7.9 rewritten, 1 thread), and nudenet's many pads took the
  // compile from 553 to 887 MB peak.
  if (!w.init.defined()) return nullptr;
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  std::unordered_set<const VarNode*> nest_vars, others;
  for (const ForNode* f : w.spatial) {
    nest_vars.insert(f->loop_var.get());
    if (f != xl) others.insert(f->loop_var.get());
  }
  std::vector<PrimExpr> full = TapValues(w);
  TestTerms tests;
  for (const PrimExpr& v : full) tests.VisitExpr(v);
  // The x run: every term on x bounds it; terms on x and another loop
  // leave no run (the whole row keeps its tests).
  // Terms that hold in the whole nest go everywhere (the rows' tests of a
  // pool over frames - 2 rows).
  std::unordered_set<const PrimExprNode*> always, x_terms;
  for (const PrimExpr& t : tests.terms)
    if (AlwaysHolds(t, w.spatial)) always.insert(t.get());
  Run run;
  bool has_run = xl->for_kind != ForKind::kParallel && knobs.vectorize;
  for (const PrimExpr& t : tests.terms) {
    if (!Uses(t, {x}) || !has_run || always.count(t.get())) continue;
    if (Uses(t, others) || !AddBound(t, x, others, &run)) has_run = false;
    x_terms.insert(t.get());
  }
  x_terms.insert(always.begin(), always.end());
  ClampTests border(always, nest_vars);
  std::vector<PrimExpr> border_taps;
  for (const PrimExpr& v : full) border_taps.push_back(border.MutateExpr(v));
  if (!border.ok) return nullptr;
  const PrimExpr& ext_x = xl->extent;
  ForKind x_kind = xl->for_kind == ForKind::kParallel ? ForKind::kParallel : ForKind::kSerial;
  Stmt row;
  if (!has_run) {
    row = PartLoop(w, I64(0), ext_x, x_kind, border_taps);
  } else {
    ClampTests interior(x_terms, nest_vars);
    std::vector<PrimExpr> interior_taps;
    for (const PrimExpr& v : full) interior_taps.push_back(interior.MutateExpr(v));
    if (!interior.ok) return nullptr;
    // x_lo = min(max(0, lower..), W), x_hi = max(min(W, upper..), x_lo).
    PrimExpr lo = I64(0), hi = ext_x;
    for (const PrimExpr& b : run.lower) lo = MakeBinary(TirKind::kMax, lo, b);
    for (const PrimExpr& b : run.upper) hi = MakeBinary(TirKind::kMin, hi, b);
    lo = arith::Simplify(MakeBinary(TirKind::kMin, lo, ext_x));
    hi = arith::Simplify(MakeBinary(TirKind::kMax, hi, lo));
    // A run-time row at stride 1 is one masked loop (kernel_emitter).
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
    bool strided = false;
    for (const PrimExpr& t : interior_taps) {
      if (ContiguousInX(t, x, 1)) continue;
      if (!ContiguousInX(t, x, 2)) return nullptr;
      strided = true;
    }
    std::vector<Stmt> parts;
    if (!IsZero(lo)) parts.push_back(PartLoop(w, I64(0), lo, ForKind::kSerial, border_taps));
    if (strided) {
      PrimExpr chunks = arith::Simplify(MakeBinary(TirKind::kFloorDiv, hi - lo, I64(kStridedLanes)));
      Var xo = MakeVar("xo");
      Stmt body = PartLoop(w, lo + PrimExpr(xo) * I64(kStridedLanes), I64(kStridedLanes), ForKind::kVectorized,
                           interior_taps);
      parts.push_back(std::make_shared<ForNode>(xo, I64(0), chunks, ForKind::kSerial, body));
      PrimExpr done = arith::Simplify(lo + chunks * I64(kStridedLanes));
      parts.push_back(PartLoop(w, done, hi - done, ForKind::kSerial, interior_taps));
    } else {
      parts.push_back(PartLoop(w, lo, hi - lo, ForKind::kVectorized, interior_taps));
    }
    parts.push_back(PartLoop(w, hi, ext_x - hi, ForKind::kSerial, border_taps));
    row = Seq(parts);
  }
  // The loops outside the row, as they were (a vectorized one serial).
  Stmt nest = row;
  for (size_t d = w.spatial.size() - 1; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
}

// Whether OP(acc, pad) == acc for every acc the reduction can hold: max
// with -inf, min with +inf, a sum from +0 with a zero (from +0 no sum is
// ever -0, the one value that adding +0 changes).
bool PadIsIdentity(const Window& w, const PrimExpr& pad) {
  const auto* p = pad.as<FloatImmNode>();
  if (p == nullptr) return false;
  switch (w.op) {
    case TirKind::kMax: return std::isinf(p->value) && p->value < 0;
    case TirKind::kMin: return std::isinf(p->value) && p->value > 0;
    case TirKind::kAdd: {
      const auto* i = w.init.as<FloatImmNode>();
      return i != nullptr && i->value == 0 && !std::signbit(i->value) && p->value == 0;
    }
    default: return false;
  }
}

// Windows of more taps than are unrolled (a 13 x 13 SPPF max pool) as tap
// loops around vector rows: each row is set to the init, then for each tap
// OP-ed with that tap's value at the columns where its test passes, a run
// [lo(tap), hi(tap)) found as above; the tap's test on y (and anything else
// not on x) is one branch for the whole row. Taps outside the plane are
// skipped, which is exact when their padding value is OP's identity
// (PadIsIdentity); other nests are left alone. Each output takes its taps
// in the nest's order: the same rounding as the loop.
Stmt RewriteLargeWindow(const Window& w, const PoolKnobs& knobs) {
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  if (xl->for_kind == ForKind::kParallel || !w.init.defined()) return nullptr;
  std::unordered_set<const VarNode*> others;
  for (const ForNode* f : w.spatial)
    if (f != xl) others.insert(f->loop_var.get());
  PrimExpr value = w.f, row_cond;
  Run run;
  const auto* c = w.f.as<CallNode>();
  if (c != nullptr && c->op == "if_then_else" && c->args.size() == 3) {
    if (!PadIsIdentity(w, c->args[2])) return nullptr;
    value = c->args[1];
    std::vector<PrimExpr> terms;
    Conjuncts(c->args[0], &terms);
    for (const PrimExpr& t : terms) {
      if (!Uses(t, {x})) {
        row_cond = row_cond.defined() ? MakeBinary(TirKind::kAnd, row_cond, t) : t;
      } else if (Uses(t, others) || !AddBound(t, x, others, &run)) {
        return nullptr;
      }
    }
  }
  TestTerms rest;
  rest.VisitExpr(value);
  if (!rest.terms.empty()) return nullptr;  // a test left inside: not this form
  const PrimExpr& ext_x = xl->extent;
  PrimExpr lo = I64(0), hi = ext_x;
  for (const PrimExpr& b : run.lower) lo = MakeBinary(TirKind::kMax, lo, b);
  for (const PrimExpr& b : run.upper) hi = MakeBinary(TirKind::kMin, hi, b);
  lo = arith::Simplify(MakeBinary(TirKind::kMin, lo, ext_x));
  hi = arith::Simplify(MakeBinary(TirKind::kMax, hi, lo));
  PrimExpr acc(std::make_shared<BufferLoadNode>(w.out, w.idx));
  // Rows of a run-time width step by 1 only (RewriteSymbolic says why);
  // others are left as lowered.
  if (!ContiguousInX(value, x, ConstInt(ext_x) != nullptr ? 2 : 1)) return nullptr;
  ForKind vec = knobs.vectorize ? ForKind::kVectorized : ForKind::kSerial;
  Stmt tap = LoopFrom(xl->loop_var, lo, hi - lo, vec, Store(w.out, MakeBinary(w.op, acc, value), w.idx), x);
  if (row_cond.defined()) tap = std::make_shared<IfThenElseNode>(row_cond, tap, nullptr);
  for (size_t d = w.taps.size(); d-- > 0;) {
    const ForNode* t = w.taps[d];
    tap = std::make_shared<ForNode>(t->loop_var, t->min, t->extent, ForKind::kSerial, tap);
  }
  ForKind init_kind = knobs.vectorize ? ForKind::kVectorized : ForKind::kSerial;
  Stmt nest = Seq({LoopFrom(xl->loop_var, I64(0), ext_x, init_kind, Store(w.out, w.init, w.idx), x), tap});
  for (size_t d = w.spatial.size() - 1; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
}

// Max and min windows of two tap loops (ry, rx) over run-time planes whose
// tap value is X[.., iy, ix] with ix = x + rx + b (b free of the nest's
// loops and taps) and iy, and every other index, free of x and rx: SPPF's
// 5 x 5 / 1 max pools. OP is associative and commutative (the same value
// in any order, NaN included), so each output row is two passes over rows
// of vectors instead of kh * kw: V[u] = OP over ry of X[.., iy, u] for
// every column u of X (the taps' tests not on x are each one branch for
// the whole row; V starts at OP's identity), then out[y, x] = OP over rx of
// V[x + rx + b] at the columns [lo(rx), hi(rx)) where the tests on x pass,
// as RewriteLargeWindow finds them. V is one row of X's width, allocated
// once around the y loop (inside it when y is the parallel loop).
// 128 channels of 10 x 10 (nudenet at 320 x 320): 25 masked row vectors
// a row became 5 + 5. Null when the nest is not of this form.
Stmt MakeForSep(const Var& v, const PrimExpr& extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), extent, kind, std::move(body));
}

Stmt SeparableColumns(const Window& w, const Buffer& v, const Stmt& v_init, const Stmt& v_row, const Run& run,
                      const PrimExpr& ix, const ForNode* rxl, ForKind vec);
Stmt WrapSeparable(const Window& w, const Buffer& v, const ForNode* yl, Stmt row);

// Pass 1 as one vector loop: V[u + pad] = OP over the kh tap rows of
// select(row test at ry, X[.., clamped row, u], identity), the row index
// clamped into X so that every load is in bounds whatever the test says
// (where the test holds the row is inside and the clamp changes nothing).
// One loop of kh loads a row instead of kh read-modify-write passes over
// V, each behind its own branch. The loop is skipped when X has no rows
// (nothing to clamp into; V keeps the identity, as the tests would).
Stmt FusedTapRows(const Window& w, const BufferLoadNode* ld, const VarNode* ry, int64_t kh, const PrimExpr& row_cond,
                  const Buffer& v, const PrimExpr& vj, const Var& u, const PrimExpr& ident) {
  PrimExpr nonempty;
  std::vector<PrimExpr> rows;
  for (int64_t k = 0; k < kh; ++k) {
    VarMap at{{ry, I64(k)}};
    std::vector<PrimExpr> idx;
    for (size_t d = 0; d + 1 < ld->indices.size(); ++d) {
      PrimExpr e = Substitute(ld->indices[d], at);
      if (Uses(ld->indices[d], {ry})) {
        const PrimExpr& n = ld->buffer->shape[d];
        e = MakeBinary(TirKind::kMax, MakeBinary(TirKind::kMin, e, n - I64(1)), I64(0));
        if (k == 0) {
          PrimExpr has = MakeBinary(TirKind::kGT, n, I64(0));
          nonempty = nonempty.defined() ? MakeBinary(TirKind::kAnd, nonempty, has) : has;
        }
      }
      idx.push_back(arith::Simplify(e));
    }
    idx.push_back(PrimExpr(u));
    PrimExpr val = Load(ld->buffer, idx);
    if (row_cond.defined())
      val = PrimExpr(std::make_shared<const SelectNode>(Substitute(row_cond, at), val, ident));
    rows.push_back(val);
  }
  Stmt loop = MakeForSep(u, ld->buffer->shape.back(), ForKind::kVectorized, Store(v, Combine(w, rows), {vj}));
  if (nonempty.defined()) loop = std::make_shared<IfThenElseNode>(nonempty, loop, nullptr);
  return loop;
}

Stmt RewriteSeparableWindow(const Window& w, const PoolKnobs& knobs) {
  if (w.op != TirKind::kMax && w.op != TirKind::kMin) return nullptr;
  if (w.taps.size() != 2 || w.spatial.size() < 2 || !w.init.defined() || !knobs.vectorize) return nullptr;
  const ForNode* xl = w.spatial.back();
  const ForNode* yl = w.spatial[w.spatial.size() - 2];
  if (xl->for_kind == ForKind::kParallel) return nullptr;
  const VarNode* x = xl->loop_var.get();
  PrimExpr value = w.f;
  std::vector<PrimExpr> terms;
  const auto* c = w.f.as<CallNode>();
  if (c != nullptr && c->op == "if_then_else" && c->args.size() == 3) {
    if (!PadIsIdentity(w, c->args[2])) return nullptr;
    value = c->args[1];
    Conjuncts(c->args[0], &terms);
  }
  const auto* ld = value.as<BufferLoadNode>();
  if (ld == nullptr || ld->indices.empty() || ld->buffer->shape.empty()) return nullptr;
  // rx: the tap loop in X's column index; ry the other.
  const PrimExpr& ix = ld->indices.back();
  const VarNode* t0 = w.taps[0]->loop_var.get();
  const VarNode* t1 = w.taps[1]->loop_var.get();
  const bool rx_first = Uses(ix, {t0});
  const VarNode* rx = rx_first ? t0 : t1;
  const VarNode* ry = rx_first ? t1 : t0;
  if (Uses(ix, {ry})) return nullptr;
  // ix == x + rx + b.
  PrimExpr b = arith::Simplify(Substitute(ix, VarMap{{x, I64(0)}, {rx, I64(0)}}));
  std::unordered_set<const VarNode*> loops;
  for (const ForNode* f : w.spatial) loops.insert(f->loop_var.get());
  loops.insert(rx);
  loops.insert(ry);
  if (Uses(b, loops)) return nullptr;
  if (!arith::CanProveEqual(ix, PrimExpr(xl->loop_var) + PrimExpr(w.taps[rx_first ? 0 : 1]->loop_var) + b))
    return nullptr;
  for (size_t d = 0; d + 1 < ld->indices.size(); ++d)
    if (Uses(ld->indices[d], {x, rx})) return nullptr;
  // Tests on x bound the columns of each rx (free of ry and the other
  // loops); the others are row tests, free of rx.
  std::unordered_set<const VarNode*> others;
  for (const ForNode* f : w.spatial)
    if (f != xl) others.insert(f->loop_var.get());
  std::unordered_set<const VarNode*> others_ry = others;
  others_ry.insert(ry);
  PrimExpr row_cond;
  Run run;
  // Whether every test on x is X's column bound (ix >= 0, ix < X's width):
  // then a row V padded with OP's identity needs no test at all.
  const PrimExpr& win_ext = ld->buffer->shape.back();
  bool plane_tests = true;
  for (const PrimExpr& t : terms) {
    if (!Uses(t, {x})) {
      if (Uses(t, {rx})) return nullptr;
      row_cond = row_cond.defined() ? MakeBinary(TirKind::kAnd, row_cond, t) : t;
    } else if (!AddBound(t, x, others_ry, &run)) {
      return nullptr;
    } else {
      PrimExpr g = AsNonNegative(t);
      plane_tests = plane_tests && g.defined() &&
                    (arith::CanProveEqual(g, ix) || arith::CanProveEqual(g, win_ext - I64(1) - ix));
    }
  }
  TestTerms rest;
  rest.VisitExpr(value);
  if (!rest.terms.empty()) return nullptr;
  DType f32 = DType::Float32();
  const double inf = std::numeric_limits<double>::infinity();
  PrimExpr ident = FloatImm(f32, w.op == TirKind::kMax ? -inf : inf);
  // V: one row of X.
  auto vnode = std::make_shared<BufferNode>();
  vnode->name = ld->buffer->name + "_window_rows";
  vnode->data = MakeVar(vnode->name + "_data", HandleType());
  vnode->dtype = f32;
  const PrimExpr& win = ld->buffer->shape.back();
  const PrimExpr& ext_x = xl->extent;
  // Padded: V[j] is X's column j - pad, OP's identity outside X, j in
  // [0, max(W_out + kw - 1, W_in + pad)): every tap of every output column
  // reads inside it, so the output row is one loop over all its columns,
  // the kw taps unrolled into one tree and stored once (not an init and kw
  // read-modify-write passes over column runs: nudenet's SPPF at 10 x 10
  // ran 12 masked loops a row).
  const PrimExpr& rx_ext = (rx_first ? w.taps[0] : w.taps[1])->extent;
  std::optional<int64_t> b_const = arith::AsConstInt(b);
  const int64_t* kw = ConstInt(rx_ext);
  const bool padded = plane_tests && b_const && *b_const <= 0 && kw != nullptr && *kw <= 16;
  const int64_t pad = padded ? -*b_const : 0;
  PrimExpr v_len = padded ? arith::Simplify(MakeBinary(TirKind::kMax, ext_x + I64(*kw - 1), win + I64(pad))) : win;
  vnode->shape = {v_len};
  vnode->scope = "global";
  Buffer v = vnode;
  ForKind vec = ForKind::kVectorized;
  // Pass 1: V = OP over ry of X's rows.
  Var u = MakeVar("u");
  Stmt v_init = MakeForSep(u, v_len, vec, Store(v, ident, {PrimExpr(u)}));
  Var u2 = MakeVar("u");
  std::vector<PrimExpr> xidx2(ld->indices.begin(), ld->indices.end() - 1);
  xidx2.push_back(PrimExpr(u2));
  PrimExpr vj = pad == 0 ? PrimExpr(u2) : PrimExpr(u2) + I64(pad);
  Stmt v_row = MakeForSep(u2, win, vec, Store(v, MakeBinary(w.op, Load(v, {vj}), Load(ld->buffer, xidx2)), {vj}));
  if (row_cond.defined()) v_row = std::make_shared<IfThenElseNode>(row_cond, v_row, nullptr);
  const ForNode* ryl = rx_first ? w.taps[1] : w.taps[0];
  const ForNode* rxl = rx_first ? w.taps[0] : w.taps[1];
  v_row = std::make_shared<ForNode>(ryl->loop_var, ryl->min, ryl->extent, ForKind::kSerial, v_row);
  const int64_t* kh = ConstInt(ryl->extent);
  if (padded && kh != nullptr && *kh <= 16) v_row = FusedTapRows(w, ld, ry, *kh, row_cond, v, vj, u2, ident);
  Stmt row;
  if (padded) {
    // Pass 2: out[x] = OP over rx of V[x + rx], no test.
    std::vector<PrimExpr> vals;
    for (int64_t k = 0; k < *kw; ++k) vals.push_back(Load(v, {PrimExpr(xl->loop_var) + I64(k)}));
    Stmt out = LoopFrom(xl->loop_var, I64(0), ext_x, vec, Store(w.out, Combine(w, vals), w.idx), x);
    row = Seq({v_init, v_row, out});
  } else {
    row = SeparableColumns(w, v, v_init, v_row, run, ix, rxl, vec);
  }
  return WrapSeparable(w, v, yl, row);
}

// Pass 2 over column runs (V unpadded): the row = OP over rx of V at the
// columns where the tests on x pass.
Stmt SeparableColumns(const Window& w, const Buffer& v, const Stmt& v_init, const Stmt& v_row, const Run& run,
                      const PrimExpr& ix, const ForNode* rxl, ForKind vec) {
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  const PrimExpr& ext_x = xl->extent;
  PrimExpr lo = I64(0), hi = ext_x;
  for (const PrimExpr& bnd : run.lower) lo = MakeBinary(TirKind::kMax, lo, bnd);
  for (const PrimExpr& bnd : run.upper) hi = MakeBinary(TirKind::kMin, hi, bnd);
  lo = arith::Simplify(MakeBinary(TirKind::kMin, lo, ext_x));
  hi = arith::Simplify(MakeBinary(TirKind::kMax, hi, lo));
  PrimExpr acc(std::make_shared<BufferLoadNode>(w.out, w.idx));
  Stmt tap = LoopFrom(xl->loop_var, lo, hi - lo, vec, Store(w.out, MakeBinary(w.op, acc, Load(v, {ix})), w.idx), x);
  tap = std::make_shared<ForNode>(rxl->loop_var, rxl->min, rxl->extent, ForKind::kSerial, tap);
  Stmt init = LoopFrom(xl->loop_var, I64(0), ext_x, vec, Store(w.out, w.init, w.idx), x);
  return Seq({v_init, v_row, init, tap});
}

// The row pass around the loops outside it, V allocated once around y (in
// it when y is the parallel loop).
Stmt WrapSeparable(const Window& w, const Buffer& v, const ForNode* yl, Stmt row) {
  const bool y_parallel = yl->for_kind == ForKind::kParallel;
  if (y_parallel) row = std::make_shared<AllocateNode>(v, row);
  ForKind ykind = yl->for_kind == ForKind::kVectorized ? ForKind::kSerial : yl->for_kind;
  Stmt nest = std::make_shared<ForNode>(yl->loop_var, yl->min, yl->extent, ykind, row);
  if (!y_parallel) nest = std::make_shared<AllocateNode>(v, nest);
  for (size_t d = w.spatial.size() - 2; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
}

constexpr int64_t kMaxSymbolicTaps = 9;

int64_t TapCount(const Window& w) {
  int64_t n = 1;
  for (int64_t e : w.tap_ext) n *= e;
  return n;
}

class WindowRewriter : public StmtExprMutator {
 public:
  explicit WindowRewriter(const PoolKnobs& knobs) : knobs_(knobs) {}
  bool changed = false;
  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      Window w;
      if (MatchWindow(s, knobs_.max_taps, &w) || MatchTestedCopy(s, &w)) {
        // The row and column loops static: the static schedule (any outer
        // loop may be symbolic); else the run-time interior.
        size_t n = w.spatial.size();
        bool static_plane = w.spatial_ext[n - 1] != kSymbolicExtent && (n < 2 || w.spatial_ext[n - 2] != kSymbolicExtent);
        // Over run-time planes the unrolled tree's selects and clamps grew
        // nudenet's compile from 553 to 887 MB (three 5 x 5 pools); windows
        // of more than 9 taps take the tap loops there.
        bool large = w.large || (!static_plane && w.init.defined() && TapCount(w) > kMaxSymbolicTaps);
        Stmt out;
        if (large && !static_plane) out = RewriteSeparableWindow(w, knobs_);
        if (!out) out = large       ? RewriteLargeWindow(w, knobs_)
                   : static_plane ? Rewrite(w, knobs_)
                                  : RewriteSymbolic(w, knobs_);
        if (out) {
          changed = true;
          return out;
        }
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  PoolKnobs knobs_;
};

}  // namespace

PrimFunc ScheduleWindowReductions(const PrimFunc& func, const ScheduleKnobs& knobs) {
  WindowRewriter rewriter(ResolveKnobs(knobs));
  Stmt body = rewriter.MutateStmt(func->body);
  return rewriter.changed ? WithBody(func, body) : func;
}

}  // namespace tir
}  // namespace kiln
