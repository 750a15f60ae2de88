// ScheduleStridedDepthwise: static depthwise convolutions (one input and one
// output channel per group, OIHW weights, no dilation) with a stride above 1,
// the nests ScheduleConvs leaves to the window schedule.
//
// Planes whose band would not fit in L1 (32 KiB; 112^2 -> 56^2 needs 59)
// stay with the window schedule. Each (image, channel) is one parallel task. It first copies its channel
// into a zero-padded band of stride x stride phase planes, in cache:
//   band[py * S + px][i][j] = Xpad[i * Sh + py][j * Sw + px]
// (the two column phases of a row in one vector loop, which LLVM makes wide
// loads and shuffles: the input is read once, not once per output row as the
// window schedule's even/odd row copies were). Tap (ky, kx) of output
// (y, x) is then band[ky % Sh][kx % Sw][y + ky / Sh][x + kx / Sw]: for a row
// of output columns, contiguous. Output tiles of `rows` rows x `cols`
// 16-column vectors accumulate every tap with FMAs in registers and store
// their columns inside the plane, plainly, so the elementwise epilogue that
// follows (bias, SiLU, hard-swish, clip) is inlined into those stores after
// the schedules (inline_elementwise.h).
//
// Knobs (schedule_knobs.h): depthwise.rows (output rows per tile, 1..8)
// and depthwise.cols (16-column vectors per tile, 1..4); 0 is the rule:
// 4 rows, and 2 vectors when a row has at least two.
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
