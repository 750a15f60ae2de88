// CompactLoopBuffers: a buffer allocated in a kernel whose every access sits
// inside one loop and indexes one dimension with exactly that loop's
// variable holds one independent slice per iteration. It is allocated inside
// the loop instead, with that dimension of extent 1:
//
//   T = decl_buffer((1, 128, 55, 55))            for c in parallel(128):
//   for c in parallel(128):                  ->     T = decl_buffer((1, 1, 55, 55))
//     T[0, c, y, x] = ..                              T[0, 0, y, x] = ..
//     .. = T[0, c, 2y, 2x] ..                         .. = T[0, 0, 2y, 2x] ..
//
// Fusion leaves such buffers between injective stages that share an outer
// loop (a concatenation copied channel by channel and then max-pooled): the
// whole tensor's worth of storage (1.5 MB for SqueezeNet's 128 x 55^2) where
// each iteration needs one channel (12 KB, which stays in L1 and goes on the
// task's stack). Several loops may each drop their dimension; the
// allocation moves inside the innermost of them. Only slices of at most
// kMaxCompactedBytes are made (a larger one would be a heap allocation per
// iteration). Buffers read through a view of another shape are left alone.
// Returns the same PrimFunc when nothing changes.
#ifndef KILN_COMPILER_TIR_COMPACT_LOOP_BUFFERS_H_
#define KILN_COMPILER_TIR_COMPACT_LOOP_BUFFERS_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

constexpr int64_t kMaxCompactedBytes = 32 * 1024;

ir::PrimFunc CompactLoopBuffers(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_COMPACT_LOOP_BUFFERS_H_
