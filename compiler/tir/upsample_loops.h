// Pass: upsample loops — a vectorized loop of run-time extent over the
// columns of a nearest-neighbour upsampling by an integer factor s, which
// reads its source at column x // s, becomes a serial loop over the source
// columns with s output columns each:
//
//   for x in T.vectorized(w * s):          for j in range(w):
//     Y[.., x] = f(X[.., x // s], Z[.., x])  =>  for r in T.vectorized(s):
//                                                  Y[.., j * s + r] = f(X[.., j], Z[.., j * s + r])
//
// Why: the loop vectorizer made x // s a lane-by-lane gather behind one
// branch per lane (a masked loop of run-time extent), and the 2x upsampling
// of PP-OCRv4 det's feature pyramid (96 channels, 80^2 -> 160^2, symbolic
// H and W) moved about 7 GB/s. Afterwards each source value is loaded once
// and stored s times as one short vector.
//
// Rewritten: vectorized loops whose extent is not a constant but is
// syntactically `e * s` (s a constant >= 2) and whose body uses the loop
// variable x only as x itself (in affine indices and values) and as
// x // s or x % s, with x // s used at least once. Everything else is left
// alone (and returned as the same node). Pre: scheduled (no blocks).
#ifndef KILN_COMPILER_TIR_UPSAMPLE_LOOPS_H_
#define KILN_COMPILER_TIR_UPSAMPLE_LOOPS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc SplitUpsampleLoops(const ir::PrimFunc& f);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_UPSAMPLE_LOOPS_H_
