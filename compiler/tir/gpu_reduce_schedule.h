// ScheduleBlockReduction: the GPU schedule of a reduction whose rows are
// independent (softmax's max and sum, layer_norm's mean and variance, sum /
// mean / max over the last axes, a reduction of everything to one value):
// one thread block per row, each thread a strided part of the row, then a
// tree through shared memory down to one warp and warp shuffles for the
// last 32 values.
//
// Input: an item of a lowered PrimFunc split by ScheduleForGpu into `rows`
// (its outer loops whose iterations write disjoint elements, possibly none)
// and `rest`, the statement inside them, which must be a reduction nest as
// LowerBlocks leaves it:
//   for k0 ...: for k1 ...:
//     if k0 == 0 and k1 == 0: out[I] = init
//     out[I] = out[I] <op> e          (op: +, max, min; I without any k)
// with float32 or int32 `out`, `init` the identity of `op` (0, -inf, +inf,
// or the int32 limits) and `e` not a contraction (no two buffers both
// indexed by a k: a matmul is not a row reduction). Returns nullptr when
// the item is not such a reduction, or its K (the product of the k extents)
// is a constant below 32 (one thread per row is as good).
//
// Output (R = the product of the row extents, B = 32 threads when K is a
// constant up to 512, else 256):
//   for bx in T.thread_binding(R, thread="blockIdx.x"):
//     <row variables from bx>
//     red = T.decl_buffer((B,), scope="shared")
//     for tx in T.thread_binding(B, thread="threadIdx.x"):   # strided part
//       red[tx] = init
//       for j in range(ceildiv(K, B)):
//         if tx + j * B < K: <k variables>; red[tx] = red[tx] <op> e
//     T.tvm_storage_sync()
//     # for s = B/2 .. 32: one phase each, then a barrier
//     for tx in T.thread_binding(B, ...): if tx < s: red[tx] = red[tx] <op> red[tx + s]
//     # for d = 16, 8, 4, 2, 1: the first warp, no barrier (lanes exchange
//     # registers; each lane reads back only its own shared element)
//     for tx in T.thread_binding(B, ...):
//       if tx < 32: red[tx] = red[tx] <op> kiln.warp_shuffle_down(red[tx], d)
//     for tx in T.thread_binding(B, ...): if tx == 0: out[I] = red[0]
// Every phase is its own thread loop, so the item run with its thread loops
// as serial loops (threads in ascending order) computes the same values:
// tests/gpu's CPU check does that, reading a shuffle of red[tx] by delta d
// as red[tx + d] (not yet overwritten when the threads run in order).
#ifndef KILN_COMPILER_TIR_GPU_REDUCE_SCHEDULE_H_
#define KILN_COMPILER_TIR_GPU_REDUCE_SCHEDULE_H_

#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// The name of the warp shuffle intrinsic: kiln.warp_shuffle_down(value,
// delta), float32 or int32 (nvptx_kernel_emitter.cc lowers it).
constexpr const char* kWarpShuffleDown = "kiln.warp_shuffle_down";

ir::Stmt ScheduleBlockReduction(const std::vector<const ir::ForNode*>& rows, const ir::Stmt& rest);

// ScheduleFusedRows: softmax / layer_norm as one kernel. items[first] must
// be a row reduction over its outer loops (the rows); the items after it
// that loop over the same rows (same extents) and are row reductions or
// elementwise passes over the row (one store to [rows..., own loops...])
// join it while every buffer they write is read and written only at the
// block's row. One block per row runs them in order, a barrier between
// items: each reduction a block reduction into a shared buffer of its own
// (thread 0 still stores the value), whose red[0] later items read instead
// of the stored element (the broadcast); each elementwise pass strided over
// the threads. *consumed gets the number of items fused (2 or more), or the
// result is nullptr.
ir::Stmt ScheduleFusedRows(const std::vector<ir::Stmt>& items, size_t first, size_t* consumed);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_GPU_REDUCE_SCHEDULE_H_
