// The window-reduction schedule's entry (pool_schedule.h): matching a nest,
// the helpers every path shares, and the choice of path; the paths are in
// pool_schedule_{static,symbolic,large}.cc (pool_schedule_internal.h).
#include "compiler/tir/pool_schedule.h"

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/pool_schedule_internal.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace pool {
namespace {

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

// Whether `cond` compares integers computed from one of `vars` (an index
// bound), not merely floats loaded there: a PReLU's select on its input's
// sign is no bounds test (a conv's write-back row with that epilogue, taken
// for a tested copy, lost its vector loop).
bool IndexTestOn(const PrimExpr& cond, const std::unordered_set<const VarNode*>& vars) {
  struct Finder : StmtExprVisitor {
    const std::unordered_set<const VarNode*>* vars;
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (found || !x.defined()) return;
      if (x.as<BufferLoadNode>() != nullptr) return;  // its indices are not the test
      if (IsBinary(x->kind())) {
        const auto* b = static_cast<const BinaryNode*>(x.get());
        switch (b->kind()) {
          case TirKind::kLT: case TirKind::kLE: case TirKind::kGT: case TirKind::kGE:
          case TirKind::kEQ: case TirKind::kNE:
            if (b->a.dtype().is_int() && (Uses(b->a, *vars) || Uses(b->b, *vars))) found = true;
            break;
          default:
            break;
        }
      }
      StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.vars = &vars;
  f.VisitExpr(cond);
  return f.found;
}

// Whether `e` holds a bounds test (if_then_else or select) whose condition
// compares an index computed from one of `vars`.
bool HasTestOn(const PrimExpr& e, const std::unordered_set<const VarNode*>& vars) {
  struct Finder : StmtExprVisitor {
    const std::unordered_set<const VarNode*>* vars;
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (const auto* c = x.as<CallNode>()) {
        if (c->op == "if_then_else" && c->args.size() == 3 && IndexTestOn(c->args[0], *vars)) found = true;
      } else if (const auto* sel = x.as<SelectNode>()) {
        if (IndexTestOn(sel->cond, *vars)) found = true;
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

}  // namespace

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

// Every load of `e` that uses `x` uses it only in its last index, with a
// stride of 1 or 2 (pooling's strides: wide loads and shuffles; larger
// strides would become gathers).
bool ContiguousInX(const PrimExpr& e, const VarNode* x, int64_t max_step) {
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

// OP over the init and the tap values (pool_schedule_internal.h).
PrimExpr Combine(const Window& w, const std::vector<PrimExpr>& values, bool reassociate) {
  if (!w.init.defined()) return values[0];  // a tested copy: one value, no reduction
  if (w.op == TirKind::kAdd && reassociate) {
    // Pairwise: a chain of log2(n) dependent adds instead of n, and an
    // error bound of log2(n) roundings per value instead of n. The init
    // last: a sum from +0 is never -0, as in the nest.
    std::vector<PrimExpr> level = values;
    while (level.size() > 1) {
      std::vector<PrimExpr> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(MakeBinary(w.op, level[i], level[i + 1]));
      if (level.size() % 2 == 1) next.push_back(level.back());
      level.swap(next);
    }
    return MakeBinary(w.op, level[0], w.init);
  }
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

}  // namespace pool

namespace {

using namespace pool;  // NOLINT: the schedule's own internals

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
        // A stride-1 max / min / sum of more than 3 x 3 taps is separable on
        // any plane: kh + kw row vectors an output row instead of kh * kw
        // (an SPP's 13 x 13 over 20 x 20 ran 169 masked rows of 20 a row,
        // 5 x 5 a tree of 25 unaligned loads a vector). A sum then rounds
        // in another order than the taps' (RewriteSeparableWindow); up to
        // 3 x 3 it keeps their order. RewriteSeparableWindow refuses
        // strides and dilations.
        if (large || TapCount(w) > kMaxSymbolicTaps) out = RewriteSeparableWindow(w, knobs_);
        if (!out) out = large       ? RewriteLargeWindow(w, knobs_)
                   : static_plane ? RewriteStatic(w, knobs_)
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

int64_t MaxUnrolledWindowTaps(const ScheduleKnobs& knobs) { return ResolveKnobs(knobs).max_taps; }

}  // namespace tir
}  // namespace kiln
