#include "compiler/tir/conv_dot_schedule.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers

// Output points per image (rows x columns) at most: wider planes fill the
// column tiles of the conv schedules.
constexpr int64_t kMaxPoints = 8;
// Reduction length (channels x taps) at least this many (one AVX-512
// vector).
constexpr int64_t kMinReduction = 16;
// Accumulators per tile at most (of 32 vector registers, R + HW more hold
// the loads).
constexpr int64_t kMaxAccumulators = 24;
// Output channels per tile at most.
constexpr int64_t kMaxRows = 4;
// Multiply-adds below which a single-tap (matrix-vector) product stays
// serial (conv_schedule.h's kMinParallelConvWork, the same threshold).
constexpr int64_t kMinParallelDotWork = 256 * 1024;

PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }

Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

struct DotConv {
  std::vector<const ForNode*> loops;  // n, o, y, x, c, ky, kx
  conv::ConvReduction r;
  int64_t o = 0, ho = 0, ki = 0, kh = 0, kw = 0;
  int64_t wo = 0;  // 0: symbolic (then ho is 1)
};

bool MatchDotConv(const Stmt& s, DotConv* m) {
  Stmt body;
  m->loops = PeelNest(s, &body);
  const auto& L = m->loops;
  if (L.size() != 7) return false;
  for (const ForNode* l : L)
    if (!IsZero(l->min)) return false;
  int64_t* ext[] = {&m->o, &m->ho, &m->wo, &m->ki, &m->kh, &m->kw};
  for (size_t d = 1; d < 7; ++d) {
    const int64_t* e = ConstInt(L[d]->extent);
    if (e == nullptr && d == 3) continue;  // a symbolic row width
    if (e == nullptr || *e <= 0) return false;
    *ext[d - 1] = *e;
  }
  // One output row (1-D convolutions as LiftConv1dNests makes them): small
  // 2-D planes keep the static schedule's packed-weight tiles.
  // A single tap (a 1 x 1 kernel: a matrix-vector product per image, an SE
  // block's on a 1 x 1 plane) is left to them when its weight is packed
  // (OIHW8o, 5-D: rejected below) and taken here when it is not (output
  // channels that 8 does not divide: PP-OCRv4's 240 -> 60), where the
  // static schedule ran a padded 32-column tile for one column; not with a
  // symbolic width (the symbolic schedule's flat rows take those).
  if (m->ho != 1 || m->wo > kMaxPoints) return false;
  if (m->kh * m->kw == 1 && m->wo == 0) return false;
  if (m->ki * m->kh * m->kw < kMinReduction) return false;
  if (!conv::MatchConvReduction(body, L, &m->r)) return false;
  const conv::ConvReduction& r = m->r;
  // An OIHW weight of exactly the loops' extents (read as rows [O, C*KH*KW]).
  if (r.w_load->indices.size() != 4 || !r.weight->strides.empty()) return false;
  for (size_t d = 0; d < 4; ++d) {
    const int64_t* e = ConstInt(r.weight->shape[d]);
    if (e == nullptr || *e != *ConstInt(L[d == 0 ? 1 : d + 3]->extent)) return false;
  }
  // The staged input may not depend on the output channel (groups).
  if (Uses(r.x_load->indices[0], {L[1]->loop_var.get()}) || Uses(r.x_load->indices[1], {L[1]->loop_var.get()})) {
    return false;
  }
  for (size_t d = 0; d < 4; ++d)
    if (!ProvenSameExtent(r.out->shape[d], L[d]->extent))
      return false;
  return true;
}

class DotKernel {
 public:
  DotKernel(const DotConv& cv, int threads) : cv_(cv), outer_(threads >= 2 ? ForKind::kParallel : ForKind::kSerial) {
    const auto& L = cv.loops;
    k_ = cv.ki * cv.kh * cv.kw;
    // A single tap is a matrix-vector product per image (an SE block's
    // 240 -> 60: 14,400 multiply-adds, about a microsecond): waking a second
    // thread costs more than it saves, so its images run one after the
    // other unless a static batch brings the work up to a parallel loop's.
    if (cv.kh * cv.kw == 1) {
      const int64_t* n = ConstInt(L[0]->extent);
      const int64_t work = cv.o * k_ * cv.ho * cv.wo * (n != nullptr ? *n : 1);
      if (work < kMinParallelDotWork) outer_ = ForKind::kSerial;
    }
    v_ = k_ >= 64 || k_ % 16 == 0 ? 16 : 8;
    images_ = L[0]->extent;
    hw_ = cv.wo > 0 ? I64(cv.ho * cv.wo) : L[3]->extent;
    col_ = nest::Float32Buffer("col", {images_, hw_, I64(k_)}, "global");
    auto wrow = std::make_shared<BufferNode>(*cv.r.weight);
    wrow->shape = {I64(cv.o), I64(k_)};
    wrows_ = wrow;
  }

  // `orig`: the nest itself, kept for the rows too wide for these tiles.
  Stmt Build(const Stmt& orig) {
    if (cv_.wo > 0) return std::make_shared<AllocateNode>(col_, Seq({Pack(), Tiles(cv_.ho * cv_.wo)}));
    // A symbolic width: tiles of exactly the row's width (1 to 7) by a
    // run-time test (tiles of 4, 2 or 1 computed a row of 3 as two
    // overlapping tiles of 2); rows of 8 columns and more keep the column
    // tiles (the original nest, for the schedules after this one).
    // Inside the test hw == w a tile spans the row: one point tile per
    // (image, channel tile), indexed by divisions by constants only (with
    // hw's run-time value the tile index took three divisions by it per
    // tile, as much as a tile's FMAs on Silero VAD's narrowest rows). No
    // width of 1 to 7 is an empty row: nothing to compute.
    PrimExpr hw = hw_;
    Stmt tiles = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, hw, I64(kMaxPoints - 1)),
                                                  Tiles(kMaxPoints - 1), Stmt());
    for (int64_t w = kMaxPoints - 2; w >= 1; --w)
      tiles = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, hw, I64(w)), Tiles(w), tiles);
    Stmt dot = std::make_shared<AllocateNode>(col_, Seq({Pack(), tiles}));
    return std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, hw, I64(kMaxPoints)), dot, orig);
  }

 private:
  // col[n, p, j] = X's value (0 in the padding) at output point
  // p = y * Wo + x and reduction index j = (c * KH + ky) * KW + kx.
  Stmt Pack() {
    const auto& L = cv_.loops;
    Var pn = MakeVar("pn"), py = MakeVar("py"), px = MakeVar("px"), pc = MakeVar("pc"), pky = MakeVar("pky"),
        pkx = MakeVar("pkx");
    VarMap at;
    at[L[0]->loop_var.get()] = PrimExpr(pn);
    at[L[2]->loop_var.get()] = PrimExpr(py);
    at[L[3]->loop_var.get()] = PrimExpr(px);
    at[L[4]->loop_var.get()] = PrimExpr(pc);
    at[L[5]->loop_var.get()] = PrimExpr(pky);
    at[L[6]->loop_var.get()] = PrimExpr(pkx);
    std::vector<PrimExpr> xidx;
    for (const PrimExpr& e : cv_.r.x_load->indices) xidx.push_back(arith::Simplify(Substitute(e, at)));
    const DType f32 = DType::Float32();
    PrimExpr value = Load(cv_.r.data, xidx);
    if (cv_.r.inside.defined()) {
      PrimExpr inside = arith::Simplify(Substitute(cv_.r.inside, at));
      value = PrimExpr(
          std::make_shared<CallNode>(f32, "if_then_else", std::vector<PrimExpr>{inside, value, FloatImm(f32, 0.0)}));
    }
    PrimExpr j = (PrimExpr(pc) * I64(cv_.kh) + PrimExpr(pky)) * I64(cv_.kw) + PrimExpr(pkx);
    PrimExpr p = cv_.wo > 0 ? PrimExpr(py) * I64(cv_.wo) + PrimExpr(px) : PrimExpr(px);
    Stmt pack = Store(col_, value, {PrimExpr(pn), p, j});
    pack = MakeFor(pkx, I64(cv_.kw), ForKind::kSerial, pack);
    pack = MakeFor(pky, I64(cv_.kh), ForKind::kSerial, pack);
    pack = MakeFor(pc, I64(cv_.ki), ForKind::kSerial, pack);
    pack = MakeFor(px, L[3]->extent, ForKind::kSerial, pack);
    pack = MakeFor(py, I64(cv_.ho), ForKind::kSerial, pack);
    return MakeFor(pn, images_, outer_, pack);
  }

  // Tiles of R output channels x the row's `pts` output points (a static
  // row, or a symbolic one where a run-time test proved its width): R * pts
  // accumulators of V lanes over the reduction; the last channel tile moved
  // back to end at O.
  Stmt Tiles(int64_t pts) {
    const DType f32 = DType::Float32();
    const int64_t rows = std::max<int64_t>(1, std::min({kMaxRows, cv_.o, kMaxAccumulators / pts}));
    const int64_t ctiles = (cv_.o + rows - 1) / rows;
    const int64_t n_acc = rows * pts;
    const int64_t blocks = k_ / v_, tail = k_ % v_;
    Var t = MakeVar("t"), n = MakeVar("n"), o0 = MakeVar("o0"), p0 = MakeVar("p0");
    Buffer acc = nest::Float32Buffer("acc", {I64(n_acc), I64(v_)}, "local");
    Var zi = MakeVar("zi"), zl = MakeVar("zl");
    std::vector<Stmt> body = {MakeFor(
        zi, I64(n_acc), ForKind::kUnrolled,
        MakeFor(zl, I64(v_), ForKind::kVectorized, Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zl)})))};
    auto fma_at = [&](const PrimExpr& j, const Var& ri, const Var& pi, const PrimExpr& lane) {
      PrimExpr slot = PrimExpr(ri) * I64(pts) + PrimExpr(pi);
      PrimExpr cur = Load(acc, {slot, lane});
      PrimExpr w = Load(wrows_, {PrimExpr(o0) + PrimExpr(ri), j});
      PrimExpr x = Load(col_, {PrimExpr(n), PrimExpr(p0) + PrimExpr(pi), j});
      return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, cur})), {slot, lane});
    };
    if (blocks > 0) {
      Var kb = MakeVar("kb"), ri = MakeVar("ri"), pi = MakeVar("pi"), l = MakeVar("l");
      Stmt taps =
          MakeFor(l, I64(v_), ForKind::kVectorized, fma_at(PrimExpr(kb) * I64(v_) + PrimExpr(l), ri, pi, PrimExpr(l)));
      taps = MakeFor(pi, I64(pts), ForKind::kUnrolled, taps);
      taps = MakeFor(ri, I64(rows), ForKind::kUnrolled, taps);
      body.push_back(MakeFor(kb, I64(blocks), ForKind::kSerial, taps));
    }
    if (tail > 0) {
      // The last K % V terms into lane 0.
      Var kt = MakeVar("kt"), ri = MakeVar("ri"), pi = MakeVar("pi");
      Stmt taps = fma_at(I64(blocks * v_) + PrimExpr(kt), ri, pi, I64(0));
      taps = MakeFor(pi, I64(pts), ForKind::kUnrolled, taps);
      taps = MakeFor(ri, I64(rows), ForKind::kUnrolled, taps);
      body.push_back(MakeFor(kt, I64(tail), ForKind::kSerial, taps));
    }
    // Each accumulator summed across its lanes: halves added until one lane.
    for (int64_t h = v_ / 2; h >= 1; h /= 2) {
      Var fi = MakeVar("fi"), fl = MakeVar("fl");
      PrimExpr sum = Load(acc, {PrimExpr(fi), PrimExpr(fl)}) + Load(acc, {PrimExpr(fi), PrimExpr(fl) + I64(h)});
      body.push_back(MakeFor(fi, I64(n_acc), ForKind::kUnrolled,
                             MakeFor(fl, I64(h), h > 1 ? ForKind::kVectorized : ForKind::kSerial,
                                     Store(acc, sum, {PrimExpr(fi), PrimExpr(fl)}))));
    }
    Var wr = MakeVar("wr"), wp = MakeVar("wp");
    PrimExpr p = PrimExpr(p0) + PrimExpr(wp);
    PrimExpr y = cv_.wo > 0 ? arith::Simplify(Div(p, I64(cv_.wo))) : I64(0);
    PrimExpr x = cv_.wo > 0 ? arith::Simplify(Mod(p, I64(cv_.wo))) : p;
    Stmt write = Store(cv_.r.out, Load(acc, {PrimExpr(wr) * I64(pts) + PrimExpr(wp), I64(0)}),
                       {PrimExpr(n), PrimExpr(o0) + PrimExpr(wr), y, x});
    write = MakeFor(wp, I64(pts), ForKind::kUnrolled, write);
    body.push_back(MakeFor(wr, I64(rows), ForKind::kUnrolled, write));
    Stmt tile = std::make_shared<AllocateNode>(acc, Seq(body));
    // t over (image, channel tile).
    PrimExpr per_image = I64(ctiles);
    PrimExpr ct = Mod(PrimExpr(t), per_image);
    tile = std::make_shared<LetStmtNode>(p0, I64(0), tile);
    tile = std::make_shared<LetStmtNode>(o0, Min(ct * I64(rows), I64(cv_.o - rows)), tile);
    tile = std::make_shared<LetStmtNode>(n, Div(PrimExpr(t), per_image), tile);
    return MakeFor(t, arith::Simplify(images_ * per_image), outer_, tile);
  }

  const DotConv& cv_;
  ForKind outer_;
  int64_t k_ = 0, v_ = 16;
  PrimExpr images_, hw_;
  Buffer col_, wrows_;
};

class DotRewriter : public StmtExprMutator {
 public:
  DotRewriter(const PrimFunc& func, int threads) : threads_(threads) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
  }
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s)) {
      DotConv cv;
      // The weight is read through a view of another shape: only a
      // parameter's (a buffer of the function's own would be seen by the
      // passes after, which size it, through two shapes).
      if (!MatchDotConv(s, &cv) || !params_.count(cv.r.weight->data.get())) return s;
      changed = true;
      return DotKernel(cv, threads_).Build(s);
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int threads_;
  std::unordered_set<const VarNode*> params_;
};

}  // namespace

PrimFunc ScheduleDotConvs(const PrimFunc& func, int num_threads_hint) {
  DotRewriter rewriter(func, num_threads_hint);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
