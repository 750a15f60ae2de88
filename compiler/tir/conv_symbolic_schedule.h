// ScheduleSymbolicConvs: register-tiled, vectorized direct convolution for
// the conv2d nests ScheduleConvs leaves alone because an extent is symbolic
// (batch, output rows or columns, input height or width: a model compiled
// once for every image size).
//
// Recognized (lowered TIR, as legalize + LowerBlocks write R.nn.conv2d): a
// nest (n, o, y, x) whose body is the reduction over (c, ky, kx), either
// perfect (7 loops) or followed, inside the (n, o, y, x) loops, by fused
// elementwise statements (the epilogue), all stores at the loop point:
//   if c == 0 and ky == 0 and kx == 0: C[n, o, y, x] = 0
//   C[n, o, y, x] = C[n, o, y, x] + [if_then_else(inside,] X[n', ch, iy, ix] * W[o, c, ky, kx][, 0)]
//   [epilogue: D[n, o, y, x] = f(C[n, o, y, x], ...) ...]
// (an index of a loop of extent 1 may be 0 in the epilogue's reads: a
// static batch of one)
// with o, c, ky, kx of static extent, iy = y * sh + ky * dh - pt and
// ix = x * sw + kx * dw - pl (proven), `inside` only the bounds checks of
// iy and ix against X's height and width. n, y, x, H and W may be symbolic.
// ch may be any expression of o and c (groups, depthwise).
//
// The rewrite, per image:
// 1. With padding, X is copied into a zero-padded buffer Q[ch, Hp, Wp]
//    (Hp, Wp symbolic: exactly the rows and columns the taps read), so the
//    tiles read it with no bounds test; without padding they read X.
//    With a column stride sw > 1, Q's rows are stored split into their sw
//    column phases (column b * sw + p at p * ceil(Wp / sw) + b), so that
//    the NR columns of one tap are one contiguous vector.
// 2. One loop (parallel for several threads) over (output channel tile of
//    MR <= 8 channels, output row y). Each row is computed in tiles of MR
//    channels x NR columns: acc[MR, NR] zeroed, then for each (c, ky, kx)
//    acc[ii, :] = fma(W[o0 + ii, c, ky, kx], Q[.., x0 * sw + kx * dw : +NR], acc[ii, :])
//    (rows unrolled, columns vectorized: a broadcast times a vector load).
//    NR is the widest of 32, 16, 8 that fits the row (a run-time test of the
//    symbolic width; 1 below 8); the row's last tile is moved back to end at
//    the row's end (overlapping the one before it: those columns are
//    computed and stored twice, with the same values), so no column is left
//    to a scalar loop. Rows that may be narrower than 32 columns (static
//    8 to 31, or a symbolic width tested at run time: 8 to 31 and 33 to
//    48, where the flat planes below do not take it) take tiles of several
//    output rows (channels x 3 rows x one 16- or
//    8-column vector: 24 accumulators) where the plane has the rows.
//    Strided convolutions (not depthwise) whose output rows are under 64
//    columns read every input channel's sh * sw phase planes instead, each
//    flat with rows of ceil(Wp / sw) columns: output (y, x) is one flat
//    column j of every plane, tap (ky, kx) a plane and a constant offset
//    from j, so tiles of MR channels x NR flat columns run over the whole
//    span (the few columns between rows computed for nothing), and the rows
//    are copied out of a per-tile-group buffer through the epilogue.
//    Padded stride-1 convolutions of more than one tap (not depthwise)
//    and a symbolic width take the same tiles on rows under 64 columns (a
//    run-time test), their padded input being one plane a channel:
//    YOLOv8n's 3 x 3 at 10 x 10 no longer runs tiles of 8 + 8 columns.
//    Unpadded stride-1 ones (not depthwise, more than one tap) on rows
//    under 64 columns read X[n, c] itself as the flat plane (a view, no
//    copy), in tiles of the most channels up to 8 that divide O; spans
//    under 32 flat columns copy X[n] flat with a zeroed tail and run one
//    tile from column 0 per group of channels, and spans under 8 (a 1 x 1
//    output) with a weight packed in blocks of 8 take vectors of output
//    channels (X broadcast) instead: mtcnn_pnet at 24 x 24 took one-column
//    tiles on its 7 x 7 planes (30 us, pinned 2.9).
//    Where X's channels times the kernel's width are at most O and the
//    epilogue can be written flat, spans of 8 columns and more read X
//    copied once per kernel column with rows of Wo columns instead
//    (ShiftedPlanes): the tiles cover Ho * Wo points and write the output
//    straight from their accumulators (mtcnn_pnet's 3 -> 10 at 12 x 12:
//    0.68 -> 0.60 us, pinned 0.53).
//    Unpadded convolutions of one group with a packed weight whose output
//    plane holds at most 16 points at run time take output channels in the
//    vector lanes instead, each point's input broadcast from X in place
//    (conv_symbolic_small_plane.cc): mtcnn_pnet's 10 -> 16 on 3 x 3 and
//    16 -> 32 on 1 x 1 at 12 x 12, 0.40 -> 0.32 and 0.25 -> 0.19 us.
//    Pointwise convolutions (1x1, stride 1, no padding) whose accesses are
//    all at the output point of the function's parameters see each plane as flat rows of 240 columns
//    (the last one with the rest, 48 to 287) instead of image rows (small
//    planes: 20 x 20 no longer takes tiles of 8 columns), in tiles of 8 x 48
//    then at most two of 8 x 32 that cover the row's 16-column vectors
//    exactly (a row of 80: 48 + 32); with a packed weight, a row ending 1
//    or 2 columns past its last 16-column vector takes those columns as
//    vectors of 8 output channels instead (conv_symbolic_points.cc: 1 x 50
//    is 48 + 2, not 2 x 32). C itself, when only the epilogue reads it, needs no view
//    (its loads become the accumulators). X may be the kernel's own buffer
//    (a concatenation before the convolution: YOLOv8's C2f blocks), written
//    whole before the kernel reads it: 2.65x its pinned build at 384 -> 256
//    on 10 x 10 with image rows, 1.34x with the flat rows. When that buffer
//    is a concatenation along channels computed just before and read
//    nowhere else (conv_symbolic_concat.h), the flat tiles read its sources
//    in place instead, one reduction loop a source (channels c0 + c of the
//    weights), and the copy goes: the sources may be parameters or the
//    kernel's own buffers (an elementwise result fused before it). YOLOv8n
//    at 320^2, 1 thread, loaded machine, per-kernel minima over 40 calls:
//    its first C2f block's 48 -> 32 at 80 x 80 (three 16-channel sources)
//    428 -> 372 us.
//    An elementwise nest just before that computes X alone from tensors
//    read at the output point (a squeeze-excite scale X = A * S[n, c]),
//    cheap enough to redo in every tile of channels (at most 4 adds,
//    subtracts, multiplies, minima and maxima, one tensor read over the
//    plane), is computed in the flat tiles as they load A, and the nest
//    goes: PP-OCR cls's 200 -> 32 projection at 6 x 200 x 2 x 96 wrote and
//    read X whole (98 us, pinned 75; now 67).
//    Depthwise convolutions (one input channel an output channel) take
//    tiles of output rows of one channel instead, where the plane fits
//    them: 6 x 32 (rows of 32 or of 56 columns and more), 8 x 16 or 8 x 8
//    (rows x columns, a run-time test), the
//    last tile of rows moved back like the last column tile, the taps
//    unrolled so neighbouring rows share their input vectors. Padded ones
//    with output channel o reading input channel o make each channel's
//    padded copy just before its tiles, in the same parallel loop; at
//    stride 1, rows under 8 columns and of 9 to 12 or 17 to 24 (which the
//    spatial tiles cover badly) take flat plane tiles instead: 4 channels'
//    padded planes read as flat rows, tiles of 4 channels x 32 flat
//    columns over the span (the columns between rows computed for
//    nothing), the rows then copied out through the epilogue.
// 3. The epilogue runs on the accumulators, vectorized over the tile's
//    columns, storing its outputs; C itself is stored only when something
//    else reads it.
// Depthwise nests (one channel a group) whose output rows hold at least 16
// columns run depthwise_banded.h's kernel instead (a run-time test).
// Results differ from the loop nest only by FMA contraction (the reduction
// order c, ky, kx is kept; the small planes' dot products (PointDots) and
// channel-lane tiles of few accumulators sum partial sums over c instead).
// Returns `func` itself when nothing matched.
#ifndef KILN_COMPILER_TIR_CONV_SYMBOLIC_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_SYMBOLIC_SCHEDULE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleSymbolicConvs(const ir::PrimFunc& func, int num_threads_hint);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SYMBOLIC_SCHEDULE_H_
