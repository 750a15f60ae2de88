// ScheduleDotConvs: 1-D convolutions (one output row, as LiftConv1dNests
// makes them) whose rows are narrow, at most 8 output columns (static, or
// symbolic: then by a run-time test), with more than one tap and a
// reduction (channels x taps) of at least 16. Silero VAD: the STFT written
// as a strided Conv1d (258 filters of 256 taps at stride 128 over a
// reflect-padded window, 3 to 5 output columns, a symbolic batch of
// windows) and its encoder (kernel 3, 64 to 129 channels, rows of 4 to 1).
// The column tiles of the conv schedules (conv_schedule.h,
// conv_symbolic_schedule.h) vectorize over output columns, fewer than one
// vector here: they ran as scalar FMAs (2 to 5 GFLOP/s).
//
// Also single-tap (1 x 1) convolutions on one row of at most 8 static
// points whose weight is not packed (OIHW: a weight that is a parameter,
// or a constant whose output channels 8 does not divide, as PP-OCRv4's SE
// block's 240 -> 60 FC on a pooled 1 x 1 plane, which the static schedule
// ran as a padded 32-column tile: 3.5 -> 0.65 us); those with a small
// product (under 256 K multiply-adds, a symbolic batch counted as one
// image) run serially.
//
// Recognized: the 7-deep conv2d nest (n, o, y, x, c, ky, kx) of
// conv_match.h's MatchConvReduction with an OIHW weight, o, c, ky, kx
// static, y of extent 1, the input's image and channel indices free of o.
//
// The rewrite vectorizes the reduction instead:
// 1. Staging: col[n, x, j] = the value the nest reads (0 in the padding)
//    at output column x and reduction index j = (c * KH + ky) * KW + kx,
//    for every image (parallel over images for several threads).
// 2. Tiles of R <= 4 output channels x P output columns (P the row's width
//    when static; when symbolic, 1 to 7 by a run-time test): R x P
//    accumulators of V lanes (V = 16, or 8 for short reductions) take, for
//    each block of V reduction indices,
//      acc[r, p, :] = fma(W[o0 + r, j : +V], col[n, x0 + p, j : +V], acc[r, p, :])
//    (R + P vector loads for R x P FMAs; W read as rows [O, C*KH*KW], a view
//    of the same memory), the last K % V indices into lane 0; then each
//    accumulator is summed across its lanes (halving adds) into C. The last
//    channel tile is moved back to end at O, computing some outputs twice
//    with the same values. One loop (parallel for several threads) runs
//    over (image, channel tile); a tile spans the row, so a symbolic width
//    takes no division by its run-time value (in the branch of width P,
//    P is a constant).
// A symbolic width of 8 or more keeps the original nest (for the schedules
// after this one) in the other branch of the run-time test. Results differ
// from the loop nest by the order of the sum (V partial sums). Returns
// `func` itself when nothing matched.
#ifndef KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleDotConvs(const ir::PrimFunc& func, int num_threads_hint);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_
