// The channel-block depthwise kernel (depthwise_channel_block.h: 16
// channels at a time, transposed channel-minor in cache) for nests with a
// symbolic height, width or batch, taken at run time when the output rows
// are narrow (at most 14 columns). ScheduleSymbolicConvs
// (conv_symbolic_schedule.h) gathers the nest's epilogue and calls it.
//
// Narrow planes (PP-OCRv4's detector at 256 x 320: 384 ch 8 x 10 5x5, 192
// ch 16 x 20 -> 8 x 10 5x5/2) went to the symbolic schedule's per-channel
// tiles, a 10-column row in a 16-lane vector: 3.5-4.8x the pinned build's
// channel-block time. CPU time per call, 1 thread, + hard-swish, symbolic
// n, h, w, alternating rounds on the loaded machine: 384 ch 8 x 10 5x5
// 37.9 -> 13.6 us (pinned 11.1), 192 ch 16 x 20 -> 8 x 10 5x5/2 36.2-37.9
// -> 12.2-12.6 (pinned 7.9). Here, as in the static kernel:
//   1. the 16 channels' input planes are transposed (transpose16, in flat
//      chunks of 16 pixels, the last moved back) into an unpadded
//      channel-minor copy, then each pixel's vector moved to its place in
//      the zero-bordered window (the static kernel's offsets are constants;
//      here a pixel's row and column would take a division each);
//   2. the weights likewise;
//   3. each output row as wo accumulators of 16 channels, every tap one
//      vector FMA per output pixel: the output width is a constant in each
//      of the run-time branches (one per even width W, for rows of W - 1
//      and W columns), so that the row's accumulators stay in registers as
//      in the static kernel (PP-OCRv4's detector: compile CPU 42.5 -> 63.6
//      s, .vmfb 7.08 -> 7.88 MB; a branch per width took 91.3 s, 8.57 MB);
//   4. the output transposed back and stored row by row (wo lanes: exact,
//      the fused epilogue applied in these stores).
#ifndef KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_SYMBOLIC_H_
#define KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_SYMBOLIC_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/depthwise_banded.h"

namespace kiln {
namespace tir {
namespace dw {

// The run-time test under which ScheduleSymbolicConvs runs this kernel: at
// least 16 channels (static), output rows of at most 14 columns, input and
// output planes of at least 16 pixels and the window within 32 KiB (L1;
// 4 MiB at column stride 2).
// False (the constant) where the channels are fewer than 16.
ir::PrimExpr TakesChannelBlock(const DepthwiseNest& d);

// The kernel: one parallel task per image and 16 channels (the last block
// moved back where the channels are not a multiple of 16).
ir::Stmt BuildSymbolicChannelBlock(const DepthwiseNest& d);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_SYMBOLIC_H_
