// ScheduleConvs: rewrites 2-D convolution loop nests of lowered TIR (NCHW
// data, OIHW weights, float32, as legalize + LowerBlocks produce for
// R.nn.conv2d) into a register-blocked direct convolution, with the
// elementwise epilogues that follow it fused in.
//
// Recognized nest (matched by conv_match.h): a perfect nest over (n, o, y,
// x, c, ky, kx), all loops starting at 0 with static extents, whose body is
//   if c == 0 and ky == 0 and kx == 0: C[n, o, y, x] = 0
//   C[n, o, y, x] = C[n, o, y, x] + [if_then_else(inside,] X[n, ch, iy, ix] * W[o, c, ky, kx][, 0)]
// or, for a weight packed in blocks of b output channels (kernel_layout
// "OIHW<b>o"), W[o / b, c, ky, kx, o % b];
// with iy = y * sh + ky * dh - pt, ix = x * sw + kx * dw - pl (proven affine),
// ch = c (groups 1) or (o / (O / g)) * (C / g) + c (g groups), and `inside`
// the conjunction of the bounds checks of iy and ix (checks that can never
// fail may be absent). Anything else is left alone (symbolic shapes too).
//
// The rewrite (the "padded flat" direct convolution):
// 1. Per call, X is copied into a zero-padded, stride-phase-split buffer
//    Q[n, ch, phase, L]: plane (ph, pw) holds X[ch, a*sh + ph - pt, b*sw + pw - pl]
//    at a * Wq + b, with Wq = Wo + ((KW-1)*dw) / sw. Then for every output
//    point j = y * Wq + x the input of tap (ky, kx) sits at
//    Q[.., phase(ky, kx), j + off(ky, kx)]: consecutive j read consecutive
//    floats for any stride, dilation and padding, and no bounds test remains.
//    Columns x in [Wo, Wq) are computed and thrown away (Wq - Wo is small).
//    With a stride, the phases of one input row are copied in one loop (an
//    interleaved load LLVM vectorizes without gathers). Two schemes:
//    - whole input: Q is packed once per call, parallel over (image,
//      channel, piece of rows), then the tile loop below runs;
//    - bands, for groups of at most 2 output channels (depthwise) when
//      (image, group, band of output rows) gives at least kMinConvBandTasks
//      tasks: one parallel loop over those tasks, each packing only its
//      group's channels and its band's rows (plus the taps' halo) into its
//      own buffer and computing every tile of the band from it, so packing
//      is no separate parallel region and its output is hot in the cache of
//      the core that reads it.
// 2. The output, seen as a matrix (output channels) x (flat j), is computed
//    in tiles of MR channels x NR columns (MR <= 8 within one group; NR = 32
//    or 48, and also 64 or 128 for groups of at most 2 output channels,
//    whichever an estimate of FMAs + per-tap overhead over the padded
//    tiles prefers): acc[MR, NR] is zeroed, then for every (c, ky, kx) each
//    row ii (unrolled)
//    gets acc[ii, :] = fma(W[o0 + ii, c, ky, kx], Q[.., j0 + off : +NR], acc[ii, :])
//    with the column loop vectorized: broadcast x vector FMAs in registers.
//    With a packed weight whose block is the tile's rows (b = MR, O/g a
//    multiple of b), the tap's MR weights are W[o0 / b, c, ky, kx, ii], one
//    contiguous run; other packed weights are read at [o / b, .., o % b].
//    Leftover channels of a group (O/g not a multiple of MR) take one tile
//    of as many rows as are left (not one-row tiles, whose one or two
//    accumulators waited on the FMA latency). Tiles form one loop,
//    parallel when num_threads_hint >= 2 and the work is large enough.
// 3. The tile's columns are written back row segment by row segment
//    (valid x only), applying the fused epilogue on the way: segments of 16
//    floats or more as whole vectors (the last one overlapping the previous;
//    the same values are stored twice), segments of 4 to 15 as two
//    overlapping vectors of 4 or 8, shorter ones element by element.
//    Row tiles instead, for convolutions with few taps per output (at most
//    160: 3-channel stems up to 7x7), when the estimate favours them: a tile is MR
//    channels of one output row's columns (tiles of 32 or 48 and a last one
//    moved back to end at the row's end), its accumulators stored straight
//    to the row as whole vectors, with no segment arithmetic and no copy
//    (SqueezeNet's 3->64 3x3/2 stem: 0.54 -> 0.44 ms, one thread).
//
// Epilogue fusion: when C is allocated inside the function, the statements
// after the nest are scanned: a statement that references no buffer of the
// chain (and writes nothing the convolution or the fused stages read) is kept
// and moved before the kernel; a perfect nest over the output extents that
// stores D[v..] = f(C[v..], other loads indexed by v..) with C read nowhere
// else is fused (f applied to the accumulators, D stored instead of C), and
// the scan goes on from D (scale/shift, residual add, relu ...). Allocations
// no longer used are removed.
//
// Results differ from the naive loop only by FMA contraction (the reduction
// order c, ky, kx is kept). The packed input costs a workspace of
// N * C * sh * sw * L floats per call (L ~ (Ho + 1 + (KH-1)*dh/sh) * Wq), or
// with bands C/groups * sh * sw * Lb per task (Lb ~ (rows + 1 + (KH-1)*dh/sh)
// * Wq). Pre: `func` is lowered (no BlockRealize). Returns
// the same PrimFunc when no convolution nest is found.
#ifndef KILN_COMPILER_TIR_CONV_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_SCHEDULE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

// Output channels per block of a packed constant weight (kernel_layout
// "OIHW8o", made by transform::PackConstantWeights): the micro-kernel's rows,
// so one tap's weights are 32 contiguous bytes.
constexpr int kConvWeightBlock = 8;

// Multiply-adds below which the tile loop stays serial.
constexpr int64_t kMinParallelConvWork = 256 * 1024;
// What one weight element counts for against kMinParallelConvWork when the
// weights outweigh the multiply-adds (a matrix-vector product streams them
// from L2 or beyond: ConvKernel::ParallelWork).
constexpr int64_t kStreamedWeightWork = 4;

// Independent (image, group, band of output rows) tasks from which the
// convolution packs its input inside the parallel loop, band by band; with
// fewer, the whole input is packed once per call before the tile loop.
constexpr int64_t kMinConvBandTasks = 8;

// `knobs` (schedule_knobs.h: conv.shape, conv.row_tiles) override the tile
// choices above; empty knobs give the rules.
ir::PrimFunc ScheduleConvs(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SCHEDULE_H_
