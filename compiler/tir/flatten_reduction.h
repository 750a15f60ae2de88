// FlattenTrailingReductions: a reduction over several trailing axes of a
// compact buffer (global average pooling's mean over H and W, a sum over
// the last two axes) becomes a reduction over one flat axis, so that the
// row-reduction schedule (reduce_schedule.h, rewrite 3) vectorizes it.
//
// Matched: a perfect loop nest whose innermost m >= 2 loops (each from 0,
// extents E1..Em, static or symbolic) are the reduction: their variables appear in no
// index of the store, whose body is
//   [if k1 == 0 and .. km == 0: X[idx] = init]   X[idx] = X[idx] OP f
// and where every load in f that uses k1..km is B[.., k1, .., km] with B
// compact (no strides) and its last m dimensions E1..Em. Rewritten: the m
// loops become one loop k over E1 * .. * Em, the guard k == 0, and those
// loads B_flat[.., k] of a view of B with its last m dimensions merged (the
// same memory). The elements are visited in the same order, so the values
// are the same. SqueezeNet's mean over 1000 x 13 x 13 ran 169 dependent
// scalar adds per channel (95 us); as one 169-long row it vectorizes.
// Pre: lowered. Returns the same PrimFunc when nothing matches.
#ifndef KILN_COMPILER_TIR_FLATTEN_REDUCTION_H_
#define KILN_COMPILER_TIR_FLATTEN_REDUCTION_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc FlattenTrailingReductions(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_FLATTEN_REDUCTION_H_
