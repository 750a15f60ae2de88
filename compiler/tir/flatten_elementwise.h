// FlattenElementwiseRows: an elementwise nest over rows of a symbolic width
// becomes one loop over the rows' elements, so a short row is not a loop of
// its own.
//
// Matched: a perfect loop nest whose innermost two loops (from 0, serial)
// are c of a static extent C and x of a symbolic extent W, inside a loop of
// another extent than 1 (the default schedule's parallel loop, while the
// flat loop is vectorized), around one store
//   D[.., c, x] = f
// where D is compact with its last two dimensions C and W, and every load
// in f that uses c or x is B[.., c + k, x] (k a constant >= 0, nothing
// else using c or x) with B compact and its last dimension W; D and each
// such B a parameter (the passes after the schedule size the function's
// own buffers by their accesses). Rewritten: c
// and x become one loop j over C * W, the store D_flat[.., j] and those
// loads B_flat[.., k * W + j], of views of D and B with their last two
// dimensions merged (the same memory). Each element is computed as before,
// in the same order. Silero VAD's STFT magnitude, sqrt(re^2 + im^2) over
// 129 rows of the window count (3 at 512 samples), ran as 129 scalar rows
// of 3 (0.39 us against 0.10 pinned, where the whole plane is one static
// loop); over 387 elements its sqrt is vectorized.
// Functions with a reduction or update (a store reading its own buffer:
// convolutions, matmuls) are left alone: their schedules and epilogue
// matchers read the elementwise rows after them as they are.
// Pre: lowered. Returns the same PrimFunc when nothing matches.
#ifndef KILN_COMPILER_TIR_FLATTEN_ELEMENTWISE_H_
#define KILN_COMPILER_TIR_FLATTEN_ELEMENTWISE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc FlattenElementwiseRows(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_FLATTEN_ELEMENTWISE_H_
