// How much work one iteration of a parallel loop does, so that code
// generation can run a loop serially on the calling thread when the whole
// loop is too small to pay for a parallel launch (waking the workers and
// joining them costs a few microseconds even when they are spinning, tens when
// they sleep).
//
// The count is in "operations": every store counts 1, plus one per load and
// per arithmetic node of its value, and 8 per intrinsic call (exp, tanh, ...:
// tens of instructions each); an `if` counts the branch it takes when its
// condition reads only sizes and variables outside the iteration (a select
// evaluated at the launch), else its larger branch. It is
// multiplied by the trip counts of the loops around the store inside the
// iteration, a vectorized loop's in vectors of 16 lanes. It is a proxy for
// time (an operation is roughly a nanosecond or less) that ignores memory
// traffic: good to tell a 200-element kernel from a 2-million-element one,
// which is all the launch decision needs.
//
// Precondition: lowered TIR (no blocks). The result is the work of one
// iteration of `loop` as an int64 expression over the variables free in the
// loop (the kernel's parameters, shape variables, outer loop variables), to
// be evaluated where the launch is. An inner loop whose extent depends on
// the loop's own variable or one bound inside it counts with a bound of that
// extent free of them where one is found (min, max, +, - and division or
// remainder by constants: a split reduction's parts, max(min(C, n - k * C),
// 0) // 64, count as C // 64); nullopt when none is (a triangular nest) or an
// extent depends on loaded data.
#ifndef KILN_COMPILER_TIR_PARALLEL_WORK_H_
#define KILN_COMPILER_TIR_PARALLEL_WORK_H_

#include <cstdint>
#include <optional>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Below this many element operations in all, a parallel loop runs serially
// on the calling thread. benchmarks/runtime/parallel_launch_benchmark.cc
// measures both sides (docs/performance.md has the figures): a launch costs
// about a microsecond with the workers spinning and tens with them asleep,
// while this much work takes a few microseconds on one thread, so splitting
// smaller loops gains little even in the best case and loses whenever a
// worker is late.
constexpr int64_t kMinParallelWork = 16384;

std::optional<ir::PrimExpr> ParallelIterationWork(const ir::ForNode& loop);

// The static schedules decide at compile time whether a loop is worth a
// launch, each by its own measure of the whole nest: the default schedule by
// its iteration count (>= kMinParallelWork, default_schedule.h), a
// convolution or matmul by its multiply-adds (>= kMinParallelConvWork /
// kMinParallelMatmulWork, conv_schedule.h, matmul_schedule.h). A symbolic
// kernel cannot, so its loop is parallel at every size, and the operation
// count above is the only check left: a register-blocked fma counts a dozen
// operations there (well under a cycle each), and a padded pool's window a
// select nest of 70. mtcnn_pnet at 12 x 12 launched 4 times a call where the
// pinned build launches none (its 27000-MAC first convolution counted 68000
// operations, a 250-output pool 17750).
//
// ParallelStaticRuleWork is that measure for one iteration of `loop`, as an
// int64 expression like ParallelIterationWork's, with the threshold it is to
// reach in all: where the loop holds an fma call, its multiply-adds (every
// lane of every fma, times the trip counts around it, a vectorized loop's in
// lanes) against kMinParallelMacs; otherwise its iterations (stores, counted
// the same way) against kMinParallelWork. nullopt as for
// ParallelIterationWork. The code generator checks it, besides the operation
// count, where the loop's extent or this measure is symbolic; a static loop's
// schedule already applied its rule.
struct StaticRuleWork {
  ir::PrimExpr per_iteration;
  int64_t threshold;
};
std::optional<StaticRuleWork> ParallelStaticRuleWork(const ir::ForNode& loop);

// The smaller of the static multiply-add thresholds (matmul_schedule.h's
// kMinParallelMatmulWork; convolutions use 4x this): a symbolic kernel does
// not stay serial where its pinned build would launch.
constexpr int64_t kMinParallelMacs = 64 * 1024;

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_PARALLEL_WORK_H_
