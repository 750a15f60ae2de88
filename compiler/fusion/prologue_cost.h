// The cost check of fuse_ops for prologues: whether a producer (and the
// injective-or-less chain fused with it) should join the group of a
// reduction, matmul, convolution or pooling kernel that reads its result.
//
// A producer fused as a prologue may be computed where its consumer reads it
// (that is what fusing it is for: its result never goes to memory). A
// convolution reads each input element once per tap and per tile of output
// channels, so a 3x3 convolution with 96 outputs would compute an elementwise
// prologue 9 * 96 / 8 = 108 times per element instead of once. Run alone,
// the producer computes each element once and writes it, and the consumer
// reads it back. The rule, per element of the producer's result:
//
//   refuse the prologue when (R - 1) * P > kMaterializeCost
//
// - R, the recompute factor: how many times the consumer's loop nest reads
//   each element of that input (ReadsPerElement), with the reuse across
//   output channels / columns divided by the register tile the matmul and
//   convolution schedules keep (kAnchorTile rows of outputs share one read).
//   It is a ratio of loop extents and index coefficients, so it does not
//   depend on symbolic sizes: a window index y * s + k (y over the output,
//   k over the taps) gives taps / s for any extent of y.
// - P, the cost per element of the joining nodes that would be recomputed
//   (OpsPerElement): their arithmetic, the index arithmetic that is not an
//   affine address (resize's floor / cast / clamp, reshape's div / mod),
//   transcendental calls as kTranscendentalCost, and every load beyond the
//   first (inlined, each read of the prologue loads all its inputs). A
//   choice on the iteration point alone (concat's channel test, pad's
//   bounds test) is free: an inlining consumer splits its loops there (the
//   pointwise convolution reads a concatenation's sources in place). Nodes
//   whose value is materialized anyway count 0: a kernel that does not
//   store at its loop point (StoresAtLoopPoint false: the Winograd output
//   transform, custom nests) cannot be inlined, and the elementwise nodes
//   right after it are inlined into its stores (inline_elementwise.h).
// - kMaterializeCost: writing one element and reading it back, in the same
//   units (one scalar operation each).
//
// A reduction over axes (R = 1: exp before sum), a transpose or a
// concatenation (P = 0), a scale into a convolution with a few output
// channels, or an elementwise op before a 3x3 / 2 pooling stay fused; an
// elementwise chain, a resize, or an exp feeding a concatenation, before a
// 3x3 convolution with many output channels do not (they run as their own
// kernel, or with their own producers); nor does a reshape before a matmul
// with many columns.
//
// In the CPU pipeline today fuse_tir keeps each kernel's nest and no pass
// inlines a producer into a reduction's reads, so a fused prologue is
// materialized inside the fused kernel: the check keeps groups from
// depending on that, and refuses fusions that buy nothing where they would
// cost the most.
#ifndef KILN_COMPILER_FUSION_PROLOGUE_COST_H_
#define KILN_COMPILER_FUSION_PROLOGUE_COST_H_

#include <cstddef>

#include "compiler/ir/tir.h"

namespace kiln {
namespace fusion {

// Output rows (channels of a convolution, rows of a matmul) that the anchor
// schedules compute from one read of an input element (their MR).
constexpr double kAnchorTile = 8.0;
// The extent assumed for a loop whose extent is symbolic.
constexpr double kAssumedSymbolicExtent = 64.0;
// exp, log, tanh, sigmoid, erf, pow, ... in scalar operations.
constexpr double kTranscendentalCost = 8.0;
// Writing one float of an intermediate and reading it back.
constexpr double kMaterializeCost = 8.0;

// How many times `consumer` reads each element of the buffer bound to its
// parameter `param` (an index into consumer->params), as described above;
// at least 1. Loads whose index is not affine count 1 for that dimension.
// 1 when the parameter is not a buffer or is not read.
double ReadsPerElement(const ir::PrimFunc& consumer, size_t param);

// The cost of computing one element of `producer`'s result, as described
// above (the sum over its stores).
double OpsPerElement(const ir::PrimFunc& producer);

// Whether every store of `producer` writes at its loop point (indices are
// distinct iteration variables): only such kernels can be inlined into a
// consumer.
bool StoresAtLoopPoint(const ir::PrimFunc& producer);

// Whether some buffer parameter of `kernel` has a dimension that is not a
// constant (the kernel is compiled for symbolic extents).
bool HasSymbolicExtent(const ir::PrimFunc& kernel);

// (reads - 1) * ops > kMaterializeCost.
bool PrologueTooCostly(double reads, double ops);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_PROLOGUE_COST_H_
