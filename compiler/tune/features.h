// Features of a lowered PrimFunc for the tuner's cost model (cost_model.h):
// one fixed-length vector per candidate, computed from the TIR the candidate
// compiles to (after its schedule and LowerScheduled), so candidates of any
// design space (knobs of the default schedules, generic block rules) are
// compared on what they run. Counts are weighted by how many times the
// statement runs (the product of the static extents around it; a symbolic
// extent counts once) and taken as log2(1 + x).
//
//   0 float arithmetic ops        1 bytes loaded         2 bytes stored
//   3 ops per byte                4 loops                5 deepest loop nest
//   6 parallel extent (largest)   7 vector width (largest vectorized extent)
//   8 share of ops in vectorized loops   9 unrolled extent (largest product)
//  10-12 share of loads whose address, along the innermost enclosing loop,
//        is constant (reuse) / contiguous (the last index moves) / strided
//  13 innermost loop extent (op-weighted mean)   14 bytes of local buffers
//  15 stores (static count)      16 outermost iterations (sum over nests)
//  17 conditionals run           18 share of ops in unrolled loops
//  19 largest serial loop extent
#ifndef KILN_COMPILER_TUNE_FEATURES_H_
#define KILN_COMPILER_TUNE_FEATURES_H_

#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tune {

constexpr int kNumFeatures = 20;

// Pre: `lowered` has no BlockRealize (LowerScheduled's output). Always
// kNumFeatures values.
std::vector<float> ExtractFeatures(const ir::PrimFunc& lowered);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_FEATURES_H_
