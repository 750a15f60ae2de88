#include "compiler/transform/winograd_input_tile_major.h"

#include <utility>

#include "compiler/transform/winograd_ir_util.h"

namespace kiln {
namespace transform {

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers
using ir::PrimExpr;

ir::Stmt TileMajorInputPass(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row, const ir::Var& c,
                            const ir::Var& n, const ir::Var& ty, const PrimExpr& N, const PrimExpr& TH,
                            const PrimExpr& TW, int64_t tiles, int m, int i,
                            const std::vector<std::vector<double>>& bt) {
  const int al = static_cast<int>(bt.size());
  ir::Buffer ph = MakeBuffer("ph", {I64(al * tiles)}, "local");
  // The phases of the tile row: alpha stores of the row's stride-m
  // columns, each at its tiles' places.
  ir::Var tx = LoopVar("tx");
  const PrimExpr t_row = (PrimExpr(n) * TH + PrimExpr(ty)) * TW + PrimExpr(tx);
  std::vector<ir::Stmt> phases;
  for (int b = 0; b < al; ++b)
    phases.push_back(ir::Store(ph, ir::Load(row, {PrimExpr(tx) * I64(m) + I64(b)}), {I64(b * tiles) + t_row}));
  ir::Stmt per_row = Alloc(row, ir::Seq({fill_row, Loop(tx, TW, ir::ForKind::kVectorized, ir::Seq(phases))}));
  ir::Stmt rows = Loop(n, N, ir::ForKind::kSerial, Loop(ty, TH, ir::ForKind::kSerial, per_row));
  // The channel's outputs, all tiles at once.
  ir::Var t = LoopVar("t");
  std::vector<ir::Stmt> stores;
  for (int j = 0; j < al; ++j) {
    std::vector<std::pair<double, PrimExpr>> terms;
    for (int b = 0; b < al; ++b) terms.emplace_back(bt[j][b], ir::Load(ph, {I64(b * tiles) + PrimExpr(t)}));
    stores.push_back(ir::Store(v, LinearSum(terms), {I64(al * i + j), PrimExpr(c), PrimExpr(t)}));
  }
  ir::Stmt out = Loop(t, tiles, ir::ForKind::kVectorized, ir::Seq(stores));
  return Alloc(ph, ir::Seq({rows, out}));
}

int64_t TileMajorInputGroup(int64_t tiles_per_image, int alpha) {
  if (tiles_per_image <= 0) return 0;
  return kTileMajorInputMaxBytes / (tiles_per_image * alpha * 4);
}

namespace {

// Pass i of channel c for image `image` alone (symbolic batch): its rows'
// phases into a buffer of its th tw tiles, then one loop per output stream
// over them. Every extent is static, so LLVM keeps the phases in registers
// as in the static kernel; with the alpha streams in one loop, a symbolic
// C * T apart, its vectorizer could not prove them independent and stored
// every output as a scalar (MTCNN ONet's 64 -> 64 at 10^2, 4 tiles an
// image, batch 1, kernel minima: 4.7 us, 2.0 with a loop per stream).
ir::Stmt SmallImagePass(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row, const ir::Var& c,
                        const ir::Var& n, const ir::Var& ty, const PrimExpr& image, int64_t th, int64_t tw, int m,
                        int i, const std::vector<std::vector<double>>& bt) {
  const int al = static_cast<int>(bt.size());
  const int64_t tpi = th * tw;
  ir::Buffer ph = MakeBuffer("ph_image", {I64(al * tpi)}, "local");
  ir::Var tx = LoopVar("tx");
  const PrimExpr t_row = PrimExpr(ty) * I64(tw) + PrimExpr(tx);
  std::vector<ir::Stmt> phases;
  for (int b = 0; b < al; ++b)
    phases.push_back(ir::Store(ph, ir::Load(row, {PrimExpr(tx) * I64(m) + I64(b)}), {I64(b * tpi) + t_row}));
  ir::Stmt per_row = Alloc(row, ir::Seq({fill_row, Loop(tx, tw, ir::ForKind::kVectorized, ir::Seq(phases))}));
  std::vector<ir::Stmt> parts{Let(n, image, Loop(ty, th, ir::ForKind::kSerial, per_row))};
  for (int j = 0; j < al; ++j) {
    ir::Var t = LoopVar("t");
    std::vector<std::pair<double, PrimExpr>> terms;
    for (int b = 0; b < al; ++b) terms.emplace_back(bt[j][b], ir::Load(ph, {I64(b * tpi) + PrimExpr(t)}));
    parts.push_back(Loop(t, tpi, ir::ForKind::kVectorized,
                         ir::Store(v, LinearSum(terms), {I64(al * i + j), PrimExpr(c), image * I64(tpi) + PrimExpr(t)})));
  }
  return Alloc(ph, ir::Seq(parts));
}

}  // namespace

ir::Stmt TileMajorInputPassGrouped(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row,
                                   const ir::Var& c, const ir::Var& n, const ir::Var& ty, const PrimExpr& N,
                                   int64_t th, int64_t tw, int64_t group, int m, int i,
                                   const std::vector<std::vector<double>>& bt) {
  const int al = static_cast<int>(bt.size());
  const int64_t tpi = th * tw, span = group * tpi;  // tiles of one image, of a group
  ir::Buffer ph = MakeBuffer("ph", {I64(al * span)}, "local");
  ir::Var gi = LoopVar("ng"), nl = LoopVar("nl"), count = LoopVar("images");
  // The group's images: n = G gi + nl, nl < count.
  ir::Var tx = LoopVar("tx");
  const PrimExpr t_row = (PrimExpr(nl) * I64(th) + PrimExpr(ty)) * I64(tw) + PrimExpr(tx);
  std::vector<ir::Stmt> phases;
  for (int b = 0; b < al; ++b)
    phases.push_back(ir::Store(ph, ir::Load(row, {PrimExpr(tx) * I64(m) + I64(b)}), {I64(b * span) + t_row}));
  ir::Stmt per_row = Alloc(row, ir::Seq({fill_row, Loop(tx, tw, ir::ForKind::kVectorized, ir::Seq(phases))}));
  ir::Stmt rows = Loop(nl, PrimExpr(count), ir::ForKind::kSerial,
                       Let(n, PrimExpr(gi) * I64(group) + PrimExpr(nl), Loop(ty, th, ir::ForKind::kSerial, per_row)));
  // Each stream over the group's tiles: a static count for a whole group,
  // count * tpi for the last one. (A run-time extent is a loop of masked
  // vectors, kernel_emitter.cc.)
  auto stream_loops = [&](const PrimExpr& extent) {
    std::vector<ir::Stmt> loops;
    ir::Var t = LoopVar("t");
    for (int j = 0; j < al; ++j) {
      std::vector<std::pair<double, PrimExpr>> terms;
      for (int b = 0; b < al; ++b) terms.emplace_back(bt[j][b], ir::Load(ph, {I64(b * span) + PrimExpr(t)}));
      loops.push_back(ir::Store(v, LinearSum(terms), {I64(al * i + j), PrimExpr(c), PrimExpr(gi) * I64(span) + PrimExpr(t)}));
    }
    return Loop(t, extent, ir::ForKind::kVectorized, ir::Seq(loops));
  };
  std::vector<ir::Stmt> streams{rows, If(Bin(ir::TirKind::kEQ, PrimExpr(count), I64(group)), stream_loops(I64(span)),
                                         stream_loops(PrimExpr(count) * I64(tpi)))};
  ir::Stmt grouped = Alloc(ph, ir::Seq(streams));
  // A last group of fewer than kTileMajorInputMinTiles tiles (a batch of
  // one or a few small images): its images one at a time, every extent
  // static, each stream a loop of its own (SmallImagePass).
  if (tpi < kTileMajorInputMinTiles) {
    ir::Var one = LoopVar("nl");
    ir::Stmt singles = Loop(one, PrimExpr(count), ir::ForKind::kSerial,
                            SmallImagePass(v, row, fill_row, c, n, ty, PrimExpr(gi) * I64(group) + PrimExpr(one), th,
                                           tw, m, i, bt));
    grouped = If(Bin(ir::TirKind::kLT, PrimExpr(count) * I64(tpi), I64(kTileMajorInputMinTiles)), singles, grouped);
  }
  const PrimExpr groups = Bin(ir::TirKind::kFloorDiv, N + I64(group - 1), I64(group));
  const PrimExpr left = N - PrimExpr(gi) * I64(group);
  return Loop(gi, groups, ir::ForKind::kSerial, Let(count, Bin(ir::TirKind::kMin, I64(group), left), grouped));
}

}  // namespace transform
}  // namespace kiln
