// ScheduleTiledMatmul: the GPU schedule of a matmul or batch matmul item:
// shared-memory tiles fetched cooperatively by the block's threads, and
// register blocking (each thread accumulates a 4x4 block of outputs).
//
// Input: an item split by ScheduleForGpu into `rows` (its outer loops whose
// iterations write disjoint elements) and `rest`, which must be
//   for k in range(K):
//     if k == 0: C[I] = 0
//     C[I] = C[I] + X * Y
// with float32 or int32 C, X and Y of C's dtype, one row loop (i, extent M)
// read by X and not Y, one (j, extent N) read by Y and not X, and any other
// row loops (batch) read by neither or both; X and Y do not read C. X and Y
// may be any expressions (casts, transposed or fused indexing): the tiles
// hold their values. M, N and K may be symbolic. Returns nullptr otherwise.
//
// Output (BM = BN = 64, BK = 16, 256 threads; a thread t has ty = t / 16,
// tx = t % 16 and owns rows ty + 16 r and columns tx + 16 c, r, c < 4):
//   for bx in T.thread_binding(batch * ceildiv(M, 64) * ceildiv(N, 64), "blockIdx.x"):
//     <batch variables, m0, n0 from bx>
//     Xs = T.decl_buffer((16, 65), scope="shared")   # Xs[kk, ii] (padded)
//     Ys = T.decl_buffer((16, 64), scope="shared")   # Ys[kk, jj]
//     acc = T.decl_buffer((256, 16), scope="local")  # a row per thread
//     for t in T.thread_binding(256, ...): acc[t, :] = 0
//     for kt in range(ceildiv(K, 16)):
//       for t in ...: 4 elements of each tile: X or Y at (m0 + ii, kt*16 + kk)
//                      / (kt*16 + kk, n0 + jj), 0 outside M, N, K
//       T.tvm_storage_sync()
//       for t in ...: for kk, r, c: acc[t, 4r + c] += Xs[kk, ty + 16r] * Ys[kk, tx + 16c]
//       T.tvm_storage_sync()
//     for t in ...: for r, c: if in bounds: C[I at (m0 + ty + 16r, n0 + tx + 16c)] = acc[t, 4r + c]
// Consecutive threads fetch consecutive k of X and consecutive j of Y (a
// row-major A and B are read coalesced), and read consecutive columns of
// Ys (no bank conflicts) and one broadcast row of Xs.
#ifndef KILN_COMPILER_TIR_GPU_MATMUL_SCHEDULE_H_
#define KILN_COMPILER_TIR_GPU_MATMUL_SCHEDULE_H_

#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::Stmt ScheduleTiledMatmul(const std::vector<const ir::ForNode*>& rows, const ir::Stmt& rest);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_GPU_MATMUL_SCHEDULE_H_
