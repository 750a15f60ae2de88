// ScheduleDotConvs: convolutions whose output rows are narrow (at most 8
// columns, static) and whose kernel rows are wide and contiguous (a
// static kx extent of at least 16, a multiple of 8, no dilation, no
// padding read through a bounds test): an STFT written as a strided
// Conv1d (Silero VAD: 258 filters of 256 taps at stride 128 over a padded
// window, 5 output columns; a batch of windows that is symbolic). The
// column tiles of the conv schedules (conv_schedule.h,
// conv_symbolic_schedule.h) vectorize over output columns, of which there
// are fewer than one vector here: they ran it as scalar FMAs (about
// 4 GFLOP/s).
//
// Recognized: the 7-deep conv2d nest (n, o, y, x, c, ky, kx) of
// conv_match.h's MatchConvReduction (as LiftConv1dNests makes of a
// conv1d) with an OIHW weight, o, y, x, c, ky, kx static, n any.
//
// The rewrite vectorizes the reduction instead: for each image, row and
// tile of R output channels, R x Wo accumulators of V lanes (V = 16 or 8)
// take, for each (c, ky) and each block of V taps,
//   acc[r, x, :] = fma(W[o0 + r, c, ky, kb : +V], X[n, .., x * sw + kb : +V], acc[r, x, :])
// (R rows and Wo columns unrolled: R + Wo vector loads for R * Wo FMAs);
// then each accumulator is summed across its lanes (halving adds) into
// C[n, o0 + r, y, x]. The last channel tile is moved back to end at O
// (overlapping channels computed twice, with the same values). Results
// differ from the loop nest by the order of the sum (V partial sums).
// Returns `func` itself when nothing matched.
#ifndef KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_
#define KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc ScheduleDotConvs(const ir::PrimFunc& func, int num_threads_hint);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_DOT_SCHEDULE_H_
