// A kernel for convolutions of one group over small static output planes,
// with 16 output channels in the vector lanes and the taps that read
// padding left out.
//
// ConvKernel (conv_kernel.h) puts output points in the lanes: on a 4 x 4
// plane one 16-lane vector is the whole plane, so no tap of a 3 x 3 pad-1
// kernel reads padding for every lane, and 44 of the 144 point-tap pairs
// multiply the packed zeros. Here a lane is an output channel, each
// (output point, tap) pair is inside the input or not as a whole, and the
// pairs outside are never emitted (the plane is static): 100 of 144 FMAs.
// Per task (image, block of 16 output channels):
//   1. the plane's points in register tiles of at most 16 (one 16-channel
//      accumulator a point; planes of fewer points take several blocks a
//      tile, up to 16 accumulators, each broadcast input feeding all of
//      them: knob conv.lane_blocks); per input channel, every tap
//      (unrolled) loads the block's 16 weights once and adds weight x the
//      input element (broadcast, read in place at a static offset) into
//      the accumulator of each point of the tile whose tap is inside;
//   2. the tiles are stored channel-minor, os[p][o], then transposed in
//      16 x 16 pieces (transpose16) into one run of pixels a channel and
//      stored into the NCHW plane (planes of fewer than 16 points element
//      by element); the fused epilogue is inlined into those stores after
//      the schedules (inline_elementwise.h).
// Weights: packed in blocks of 16 output channels ([O/16, I, KH, KW, 16],
// transform::PackConstantWeights where ChannelLanesRuleTakes) are read in
// place, one vector a tap; any other layout (OIHW, blocks of 8) is first
// copied per task into the block's [I, KH, KW, 16]. Output channels not a
// multiple of 16: the last block is a narrower vector.
// Any stride and dilation (the tile's offsets are static); float32 only.
#ifndef KILN_COMPILER_TIR_CONV_CHANNEL_LANES_H_
#define KILN_COMPILER_TIR_CONV_CHANNEL_LANES_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

// Output channels of a lane block, and of a weight packed for this kernel.
constexpr int64_t kChannelLaneBlock = 16;

// The default rule on a conv's static geometry (the packing pass asks it
// before the nest exists, the schedule after): one group, output channels
// a multiple of 16, more than 16, at most 49 taps, and an output plane of
// at most 64 points, or for 1 x 1 kernels of 2 to 25 (the .cc has the
// measurements).
bool ChannelLanesRuleTakes(int64_t out_channels, int64_t in_channels, int64_t kh, int64_t kw, int64_t ho, int64_t wo,
                           int64_t groups);

namespace conv {
// Whether the kernel can take `cv` (whatever the rule says): float32, one
// group, static, a plane of at most 64 points, at most 49 taps, OIHW
// weights or weights packed in blocks dividing 16.
bool ChannelLanesApply(const ConvNest& cv);
}  // namespace conv

// Rewrites the convolution nests the rule takes (weights packed in blocks
// of 16), or with the knob conv.channel_lanes 1 every nest the kernel can
// take (2: none), into the kernel above; its epilogue stays behind for
// InlineElementwise. Runs before ScheduleConvs.
ir::PrimFunc ScheduleChannelLaneConvs(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_CHANNEL_LANES_H_
