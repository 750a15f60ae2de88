// A copy-free depthwise kernel of column stride 2 for nests with a symbolic
// height, width or batch: the direct kernel of the static schedule
// (depthwise_direct.h) with run-time extents. ScheduleSymbolicConvs
// (conv_symbolic_schedule.h) gathers the nest's epilogue and runs it, chosen
// at run time, where the banded kernel (depthwise_banded.h) would run.
//
// The banded kernel first copies each channel's rows into zero-padded phase
// planes; for 3x3/2 planes wide enough for a few vectors that copy is about
// as long as the FMAs (PP-OCRv4's detector at 640^2: 32 ch 320^2 -> 160^2,
// 48 ch 160^2 -> 80^2, 96 ch 80^2 -> 40^2, where the pinned build's direct
// kernel reads the input itself). Here, as in the static kernel, the taps
// read the input: the 16 outputs x0..x0+15 of tap kx read input columns
// 2 x0 + kx - pl + 2 j, one stride-2 vector load.
// - Columns: the inside ones [xa, xb) (every tap inside the input's width;
//   xb a run-time value) in tiles of two vectors, the last tile moved back
//   to end at xb (or one vector, moved back, where 1..16 columns are left):
//   those columns computed and stored twice, the same values. 3-wide
//   windows with left padding 1 start the first vector at column 0, its
//   kx = 0 taps (input column 2j - 1) taken from kx = 2's loads (column
//   2j + 1) into a second accumulator added one lane up (lane 0 gets the
//   padding's zero), as the static kernel does; other left edges and the
//   right edge's columns [xb, wo) (one for an odd width) are computed one by
//   one, each tap under its bounds test.
// - Rows: the inside ones [ya, yb) in tiles of 4, the last moved back; the
//   rows whose taps leave the input (the top padding's, and the last row of
//   an odd height) single-row tiles with each tap row under its test.
// - The epilogue in the tiles' stores (StoresAt), as the banded kernel's.
// Taken at run time where the inside columns fill a vector and the inside
// rows a tile (3x3/2: output rows of 17 columns and 4 rows and more; rows of
// 17 to 32 one tile of two overlapping vectors); smaller planes keep the
// banded kernel.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_STRIDED_SYMBOLIC_H_
#define KILN_COMPILER_TIR_DEPTHWISE_STRIDED_SYMBOLIC_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/depthwise_banded.h"

namespace kiln {
namespace tir {
namespace dw {

// Whether the kernel can take `d` at some run-time size (static): column
// stride 2 and windows at most 3 wide (wider windows make a stride-2 load
// per tap column: the static kernel measured 5x5/2 slower than the band).
bool StridedDirectFits(const DepthwiseNest& d);

// The run-time test: at least one vector of inside columns and a tile of
// inside rows. Only for nests StridedDirectFits accepts.
ir::PrimExpr TakesStridedDirect(const DepthwiseNest& d);

// The kernel: one parallel task per (image, channel).
ir::Stmt BuildSymbolicStridedDirect(const DepthwiseNest& d);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_STRIDED_SYMBOLIC_H_
