// A kernel for grouped convolutions of 16 output channels a group (RegNet's
// group width 16), the output channels of a group in the vector lanes.
//
// ConvKernel (conv_kernel.h) puts output pixels in the lanes and broadcasts
// weights: a grouped 3x3 conv there packs its group's input into stride
// phases (a de-interleaving copy per call), computes the halo columns of
// every packed row (14^2 outputs: 224 columns for 196) and writes back
// through a copy of the tile with per-row segment arithmetic. On RegNetY-
// 800MF's grouped layers that ran at 0.6-0.85 of oneDNN's blocked kernel
// (nChw16c), the strided ones worst. Here, per task (image, group, band of
// output rows):
//   1. the band's input rows of the group's channels are copied into a
//      zero-padded window xw[c][row][col] (plain row copies: any stride
//      reads it in place, no phases);
//   2. the group's weights into ws[c][ky][kx][o], 16 floats a tap;
//   3. the band in sub-bands of rows (at least 64 pixels): each register
//      tile of a sub-band's output pixels (at most 16: one 16-channel
//      accumulator a pixel) takes every tap as one weight vector load and
//      an FMA a pixel with the input element broadcast from the window, so
//      no column is computed that is not an output; tiles are stored
//      channel-minor, os[p][o];
//   4. then the sub-band's os is transposed (transpose16) into one run of
//      pixels a channel and stored into the channel's NCHW rows as whole
//      vectors, where the fused epilogue is inlined after the schedules.
// The first tiles of a task prefetch the next task's input rows and weights.
// RegNetY-800MF in the model (per-kernel minima of 3 x 150 calls, 1 thread,
// loaded machine, us): 64 / 16 3x3/2 at 112^2 325 -> 297, 144 / 16 3x3/2 at
// 56^2 188 -> 158, 144 / 16 3x3 at 28^2 157 -> 133, 320 / 16 3x3/2 at 28^2
// 119 -> 87, 320 / 16 3x3 at 14^2 82 -> 77, 784 / 16 3x3/2 at 14^2 80 -> 60,
// 784 / 16 3x3 at 7^2 74 -> 53 (oneDNN's blocked kernel, layer alone: 249,
// 143, 124, 77, 70, 51, 45).
// Not for half operands (ConvKernel widens them), dilation, symbolic shapes.
#ifndef KILN_COMPILER_TIR_CONV_GROUPED_BLOCK_H_
#define KILN_COMPILER_TIR_CONV_GROUPED_BLOCK_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {
namespace conv {

// Output rows of a band of `cv`: the most (a divisor of Ho) whose input
// window stays within kMaxGroupedWindowBytes and whose pixels fill a
// 16-pixel transpose; 0 when none does.
int64_t GroupedBlockBandRows(const ConvNest& cv);

// Whether the kernel takes `cv`: static, float32, more than one group of
// exactly 16 output channels, no dilation, OIHW weights or weights packed
// in blocks dividing 16, and a band (GroupedBlockBandRows).
bool GroupedBlockApplies(const ConvNest& cv);

}  // namespace conv

// Rewrites every convolution nest GroupedBlockApplies takes (the knob
// conv.grouped_block 1: none) into the kernel above; its epilogue stays
// behind, for InlineElementwise to move into the kernel's output stores.
// Runs before ScheduleConvs, which would otherwise take these nests.
ir::PrimFunc ScheduleGroupedBlockConvs(const ir::PrimFunc& func, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_GROUPED_BLOCK_H_
