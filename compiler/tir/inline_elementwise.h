// Pass on lowered TIR, run before the default schedule and again after it:
// removes the intermediate buffers of elementwise chains inside a fused
// PrimFunc, so a chain such as Winograd output -> add bias -> relu -> add
// residual makes one pass over memory instead of one per operator. After the
// schedules, reductions they turned into plain stores (the window schedule's
// unrolled pooling and strided depthwise convolutions) take the epilogue
// that follows them.
//
// The body must be top-level Allocates around a sequence of statements
// ("items", the fused kernels' nests in order); anything else is returned
// unchanged. Rewrites, repeated until none applies:
//
// - Forward (compute inline): an allocated buffer T stored once, as
//   T[v0, .., vk] = f with v0..vk exactly the enclosing loops' variables,
//   and loaded once, in a plain elementwise store D[loop vars] = g(.., T[idx],
//   ..) of at most kMaxInlineGrowth times T's elements: the load becomes
//   f[v := idx] and T's store goes.
// - Reverse (reverse compute inline): an allocated buffer T loaded once, in
//   a plain store D[v] = g(.., T[v], ..) whose loops cover T's whole shape
//   (D of T's shape; T may be read at 0 for a loop of extent 1), and stored by pure stores (never reading T) in one
//   earlier item: each store T[idx] = val becomes D[idx] = g[v := idx, T :=
//   val] and the consumer's store goes.
//
// - Redirect (before the schedules only): an allocated buffer T that is a
//   plain copy (T[v] = S[f(v)] over T's whole shape, S final there) and is
//   loaded more than once: one load in a plain elementwise store reads
//   S[f(idx)] instead. Repeated, T is left with one load, which the forward
//   rewrite takes (the two halves of a staged STFT spectrum).
//
// After the schedules (after_schedule), the reverse rewrite also takes a
// consumer that loads T more than once, all at its point (x * sigmoid(x),
// hard-swish after a strided depthwise convolution), when every producer
// value is cheap to evaluate twice (at most two loads, no call but fma and
// if_then_else): the consumer's value repeats it; a consumer that calls math
// (sigmoid) only into a register tile of at most 128 elements (a matmul's
// 6 x 64 tile computing 24 vectors of sigmoid at once was slower than the
// separate pass). Before
// them the epilogue matchers see such a chain as they always did.
//
// Both require that every other buffer the moved expression reads is final
// where it now runs: stored only in items before the producer's. Reductions
// (a store reading its own buffer) are never producers or consumers, so the
// conv, matmul, pooling and row-reduction schedules still see their nests.
// Loop kinds (parallel, vectorized) are kept; a reverse-inlined store runs
// where the producer's store ran, with its loop kinds.
// Pre: LowerBlocks ran. Post: the same values in every parameter buffer.
#ifndef KILN_COMPILER_TIR_INLINE_ELEMENTWISE_H_
#define KILN_COMPILER_TIR_INLINE_ELEMENTWISE_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Forward inlining recomputes f once per consumer element: a consumer at
// most this many times T's size (a concatenation of two: 2).
constexpr int64_t kMaxInlineGrowth = 2;

ir::PrimFunc InlineElementwise(const ir::PrimFunc& func, bool after_schedule = false);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_INLINE_ELEMENTWISE_H_
