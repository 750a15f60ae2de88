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
    Stmt t = StridedPlaneRow(o0, pq, tf, span, *it, FlatTiles::kFirst, /*prefetch=*/true);
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
