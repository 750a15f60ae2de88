// SymConvKernel's depthwise paths: each channel's padded copy and its tiles
// of output rows.
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

namespace kiln {
namespace tir {
namespace symconv {

Stmt SymConvKernel::PerChannel(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp) {
  Var o = MakeVar("o"), yt = MakeVar("yt"), y = MakeVar("y");
  PrimExpr nyt = arith::Simplify(Div(ho + I64(srows_ - 1), I64(srows_)));
  if (cv_.sw > 1) {
    wph_ = arith::Simplify(Div(wp + I64(cv_.sw - 1), I64(cv_.sw)));
    // One channel's, allocated in the parallel loop (the workspace cache
    // of each thread reuses it): it stays in cache between the copy and
    // the tiles. (All channels' phases in one buffer made the copy cost
    // twice the tiles: the whole padded input written to memory and read
    // back.)
    qs_ = nest::Float32Buffer(cv_.data->name + "_phases", {hp, arith::Simplify(wph_ * I64(cv_.sw))}, "global");
    phased_ = true;
  }
  Stmt rows = Tiles(PrimExpr(o), PrimExpr(y), wo, scols_);
  rows = std::make_shared<LetStmtNode>(y, Min(PrimExpr(yt) * I64(srows_), ho - I64(srows_)), rows);
  rows = MakeFor(yt, nyt, ForKind::kSerial, rows);
  const ForKind kind = threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial;
  if (!phased_) return MakeFor(o, I64(cv_.o), kind, Seq({PackChannel(PrimExpr(o), hp, wp), rows}));
  phased_ = false;
  return MakeFor(o, I64(cv_.o), kind, std::make_shared<AllocateNode>(qs_, Seq({PackPhases(PrimExpr(o), hp), rows})));
}

void SymConvKernel::BeginSpatial(const SpatialTile& t) {
  spatial_ = true;
  srows_ = t.rows;
  scols_ = t.cols;
}

PrimExpr SymConvKernel::FitsSpatial(const PrimExpr& ho, const PrimExpr& wo) const {
  // Rows of 33 to 55 columns take tiles of 16 (at most 48 + 8 columns
  // computed), not two of 32 (64).
  PrimExpr cols = Ge(wo, I64(scols_));
  if (scols_ == 32) cols = MakeBinary(TirKind::kOr, Ge(wo, I64(56)), MakeBinary(TirKind::kEQ, wo, I64(32)));
  return MakeBinary(TirKind::kAnd, Ge(ho, I64(srows_)), cols);
}

Stmt SymConvKernel::SpatialTileLoop(const PrimExpr& ho, const PrimExpr& wo) {
  Var t = MakeVar("t"), o0 = MakeVar("o0"), y = MakeVar("y");
  PrimExpr nyt = arith::Simplify(Div(ho + I64(srows_ - 1), I64(srows_)));
  Stmt row = Tiles(PrimExpr(o0), PrimExpr(y), wo, scols_);
  row = std::make_shared<LetStmtNode>(y, Min(Mod(PrimExpr(t), nyt) * I64(srows_), ho - I64(srows_)), row);
  row = std::make_shared<LetStmtNode>(o0, Div(PrimExpr(t), nyt), row);
  return MakeFor(t, I64(cv_.o) * nyt, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, row);
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
