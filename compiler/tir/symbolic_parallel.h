// SpreadSymbolicParallel: a parallel loop over a symbolic extent -- most
// often the batch of a model compiled for any batch, 1 at run time -- gives
// its parallelism to the loops below it, so that a single image still runs
// on every thread.
//
// The default schedule parallelizes the outermost loop of a nest that is not
// of static extent 1. Over a symbolic batch that is `for n in parallel(N)`,
// and at N = 1 the whole kernel (a resize, a concatenation, a mean, a
// residual add over 96 x 160 x 160 floats) runs on one thread. Rewrites:
// - `for n in parallel(N)` around (through loops of static extent 1) one
//   serial loop `for c in range(C)` whose iterations are independent:
//   `for t in parallel(N * C)` with n = t // C and c = t % C when C is
//   static (a division by a constant); with C symbolic, n turns serial and
//   c parallel (no division by a run-time value);
// - `for n in parallel(N)` around a sequence of statements: n turns serial
//   and every loop of the sequence that is serial, has independent
//   iterations and contains no parallel loop turns parallel (each such loop
//   is one launch per image; the code generator still runs small ones
//   serially, parallel_work.h).
// A loop's iterations are independent when every buffer it stores (other
// than those allocated inside it) is indexed by the loop's variable itself
// in one dimension in all its loads and stores (what the default schedule
// asks of the loops it parallelizes). The inner loop's extent must not use
// n. Nothing else changes; `func` itself is returned when nothing matched.
//
// With num_threads_hint >= 2 and a short body under c (static loops of at
// most 1024 iterations in all), the fused loop runs only where the batch is
// smaller than the hint: `if N >= hint` keeps `for n in parallel(N)` around
// the serial c loop (the batch alone feeds every thread), else the fused
// loop. Its t // C and t % C per iteration cost more than a short body:
// Silero VAD's STFT magnitude over 31 windows (129 x 4 floats each) took
// 10.5 us fused against 4.5 us as two loops, one thread, kiln-bench trace
// medians (its encoder's staging loops 1-4 us each too).
// No fused loop at all where one image's work (parallel_work.h) is static
// and (threads - 1) times it (once it without a hint) is below
// kMinParallelWork: no batch below the hint would give the fused loop a
// launch, so it would only add the division to every element (a gather's
// 256-float row at batch 1 stopped being one contiguous copy).
// Pre: lowered TIR, scheduled (runs last in ApplyDefaultSchedule).
#ifndef KILN_COMPILER_TIR_SYMBOLIC_PARALLEL_H_
#define KILN_COMPILER_TIR_SYMBOLIC_PARALLEL_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc SpreadSymbolicParallel(const ir::PrimFunc& func, int num_threads_hint = 0);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SYMBOLIC_PARALLEL_H_
