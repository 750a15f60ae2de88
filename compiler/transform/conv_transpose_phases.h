// Pass: conv-transpose-phases — rewrites relax.nn.conv2d_transpose into
// ordinary convolutions, one per output phase, so that transposed
// convolutions run on the conv2d schedules (register tiles, packed weights,
// fused epilogues) instead of a reduction over every kernel tap with a
// divisibility test per output element.
//
// Along one spatial axis (stride s, kernel K, padding p before), output
// position y = q*s + r (phase r in [0, s)) receives only the taps
// k = k0 + s*j, k0 = (r + p) mod s, reading data q + c - j, c = floor((r +
// p) / s). So phase r is a stride-1 correlation of the data with those taps
// reversed, padded by Kr - 1 - c before (Kr: the phase's tap count; negative
// padding crops). Every phase holds 1/s of the taps: the phases together do
// exactly the transposed convolution's multiply-adds.
//
//   phases alike (same taps count and padding on both axes, groups = 1: the
//   2x2 stride-2 upsampling of detection and segmentation heads, where every
//   phase is a 1x1 conv): one conv2d with the phases' kernels stacked as
//   output channels, then a reshape / permute_dims / reshape that
//   interleaves them (a depth-to-space);
//   otherwise: one conv2d per phase, each padded to the longest phase and
//   interleaved by concat and reshape.
// A final strided_slice drops what lies past the output size. All sizes are
// constants over the data's (possibly symbolic) height and width, so
// symbolic shapes work. The kernels' rearrangement (group split, tap
// selection and reversal) is relax operators on the weight, folded at
// compile time when the weight is a constant.
//
// Left as it is (the reduction kernel): dilation other than 1, a kernel
// smaller than the stride (a phase without taps), layouts other than
// NCHW / IOHW, data of unknown rank.
//
// Pre: normalized, A-normal form. Post: normalized.
#ifndef KILN_COMPILER_TRANSFORM_CONV_TRANSPOSE_PHASES_H_
#define KILN_COMPILER_TRANSFORM_CONV_TRANSPOSE_PHASES_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> ConvTransposeToPhases(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_CONV_TRANSPOSE_PHASES_H_
