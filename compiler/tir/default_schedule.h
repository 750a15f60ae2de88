// ApplyDefaultSchedule: marks loops of lowered TIR (no BlockRealize) parallel
// or vectorized with simple, safe rules; for those loops only For kinds
// change (structure, bounds and bodies stay, so results are bit-identical).
// Matmul nests are the exception, see the end of this comment.
//
// A "loop nest" is a For reached from the function body without crossing
// another For (through SeqStmt, LetStmt, IfThenElse, Allocate).
//
// Independence (needed by both rules): a loop over `v` is independent when,
// for every buffer stored to in its body (other than buffers allocated inside
// the body, which are private to an iteration), there is one dimension d such
// that every load and store of that buffer in the body uses exactly `v` as its
// index d. Different iterations then touch disjoint slices, so a reduction
// loop (whose store does not depend on it) is never independent.
//
// Parallel: in each nest, starting at the outermost loop and walking down the
// perfect nest past loops of static extent 1, the first loop becomes
// `parallel` when num_threads_hint >= 2, it is serial and independent, and
// either its extent is symbolic or its extent is >= 2 and the static
// iteration count of the whole nest is >= kMinParallelWork.
//
// Vectorized: each innermost loop (no For in its body) that is not the
// parallel loop becomes `vectorized` when it is serial, independent, holds at
// least one store, the last index of every store in it is exactly its loop
// variable, and its extent is symbolic or >= kMinVectorExtent.
//
// Split (explicit vectors; knobs elementwise.vector / unroll replace this
// rule, schedule_knobs.h): a vectorized loop of static extent E
//  - whose index divides its variable by constants c (a transpose folded
//    into a reshape: A[v // c, .., v % c]) becomes, when L = lcm(c) is a
//    multiple of 8 up to 128, w = min(L, 16) divides every c and E is a
//    multiple of L above it, vectors of w lanes, L / w per unrolled step:
//    each vector reads one contiguous run instead of gathering;
//  - else, when E is a multiple of 2 * kExplicitLanes above it and the loop
//    calls a float math function (exp, erf, ...) or the function holds a row
//    reduction (softmax, norms), kExplicitLanes-lane vectors two per
//    unrolled step: after the row-reduction schedule for softmax, before it
//    for norms (row-wise kernels without a max), whose row sums then run
//    outside the fused per-row chain.
// Neither applies in a function that a conv, matmul or window schedule
// rewrites (their epilogues fuse only while unsplit).
//
// Everything else stays as it was (usually serial).
//
// Matmul nests (matmul_schedule.h) are then rewritten into a register-blocked
// micro-kernel with their elementwise epilogues fused: that rewrite changes
// loop structure, and results differ from the naive loop by FMA contraction
// only.
#ifndef KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
#define KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

constexpr int64_t kMinParallelWork = 16 * 1024;
constexpr int64_t kMinVectorExtent = 4;
constexpr int64_t kExplicitLanes = 16;

// Pre: `func` is lowered (LowerBlocks). Returns the same PrimFunc when no loop
// changes. `num_threads_hint` < 2 leaves every loop serial or vectorized.
// `knobs` (schedule_knobs.h, from a tuning record) override constants of the
// schedules (the matmul tile; elementwise.vector / unroll split vectorized
// innermost loops); empty knobs are the default schedule.
ir::PrimFunc ApplyDefaultSchedule(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
