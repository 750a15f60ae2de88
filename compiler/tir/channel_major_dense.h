// ScheduleChannelMajorDense: a small dense layer applied at every position of
// a channel-major tensor, computed without transposing the tensor.
//
// Keras' TimeDistributed(Dense) after a Conv1D, as tf2onnx exports it
// (DeepCut: twelve of them, 100-200 channels -> 5 at 10-21 positions, batch
// 64), is squeeze -> bias add -> relu -> transpose(0, 2, 1) -> reshape to
// [N * L, C] -> matmul by a [C, J] weight -> bias add. Fused and inlined,
// that is a prologue nest storing the transposed operand
//   T[i0, i1] = f(X[.., i0 // L, .., i1, .., i0 % L], loads not using i0)
// followed by the matmul nest C[i, j] (+)= T[i, k] * W[k, j] and elementwise
// stages over (i, j). The matmul schedule then gathered the transpose with
// stride L (vectorized over channels) and ran its tiles on J-float vectors
// (5 lanes): 4-6 GFLOP/s.
//
// Matched (in any statement sequence of a lowered, default-scheduled
// function, before ScheduleMatmuls; loop kinds ignored): the prologue as
// above, with L static, X's i0 % L index its last (so positions are
// contiguous) and i0's extent provably X's (i0 // L) extent times L; T local
// to the function and read only by the matmul as T[i, k]; the matmul nest
// (i, j, k) right after it, float32, zero-or-constant init, W read at [k, j]
// exactly, i and k over T's extents, J static with J * ceil(L / 16) <=
// kMaxDenseAccVectors; then the longest run of elementwise stages over (i, j)
// whose intermediates nothing else references (as the matmul schedule fuses
// epilogues).
//
// Rewrite: per position block n (parallel with threads >= 2), accumulators
// acc[J, L] (j unrolled, positions one vector loop); for each channel k the
// prologue's value at (n, k, 0..L) is computed once, contiguous, and fed to J
// FMAs by the broadcast W[k, j]; the stages are applied to the accumulators
// and the last one stored at [n * L + x, j]. Results differ from the naive
// nests only by FMA contraction (the k order is kept). Returns `func` itself
// when nothing matches.
#ifndef KILN_COMPILER_TIR_CHANNEL_MAJOR_DENSE_H_
#define KILN_COMPILER_TIR_CHANNEL_MAJOR_DENSE_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Accumulator vectors (16 floats) a tile may keep: 24 of the 32 registers
// leave room for the prologue's values and the broadcast weight.
constexpr int64_t kMaxDenseAccVectors = 24;

ir::PrimFunc ScheduleChannelMajorDense(const ir::PrimFunc& func, int num_threads_hint);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CHANNEL_MAJOR_DENSE_H_
