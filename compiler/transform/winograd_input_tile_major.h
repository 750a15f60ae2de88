// The tile-major loop layout of one pass of the static F(m x m, 3x3) input
// transform (winograd_conv2d.cc's InputTransform, static sizes, unpadded
// input). Pass i of channel c (row i of B^T) works as before on each tile
// row: the row sum r[q] = sum_a B^T[i][a] X[n, c, m ty + a - pt, q - pl]
// into a local row buffer. Then, instead of storing V's alpha outputs in a
// loop over the tile row's tw tiles (14 or 7 lanes at ResNet-18's 56^2 and
// 28^2, which LLVM splits into 8 + 4 + 2 with the last two scalar, each
// output reading 3-4 gathers of the row at stride m), the row's alpha
// stride-m phases go into a buffer indexed by the tile,
//   ph[b T + t] = row[m tx + b],  t = (n th + ty) tw + tx,
// and after the channel's last tile row one vectorized loop over all of
// its T tiles stores every output as full contiguous vectors:
//   V[alpha i + j, c, t] = sum_b B^T[j][b] ph[b T + t].
// Same operations in the same order: bit-identical to the row layout.
// Measured by hand in TIR first (benchmarks/results/2026-11-29-tune21,
// kernels alone, 1 thread): winograd_input_f4x3 at 64 x 56^2 125 -> 92 us,
// at 128 x 28^2 80 -> 51 us.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_TILE_MAJOR_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_TILE_MAJOR_H_

#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace transform {

// The phase buffer (alpha T floats a pass) is a stack buffer: the layout
// is taken while it stays within half a 48 KiB L1 data cache, so that the
// buffer and the row being read stay in L1 (ResNet-18's 56^2 at F(4x4):
// 196 tiles, 4.6 KiB).
constexpr int64_t kTileMajorInputMaxBytes = 24 * 1024;
inline bool TileMajorInputFits(int64_t tiles, int alpha) {
  return tiles > 0 && tiles * alpha * 4 <= kTileMajorInputMaxBytes;
}

// Pass i of channel c: loops n < N, ty < TH around `row` (allocated per
// tile row, filled by `fill_row`), the phase stores, then the loop over
// the T = N TH TW tiles storing V[alpha i + j, c, t] into `v`.
ir::Stmt TileMajorInputPass(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row, const ir::Var& c,
                            const ir::Var& n, const ir::Var& ty, const ir::PrimExpr& N, const ir::PrimExpr& TH,
                            const ir::PrimExpr& TW, int64_t tiles, int m, int i,
                            const std::vector<std::vector<double>>& bt);

// Symbolic batch (static planes). The channel's T = N th tw tiles are a
// run-time count, so the phase buffer takes groups of G whole images
// (G the most that fit kTileMajorInputMaxBytes): per group, the rows of
// its images into ph, then one loop over the group's tiles storing every
// output (contiguous in V), of static extent for a whole group and of the
// run-time count of the last group's tiles otherwise (masked vectors).
// Same sums in the same order as the row layout: bit-identical. MTCNN ONet
// at 17 x 48 x 48 (32 -> 64 at 23^2, 36 tiles an image, G = 28), 1 thread,
// kernel minima, median of 3 alternating rounds: 257 -> 223 us (pinned
// build 219). With one loop per output stream instead (the row layout's
// per-stream loops, winograd_conv2d.cc) it took 246-248 us.
int64_t TileMajorInputGroup(int64_t tiles_per_image, int alpha);

// G for images of `tiles_per_image` tiles (0: not even one image fits).
// Pass i of channel c over a symbolic batch N of images of th tw tiles
// each, in groups of `group` images; `n` is the image that `fill_row`
// reads (bound here), `ty` its tile row.
ir::Stmt TileMajorInputPassGrouped(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row,
                                   const ir::Var& c, const ir::Var& n, const ir::Var& ty, const ir::PrimExpr& N,
                                   int64_t th, int64_t tw, int64_t group, int m, int i,
                                   const std::vector<std::vector<double>>& bt);

// Images of fewer tiles than this: a last group of fewer tiles in all (a
// batch of one or a few) goes one image at a time instead, each extent
// static and each output stream a loop of its own. The group's loop over
// its run-time count of tiles took MTCNN ONet's 64 -> 64 at 10^2 (4 tiles
// an image) 7.7 us at batch 1, against 1.7 for the static batch-1 kernel
// and 2.2 one image at a time (kernel minima, 1 thread). Images of 16
// tiles or more keep the groups (ONet's 32 -> 64 at 23^2, 36 tiles, batch
// 1: 13.0-13.2 us grouped, 14.5 one at a time with a loop per stream), as
// do last groups of 16 tiles or more (ONet's 64 -> 64 at batch 17: 27 us
// grouped, 32 one at a time).
constexpr int64_t kTileMajorInputMinTiles = 16;

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_TILE_MAJOR_H_
