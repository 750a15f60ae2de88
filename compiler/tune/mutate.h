// Mutations of a trace's decisions for the evolutionary search (search.h).
// One mutation changes one sampling instruction's decision and leaves the
// rest of the trace as it is:
//   sample_perfect_tile      moves one prime factor of a tile to another
//                            level (the product stays the loop's extent; the
//                            innermost stays <= max_innermost_factor)
//   sample_categorical       another candidate (unroll on/off, parallel,
//                            cache, a knob's value: tile size, vector width,
//                            parallel chunks, packing)
//   sample_compute_location  another location: root, inline or one of the
//                            legal loops (tried by replay; refused ones are
//                            skipped)
// Every mutated trace replays on the function (checked here), so a mutation
// never hands the search a point outside the space. Deterministic for the
// generator's state.
#ifndef KILN_COMPILER_TUNE_MUTATE_H_
#define KILN_COMPILER_TUNE_MUTATE_H_

#include <random>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/schedule.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

// A replayed schedule of `func` whose trace is `trace` with one decision
// mutated. Fails (kNotFound) when no mutation of `trace` replays after a few
// tries (a trace without sampling instructions, a space of one point).
Result<tir::Schedule> MutateTrace(const ir::PrimFunc& func, const tir::Trace& trace, std::mt19937_64* rng);

// The tile with one prime factor moved between two levels, or the same tile
// when none can move (exposed for tests).
std::vector<int64_t> MutateTile(const std::vector<int64_t>& tile, int64_t max_innermost, std::mt19937_64* rng);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_MUTATE_H_
