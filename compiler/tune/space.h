// Design spaces: a design space is a stochastic schedule, a function that
// applies primitives and sampling instructions to a tir::Schedule; each seed
// gives one point (a trace whose decisions say which point).
//
// GenericSpace is the space of any PrimFunc in block form, built from its
// block structure as MetaSchedule's rules are:
//   - inline: every spatial block that writes an intermediate buffer is
//     inlined into its readers (when compute_inline applies);
//   - reduction blocks whose loops each bind one iteration variable, with
//     static extents: multi-level tiling "SSRSRS" (each spatial loop in 4
//     sampled perfect tiles, each reduction loop in 2), by a sampled choice a
//     local write cache written back under the second spatial tiles (the
//     cache is not yet shrunk to one tile: it keeps the output's shape), the
//     init decomposed
//     before the outer reduction tiles, the outer spatial tiles fused and run
//     in parallel, the innermost spatial tile vectorized, and a sampled choice
//     whether to unroll the inner reduction tile;
//   - spatial blocks: the last loop split by a sampled tile (the inner part
//     vectorized), the other loops and the outer part fused and, by a sampled
//     choice, run in parallel.
// A rule a block does not fit (symbolic extents, loops shared by two
// iteration variables, a primitive that refuses) leaves that block as it is;
// every primitive keeps what the function computes, so every point of the
// space is correct by construction (the runner still checks the numbers).
//
// Not here yet: the default schedules (compiler/tir/default_schedule.h,
// matmul_schedule.h, ...) rewrite lowered TIR, not block TIR through
// tir::Schedule, so they are not points of this space; turning their
// constants into decisions is the next stage.
#ifndef KILN_COMPILER_TUNE_SPACE_H_
#define KILN_COMPILER_TUNE_SPACE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/schedule.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

// Applies the generic rules to `sch` (its generator makes the choices).
// Fails only when `sch` is unusable; blocks the rules do not fit are skipped.
Status ApplyGenericSpace(tir::Schedule* sch);

// One point of the generic space of `func`: a schedule created with `seed`
// with the rules applied. Fails when `func` is not in block form.
Result<tir::Schedule> SampleGenericSpace(const ir::PrimFunc& func, uint64_t seed);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_SPACE_H_
