// A depthwise kernel over 16 channels at a time, for small planes
// (ScheduleStridedDepthwise, depthwise_schedule.h; knob depthwise.block 1
// turns it off).
//
// Kiln's tensors are NCHW, so a 7-column output row fills 7 of a vector's 16
// lanes, and the per-channel kernels (the band's flat run, its row tiles)
// spent as much on copying, zeroing and partial stores as on their FMAs:
// 14^2 -> 7^2 and 7^2 planes ran 3-3.5x oneDNN's blocked-layout (nChw16c)
// kernel. Here one task takes 16 channels of one image:
//   1. their input planes, transposed into a channel-minor window in cache,
//      xs[iy][ix][c] over the padded rows and columns the taps read (zeros
//      where they leave the input): the planes' pixels in chunks of 16,
//      each chunk a 16 x 16 transpose in registers (the code generator's
//      transpose16 intrinsic: 64 shuffles) stored pixel by pixel where it
//      lands in the window (a last lone pixel, 7^2's 49th, one gather);
//   2. their weights likewise, ws[ky][kx][c] (each channel's taps are a row
//      of the weight);
//   3. each output row as wo accumulators of 16 channels: every tap one
//      vector FMA per output pixel, its input one contiguous load (each
//      window pixel loaded once per tap row, its FMAs together), the
//      weight one load for the row; stored channel-minor;
//   4. the output transposed back into one row of pixels per channel, and
//      each channel's rows stored into its NCHW plane as 16-lane vectors
//      running on into the next rows (the same values, stored again by
//      those rows), so the fused epilogue, inlined into these stores after
//      the schedules, computes on whole vectors.
// (1), (2) and (4) move the elements through shuffles, not a load or store
// apiece: this kernel's first version did that (an insert per element into
// the vectors, an extract per element out of them) and took 1.4-1.8x the
// time of this one (1152 ch 7^2 3x3 21.2 us, 5x5 43.4).
//
// CPU time per call, the per-channel kernels -> this one (oneDNN's blocked
// primitive), bias + ReLU fused in all three, 1 thread, 5 alternating
// rounds, load average 18: 672 ch 14^2 -> 7^2 5x5/2 40.6 -> 23.2 us (14.0),
// 480 ch 14^2 -> 7^2 3x3/2 14.8 -> 8.4 (5.2), 1152 ch 7^2 5x5 59.7 -> 29.5
// (18.0), 960 ch 7^2 5x5 49.8 -> 24.8 (15.2), 1152 ch 7^2 3x3 33.1 -> 14.9
// (8.9), 480 ch 14^2 3x3 35.5 -> 19.6 (16.3), 200 ch 14^2 3x3 14.5 -> 8.2
// (8.6), 672 ch 14^2 5x5 66.2 -> 56.5 (53.3). What is left against oneDNN
// is mostly the transposes (oneDNN keeps nChw16c between its layers).
#ifndef KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_H_
#define KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_match.h"

namespace kiln {
namespace tir {
namespace dw {

// Whether the kernel can take `cv`: a static depthwise convolution (one
// input and one output channel a group, OIHW weights, no dilation) with
// at least 16 channels, output rows of at most 14 pixels, planes of at
// least 16 pixels in and out, and the transposed window within 32 KiB (L1).
bool ChannelBlockApplies(const conv::ConvNest& cv);

// The stores of one channel's output plane (ho x wo): (first row, lanes)
// each, from the row's first column. Rows of at most 8 pixels share a
// vector: 7^2 takes 4 stores (rows 0, 2, 4 with 16 lanes, row 6 with 7),
// not one a row, so the epilogue inlined into them (SiLU: about 10
// operations a vector) runs on 64 lanes for 49 pixels, not 112. CPU time
// per call, one store a row -> these (bias + SiLU fused, 1 thread, 5
// alternating rounds, load 8): 1152 ch 7^2 5x5 46.0 -> 36.2 us, 960 ch 7^2
// 3x3 25.0 -> 18.3, 672 ch 14^2 -> 7^2 5x5/2 30.9 -> 25.0, 576 ch 14^2 ->
// 7^2 3x3/2 18.0 -> 13.6; with ReLU 0.86-0.98x.
std::vector<std::pair<int64_t, int64_t>> OutputStores(int64_t ho, int64_t wo);

// The kernel: one parallel task per image and 16 channels (the last 16
// where the channels are not a multiple of 16).
ir::Stmt BuildChannelBlockDepthwise(const conv::ConvNest& cv);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_CHANNEL_BLOCK_H_
