// ReadConcatSlicesInPlace: a pass on scheduled TIR (after CompactLoopBuffers)
// that drops the per-iteration copy of a concatenation's slice which a
// fused consumer (a max pool) reads:
//
//   for c in (128):                                for c in (64):
//     B = decl_buffer((55, 55))                      .. A[0, c, r, s] ..
//     for y, x: B[y, x] = if_then_else(c < 64,  =>  for c in (64):
//         A[0, c, y, x], C[0, c - 64, y, x])          .. C[0, c, r, s] ..
//     .. B[r, s] ..
//
// Why: fusion leaves a concatenation feeding a pool as a staging copy of
// each channel (SqueezeNet's fire modules: Winograd output + ReLU, the 1x1
// expand's output, then a 3x3 / 2 max pool); split at the concatenation's
// bounds, each piece reads its source where it lies.
//
// Rewritten: a loop L over v (from 0, static extent) whose body is the
// Allocate of a buffer B around a sequence whose first item is a perfect
// nest of loops from 0 with one store B[y..] = chain at its loop point, y..
// every loop variable in order and the nest covering B (extents = B's
// static shape); the chain is a load, or if_then_else(v < b1, e0, ..)
// with constant, increasing bounds inside L, each e a load S[lead.., y..]
// whose lead indices use none of y..; the rest of the sequence stores
// nothing into B nor any S, and reads B only by loads of B's rank. Piece i
// runs v over [b_i, b_{i+1}) with v = v' + b_i and loads B[idx..] read
// S_i[lead_i.., idx..]. Everything else is returned as the same node.
#ifndef KILN_COMPILER_TIR_CONCAT_SLICE_READS_H_
#define KILN_COMPILER_TIR_CONCAT_SLICE_READS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc ReadConcatSlicesInPlace(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONCAT_SLICE_READS_H_
