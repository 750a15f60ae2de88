// The direct kernel for static depthwise convolutions of column stride 2
// (ScheduleStridedDepthwise, depthwise_schedule.h): no copy of the input.
//
// The band kernel first copies each channel into zero-padded phase planes;
// at 64 ch 56^2 -> 28^2 3x3/2 that copy took two thirds of its time, and
// 112^2 planes, whose band does not fit in L1, were left to the window
// schedule. Here the taps read the input itself: with column stride 2, the
// 16 outputs x0..x0+15 of tap kx read input columns 2 x0 + kx - pl + 2 j,
// one stride-2 vector load (the code generator's wide masked load and one
// shuffle, vector_loop.h). An output tile of `rows` rows x `cols` vectors
// accumulates every tap with FMAs in registers (the input rows the tile's
// rows share, loaded once: the same loads, merged by LLVM) and stores its
// columns plainly (the epilogue is inlined into those stores after the
// schedules, as into the band kernel's).
//
// Only loads inside the input are made, so the vectors cover the columns
// whose every tap is inside the input's width ([xa, xb), the last vector
// moved back to end at xb, its first columns computed twice); the few
// columns at the edges (one at each edge for 3x3 or 5x5 with the usual
// padding) are computed one by one with their inside taps only. Where a row
// has more than one tile of vectors, the left edge columns go into the first
// vector instead: each tile first copies its input rows' first 32 columns
// behind the padding's zeros into a small buffer, the first vector's taps
// read that copy, and its tile runs after the row's others (which hide the
// wait for the copy's stores). A scalar edge column carried its epilogue as
// one scalar chain per row: with SiLU, 96 ch 112^2 -> 56^2 3x3/2 spent a
// fifth of its time there (CPU 195 us, 156 with the edges left out). CPU
// time per call, scalar -> vector left edge (1 thread, 5 alternating rounds,
// load 19-24): 96 ch 112^2 -> 56^2 SiLU 204 -> 184 us (0.92x), ReLU 0.94x;
// 64 ch 112^2 -> 56^2 SiLU 133 -> 114 (0.87x), ReLU 0.98x. Rows of one tile
// (56^2 -> 28^2) keep the scalar column (the vector one took 1.18-1.31x).
// 3x3 windows with left padding 1 (the usual 3x3/2) take neither: the first
// vector starts at column 0, and since tap kx = 0 of column j reads input
// column 2j - 1, which tap kx = 2 of column j - 1 reads too, its kx = 0 FMAs
// go into a second accumulator from kx = 2's loads, added one lane up before
// the stores (lane 0 gets the padding's zero): no scalar column, no copy, a
// third fewer stride-2 loads in that vector. CPU per call, scalar / copied
// edge -> shifted (1 thread, 3 alternating rounds, load 15-22): 64 ch 56^2 ->
// 28^2 + bias 15.1 -> 11.6 us, + SiLU 25.3 -> 16.3; 144 ch 36.8 -> 29.6,
// SiLU 61.2 -> 41.6; 112^2 -> 56^2 (the copy before): 32 ch 35.2 -> 32.6,
// SiLU 51.0 -> 45.6, 96 ch SiLU 175 -> 154.
// Rows whose
// taps leave the input's height are single-row tiles with those taps
// dropped. Planes whose inner columns fill less than one vector (wo < 16 +
// edges: 28^2 -> 14^2 and smaller) keep the band kernel.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_DIRECT_H_
#define KILN_COMPILER_TIR_DEPTHWISE_DIRECT_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {
namespace dw {

// Whether the direct kernel can take `cv` (a depthwise nest
// ScheduleStridedDepthwise handles, but for the band's size): column
// stride 2 and at least 16 output columns whose taps are all inside.
bool DirectApplies(const conv::ConvNest& cv);

// The kernel: one parallel task per (image, channel). Knobs: depthwise.rows
// (1..8, 0: 4) and depthwise.cols (vectors per tile, 1..4, 0: 2).
ir::Stmt BuildDirectDepthwise(const conv::ConvNest& cv, const ScheduleKnobs& knobs);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_DIRECT_H_
