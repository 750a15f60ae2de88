// ScheduleBorderSplitConvs: a conv schedule for static stride-1 convolutions
// of one group that splits each output line at compile time into interior
// tiles, where every tap reads inside the input, and border tiles, which
// read only their valid taps. The default where every tap lies along the
// line (1-D convs, 1 x N, K x 1 as a flat line), lines have 64 points or
// more and weights 256 KiB or less; elsewhere offered to auto-tuning by the
// knob conv.border_split.
//
// The direct conv schedule (conv_schedule.h) first packs the whole input
// with its padding materialized (halo rows, or shift planes), so every tap of
// every tile reads the packed copy and the padding's zeros are multiplied
// like data. Here an output line (a row of the plane; for a K x 1 kernel
// without column padding, whose rows are contiguous in input and output,
// the whole plane as one flat line with taps W apart) is cut into column
// tiles of NR points, MR output channels x NR columns of accumulators
// (lanes are output points), and per tile:
//   - interior tiles (every tap of every lane inside the input) read the
//     input in place: no packing, no padding, no selects;
//   - border tiles first copy the input rows they read, only those of the
//     line's valid kernel rows, with zeros where a lane's tap falls outside
//     the row, into a small buffer (static ranges: no per-element test),
//     and then run only the kernel rows whose input row exists (a border
//     line of a 3 x 3 kernel runs 2 of them) and only the kernel columns
//     some lane of the tile reads inside the row.
// Lanes are output points, so a tap is skipped only when it reads padding
// for the whole tile (a whole border row, or a column tap past a narrow
// tile's edge); taps that read padding for some lanes of a tile are
// computed with zeros there, as the direct kernel computes all of them.
// The copy serves every output-channel block of the tile. Tasks are
// (image, line), parallel with a hint of two threads or more; with fewer
// than two lines a thread (a 1-D conv, a flat plane) each line's channel
// blocks are cut into parts, a task each. The output is stored plainly (the fused epilogue is inlined into those stores after the
// schedules, inline_elementwise.h).
//
// Knobs (schedule_knobs.h): conv.border_split 0 (unset) the rule above, 1
// every conv it handles, 2 none; conv.mr (1..8)
// sets the tile's output channels for weights as given (packed weights
// [O/8, I, KH, KW, 8] take one block, 8), conv.nr (16..96) its columns (the
// rule: 24 accumulators, 48 columns for 8 channels). Lines of fewer than 16
// points (a 4 x 4 plane) are not taken: their tiles would be part vectors.
#ifndef KILN_COMPILER_TIR_CONV_BORDER_SPLIT_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_BORDER_SPLIT_SCHEDULE_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleBorderSplitConvs(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_BORDER_SPLIT_SCHEDULE_H_
