// SymConvKernel's flat plane tiles: strided convolutions' phase planes, and
// stride-1 padded planes on narrow rows.
// (conv_symbolic_kernel.h declares the class; conv_symbolic_schedule.h says
// what the kernel computes.)
#include "compiler/tir/conv_symbolic_kernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/substitute.h"
#include "compiler/tir/conv_symbolic_plane_tail.h"

namespace kiln {
namespace tir {
namespace symconv {

Stmt SymConvKernel::StridedPlanes(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp) {
  const int64_t planes = cv_.sh * cv_.sw;
  PrimExpr hph = arith::Simplify(Div(hp + I64(cv_.sh - 1), I64(cv_.sh)));
  PrimExpr ch = cv_.data->shape[1];
  PrimExpr plane_size = arith::Simplify(hph * wph_);
  Buffer pq = nest::Float32Buffer(cv_.data->name + "_phase_planes", {ch, I64(planes), arith::Simplify(plane_size + I64(kTileWidths[0]))}, "global");
  // The copy: every row of every plane written (rows past the padded
  // input zeroed), so the columns between rows read initialized memory.
  qs_ = pq;
  phases_by_channel_ = true;
  row_phases_ = true;
  Var pc = MakeVar("pc");
  Stmt pack = MakeFor(pc, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial,
                      Seq({PackPhases(PrimExpr(pc), arith::Simplify(hph * I64(cv_.sh))), ZeroPhaseTails(PrimExpr(pc), plane_size)}));
  row_phases_ = false;
  phases_by_channel_ = false;
  return std::make_shared<AllocateNode>(pq, Seq({pack, StridedSmallSpan(ho, wo, pq, PlaneGroups(ho, wo, pq))}));
}

Stmt SymConvKernel::InPlacePlanes(const PrimExpr& ho, const PrimExpr& wo, bool small_only) {
  // X[n, c] seen as one flat row of H * W floats (a view of the same
  // memory, as TryFlat's): output (y, x) at y * W + x, tap (ky, kx) at
  // ky * dh * W + kx * dw further on. The last tile ends at the span's end,
  // so its last tap reads ((Ho - 1) + (KH - 1) * dh) * W + Wo - 1 +
  // (KW - 1) * dw, at most H * W - 1: inside X.
  const Buffer& x = cv_.data;
  auto view = std::make_shared<BufferNode>(*x);
  view->shape = {x->shape[0], x->shape[1], arith::Simplify(x->shape[2] * x->shape[3])};
  wph_ = x->shape[3];
  const int64_t mr = mr_;
  mr_ = PlaneChannels();
  // Spans under the widest tile: SmallPlanes (every span, small_only).
  PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
  Stmt groups = SmallPlanes(ho, wo, Buffer(view));
  if (!small_only) {
    in_place_ = true;
    Stmt wide = PlaneGroups(ho, wo, Buffer(view));
    in_place_ = false;
    const int64_t widest = kTileWidths[0];
    groups = std::make_shared<IfThenElseNode>(Lt(span, I64(widest)), groups, wide);
  }
  if (ChannelVectorsApply()) {
    groups = std::make_shared<IfThenElseNode>(Lt(span, I64(kTileWidths[2])), ChannelVectorPoints(ho, wo, Buffer(view)),
                                              groups);
  }
  mr_ = mr;
  return groups;
}

bool SymConvKernel::ChannelVectorsApply() const {
  // The weight's blocks are the vectors; X's channel the reduction's own
  // (one group: every output channel of a vector reads the same input).
  const auto& L = cv_.loops;
  return cv_.wblock >= 8 && cv_.o % cv_.wblock == 0 && IsVar(cv_.x_load->indices[1], L[4]->loop_var.get());
}

Stmt SymConvKernel::ChannelVectorPoints(const PrimExpr& ho, const PrimExpr& wo, const Buffer& xf) {
  const auto& L = cv_.loops;
  const int64_t vb = cv_.wblock, nb = cv_.o / vb;
  // Blocks per tile: accumulator chains enough to hide the FMA latency.
  int64_t tb = 1;
  for (int64_t b : {4, 3, 2}) {
    if (nb % b == 0) {
      tb = b;
      break;
    }
  }
  DType f32 = DType::Float32();
  PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
  const int64_t cols = kTileWidths[2];
  Buffer tf = nest::Float32Buffer("plane_out", {I64(cv_.o), I64(cols)}, "local");
  Buffer acc = nest::Float32Buffer("acc", {I64(tb), I64(vb)}, "local");
  Var j = MakeVar("pj"), q = MakeVar("pq"), b = MakeVar("pb"), l = MakeVar("pl");
  Var c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
  PrimExpr o0 = (PrimExpr(q) * I64(tb) + PrimExpr(b)) * I64(vb);
  VarMap map;
  map[L[0]->loop_var.get()] = PrimExpr(n_);
  map[L[4]->loop_var.get()] = PrimExpr(c);
  map[L[5]->loop_var.get()] = PrimExpr(ky);
  map[L[6]->loop_var.get()] = PrimExpr(kx);
  std::vector<PrimExpr> widx = WeightIndex(o0, vb, PrimExpr(l), map);
  widx[0] = arith::Simplify(PrimExpr(q) * I64(tb) + PrimExpr(b));
  PrimExpr off = PrimExpr(ky) * I64(cv_.dh) * wph_ + PrimExpr(kx) * I64(cv_.dw);
  PrimExpr xv = Load(xf, {NImage(), PrimExpr(c), PrimExpr(j) + off});
  PrimExpr cur = Load(acc, {PrimExpr(b), PrimExpr(l)});
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                   {PrimExpr(b), PrimExpr(l)});
  Stmt taps = MakeFor(b, I64(tb), ForKind::kUnrolled, MakeFor(l, I64(vb), ForKind::kVectorized, fma));
  taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
  taps = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, taps);
  taps = MakeFor(c, I64(cv_.ki), ForKind::kSerial, taps);
  Var zb = MakeVar("zb"), zl = MakeVar("zl"), wb = MakeVar("wb"), wl = MakeVar("wl");
  Stmt zero = MakeFor(zb, I64(tb), ForKind::kUnrolled,
                      MakeFor(zl, I64(vb), ForKind::kVectorized, Store(acc, FloatImm(f32, 0.0), {PrimExpr(zb), PrimExpr(zl)})));
  PrimExpr oc = (PrimExpr(q) * I64(tb) + PrimExpr(wb)) * I64(vb) + PrimExpr(wl);
  Stmt write = MakeFor(wb, I64(tb), ForKind::kUnrolled,
                       MakeFor(wl, I64(vb), ForKind::kVectorized,
                               Store(tf, Load(acc, {PrimExpr(wb), PrimExpr(wl)}), {oc, PrimExpr(j)})));
  Stmt tile = std::make_shared<AllocateNode>(acc, Seq({zero, taps, write}));
  Stmt points = MakeFor(j, span, ForKind::kSerial, MakeFor(q, I64(nb / tb), ForKind::kSerial, tile));
  Stmt rows = PlaneRowsOut(I64(0), cv_.o, tf, ho, wo, wph_);
  return std::make_shared<AllocateNode>(tf, Seq({points, rows}));
}

int64_t SymConvKernel::PlaneChannels() const {
  // Tiles of the most channels up to 8 that divide O, where mr_ (kTileRows)
  // took fewer: 10 channels took tiles of 2 (4 accumulator vectors at 32
  // columns, too few to hide the FMA latency), now of 5. A packed weight
  // keeps blocks its tiles read whole.
  for (int64_t r = 8; r > mr_; --r) {
    if (cv_.o % r == 0 && (cv_.wblock == 0 || r % cv_.wblock == 0 || cv_.wblock % r == 0)) return r;
  }
  return mr_;
}

Stmt SymConvKernel::SmallPlanes(const PrimExpr& ho, const PrimExpr& wo, const Buffer& xf) {
  const Buffer& x = cv_.data;
  const int64_t widest = kTileWidths[0];
  PrimExpr ch = x->shape[1];
  PrimExpr hw = arith::Simplify(x->shape[2] * x->shape[3]);
  // X[n] copied flat with `widest` zeros after each channel: one tile from
  // column 0 may then pass the span's end.
  Buffer xs = nest::Float32Buffer(x->name + "_small", {ch, I64(1), arith::Simplify(hw + I64(widest))}, "global");
  Var pc = MakeVar("pc"), pj = MakeVar("pj"), pz = MakeVar("pz");
  DType f32 = DType::Float32();
  Stmt copy = MakeFor(pj, hw, ForKind::kVectorized,
                      Store(xs, Load(xf, {NImage(), PrimExpr(pc), PrimExpr(pj)}), {PrimExpr(pc), I64(0), PrimExpr(pj)}));
  Stmt zero = MakeFor(pz, I64(widest), ForKind::kVectorized,
                      Store(xs, FloatImm(f32, 0.0), {PrimExpr(pc), I64(0), hw + PrimExpr(pz)}));
  Stmt pack = MakeFor(pc, ch, ForKind::kSerial, Seq({copy, zero}));
  // Per group of mr_ output channels one tile of the narrowest width that
  // holds the span. Serial: the whole convolution is a few hundred vector
  // FMAs, less than a parallel launch (the pinned schedule keeps such
  // kernels serial too).
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(mr_);
  PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
  Buffer tf = nest::Float32Buffer("plane_out", {I64(mr_), I64(widest)}, "local");
  Stmt tiles;
  int64_t narrower = 0;
  for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
    Stmt t = StridedPlaneRow(o0, xs, tf, span, *it, FlatTiles::kFirst);
    tiles = tiles ? std::make_shared<IfThenElseNode>(Lt(span, I64(narrower + 1)), tiles, t) : t;
    narrower = *it;
  }
  Stmt rows = PlaneRowsOut(o0, mr_, tf, ho, wo, wph_);
  Stmt body = std::make_shared<AllocateNode>(tf, Seq({tiles, rows}));
  Stmt groups = MakeFor(g, I64(cv_.o / mr_), ForKind::kSerial, body);
  return std::make_shared<AllocateNode>(xs, Seq({pack, groups}));
}

Stmt SymConvKernel::PlaneGroups(const PrimExpr& ho, const PrimExpr& wo, const Buffer& pq) {
  // Tile groups of mr_ output channels (in parallel).
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(mr_);
  PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
  Buffer tf = nest::Float32Buffer("plane_out", {I64(mr_), span}, "global");
  Stmt tiles = StridedPlaneRow(o0, pq, tf, span, 1);
  for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
    tiles = std::make_shared<IfThenElseNode>(Fits(span, *it), StridedPlaneSpan(o0, pq, tf, span, *it), tiles);
  }
  Stmt rows = PlaneRowsOut(o0, mr_, tf, ho, wo, wph_);
  Stmt body = std::make_shared<AllocateNode>(tf, Seq({tiles, rows}));
  return MakeFor(g, I64(cv_.o / mr_), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
}

Stmt SymConvKernel::StridedPlaneSpan(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr) {
  const std::vector<int64_t> tails = PlaneTailWidths(nr, std::begin(kTileWidths), std::end(kTileWidths));
  if (tails.size() < 2) return StridedPlaneRow(o0, pq, tf, span, nr);
  PrimExpr rem = Mod(span, I64(nr));
  // Built from the widest: the first test that holds picks the narrowest fit.
  Stmt tail = StridedPlaneRow(o0, pq, tf, span, tails.back(), FlatTiles::kLast);
  for (size_t i = tails.size() - 1; i-- > 0;) {
    tail = std::make_shared<IfThenElseNode>(Lt(rem, I64(tails[i] + 1)),
                                            StridedPlaneRow(o0, pq, tf, span, tails[i], FlatTiles::kLast), tail);
  }
  tail = std::make_shared<IfThenElseNode>(Ge(rem, I64(1)), tail, Stmt());
  Stmt plan = Seq({StridedPlaneRow(o0, pq, tf, span, nr, FlatTiles::kWhole), tail});
  int64_t lo = 1;
  std::vector<std::pair<PrimExpr, Stmt>> widened;
  for (int64_t w : tails) {
    if (w >= nr) break;
    if (PlaneTailWidens(nr, w, mr_, kMaxTileAccumulators)) {
      PrimExpr in = MakeBinary(TirKind::kAnd, Ge(rem, I64(lo)), Lt(rem, I64(w + 1)));
      widened.push_back({MakeBinary(TirKind::kAnd, in, Ge(span, I64(nr + w))),
                         Seq({StridedPlaneRow(o0, pq, tf, span, nr, FlatTiles::kWholeButLast),
                              StridedPlaneRow(o0, pq, tf, span, nr + w, FlatTiles::kLast)})});
    }
    lo = w + 1;
  }
  for (auto it = widened.rbegin(); it != widened.rend(); ++it) {
    plan = std::make_shared<IfThenElseNode>(it->first, it->second, plan);
  }
  return plan;
}

Stmt SymConvKernel::FlatTileLoop(const Var& xt, const Var& x0, const Buffer& acc, int64_t rows, int64_t nr, const Buffer& tf,
                         const PrimExpr& span, const Stmt& taps, FlatTiles which, const FlatWrite& direct) {
  DType f32 = DType::Float32();
  Var zi = MakeVar("zi"), zj = MakeVar("zj");
  Stmt zero = MakeFor(zi, I64(rows), ForKind::kUnrolled,
                      MakeFor(zj, I64(nr), ForKind::kVectorized,
                              Store(acc, FloatImm(f32, 0.0), {PrimExpr(zi), PrimExpr(zj)})));
  Var wi = MakeVar("wi"), wj = MakeVar("wj");
  PrimExpr v = Load(acc, {PrimExpr(wi), PrimExpr(wj)});
  Stmt one = direct ? direct(wi, PrimExpr(x0) + PrimExpr(wj), v) : Store(tf, v, {PrimExpr(wi), PrimExpr(x0) + PrimExpr(wj)});
  Stmt write = MakeFor(wi, I64(rows), ForKind::kUnrolled, MakeFor(wj, I64(nr), ForKind::kVectorized, one));
  Stmt tile = std::make_shared<AllocateNode>(acc, Seq({zero, taps, write}));
  if (which == FlatTiles::kLast) return std::make_shared<LetStmtNode>(x0, span - I64(nr), tile);
  if (which == FlatTiles::kFirst) return std::make_shared<LetStmtNode>(x0, I64(0), tile);
  if (which == FlatTiles::kWhole || which == FlatTiles::kWholeButLast) {
    tile = std::make_shared<LetStmtNode>(x0, PrimExpr(xt) * I64(nr), tile);
    PrimExpr count = Div(span, I64(nr));
    if (which == FlatTiles::kWholeButLast) count = count - I64(1);
    return MakeFor(xt, count, ForKind::kSerial, tile);
  }
  PrimExpr start = nr == 1 ? PrimExpr(xt) : Min(PrimExpr(xt) * I64(nr), span - I64(nr));
  tile = std::make_shared<LetStmtNode>(x0, start, tile);
  PrimExpr count = nr == 1 ? span : Div(span + I64(nr - 1), I64(nr));
  return MakeFor(xt, count, ForKind::kSerial, tile);
}

Stmt SymConvKernel::StridedPlaneRow(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr,
                     FlatTiles which, bool prefetch) {
  const auto& L = cv_.loops;
  DType f32 = DType::Float32();
  const std::string tag = (which == FlatTiles::kLast ? "t" : "") + std::to_string(nr);
  Var xt = MakeVar("st" + tag), x0 = MakeVar("sx0_" + tag);
  Buffer acc = nest::Float32Buffer("acc", {I64(mr_), I64(nr)}, "local");
  Var ii = MakeVar("ii"), jj = MakeVar("jj"), c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
  VarMap map;
  map[L[0]->loop_var.get()] = PrimExpr(n_);
  map[L[1]->loop_var.get()] = o0 + PrimExpr(ii);
  map[L[4]->loop_var.get()] = PrimExpr(c);
  map[L[5]->loop_var.get()] = PrimExpr(ky);
  map[L[6]->loop_var.get()] = PrimExpr(kx);
  std::vector<PrimExpr> widx = WeightIndex(o0, mr_, PrimExpr(ii), map);
  PrimExpr chan = arith::Simplify(Substitute(cv_.x_load->indices[1], map));
  PrimExpr kyd = PrimExpr(ky) * I64(cv_.dh), kxd = PrimExpr(kx) * I64(cv_.dw);
  PrimExpr plane = Mod(kyd, I64(cv_.sh)) * I64(cv_.sw) + Mod(kxd, I64(cv_.sw));
  PrimExpr off = Div(kyd, I64(cv_.sh)) * wph_ + Div(kxd, I64(cv_.sw));
  if (shifted_) {
    // ShiftedPlanes: kernel column kx is a plane of its own, rows wph_ = Wo.
    plane = PrimExpr(kx);
    off = kyd * wph_;
  }
  PrimExpr col = PrimExpr(x0) + PrimExpr(jj) + off;
  PrimExpr xv = in_place_ ? Load(pq, {NImage(), chan, col}) : Load(pq, {chan, plane, col});
  PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                   {PrimExpr(ii), PrimExpr(jj)});
  Stmt taps = MakeFor(ii, I64(mr_), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
  taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
  taps = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, taps);
  if (prefetch) taps = WithWeightPrefetch(o0, c, taps);
  taps = MakeFor(c, I64(cv_.ki), ForKind::kSerial, taps);
  if (!shifted_) return FlatTileLoop(xt, x0, acc, mr_, nr, tf, span, taps, which);
  // ShiftedPlanes: output channel o0 + wi at flat column col, through the
  // flat epilogue.
  auto direct = [this, o0](const Var& wi, const PrimExpr& col, const PrimExpr& v) {
    const auto& L = cv_.loops;
    VarMap at;
    at[L[0]->loop_var.get()] = PrimExpr(n_);
    at[L[1]->loop_var.get()] = o0 + PrimExpr(wi);
    at[shifted_j_.get()] = col;
    std::vector<Stmt> back;
    std::vector<PrimExpr> out_idx;
    for (const PrimExpr& e : shifted_out_idx_) out_idx.push_back(Substitute(e, at));
    if (store_out_ || shifted_epilogue_.empty()) back.push_back(Store(shifted_out_, v, out_idx));
    ReplaceLoads replace(cv_.out->data.get(), v);
    for (const Stmt& st : shifted_epilogue_) back.push_back(Substitute(replace.MutateStmt(st), at));
    return Seq(back);
  };
  return FlatTileLoop(xt, x0, acc, mr_, nr, tf, span, taps, which, direct);
}

Stmt SymConvKernel::PlaneRowsOut(const PrimExpr& o0, int64_t channels, const Buffer& tf, const PrimExpr& ho, const PrimExpr& wo,
                  const PrimExpr& row) {
  Var wr = MakeVar("wr"), y = MakeVar("y"), x = MakeVar("x");
  const auto& L = cv_.loops;
  VarMap at;
  at[L[0]->loop_var.get()] = PrimExpr(n_);
  at[L[1]->loop_var.get()] = o0 + PrimExpr(wr);
  at[L[2]->loop_var.get()] = PrimExpr(y);
  at[L[3]->loop_var.get()] = PrimExpr(x);
  PrimExpr v = Load(tf, {PrimExpr(wr), PrimExpr(y) * row + PrimExpr(x)});
  std::vector<Stmt> back;
  std::vector<PrimExpr> out_idx;
  for (const PrimExpr& e : out_idx_) out_idx.push_back(Substitute(e, at));
  if (store_out_ || epilogue_.empty()) back.push_back(Store(out_, v, out_idx));
  ReplaceLoads replace(cv_.out->data.get(), v);
  for (const Stmt& st : epilogue_) back.push_back(Substitute(replace.MutateStmt(st), at));
  return MakeFor(wr, I64(channels), ForKind::kSerial,
                 MakeFor(y, ho, ForKind::kSerial, MakeFor(x, wo, ForKind::kVectorized, Seq(back))));
}

PrimExpr SymConvKernel::PlaneTilesPay(const PrimExpr& wo) const {
  auto in = [&](int64_t lo, int64_t hi) { return MakeBinary(TirKind::kAnd, Ge(wo, I64(lo)), Lt(wo, I64(hi))); };
  return MakeBinary(TirKind::kOr, Lt(wo, I64(8)), MakeBinary(TirKind::kOr, in(9, 13), in(17, 25)));
}

Stmt SymConvKernel::PlaneTiles(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp) {
  int64_t pc = 1;
  for (int64_t r : kPlaneChannels) {
    if (cv_.o % r == 0) {
      pc = r;
      break;
    }
  }
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(pc);
  Buffer qf = nest::Float32Buffer(cv_.data->name + "_planes", {I64(pc), arith::Simplify(hp * wp)}, "global");
  PrimExpr span = arith::Simplify((ho - I64(1)) * wp + wo);
  Buffer tf = nest::Float32Buffer("plane_out", {I64(pc), span}, "global");
  // The copies: row a of channel o0 + r at r, [a * Wp, (a + 1) * Wp).
  Var r = MakeVar("pr"), a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2");
  PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
  PrimExpr row0 = PrimExpr(a) * wp;
  Stmt zero = MakeFor(b, wp, ForKind::kVectorized,
                      Store(qf, FloatImm(DType::Float32(), 0.0), {PrimExpr(r), row0 + PrimExpr(b)}));
  Stmt copy = MakeFor(b2, Min(cv_.data->shape[3], wp - I64(cv_.pl)), ForKind::kVectorized,
                      Store(qf, Load(cv_.data, {NImage(), o0 + PrimExpr(r), iy, PrimExpr(b2)}),
                            {PrimExpr(r), row0 + PrimExpr(b2) + I64(cv_.pl)}));
  Stmt inside = std::make_shared<IfThenElseNode>(
      MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, cv_.data->shape[2])), copy, Stmt());
  Stmt pack = MakeFor(r, I64(pc), ForKind::kSerial, MakeFor(a, hp, ForKind::kSerial, Seq({zero, inside})));
  // The tiles, widest first, as in Row.
  Stmt tiles = PlaneTileRow(o0, pc, qf, tf, span, wp, 1);
  for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
    tiles = std::make_shared<IfThenElseNode>(Fits(span, *it), PlaneTileRow(o0, pc, qf, tf, span, wp, *it), tiles);
  }
  // Rows out: C[n, o0 + r, y, x] = plane_out[r, y * Wp + x] through the epilogue.
  Stmt rows = PlaneRowsOut(o0, pc, tf, ho, wo, wp);
  Stmt body = std::make_shared<AllocateNode>(qf, std::make_shared<AllocateNode>(tf, Seq({pack, tiles, rows})));
  return MakeFor(g, I64(cv_.o / pc), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
}

Stmt SymConvKernel::PlaneTileRow(const PrimExpr& o0, int64_t pc, const Buffer& qf, const Buffer& tf, const PrimExpr& span,
                  const PrimExpr& wp, int64_t nr) {
  const auto& L = cv_.loops;
  DType f32 = DType::Float32();
  Var xt = MakeVar("pt" + std::to_string(nr)), x0 = MakeVar("px0_" + std::to_string(nr));
  Buffer acc = nest::Float32Buffer("acc", {I64(pc), I64(nr)}, "local");
  Var ii = MakeVar("ii"), jj = MakeVar("jj"), ky = MakeVar("ky"), kx = MakeVar("kx");
  VarMap map;
  map[L[1]->loop_var.get()] = o0 + PrimExpr(ii);
  map[L[4]->loop_var.get()] = I64(0);
  map[L[5]->loop_var.get()] = PrimExpr(ky);
  map[L[6]->loop_var.get()] = PrimExpr(kx);
  std::vector<PrimExpr> widx = WeightIndex(o0, pc, PrimExpr(ii), map);
  PrimExpr off = PrimExpr(ky) * I64(cv_.dh) * wp + PrimExpr(kx) * I64(cv_.dw);
  PrimExpr xv = Load(qf, {PrimExpr(ii), PrimExpr(x0) + PrimExpr(jj) + off});
  PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                   {PrimExpr(ii), PrimExpr(jj)});
  Stmt taps = MakeFor(ii, I64(pc), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
  // kx a loop, as the static schedule's taps: with every tap unrolled LLVM
  // hoisted all pc * kh * kw weight broadcasts out of the tile loop and
  // spilled them (100 vectors for 4 channels of 5 x 5), one reload per FMA.
  taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
  taps = MakeFor(ky, I64(cv_.kh), ForKind::kUnrolled, taps);
  return FlatTileLoop(xt, x0, acc, pc, nr, tf, span, taps);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
