// ScheduleStridedDepthwise: static depthwise convolutions (one input and one
// output channel per group, OIHW weights, no dilation) with a stride above 1,
// the nests ScheduleConvs leaves to the window schedule, and, with 8 or more
// images x channels, those of stride 1 whose output rows are 12..16 wide or
// narrow enough for one flat run (7^2; depthwise.unit_stride 1: every row
// of 12 or more too, 2: no stride-1 plane).
//
// Small planes of 16 or more channels (output rows of at most 14, the
// window within 32 KiB: 14^2 -> 7^2, 7^2, 14^2) take the channel-block
// kernel first (depthwise_channel_block.h: 16 channels at a time,
// transposed channel-minor; stride 1 too, whatever its width; knob
// depthwise.block 1: the kernels below).
//
// Column-stride-2 planes with 3x3 windows and at least 16 output columns
// whose taps are all inside (56^2 -> 28^2, 112^2 -> 56^2) take the direct
// kernel instead (depthwise_direct.h: no copy, the taps' loads from the
// input itself; depthwise.direct 1: the band below).
//
// Planes whose band would not fit in L1 (32 KiB; 112^2 -> 56^2 needs 59)
// stay with the window schedule (depthwise.banded 1: the banded kernel of
// depthwise_banded.h, its band a block of rows). Each (image, channel) is one parallel task. It first copies its channel
// into a zero-padded band of stride x stride phase planes, in cache:
//   band[py * S + px][i][j] = Xpad[i * Sh + py][j * Sw + px]
// (the input's rows in order, the column phases of a row in 16-column
// chunks, each two wide loads and a shuffle: the input is read once, not
// once per output row as the window schedule's even/odd row copies were).
// Tap (ky, kx) of output (y, x) is then band[ky % Sh][kx % Sw][y + ky / Sh]
// [x + kx / Sw]: for a row of output columns, contiguous. Output tiles of
// `rows` rows x `cols` 16-column vectors accumulate every tap with FMAs in
// registers and store their columns inside the plane, plainly, so the
// elementwise epilogue that follows (bias, SiLU, hard-swish, clip) is
// inlined into those stores after the schedules (inline_elementwise.h).
// Rows of one vector (28^2 -> 14^2: 14 columns) copy each phase's inside
// columns as one 16-column chunk (reading on into the next input row),
// into band rows aligned to 64 bytes, and store whole vectors, spilling
// into the next output row, which is stored after.
// Strided planes with narrow output rows (7 of a vector's 16 lanes at
// 14^2 -> 7^2) are one flat run instead: band rows only wo + (kw - 1) / Sw
// wide, the whole output plane as positions y * pitch + x in at most 8
// vectors, every tap one contiguous load at a constant offset, the
// columns past wo dropped at the store (256 ch 14^2 -> 7^2 5x5/2: 0.72x the
// row tiles' CPU time).
//
// Where the time goes (64 ch 56^2 -> 28^2 3x3/2, 1 thread): the copy took
// two thirds of it, about a streaming pass over the input (a ReLU over the
// same 800 KB took as long), the FMAs the rest; oneDNN's blocked-layout
// primitive vectorizes over 16 channels and needs neither the copy nor the
// shuffles, which NCHW does not allow without a transpose.
//
// Knobs (schedule_knobs.h): depthwise.rows (output rows per tile, 1..8)
// and depthwise.cols (16-column vectors per tile, 1..4); 0 is the rule:
// 4 rows, and 2 vectors when a row has at least two. depthwise.flat (1: row
// tiles, 2: a flat run whenever its vectors fit; 0: flat for strided planes
// when it needs at most 3/4 of the row tiles' vectors) and depthwise.copy
// (1: the band rows of each row tile copied just before the tile ahead,
// instead of the whole band first; no faster in our runs, left to tuning),
// depthwise.unit_stride (above; depthwise_schedule.cc has the measurements
// behind the rule).
#ifndef KILN_COMPILER_TIR_DEPTHWISE_SCHEDULE_H_
#define KILN_COMPILER_TIR_DEPTHWISE_SCHEDULE_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleStridedDepthwise(const ir::PrimFunc& func, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_SCHEDULE_H_
