// SymConvKernel's column-shifted planes: unpadded stride-1 convolutions on
// narrow rows whose tiles write the output plane straight from their
// accumulators. (conv_symbolic_kernel.h declares the class and says when;
// conv_symbolic_schedule.h says what the kernel computes.)
#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_symbolic_kernel.h"

namespace kiln {
namespace tir {
namespace symconv {

bool SymConvKernel::ShiftedPlanesApply() const {
  const int64_t* ch = ConstInt(cv_.data->shape[1]);
  if (ch == nullptr || *ch * cv_.kw > cv_.o) return false;
  std::vector<Stmt> epi;
  Buffer out;
  std::vector<PrimExpr> idx;
  return FlatEpilogue(MakeVar("j"), &epi, &out, &idx);
}

Stmt SymConvKernel::ShiftedPlanes(const PrimExpr& ho, const PrimExpr& wo) {
  const Buffer& x = cv_.data;
  shifted_j_ = MakeVar("j");
  FlatEpilogue(shifted_j_, &shifted_epilogue_, &shifted_out_, &shifted_out_idx_);
  // The rows the taps read: Ho + (KH - 1) * dh of X's (all of them).
  PrimExpr rows = arith::Simplify(ho + I64((cv_.kh - 1) * cv_.dh));
  PrimExpr ch = x->shape[1];
  Buffer s = nest::Float32Buffer(x->name + "_shifted", {ch, I64(cv_.kw), arith::Simplify(rows * wo)}, "global");
  Var pc = MakeVar("pc"), pk = MakeVar("pk"), pa = MakeVar("pa"), pb = MakeVar("pb");
  Stmt copy = MakeFor(pb, wo, ForKind::kVectorized,
                      Store(s, Load(x, {NImage(), PrimExpr(pc), PrimExpr(pa), PrimExpr(pb) + PrimExpr(pk) * I64(cv_.dw)}),
                            {PrimExpr(pc), PrimExpr(pk), PrimExpr(pa) * wo + PrimExpr(pb)}));
  Stmt pack = MakeFor(pc, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial,
                      MakeFor(pk, I64(cv_.kw), ForKind::kSerial, MakeFor(pa, rows, ForKind::kSerial, copy)));
  const int64_t mr = mr_;
  mr_ = PlaneChannels();
  wph_ = wo;
  shifted_ = true;
  Var g = MakeVar("g");
  PrimExpr o0 = PrimExpr(g) * I64(mr_);
  PrimExpr span = arith::Simplify(ho * wo);
  // The widest tile width that the span holds (at least the narrowest:
  // the caller takes spans of kTileWidths[2] columns and more).
  Stmt tiles;
  for (auto it = std::rbegin(kTileWidths); it != std::rend(kTileWidths); ++it) {
    Stmt t = StridedPlaneSpan(o0, s, Buffer(), span, *it);
    tiles = tiles ? std::make_shared<IfThenElseNode>(Fits(span, *it), t, tiles) : t;
  }
  shifted_ = false;
  Stmt groups = MakeFor(g, I64(cv_.o / mr_), threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, tiles);
  mr_ = mr;
  return std::make_shared<AllocateNode>(s, Seq({pack, groups}));
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
