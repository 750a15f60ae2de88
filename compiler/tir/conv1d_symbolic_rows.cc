// SymConvKernel's short 1-D rows: a padded stride-1 convolution of one
// output row (a lifted conv1d) whose symbolic width is at most 48 columns
// at run time, in one tile per group of output channels that holds the row.
// (conv_symbolic_kernel.h declares the class; conv_symbolic_schedule.h says
// what the kernel computes.)
#include "compiler/tir/conv_symbolic_kernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace symconv {

bool SymConvKernel::ShortRowsApply(const PrimExpr& ho) const {
  const int64_t* h = ConstInt(ho);
  const int64_t* xh = ConstInt(cv_.data->shape[2]);
  return cv_.guarded && h != nullptr && *h == 1 && xh != nullptr && *xh == 1 && cv_.kh == 1 && cv_.pt == 0 &&
         cv_.sh == 1 && cv_.sw == 1 && !spatial_ok_ && !flat_ && ShortRowChannels() > 0;
}

int64_t SymConvKernel::ShortRowChannels() const {
  for (int64_t r : kShortRowChannels) {
    if (cv_.o % r == 0) return r;
  }
  return 0;
}

Stmt SymConvKernel::ShortRows(const PrimExpr& wo, const PrimExpr& wp) {
  // The narrowest tile that holds the row: 8 or 16 columns of
  // ShortRowChannels() channels, 24 to 48 of half as many (16 accumulator
  // vectors up to 32 columns, 24 at 40 and 48).
  const int64_t channels = ShortRowChannels();
  Stmt chain = ShortRowTiles(wo, wp, kShortRowWidth, channels / 2);
  for (int64_t nr = kShortRowWidth - 8; nr >= 8; nr -= 8) {
    chain = std::make_shared<IfThenElseNode>(Lt(wo, I64(nr + 1)), ShortRowTiles(wo, wp, nr, nr <= 16 ? channels : channels / 2),
                                             chain);
  }
  return chain;
}

Stmt SymConvKernel::ShortRowTiles(const PrimExpr& wo, const PrimExpr& wp, int64_t nr, int64_t mr) {
  const auto& L = cv_.loops;
  const int64_t reach = (cv_.kw - 1) * cv_.dw;
  // The padded row, wide enough for one nr-column tile from column 0: the
  // columns past Wp (wo < nr) are zero, and the tile's columns from wo on
  // are computed for nothing and never copied out.
  PrimExpr ch = cv_.data->shape[1];
  Buffer q = nest::Float32Buffer(cv_.data->name + "_short_row", {ch, I64(nr + reach)}, "global");
  Var pc = MakeVar("pc"), b = MakeVar("pb"), b2 = MakeVar("pb2");
  Stmt zero = MakeFor(b, I64(nr + reach), ForKind::kVectorized,
                      Store(q, FloatImm(DType::Float32(), 0.0), {PrimExpr(pc), PrimExpr(b)}));
  Stmt copy = MakeFor(b2, Min(cv_.data->shape[3], wp - I64(cv_.pl)), ForKind::kVectorized,
                      Store(q, Load(cv_.data, {NImage(), PrimExpr(pc), I64(0), PrimExpr(b2)}),
                            {PrimExpr(pc), PrimExpr(b2) + I64(cv_.pl)}));
  // Serial: a few dozen floats a channel, less than a fork of the threads.
  Stmt pack = MakeFor(pc, ch, ForKind::kSerial, Seq({zero, copy}));
  // Tiles of mr output channels x nr columns (in parallel), reduced over
  // (c, kx) in the nest's order into plane_out, then copied out through the
  // epilogue.
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(mr);
  Var xt = MakeVar("rt"), x0 = MakeVar("rx0");
  Buffer acc = nest::Float32Buffer("acc", {I64(mr), I64(nr)}, "local");
  Var ii = MakeVar("ii"), jj = MakeVar("jj"), c = MakeVar("c"), kx = MakeVar("kx");
  VarMap map;
  map[L[0]->loop_var.get()] = PrimExpr(n_);
  map[L[1]->loop_var.get()] = o0 + PrimExpr(ii);
  map[L[4]->loop_var.get()] = PrimExpr(c);
  map[L[5]->loop_var.get()] = I64(0);
  map[L[6]->loop_var.get()] = PrimExpr(kx);
  std::vector<PrimExpr> widx = WeightIndex(o0, mr, PrimExpr(ii), map);
  PrimExpr chan = arith::Simplify(Substitute(cv_.x_load->indices[1], map));
  PrimExpr xv = Load(q, {chan, PrimExpr(jj) + PrimExpr(kx) * I64(cv_.dw)});
  PrimExpr cur = Load(acc, {PrimExpr(ii), PrimExpr(jj)});
  DType f32 = DType::Float32();
  Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{Load(cv_.weight, widx), xv, cur})),
                   {PrimExpr(ii), PrimExpr(jj)});
  Stmt taps = MakeFor(ii, I64(mr), ForKind::kUnrolled, MakeFor(jj, I64(nr), ForKind::kVectorized, fma));
  taps = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, taps);
  taps = MakeFor(c, I64(cv_.ki), ForKind::kSerial, taps);
  Buffer tf = nest::Float32Buffer("plane_out", {I64(mr), I64(nr)}, "global");
  Stmt tile = FlatTileLoop(xt, x0, acc, mr, nr, tf, I64(nr), taps, FlatTiles::kLast);
  Stmt rows = PlaneRowsOut(o0, mr, tf, I64(1), wo, I64(nr));
  Stmt body = std::make_shared<AllocateNode>(tf, Seq({tile, rows}));
  Stmt groups = MakeFor(g, I64(cv_.o / mr), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, body);
  return std::make_shared<AllocateNode>(q, Seq({pack, groups}));
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
