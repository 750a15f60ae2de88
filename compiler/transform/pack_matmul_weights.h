// Pass: pack-matmul-weights — give constant matmul weights the blocked
// layout the CPU matmul schedule streams, computed once at compile time
// instead of copied per call.
//
//   y = R.matmul(x, W)                W: a constant (K, N), float32
// becomes, with b = tir::kMatmulWeightBlock (64, the tiles' width),
//   pw = R.call_tir(cls.pack_weight_kn<b>n, (W,), out_sinfo=R.Tensor((ceil(N / b), K, b)))
//   y  = R.matmul(x, pw, weight_layout="KN<b>n"[, weight_columns=N])
// with pack_weight_kn<b>n a PrimFunc added to the module (one per weight
// shape): pw[c, k, l] = W[k, c * b + l], 0 for columns from N on (the last
// block's padding when N is not a multiple of b; weight_columns then keeps
// the result's N columns, and the schedule's last tile stores only those).
// The pass runs fold-constant itself
// (the driver places it after the first one), which evaluates the call, so
// the packed weight replaces W in the module; each tile then reads its
// K x b panel from contiguous memory, where W's rows of N * 4 bytes sent
// the panel's lines to few cache sets. The per-call copy the schedule made
// for large row counts (matmul_schedule.h, "Packing") is gone with it.
// MiniLM-L6 (batch and sequence symbolic, 2 x 128 tokens, one thread, the
// minimum of 30 profiled calls per kernel on a loaded 2-core machine, two
// rounds): 256x384x1536 + GELU 2.24 / 2.30 -> 1.94 / 1.87 ms, 256x1536x384
// 1.80 / 1.89 -> 1.64 / 1.62 ms, the sum of all kernels 39.3 / 40.1 ->
// 35.8 / 35.0 ms.
//
// Rewritten: matmul calls whose second operand is a constant (directly, or a
// variable bound to one in the same function) of static shape (K, N),
// float32, N >= b (fewer columns keep the narrower tiles of a plain
// weight), whose first operand is float32 of rank >= 2,
// with no out_dtype other than float32. Anything else (weights that are
// inputs, batched weights, transposed operands ...) is left alone. CPU
// targets only (the driver does not run it for --target=cuda).
//
// Pre: normalized and flattened (A-normal form); bind-params ran.
// Post: normalized, folded. No failures of its own (an internal error
// building the packing kernel, or fold-constant's, is returned).
#ifndef KILN_COMPILER_TRANSFORM_PACK_MATMUL_WEIGHTS_H_
#define KILN_COMPILER_TRANSFORM_PACK_MATMUL_WEIGHTS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> PackMatmulWeights(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_PACK_MATMUL_WEIGHTS_H_
