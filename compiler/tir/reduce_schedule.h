// ScheduleRowReductions: the default schedule of row-wise kernels (softmax,
// layer_norm, rms_norm, sums and maxima over the last axis, chains of
// elementwise stages), on lowered TIR (no BlockRealize). Four rewrites, in
// this order, each applied wherever its conditions hold:
//
// 1. Loop fusion (compute_at of the per-row stages under one row loop).
//    Two adjacent loops of one SeqStmt with structurally equal min and extent
//    fuse into one loop whose body runs the first body, then the second (its
//    loop variable renamed) when the fusion is legal: for every buffer stored
//    in either body (other than buffers allocated inside them) there is one
//    dimension d such that every load and store of that buffer in both bodies
//    uses exactly the loop variable as index d. Iteration i of the fused loop
//    then touches slice i of every written buffer and nothing else touches
//    it, so running the stages row by row computes the same values in the
//    same order per element. Fusion repeats inside the fused body (a 3-D
//    softmax fuses its two outer loops). The fused loop is parallel when one
//    of the loops was (serial when a body already holds a parallel loop),
//    vectorized when all were, serial otherwise; unrolled loops fuse only
//    with unrolled loops and stay unrolled. Loops of static extent 1 that
//    are not unrolled, one of which holds a reduction's update, fuse
//    without the index condition (each body runs once either way), and a
//    buffer sinks into one (step 2) at a dimension indexed by its variable
//    or its min.
//
// 2. Buffer sinking ("keep the row in cache"). An Allocate whose buffer is
//    used by exactly one loop of its body (through SeqStmt, Allocate and
//    LetStmt), always with the loop variable at one dimension d, moves into
//    that loop's body with dimension d removed (a 1-element buffer when it had
//    one dimension), when the new shape is static and at most
//    kMaxSunkBufferBytes, and the body never uses the buffer's data handle
//    other than through loads and stores. Repeats inward; a slice that is
//    symbolic or too large moves only when it goes further in to one that
//    fits (a [n, s, cols] buffer under loops over n and s). So softmax's exp buffer of
//    rows x cols becomes one row per iteration (per thread), and the row max
//    and sum become scalars that LLVM keeps in registers.
//
// 3. Vectorized reductions. An innermost non-parallel loop over k whose body
//    is `[if (k == min) X[idx] = init;] X[idx] = X[idx] OP f(k)` (OP: float
//    add, max, min, or integer add; idx and init free of k; f free of X;
//    every load in f whose indices use k uses it only in its last index, as
//    k or k + (an expression free of k)) becomes: X[idx] = init (hoisted),
//    V lane accumulators set to OP's identity, a loop over k / V blocks with
//    a vectorized inner loop acc[l] = acc[l] OP f(block * V + l), a tree
//    reduction of the V lanes into X, and a scalar loop over the k % V tail;
//    with a symbolic extent, the tail's whole 16-element chunks go into the
//    first 16 lanes before the tree (a loop of static 16-wide vectorized
//    steps) and only the last k % 16 run in the scalar loop.
//    V is 64 (four AVX-512 registers) for long or symbolic rows, less for
//    short ones; loops of static extent < 16 stay as they are. The lane tree
//    halves into a fresh buffer per step (vector steps down to 4 lanes,
//    unrolled below), each written and read at one width, so that LLVM keeps
//    the whole tree in registers (shuffles) instead of going through the
//    stack. Float sums are reassociated (results differ from the serial order
//    by rounding only). In softmax's row (a max m of x read only as
//    exp(x[j] - m) into e, e summed over the whole row into s, outputs only
//    e[j] / s; m, e, s row-local) the max is the plain a > b ? a : b (one
//    vmaxps) instead of T.max's NaN-propagating compare + blend: rows without
//    NaN get the same bits, rows with a NaN are all NaN either way because s
//    is (proof at SoftmaxMaxLoops in the .cc). Elsewhere T.max stays. A float
//    sum of products (acc + a * b: a variance, rms_norm's sum of squares)
//    accumulates with fma (one rounding instead of two).
//    Long rows: with num_threads_hint >= 2, a matched reduction outside any
//    parallel loop (other parallel loops may stand beside it, as softmax's
//    exp and output loops over one long row) that has a symbolic extent or
//    one of at least kMinSplitReduction is split across threads instead: a
//    parallel loop over P = num_threads_hint * kSplitChunksPerThread chunks
//    (multiples of 64 elements; more chunks than threads, so that a thread on
//    a busy core takes fewer) computes P partial results, each vectorized as
//    above, which are then combined in order.
//
// 4. Reciprocals. In an innermost vectorized loop, a float division x / d
//    whose divisor reads a buffer, does not use the loop variable and reads
//    nothing the loop stores (softmax's row sum, layer_norm's
//    sqrt(var + eps)) becomes x * r, r = 1 / d bound once before the loop
//    (LetStmt). Results differ from the division by at most about one ULP;
//    divisions by constants are left exact, and so are divisions under a
//    rounding to an integer (round, floor, ceil, trunc, a cast to an integer
//    type: a quantization's round(x / scale)), where one ULP can change the
//    integer. In such a loop (a normalization's
//    output, (x - m) * r * g + b) every float a * b + c becomes fma(a, b, c).
//
// Knobs (schedule_knobs.h; absent or 0: the rules above):
//   reduce.lanes         V of 3. (16, 32 or 64; a row shorter than V keeps
//                        the rule's choice)
//   reduce.unroll        U: the loop over V-lane blocks of 3. split by U, the
//                        inner U blocks unrolled (static rows of >= U blocks)
//   reduce.split_chunks  chunks per thread of a long row split across
//                        threads (replaces kSplitChunksPerThread)
//
// Pre: `func` is lowered; loop kinds set by ApplyDefaultSchedule's rules (this
// pass runs after them and after the matmul rewrite). Post: same results up to
// float reassociation of reductions and fma contraction (rounding only).
// Returns the same PrimFunc when nothing applies. Never fails: a nest that does not match is left as it is.
#ifndef KILN_COMPILER_TIR_REDUCE_SCHEDULE_H_
#define KILN_COMPILER_TIR_REDUCE_SCHEDULE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

constexpr int64_t kMaxSunkBufferBytes = 32 * 1024;
constexpr int64_t kMinSplitReduction = 16 * 1024;
constexpr int64_t kSplitChunksPerThread = 4;

ir::PrimFunc ScheduleRowReductions(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

// The statement-level steps, for tests.
ir::Stmt FuseRowLoops(const ir::Stmt& body);
ir::Stmt SinkBuffers(const ir::Stmt& body);
// `num_threads_hint` >= 2 splits long reductions (see 3.) across threads.
ir::Stmt VectorizeReductions(const ir::Stmt& body, int num_threads_hint = 1, const ScheduleKnobs& knobs = {});
ir::Stmt HoistReciprocals(const ir::Stmt& body);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_REDUCE_SCHEDULE_H_
