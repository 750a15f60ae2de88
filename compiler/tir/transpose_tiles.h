// TileTransposes: elementwise nests whose vectorized innermost loop reads
// a float32 tensor across its rows (a transpose that moves the innermost
// axis: NCHW <-> NHWC, [.., s, d] -> [.., d, s]) move that tensor in 16 x 16
// tiles through the code generator's register transpose (the transpose16
// intrinsic: 16 row loads, 64 shuffles, 16 row stores).
//
// Matched (lowered, default kinds chosen): a loop R (serial or parallel,
// min 0, static extent at least 16) whose body is, through a chain of
// serial or parallel loops (one loop each), a vectorized loop Q (min 0,
// static extent at least 16) whose body is one float32 BufferStore S
// with
//   - Q's variable as S's last index and R's as another whole index, no
//     other index reading either (every (r, q) writes its own element);
//   - exactly one load L in S's value with R's variable as its last index
//     and Q's as another whole index, no other index reading either, of a
//     float32 buffer of compact layout (L's rows are 16 floats along R);
//   - no load of S's buffer (the stores are independent).
// Left to LLVM, each vector of Q gathered 16 floats a whole row apart:
// NCHW -> NHWC 1x64x80x80 took 145 us (1 thread), NHWC -> NCHW 294 us.
//
// Rewrite: R becomes R / 16 blocks of its kind, Q becomes a serial loop of
// Q / 16 blocks inside the chain, and each (r block, q block) transposes
// L's 16 x 16 tile: straight into S's buffer when S stores L itself (a
// plain transpose); otherwise into a 256-float local tile, then S over
// the tile's 16 rows (unrolled) of 16 lanes with L replaced by the tile's
// element (a transpose fused with elementwise arithmetic). The last Q % 16
// columns of each block of rows and the last R % 16 rows keep the nest as it
// was (gathers). Returns `func` itself when nothing matches.
#ifndef KILN_COMPILER_TIR_TRANSPOSE_TILES_H_
#define KILN_COMPILER_TIR_TRANSPOSE_TILES_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc TileTransposes(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_TRANSPOSE_TILES_H_
