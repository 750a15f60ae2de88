// AliasOutputBuffers: a kernel-allocated buffer E of an output's shape and
// dtype whose last use is the store of that output, element by element,
// lives in the output instead:
//
//   E = decl_buffer((1, n))                       for i in range(1):
//   for i in range(1):                                ...
//     ...                                    ->      O[i, j] = exp(..)   (was E)
//     E[i, j] = exp(..)                              s += O[i, j]        (was E)
//     s += E[i, j]                                   O[i, j] = O[i, j] * r
//     O[i, j] = E[i, j] * r
//
// Softmax over a row too long for the row-local buffer that
// CompactLoopBuffers makes (reduce_schedule.h) kept a workspace the size of
// its output: one more buffer to allocate per call and to keep in cache
// (1 x 2^20 floats, one thread, kiln-bench medians: 0.56 -> 0.52 ms).
//
// Conditions (every one is checked; a kernel that fails one is unchanged):
//   - O is a parameter the kernel never loads (an output) and stores in
//     exactly one statement; E and O are accessed only through themselves
//     (no view of another shape, no use of the handle), E has global scope,
//     and both have the same static shape and dtype;
//   - down from E's allocation, through loops, lets and allocations, to the
//     sequence that splits the accesses: every loop passed through indexes
//     one dimension of every access of E and O with exactly its variable
//     (each iteration owns one slice of both);
//   - in that sequence the statement holding O's store comes after every
//     other access of E and O, and in it E is only loaded, only inside the
//     stored value and only at the store's own indices;
//   - every loop around the store inside that statement indexes its own
//     dimension of the store with exactly its variable, so each element of
//     O is written once, right after its E value was read.
// The kernel's parameters do not alias one another (tir.noalias), so
// writing O earlier than before reads nothing it clobbers. Returns the same
// PrimFunc when nothing changes.
#ifndef KILN_COMPILER_TIR_ALIAS_OUTPUT_BUFFERS_H_
#define KILN_COMPILER_TIR_ALIAS_OUTPUT_BUFFERS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc AliasOutputBuffers(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_ALIAS_OUTPUT_BUFFERS_H_
