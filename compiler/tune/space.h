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
// DefaultSpace is the space of the default schedules' constants
// (compiler/tir/schedule_knobs.h): one sample_categorical per knob that
// applies to the function (candidate 0 = the default rule's own choice),
// each recorded on the root block by annotate. The default schedules rewrite
// lowered TIR, so these traces change no loop of the block TIR; lowering
// (lower.h, LowerScheduled) applies the default schedule with the knobs. The
// point whose decisions are all 0 is exactly the default schedule, so a
// search that keeps the best point never ends slower than the default.
// Knobs so far (compiler/tir/schedule_knobs.h): the matmul register tile,
// packing, one-row partial sums and the parallel tile loop (when there is a
// matmul nest); the convolution's tile shape and row tiles (a conv nest),
// and for convs of one group the im2col panels, a different kernel; the
// packed input's layout (halo rows or shift planes);
// else the vector width and unroll of elementwise loops; and the thread hint.
#ifndef KILN_COMPILER_TUNE_SPACE_H_
#define KILN_COMPILER_TUNE_SPACE_H_

#include <cstdint>
#include <string>
#include <vector>

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

// The knobs DefaultSpace samples for `func` (names of schedule_knobs.h with
// their candidates, candidate 0 always 0 = the rule), given the thread hint.
struct Knob {
  std::string name;
  std::vector<int64_t> candidates;
};
std::vector<Knob> DefaultSpaceKnobs(const ir::PrimFunc& func, int threads);

// Samples every knob of `knobs` and annotates it on the root block.
Status ApplyDefaultSpace(tir::Schedule* sch, const std::vector<Knob>& knobs, int threads);
// `space_trace` (a trace of ApplyDefaultSpace) with every decision 0: the
// default schedule's point.
Result<tir::Trace> DefaultPoint(const tir::Trace& space_trace);

// The name of the thread-hint knob (its one candidate is the hint).
constexpr char kThreadsKnob[] = "threads";

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_SPACE_H_
