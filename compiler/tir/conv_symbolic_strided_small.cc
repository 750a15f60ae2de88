// SymConvKernel's strided phase planes on spans of at most one widest tile
// (StridedPlanes on small output planes): one tile from column 0 per group
// of channels. (conv_symbolic_kernel.h declares the class.)
//
// A stride-2 3 x 3 convolution to a 5 x 5 output reads phase planes of
// Wph = 6 columns: a span of (5 - 1) * 6 + 5 = 29 columns. PlaneGroups cut
// it into tiles of 16 (the widest that fits the span), the second moved
// back to end at the span's end: two passes over every weight per group of
// 8 channels, each of 8 accumulators (a broadcast per FMA, too few chains to
// hide the FMA latency). The pinned schedule computes such a plane as one
// tile of 8 x 32 columns reading zeros past the plane's end; so do these
// tiles now: each phase plane gets kTileWidths[0] zeroed columns after it
// (ZeroPhaseTails), so a tile of nr columns from column 0 reads initialized
// memory up to nr - 1 past the span, and the planes' rows out read only the
// span's points. A packed weight read by blocks (mr_ channels a block) is
// prefetched as the channel tiles prefetch it (conv_symbolic_kernel.cc):
// each group reads its 128 x 9 x 8 floats (36 KiB) once, and without the
// hints the broadcasts waited on them (8 x 32 tiles at 5 x 5, 128 -> 256,
// batch 2: about 250 us against the pinned kernel's 163 with the same
// tiles and its hints).
#include "compiler/tir/conv_symbolic_kernel.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace symconv {

Stmt SymConvKernel::ZeroPhaseTails(const PrimExpr& c, const PrimExpr& plane_size) {
  Var p = MakeVar("zp"), z = MakeVar("zz");
  Stmt zero = Store(qs_, FloatImm(DType::Float32(), 0.0), {c, PrimExpr(p), plane_size + PrimExpr(z)});
  return MakeFor(p, I64(cv_.sh * cv_.sw), ForKind::kSerial, MakeFor(z, I64(kTileWidths[0]), ForKind::kVectorized, zero));
}

Stmt SymConvKernel::SmallSpanTile(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span,
                                   int64_t nr) {
  const auto& L = cv_.loops;
  DType f32 = DType::Float32();
  Var xt = MakeVar("ft" + std::to_string(nr)), x0 = MakeVar("fx0_" + std::to_string(nr));
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
  // Tap (ky, kx) reads phase plane (ky * dh % sh) * sw + kx * dw % sw,
  // (ky * dh / sh) rows of Wph and (kx * dw / sw) columns on.
  PrimExpr kyd = PrimExpr(ky) * I64(cv_.dh), kxd = PrimExpr(kx) * I64(cv_.dw);
  PrimExpr plane = Mod(kyd, I64(cv_.sh)) * I64(cv_.sw) + Mod(kxd, I64(cv_.sw));
  PrimExpr off = Div(kyd, I64(cv_.sh)) * wph_ + Div(kxd, I64(cv_.sw));
  PrimExpr xv = Load(pq, {chan, plane, PrimExpr(x0) + PrimExpr(jj) + off});
  PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                   {PrimExpr(ii), PrimExpr(jj)});
  Stmt taps = MakeFor(ii, I64(mr_), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
  taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
  taps = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, taps);
  if (cv_.wblock == mr_) {
    // The block's row of input channel c (mr_ * KH * KW floats) is one
    // stream over c: hinted kPrefetchAheadBytes on, one hint a line,
    // clamped to the weight's last row.
    const int64_t row_floats = mr_ * cv_.kh * cv_.kw, rows_total = cv_.o / mr_ * cv_.ki;
    const int64_t ahead_rows = (conv::kPrefetchAheadBytes + 4 * row_floats - 1) / (4 * row_floats);
    PrimExpr row = Min(Div(o0, I64(mr_)) * I64(cv_.ki) + PrimExpr(c) + I64(ahead_rows), I64(rows_total - 1));
    std::vector<Stmt> hints;
    for (int64_t f = 0; f < row_floats && f < 16 * conv::kMaxUnrolledPrefetchHints; f += 16) {
      PrimExpr at = Load(cv_.weight, {I64(0), row, I64(0), I64(0), I64(f)});
      hints.push_back(std::make_shared<EvaluateNode>(
          PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{at}))));
    }
    hints.push_back(taps);
    taps = Seq(hints);
  }
  taps = MakeFor(c, I64(cv_.ki), ForKind::kSerial, taps);
  return FlatTileLoop(xt, x0, acc, mr_, nr, tf, span, taps, FlatTiles::kFirst);
}

Stmt SymConvKernel::StridedSmallSpan(const PrimExpr& ho, const PrimExpr& wo, const Buffer& pq, const Stmt& wider) {
  const int64_t widest = kTileWidths[0];
  PrimExpr span = arith::Simplify((ho - I64(1)) * wph_ + wo);
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(mr_);
  Buffer tf = nest::Float32Buffer("plane_out", {I64(mr_), I64(widest)}, "local");
  // The narrowest width that holds the span (built from the widest: the
  // first test that holds picks it).
  Stmt tiles;
  int64_t narrower = 0;
  for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
    Stmt t = SmallSpanTile(o0, pq, tf, span, *it);
    tiles = tiles ? std::make_shared<IfThenElseNode>(Lt(span, I64(narrower + 1)), tiles, t) : t;
    narrower = *it;
  }
  Stmt rows = PlaneRowsOut(o0, mr_, tf, ho, wo, wph_);
  Stmt body = std::make_shared<AllocateNode>(tf, Seq({tiles, rows}));
  Stmt small = MakeFor(g, I64(cv_.o / mr_), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
  return std::make_shared<IfThenElseNode>(Lt(span, I64(widest + 1)), small, wider);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
