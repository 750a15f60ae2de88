// Plane-level versions of the symbolic schedule (pool_schedule_internal.h:
// PlaneVersions): test-free nests chosen at run time, before the outer
// loops, ahead of the general symbolic nest.
//
// The general nest (pool_schedule_symbolic.cc) has three row loops (rows
// before the row run, the run, rows after it) of three column parts each,
// whose ~20 run-time bounds and row addresses stay live across the channel
// loop; LLVM spills them (mtcnn_pnet's 2 x 2 / 2 pool: 197 stack
// references), and on small planes that set-up costs more than the taps
// (pnet at 12 x 12: 10 x 5 x 5 outputs, 0.22 us against 0.10 pinned). A
// plane whose outputs reach no padding at the run-time sizes (pnet at even
// sizes, ppocr_cls_v2's last pool at height 48) takes one row loop of
// test-free runs instead. And a tiny plane whose tap rows are each inside
// for every output row or for none (ppocr_cls_v2's 2 x 2 / 2 over
// 200 x 1 x 50, padded to 2 rows: the second tap row is outside for its
// one output row) takes the same over the inside tap rows only, where the
// general nest loads and blends the outside row: 3.8 -> 1.6 us (pinned
// 0.94), 1 thread. Such planes of one output row over input rows of exactly
// 2 * Wo columns (that pool at height 32) are one flat strided run over
// the whole tensor (FlatPlanesNest): 1.7 -> 0.8 us there (fastest calls,
// 1 thread; pinned 1.0-1.1).
#include <limits>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/pool_schedule_internal.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace pool {
namespace {

// WrapOuter with fresh loop variables: the nest's outer loops around a
// second copy of its rows (each loop binds its own variable).
Stmt WrapOuterFresh(const Window& w, bool has_y, Stmt nest) {
  size_t outer = w.spatial.size() - (has_y ? 2 : 1);
  for (size_t d = outer; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    Var nv = MakeVar(f->loop_var->name, f->loop_var->dtype);
    nest = std::make_shared<ForNode>(nv, f->min, f->extent, kind,
                                     Substitute(nest, VarMap{{f->loop_var.get(), PrimExpr(nv)}}));
  }
  return nest;
}

// Whether every bound of `run` admits all of [0, ext): lower bounds <= 0,
// upper bounds >= ext (run-time values: a condition, not a proof).
PrimExpr CoversAll(const Run& run, const PrimExpr& ext) {
  PrimExpr all;
  auto add = [&](PrimExpr c) { all = all.defined() ? MakeBinary(TirKind::kAnd, all, c) : c; };
  for (const PrimExpr& b : run.lower) add(MakeBinary(TirKind::kLE, b, I64(0)));
  for (const PrimExpr& b : run.upper) add(MakeBinary(TirKind::kGE, b, ext));
  return all;
}

// The nest for planes without a border (every tap of every output inside
// the plane: no padding reached at these extents), chosen at run time
// before the outer loops. One row loop of test-free runs: the general
// nest's three row loops of three column parts each keep ~20 run-time
// bounds and row addresses live across the channel loop, which LLVM
// spills (mtcnn_pnet's 2 x 2 / 2 pool over 10 x 10 x 10: 197 stack
// references, the 5-column rows' set-up costing more than their taps).
// Null when the tests are not all bounds of the x and y runs.
// `by_length`: short stride-2 rows take a nest per row length (below).
Stmt NoBorderNest(const Window& w, const std::vector<PrimExpr>& full, const TermSet& drop,
                  const std::unordered_set<const VarNode*>& nest_vars, bool by_length = false) {
  std::vector<PrimExpr> taps;
  if (!ClampAll(full, drop, nest_vars, &taps)) return nullptr;
  TestTerms left;
  for (const PrimExpr& t : taps) left.VisitExpr(t);
  if (!left.terms.empty()) return nullptr;
  std::optional<bool> strided = Strided(w, taps);
  if (!strided) return nullptr;
  const ForNode* xl = w.spatial.back();
  auto nest = [&](const Stmt& row) {
    if (w.spatial.size() < 2) return WrapOuterFresh(w, false, row);
    const ForNode* yl = w.spatial[w.spatial.size() - 2];
    ForKind y_kind = yl->for_kind == ForKind::kVectorized ? ForKind::kSerial : yl->for_kind;
    Stmt rows = LoopFrom(yl->loop_var, I64(0), yl->extent, y_kind, row, yl->loop_var.get());
    return WrapOuterFresh(w, true, rows);
  };
  Stmt out = nest(RunLoops(w, I64(0), xl->extent, *strided, taps));
  if (!by_length || !*strided || ConstInt(xl->extent) != nullptr) return out;
  // Stride-2 rows shorter than one 16-column vector: one nest per row
  // length, each row one vector of that length (as the static schedule's
  // 5-lane rows), chosen before the outer loops, where RunLoops ran a
  // scalar loop per row. mtcnn_pnet's pool at 12 x 12 (10 x 5 x 5 outputs),
  // 1 thread, minimum of 5000 profiled calls, loaded machine: 0.20 -> 0.14
  // us (pinned 0.11), the kernel's code 17.8 -> 50.8 KB; the same vectors
  // chosen row by row inside RunLoops (a jump and the row's addresses
  // reloaded from the stack every row) 0.18, in every nest 66.5 KB.
  for (int64_t k = kMaxRunVector; k >= 2; --k) {
    out = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, xl->extent, I64(k)), nest(RunVector(w, I64(0), k, taps)),
                                           out);
  }
  return out;
}

// Whether every test in `taps` (if_then_else or select, nested too) gives
// OP's identity when it fails (-inf for max, +inf for min, 0 for a sum):
// then a tap whose test fails contributes nothing and can be left out.
bool PadsAreIdentity(const Window& w, const std::vector<PrimExpr>& taps) {
  double identity = w.op == TirKind::kMax   ? -std::numeric_limits<double>::infinity()
                    : w.op == TirKind::kMin ? std::numeric_limits<double>::infinity()
                                            : 0.0;
  struct Check : StmtExprVisitor {
    double identity;
    bool ok = true;
    void Pad(const PrimExpr& e) {
      const auto* f = e.as<FloatImmNode>();
      if (f == nullptr || f->value != identity) ok = false;
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* c = e.as<CallNode>()) {
        if (c->op == "if_then_else" && c->args.size() == 3) Pad(c->args[2]);
      } else if (const auto* sel = e.as<SelectNode>()) {
        Pad(sel->false_value);
      }
      StmtExprVisitor::VisitExpr(e);
    }
  } check;
  check.identity = identity;
  for (const PrimExpr& t : taps) check.VisitExpr(t);
  return check.ok;
}

// Tap rows: the taps grouped by their tests on the row loop y (the same
// terms, structurally), in the taps' order; `terms` of each group.
struct TapRow {
  std::vector<PrimExpr> terms;
  std::vector<size_t> taps;
};

std::vector<TapRow> TapRows(const std::vector<PrimExpr>& full, const TermSet& y_terms) {
  std::vector<TapRow> rows;
  for (size_t i = 0; i < full.size(); ++i) {
    TestTerms tt;
    tt.VisitExpr(full[i]);
    std::vector<PrimExpr> mine;
    for (const PrimExpr& t : tt.terms) {
      if (!y_terms.count(t.get())) continue;
      bool seen = false;
      for (const PrimExpr& o : mine) seen = seen || arith::StructuralEqual(o, t);
      if (!seen) mine.push_back(t);
    }
    auto same = [&](const TapRow& r) {
      if (r.terms.size() != mine.size()) return false;
      for (const PrimExpr& t : mine) {
        bool found = false;
        for (const PrimExpr& o : r.terms) found = found || arith::StructuralEqual(o, t);
        if (!found) return false;
      }
      return true;
    };
    size_t g = 0;
    while (g < rows.size() && !same(rows[g])) ++g;
    if (g == rows.size()) rows.push_back(TapRow{mine, {}});
    rows[g].taps.push_back(i);
  }
  return rows;
}

// Whether test term `t` on y fails for every y in [0, ext) (its bound
// y >= L with L >= ext, or y < U with U <= 0); null when `t` is no bound.
PrimExpr FailsEverywhere(const PrimExpr& t, const VarNode* y, const std::unordered_set<const VarNode*>& others,
                         const PrimExpr& ext) {
  Run r;
  if (!AddBound(t, y, others, &r)) return PrimExpr();
  if (!r.lower.empty()) return MakeBinary(TirKind::kGE, r.lower[0], ext);
  return MakeBinary(TirKind::kLE, r.upper[0], I64(0));
}

// a and b (either may be null: the other).
PrimExpr Both(const PrimExpr& a, const PrimExpr& b) {
  return !a.defined() ? b : !b.defined() ? a : MakeBinary(TirKind::kAnd, a, b);
}

// Whether `c` simplifies to false: a padded window has a border at every
// size (the first output's taps reach before the plane), no nest for it.
bool IsFalse(const PrimExpr& c) {
  std::optional<int64_t> v = arith::AsConstInt(arith::Simplify(c));
  return v && *v == 0;
}

// Loads of `e`, in order.
struct LoadsOf : StmtExprVisitor {
  std::vector<const BufferLoadNode*> loads;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) loads.push_back(l);
    StmtExprVisitor::VisitExpr(e);
  }
};

// Outputs per block of the flat nest's parallel loop (64 vectors).
constexpr int64_t kFlatBlock = 1024;

// Planes of one output row that read one input row of exactly 2 * Wo
// columns, every tap inside (ppocr_cls_v2's last 2 x 2 / 2 pool over
// 200 x 1 x 50 at height 32, its second tap row outside): output k of the
// tensor seen flat reads input 2k and 2k + 1 seen flat, so the whole
// tensor is one strided run. The row nest (NoBorderNest) set up a row of
// 25 columns per plane (its indices, two 16-lane vectors, one of them
// overlapping, the loop's remainder logic): 1.7 us against the pinned
// build's 1.0 for 2 x 200 planes; flat, 0.8 us. `taps` are those of the inside tap rows;
// *cond gets the run-time test (one output row, input planes of 2 * Wo
// floats). Null when the nest is not of that form: the store at
// [lead.., y, x], every load of one buffer at [lead.., f(y), g(x)] with the
// store's leading indices, at stride 2 in x.
Stmt FlatPlanesNest(const Window& w, const std::vector<PrimExpr>& taps, const TermSet& drop,
                    const std::unordered_set<const VarNode*>& nest_vars, PrimExpr* cond) {
  const size_t rank = w.idx.size();
  if (w.spatial.size() < 2 || rank < 2) return nullptr;
  const ForNode* xl = w.spatial.back();
  const ForNode* yl = w.spatial[w.spatial.size() - 2];
  if (!IsVar(w.idx[rank - 1], xl->loop_var.get()) || !IsVar(w.idx[rank - 2], yl->loop_var.get())) return nullptr;
  std::vector<PrimExpr> clamped;
  if (!ClampAll(taps, drop, nest_vars, &clamped)) return nullptr;
  TestTerms left;
  for (const PrimExpr& t : clamped) left.VisitExpr(t);
  if (!left.terms.empty()) return nullptr;
  std::optional<bool> strided = Strided(w, clamped);
  if (!strided || !*strided) return nullptr;
  LoadsOf loads;
  for (const PrimExpr& t : clamped) loads.VisitExpr(t);
  if (loads.loads.empty()) return nullptr;
  const Buffer& in = loads.loads[0]->buffer;
  if (in->shape.size() != rank) return nullptr;
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (!arith::StructuralEqual(in->shape[i], w.out->shape[i])) return nullptr;
  }
  // Every spatial loop but x at 0: one output row (y = 0) of plane 0,
  // whose x then runs over the whole tensor (plane p's row at p * Wo in
  // the output, at p * 2 * Wo in the input).
  VarMap zero;
  for (const ForNode* f : w.spatial) {
    if (f != xl) zero[f->loop_var.get()] = I64(0);
  }
  for (const BufferLoadNode* l : loads.loads) {
    if (l->buffer->data.get() != in->data.get()) return nullptr;
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (!arith::StructuralEqual(l->indices[i], w.idx[i])) return nullptr;
    }
    for (size_t i = 0; i + 1 < rank; ++i) {
      if (!IsZero(arith::Simplify(Substitute(l->indices[i], zero)))) return nullptr;
    }
  }
  // Output k at [0, .., 0, k], its taps at [0, .., 0, 2k + t]: past the
  // last dimension's extent, but the row-major offset (kernel_emitter:
  // ((i0 * s1 + i1) * s2 + i2) * s3 + i3) is the flat one, inside the
  // buffer. (A view of another shape would not print back as TVMScript.)
  Window flat = w;
  flat.idx.clear();
  for (const PrimExpr& i : w.idx) flat.idx.push_back(arith::Simplify(Substitute(i, zero)));
  std::vector<PrimExpr> flat_taps;
  for (const PrimExpr& t : clamped) flat_taps.push_back(Substitute(t, zero));
  const PrimExpr wo = xl->extent;
  auto eq = [](PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kEQ, std::move(a), std::move(b)); };
  PrimExpr c = MakeBinary(TirKind::kAnd, eq(yl->extent, I64(1)), eq(w.out->shape[rank - 2], I64(1)));
  c = MakeBinary(TirKind::kAnd, c, eq(w.out->shape[rank - 1], wo));
  c = MakeBinary(TirKind::kAnd, c, eq(in->shape[rank - 2] * in->shape[rank - 1], I64(2) * wo));
  // The outer loops visit every plane (folds to true for a pool's nest).
  PrimExpr planes = I64(1), outer = I64(1);
  for (size_t i = 0; i + 2 < rank; ++i) planes = planes * w.out->shape[i];
  for (size_t i = 0; i + 2 < w.spatial.size(); ++i) outer = outer * w.spatial[i]->extent;
  *cond = MakeBinary(TirKind::kAnd, c, eq(outer, planes));
  PrimExpr total = arith::Simplify(planes * wo);
  // Blocks of kFlatBlock outputs, in parallel where the nest's outer loop
  // was: a large batch keeps its threads.
  Var blk = MakeVar("flat_blk");
  PrimExpr lo = PrimExpr(blk) * I64(kFlatBlock);
  PrimExpr hi = MakeBinary(TirKind::kMin, lo + I64(kFlatBlock), total);
  PrimExpr blocks = arith::Simplify(MakeBinary(TirKind::kFloorDiv, total + I64(kFlatBlock - 1), I64(kFlatBlock)));
  ForKind kind = w.spatial[0]->for_kind == ForKind::kParallel ? ForKind::kParallel : ForKind::kSerial;
  return std::make_shared<ForNode>(blk, I64(0), blocks, kind, RunLoops(flat, lo, hi, true, flat_taps));
}

// The most tap rows for which the uniform-row nests below are made (a
// range of them each: 6 nests for 3 rows).
constexpr size_t kMaxUniformTapRows = 3;

}  // namespace

Stmt PlaneVersions(const Window& w, const std::vector<PrimExpr>& full, const Run& x_run, const Run* y_run,
                   const TermSet& x_terms, const TermSet& y_terms, const std::unordered_set<const VarNode*>& nest_vars,
                   const std::unordered_set<const VarNode*>& others_y, Stmt general) {
  const ForNode* xl = w.spatial.back();
  const ForNode* yl = w.spatial.size() >= 2 ? w.spatial[w.spatial.size() - 2] : nullptr;
  if (x_run.lower.empty() && x_run.upper.empty() && y_terms.empty()) return general;
  TermSet all = x_terms;
  all.insert(y_terms.begin(), y_terms.end());
  PrimExpr x_all = CoversAll(x_run, xl->extent);
  Stmt out = general;
  // Planes with no border in x whose tap rows are each inside the plane
  // for every output row or for none (the last pool of a small image:
  // ppocr_cls_v2's 2 x 2 / 2 over 200 x 1 x 50, padded to 2 rows, whose
  // second tap row is outside for its one output row): a nest over the
  // taps of the inside rows only, when a tap outside gives OP's identity.
  // One per range of tap rows (cut at the bottom: the first rows; at the
  // top: the last). Windows padded on the left have a border in x at every
  // size and take none of these.
  std::vector<TapRow> tap_rows = y_run != nullptr ? TapRows(full, y_terms) : std::vector<TapRow>();
  if (tap_rows.size() >= 2 && tap_rows.size() <= kMaxUniformTapRows && PadsAreIdentity(w, full)) {
    const VarNode* yv = yl->loop_var.get();
    for (size_t a = tap_rows.size(); a-- > 0;) {
      for (size_t b = tap_rows.size(); b > a; --b) {
        if (a == 0 && b == tap_rows.size()) continue;  // every row: the nest without a border
        PrimExpr c = x_all;
        bool ok = true;
        std::vector<PrimExpr> taps;
        for (size_t g = 0; g < tap_rows.size() && ok; ++g) {
          const TapRow& r = tap_rows[g];
          if (g >= a && g < b) {
            Run inside;
            for (const PrimExpr& t : r.terms) ok = ok && AddBound(t, yv, others_y, &inside);
            c = Both(c, CoversAll(inside, yl->extent));
            for (size_t i : r.taps) taps.push_back(full[i]);
          } else {
            PrimExpr fails;
            for (const PrimExpr& t : r.terms) {
              PrimExpr f = FailsEverywhere(t, yv, others_y, yl->extent);
              if (!f.defined()) ok = false;
              if (f.defined()) fails = fails.defined() ? MakeBinary(TirKind::kOr, fails, f) : f;
            }
            if (!fails.defined()) ok = false;  // a tap row without a test is never outside
            c = Both(c, fails);
          }
        }
        if (!ok || !c.defined() || IsFalse(c)) continue;
        if (Stmt nest = NoBorderNest(w, taps, all, nest_vars)) {
          PrimExpr flat_cond;
          if (Stmt flat = FlatPlanesNest(w, taps, all, nest_vars, &flat_cond)) {
            nest = std::make_shared<IfThenElseNode>(arith::Simplify(flat_cond), flat, nest);
          }
          out = std::make_shared<IfThenElseNode>(arith::Simplify(c), nest, out);
        }
      }
    }
  }
  // Tested first: planes without a border at run time (a run over all
  // columns and, where rows are tested, over all rows).
  PrimExpr cond = Both(x_all, y_run != nullptr ? CoversAll(*y_run, yl->extent) : PrimExpr());
  if (!cond.defined() || IsFalse(cond)) return out;
  Stmt plain = NoBorderNest(w, full, all, nest_vars, /*by_length=*/true);
  return plain ? std::make_shared<IfThenElseNode>(arith::Simplify(cond), plain, out) : out;
}

}  // namespace pool
}  // namespace tir
}  // namespace kiln
