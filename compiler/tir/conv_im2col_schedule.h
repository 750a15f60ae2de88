// ScheduleIm2colConvs: a structurally different schedule for static 2-D
// convolutions (groups 1, OIHW weights; 1-D ones lifted to height 1 by the
// default schedule), offered to auto-tuning by the knob conv.im2col and off
// by default (the knob unset or 0 leaves every function as it is).
//
// The direct conv schedule (conv_schedule.h) vectorizes over the padded flat
// output plane: on small planes (4 x 4 padded to 6 x 6: 16 of 24 columns
// useful, in tiles of 32) and rows that leave a part vector, lanes are
// wasted. This one gathers, per chunk of output points, the input every
// (c, ky, kx) tap reads into a dense panel
//   P[(c * KH + ky) * KW + kx][p] = Xpad[c, y(p) * sh + ky * dh - pt, x(p) * sw + kx * dw - pl]
// (zero outside the input), so the convolution of the chunk is one matrix
// product out[o, chunk] = W[o, :] . P with every lane an output point: tiles
// of MR output channels x the chunk's vectors accumulate, per tap, a
// broadcast weight times one contiguous panel row. A chunk is a run of
// `cols` columns of one output row (rows at least `cols` wide) or as many
// whole rows as fit in `cols` points (narrower planes: a 4 x 4 plane is one
// 16-lane chunk), its lanes padded to a multiple of 16. The chunks run in
// one loop (parallel with a hint of two threads or more), each packing its
// own panel; the output is stored plainly (the fused epilogue is inlined
// into those stores after the schedules, inline_elementwise.h).
//
// Knobs (schedule_knobs.h): conv.im2col = output points per chunk (16, 32,
// 48 or 64); conv.mr (1..8) sets the tile's output channels (the rule: 8,
// 6 when the chunk has 4 vectors).
#ifndef KILN_COMPILER_TIR_CONV_IM2COL_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_IM2COL_SCHEDULE_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleIm2colConvs(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_IM2COL_SCHEDULE_H_
