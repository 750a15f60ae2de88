// FuseSymbolicParallelLoops: a parallel loop of symbolic extent (a batch N)
// around a static serial loop takes that loop into its iteration space.
//
// The default schedule parallelizes the outermost independent loop of a
// nest; when that is the batch, a model run at batch 1 (speech models over
// one utterance: PLCMOS's max_pool2d over [N, 32, frames, 64]) gets one
// iteration and no thread but the caller's. Here
//   for n in parallel(N): for c in range(C): body
// becomes
//   for nc in parallel(N * C): n = nc // C; c = nc % C; body
// when C is static (at least 2), the c loop holds a loop of its own (an
// innermost loop stays, for LLVM to vectorize), and every buffer it stores (but
// allocates not itself) is accessed, wherever it is, with c as one index in
// the same position (distinct c, distinct elements); loops further in are
// taken the same way while the static extents taken multiply to less than
// kMinFusedIterations. Any N then splits across the threads; the same
// iterations run in the same order on one thread.
//
// Pre: lowered TIR with loop kinds chosen. Returns `func` itself when no
// loop qualifies.
#ifndef KILN_COMPILER_TIR_FUSE_SYMBOLIC_PARALLEL_H_
#define KILN_COMPILER_TIR_FUSE_SYMBOLIC_PARALLEL_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Static loops are taken until their extents multiply to this many
// iterations per batch element (8 chunks a thread for 8 threads at batch 1).
constexpr int64_t kMinFusedIterations = 64;

ir::PrimFunc FuseSymbolicParallelLoops(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_FUSE_SYMBOLIC_PARALLEL_H_
