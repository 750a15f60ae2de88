// ScheduleForGpu: the default GPU schedule of a lowered PrimFunc, as TVM's
// rule-based default for injective kernels: each item's outer loops whose
// iterations write disjoint elements are fused into one index, split by
// `threads_per_block` and bound to blockIdx.x / threadIdx.x (T.thread_binding
// loops); the rest of the item (a reduction's loop, an inner nest) runs in
// each thread.
//
// The body must be top-level Allocates around a sequence of items (or one
// item), as LowerBlocks and InlineElementwise leave a fused PrimFunc; each
// item becomes one kernel launch (nvptx_codegen.h splits them), so an item
// sees everything the items before it stored. Allocates at the top level and
// between an item's top and its bound loops become global workspaces.
//
// The result of an item (N = product of the fused extents, static or
// symbolic; B = threads_per_block):
//   for bx in T.thread_binding((N + B - 1) // B, thread="blockIdx.x"):
//     for tx in T.thread_binding(B, thread="threadIdx.x"):
//       if bx * B + tx < N:
//         <the fused loops' variables recomputed from bx * B + tx>
//         <the rest of the nest>
// B is N itself when N is a constant below B (no idle threads).
//
// A loop is bound when every store in its body indexes the stored buffer
// with the loop's variable alone in some dimension (so two iterations never
// write one element); a reduction's loop is not. What is left inside the
// bound loops may instead get a schedule that shares memory: a matmul is
// tiled (gpu_matmul_schedule.h), a reduction with independent rows (or to
// one value) is a block per row (gpu_reduce_schedule.h). Any other item
// without a bound loop (a scan over every element, an accumulation without
// an init) runs whole in one thread of a one-block grid: correct and serial.
// Pre: LowerBlocks ran (no BlockRealize), no CPU schedule (no parallel or
// vectorized loops matter: they become serial loops in the thread).
#ifndef KILN_COMPILER_TIR_GPU_SCHEDULE_H_
#define KILN_COMPILER_TIR_GPU_SCHEDULE_H_

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace tir {

constexpr int64_t kGpuThreadsPerBlock = 256;

Result<ir::PrimFunc> ScheduleForGpu(const ir::PrimFunc& func, int64_t threads_per_block = kGpuThreadsPerBlock);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_GPU_SCHEDULE_H_
