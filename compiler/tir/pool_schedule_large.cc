// Windows with tap loops (pool_schedule.h, pool_schedule_internal.h):
// windows of more taps than are unrolled, as tap loops around vector rows,
// and the separable max / min / sum of stride-1 windows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/pool_schedule_internal.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace pool {
namespace {

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

}  // namespace

// Windows of more taps than are unrolled (a 13 x 13 SPPF max pool) as tap
// loops around vector rows: each row is set to the init, then for each tap
// OP-ed with that tap's value at the columns where its test passes, a run
// [lo(tap), hi(tap)) found as above; the tap's test on y (and anything else
// not on x) is one branch for the whole row. Taps outside the plane are
// skipped, which is exact when their padding value is OP's identity
// (PadIsIdentity); other nests are left alone. Each output takes its taps
// in the nest's order: the same rounding as the loop.
//
// A parallel column loop (the default schedule's choice when every loop
// outside it has extent 1: a sum over axis 1 of [1, 512, 256], a layer
// norm's mean over positions) of static width above kLargeWindowBlock
// becomes a parallel loop over blocks of that many columns, each block's
// rows as above; a narrower one runs serially. Left alone, each column ran
// its taps as a scalar chain reading one float per 1 KiB row: magika's
// pinned build spent 95 us in such a sum, its symbolic build (batch loop
// parallel, columns free to vectorize) 2.8 us.
Stmt RewriteLargeWindow(const Window& w, const PoolKnobs& knobs) {
  const ForNode* xl = w.spatial.back();
  const VarNode* x = xl->loop_var.get();
  if (!w.init.defined()) return nullptr;
  const int64_t* par_ext = xl->for_kind == ForKind::kParallel ? ConstInt(xl->extent) : nullptr;
  if (xl->for_kind == ForKind::kParallel && par_ext == nullptr) return nullptr;
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
  // Columns [b0, b1) of the row: all of it, or one block of a parallel loop.
  PrimExpr b0 = I64(0), b1 = ext_x;
  Var block;
  if (par_ext != nullptr && *par_ext > kLargeWindowBlock) {
    block = MakeVar(xl->loop_var->name + "_b", xl->loop_var->dtype);
    b0 = PrimExpr(block) * I64(kLargeWindowBlock);
    b1 = *par_ext % kLargeWindowBlock == 0 ? b0 + I64(kLargeWindowBlock)
                                           : MakeBinary(TirKind::kMin, b0 + I64(kLargeWindowBlock), ext_x);
    if (run.lower.empty() && run.upper.empty()) {
      lo = b0, hi = b1;  // every column of the block
    } else {
      lo = arith::Simplify(MakeBinary(TirKind::kMax, lo, b0));
      hi = arith::Simplify(MakeBinary(TirKind::kMax, MakeBinary(TirKind::kMin, hi, b1), lo));
    }
  }
  Stmt tap = LoopFrom(xl->loop_var, lo, hi - lo, vec, Store(w.out, MakeBinary(w.op, acc, value), w.idx), x);
  if (row_cond.defined()) tap = std::make_shared<IfThenElseNode>(row_cond, tap, nullptr);
  for (size_t d = w.taps.size(); d-- > 0;) {
    const ForNode* t = w.taps[d];
    tap = std::make_shared<ForNode>(t->loop_var, t->min, t->extent, ForKind::kSerial, tap);
  }
  ForKind init_kind = knobs.vectorize ? ForKind::kVectorized : ForKind::kSerial;
  Stmt nest = Seq({LoopFrom(xl->loop_var, b0, b1 - b0, init_kind, Store(w.out, w.init, w.idx), x), tap});
  if (block) {
    int64_t blocks = (*par_ext + kLargeWindowBlock - 1) / kLargeWindowBlock;
    nest = std::make_shared<ForNode>(block, I64(0), I64(blocks), ForKind::kParallel, nest);
  }
  for (size_t d = w.spatial.size() - 1; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
}

namespace {

Stmt MakeForSep(const Var& v, const PrimExpr& extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), extent, kind, std::move(body));
}

// Pass 1 as one vector loop: V[.., u + pad] = OP over the kh tap rows of
// select(row test at ry, X[.., clamped row, u], identity), the row index
// clamped into X so that every load is in bounds whatever the test says
// (where the test holds the row is inside and the clamp changes nothing).
// One loop of kh loads a row instead of kh read-modify-write passes over
// V, each behind its own branch. The loop is skipped when X has no rows
// (nothing to clamp into; V keeps the identity, as the tests would).
Stmt FusedTapRows(const Window& w, const BufferLoadNode* ld, const VarNode* ry, int64_t kh, const PrimExpr& row_cond,
                  const Buffer& v, const std::vector<PrimExpr>& vat, const Var& u, const PrimExpr& ident) {
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
  Stmt loop = MakeForSep(u, ld->buffer->shape.back(), ForKind::kVectorized, Store(v, Combine(w, rows, true), vat));
  if (nonempty.defined()) loop = std::make_shared<IfThenElseNode>(nonempty, loop, nullptr);
  return loop;
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

}  // namespace

namespace {

// Rows of V a block holds (RewriteSeparableWindow): pass 2 read each V row
// right after pass 1 stored it, its loads at offsets 0..kw-1 from vector
// stores at offset pad, so no load could take its value from the store
// buffer and each waited for the stores to reach the cache (a 5 x 5 / 1
// average over 256 x 20 x 20: 76 us, where the unrolled 25-tap tree took
// 59). With a block of rows between a row's pass 1 and its pass 2 the
// stores are long done. The block is up to kSeparableBlockFloats of V (L1
// keeps it), the whole plane when that fits; a parallel row loop keeps
// blocks of 4 rows to share out.
constexpr int64_t kSeparableBlockFloats = 4096;
int64_t SeparableBlockRows(const ForNode* yl, const PrimExpr& v_len) {
  if (yl->for_kind == ForKind::kParallel) return 4;
  const int64_t* len = ConstInt(v_len);
  int64_t rows = len != nullptr ? std::max<int64_t>(1, kSeparableBlockFloats / *len) : 16;
  if (const int64_t* h = ConstInt(yl->extent)) rows = std::min(rows, *h);
  return rows;
}

}  // namespace

// Max, min and sum windows of two tap loops (ry, rx) whose tap value is
// X[.., iy, ix] with ix = x + rx + b (b free of the nest's loops and taps)
// and iy, and every other index, free of x and rx: SPPF's 5 x 5 / 1 max
// pools, a stride-1 average pool's sum. Max and min are associative and
// commutative (the same value in any order, NaN included); a sum is too up
// to rounding (ONNX asks for no tap order: its tests take a relative 1e-3),
// and in the order below each tap goes through at most kh + kw - 2 adds
// (as pairwise trees, about log2 kh + log2 kw), where the nest's order took
// up to kh * kw - 1. So each output row is two passes over rows
// of vectors instead of kh * kw: V[u] = OP over ry of X[.., iy, u] for
// every column u of X (the taps' tests not on x are each one branch for
// the whole row; V starts at OP's identity), then out[y, x] = OP over rx of
// V[x + rx + b] at the columns [lo(rx), hi(rx)) where the tests on x pass,
// as RewriteLargeWindow finds them. V is one row of X's width, allocated
// once around the y loop (inside it when y is the parallel loop).
// 128 channels of 10 x 10 (nudenet at 320 x 320): 25 masked row vectors
// a row became 5 + 5. A 13 x 13 average pool over 256 x 20 x 20 ran 169
// masked tap rows an output row (its sum kept the taps' order), 13 + 13
// this way. Null when the nest is not of this form.
Stmt RewriteSeparableWindow(const Window& w, const PoolKnobs& knobs) {
  if (w.op != TirKind::kMax && w.op != TirKind::kMin && w.op != TirKind::kAdd) return nullptr;
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
  PrimExpr ident = FloatImm(f32, w.op == TirKind::kMax ? -inf : w.op == TirKind::kMin ? inf : 0.0);
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
  // Padded, V holds a block of rows (SeparableBlockRows): pass 1 for the
  // block's rows, then pass 2 for them.
  const int64_t block = padded ? SeparableBlockRows(yl, v_len) : 1;
  vnode->shape = padded ? std::vector<PrimExpr>{I64(block), v_len} : std::vector<PrimExpr>{v_len};
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
  Var r1 = MakeVar("r"), r2 = MakeVar("r");  // V's row: pass 1's and pass 2's loop over the block
  std::vector<PrimExpr> vat = padded ? std::vector<PrimExpr>{PrimExpr(r1), vj} : std::vector<PrimExpr>{vj};
  Stmt v_row = MakeForSep(u2, win, vec, Store(v, MakeBinary(w.op, Load(v, vat), Load(ld->buffer, xidx2)), vat));
  if (row_cond.defined()) v_row = std::make_shared<IfThenElseNode>(row_cond, v_row, nullptr);
  const ForNode* ryl = rx_first ? w.taps[1] : w.taps[0];
  const ForNode* rxl = rx_first ? w.taps[0] : w.taps[1];
  v_row = std::make_shared<ForNode>(ryl->loop_var, ryl->min, ryl->extent, ForKind::kSerial, v_row);
  const int64_t* kh = ConstInt(ryl->extent);
  if (padded && kh != nullptr && *kh <= 16) v_row = FusedTapRows(w, ld, ry, *kh, row_cond, v, vat, u2, ident);
  if (!padded) return WrapSeparable(w, v, yl, SeparableColumns(w, v, v_init, v_row, run, ix, rxl, vec));
  // Pass 2: out[x] = OP over rx of V[x + rx], no test.
  std::vector<PrimExpr> vals;
  for (int64_t k = 0; k < *kw; ++k) vals.push_back(Load(v, {PrimExpr(r2), PrimExpr(xl->loop_var) + I64(k)}));
  Stmt out = LoopFrom(xl->loop_var, I64(0), ext_x, vec, Store(w.out, Combine(w, vals, true), w.idx), x);
  // Row y = yo * block + r of the block yo.
  Var yo = MakeVar(yl->loop_var->name + "_o", yl->loop_var->dtype);
  PrimExpr y0 = arith::Simplify(PrimExpr(yo) * I64(block));
  const VarNode* y = yl->loop_var.get();
  PrimExpr rows = arith::Simplify(MakeBinary(TirKind::kMin, I64(block), yl->extent - y0));
  Stmt p1 = MakeForSep(r1, rows, ForKind::kSerial, Substitute(v_row, VarMap{{y, y0 + PrimExpr(r1)}}));
  Stmt p2 = MakeForSep(r2, rows, ForKind::kSerial, Substitute(out, VarMap{{y, y0 + PrimExpr(r2)}}));
  // V's padding columns never change: set once, where V is allocated.
  Var ri = MakeVar("r"), ui = MakeVar("u");
  Stmt init = MakeForSep(ri, I64(block), ForKind::kSerial,
                         MakeForSep(ui, v_len, vec, Store(v, ident, {PrimExpr(ri), PrimExpr(ui)})));
  PrimExpr blocks = arith::Simplify(MakeBinary(TirKind::kFloorDiv, yl->extent + I64(block - 1), I64(block)));
  const bool y_parallel = yl->for_kind == ForKind::kParallel;
  Stmt body = Seq({p1, p2});
  if (y_parallel) body = std::make_shared<AllocateNode>(v, Seq({init, body}));
  Stmt nest = MakeForSep(yo, blocks, y_parallel ? ForKind::kParallel : ForKind::kSerial, body);
  if (!y_parallel) nest = std::make_shared<AllocateNode>(v, Seq({init, nest}));
  for (size_t d = w.spatial.size() - 2; d-- > 0;) {
    const ForNode* f = w.spatial[d];
    ForKind kind = f->for_kind == ForKind::kVectorized ? ForKind::kSerial : f->for_kind;
    nest = std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, nest);
  }
  return nest;
}

}  // namespace pool
}  // namespace tir
}  // namespace kiln
