// The Winograd F(m x m, 3x3) input transform of winograd-conv2d for a
// symbolic height or width: V[alpha i + j, c, t] = sum_ab B^T[i][a]
// d[a][b] B^T[j][b], d the alpha x alpha patch of tile t (tile row ty,
// column tx of image n: t = (n th + ty) tw + tx) of the input padded by
// pad_top rows and pad_left columns, zeros past it on every side.
//
// It reads the unpadded input, so the convolution needs no pad kernel, and
// works rows first as the static kernel does (winograd_conv2d.cc), per
// block of 16 tile columns instead of per whole row (whose length is not
// known at compile time). For pass i (row i of B^T), tile row ty and the
// block's first tile x0:
//   1. row[q] = sum_a B^T[i][a] X[n, c, m ty + a - pt, m x0 - pl + q] for
//      the block's 16 m + 2 columns, kept as 2 phases (ph[p][k] =
//      row[2 k + p]: even and odd columns). Where the block's rows and
//      columns all lie inside X, one static loop with loads 2 apart; where
//      its loads stay inside X's memory, the same loop with the columns
//      outside [0, W) selected to zero (and input rows outside [0, H) from
//      a clamped row); else a plain row of zeros, the columns inside X
//      added (a loop over a run-time extent; input rows outside X left out
//      of the sum under a test each), then split into the phases.
//   2. V[alpha i + j, c, t0 + x0 + l] = sum_b B^T[j][b] row[m l + b], the
//      loads ph[b % 2][m / 2 l + b / 2] (F(4x4): 2 apart; F(2x2): 1
//      apart, each phase then filled by two overlapping loops of 16 so that
//      every load reads one store; in blocks of 8 or 4 lanes by one loop of
//      twice the lanes, one store holding both loads): a static loop of 16 lanes
//      that the code generator emits as explicit vectors. (Loads m apart,
//      which it leaves to LLVM, came out as scalar code: LLVM unrolled the
//      16 iterations before its loop vectorizer saw them.)
// Step 1 is one loop for all alpha passes of a block (phase buffer
// alpha x 2 x len), so the block's input columns are loaded and split into
// phases once, not alpha times, and the 33rd column's scalar tail runs
// once; step 2 stays a loop a pass. Same sums in the same order:
// bit-identical. Sums of the input transforms' trace medians, 1 thread,
// median of alternating rounds: MTCNN PNet at 1 x 240 x 320 (16 -> 32 at
// 117 x 157) 197 -> 128 us (pinned 106); NudeNet 320n at 2 x 160 x 160
// 1285 -> 853 us (pinned 441).
// A row of tw tiles takes ceil(tw / 16) blocks; the last block's lanes
// past the row land on the next rows' first tiles, which this pass stores
// again later (rows go in order within a pass). The block whose lanes
// would pass V's end (the last tile row of a channel) computes into a
// stack tile and copies its tw - x0 lanes. (YOLOv8n's 40^2 layers, 10
// tiles a row, with blocks of 8 and 4 tiles instead took 1.7x as long: the
// cost of a block is mostly its own, not its lanes'.) A row of at most 8
// tiles takes one block of 8 lanes, of at most 4 one of 4
// (kNarrowBlockTiles): still one block a row, with fewer columns to fill.
// The column test of the blocks that read past a row compares floats, and
// the column pass is one unrolled loop over the passes, so that the code
// generator emits both as explicit vectors (without, LLVM built the
// stride-2 loads and F(2x2)'s stores lane by lane). NudeNet 320n at 2 x 3
// x 160 x 160, trace medians, 1 thread: F(2x2) input transforms 415 -> 259
// us (pinned, with its pad kernels, 150) before the one-loop phases of the
// narrow blocks (winograd_input_rows.cc).
//
// The symbolic kernel before this one (F(2x2)'s too until 2026-11-29) read
// a padded input (a pad kernel first) tile by tile, each tile's loads m
// apart, in blocks of 16 and 4 tiles and then one tile at a time. 32 -> 32
// at 40^2 (10 tiles a row), kernel minima at 1 thread: 81-87 us before,
// 59-63 us now; the static kernel (one whole row, static extents) 29 us.
//
// The channel loop is outermost (the default schedule parallelizes it);
// within a channel the images, tile rows and blocks go in order, each block
// doing the alpha passes in turn.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_ROWS_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_ROWS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// Rows of at most kNarrowestBlockTiles tiles take one block of that many
// lanes a row, rows of at most kNarrowBlockTiles one of that many, instead
// of a block of 16 (most of whose lanes would compute tiles of the next
// rows, stored again later). Layers alone (the input transform's kernel
// minimum, kiln-bench --profile, 3 alternating rounds, 1 thread, 2 images,
// symbolic batch, height and width):
// 64 -> 64 at 20^2 F(4x4) (5 tiles a row) 51-53 -> 28 us; 128 -> 128 at
// 10^2 F(2x2) (5 a row) 47-54 -> 43; at 5^2 (3 a row) 29 -> 24 with 8
// lanes, 17 with 4.
constexpr int64_t kNarrowestBlockTiles = 4;
constexpr int64_t kNarrowBlockTiles = 8;

struct RowBlockInputSpec {
  int m = 0, alpha = 0;                 // F(m x m, 3x3), alpha = m + 2
  std::vector<std::vector<double>> bt;  // B^T (alpha x alpha)
  int64_t c = 0;                        // input channels
  ir::PrimExpr n, h, w;                 // the input (caller's expressions)
  ir::PrimExpr th, tw;                  // tile rows and columns (caller's expressions)
  int64_t pad_top = 0, pad_left = 0;    // the convolution's padding before
};

// The kernel (parameters X (N, C, H, W), V (alpha^2, C, N th tw), then the
// symbolic values no buffer binds) and those values as the caller's
// expressions (the call's tir_vars). The kernel is opaque.
struct RowBlockInputKernel {
  ir::PrimFunc f;
  std::vector<ir::PrimExpr> tir_vars;
};

Result<RowBlockInputKernel> BuildRowBlockInputTransform(const std::string& name, const RowBlockInputSpec& spec);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_INPUT_ROWS_H_
