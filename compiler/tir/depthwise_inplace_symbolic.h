// A copy-free depthwise kernel of column stride 1 for short planes of a
// symbolic height, width or batch. ScheduleSymbolicConvs
// (conv_symbolic_schedule.h) gathers the nest's epilogue and runs it, chosen
// at run time, where the banded kernel (depthwise_banded.h) would run.
//
// On PP-OCR's classifier at 2 x 3 x 32 x 100 (planes of 2 to 8 rows of 50
// columns) the banded kernel spent half its time copying each row into its
// zero-padded band (issue 20 §3). Here the taps read the input in place:
// - Columns: rows of 32 + pl to 64 output columns in two tiles of two
//   vectors, {0, 16} and {wo - 32, wo - 16} (overlapping columns computed
//   and stored twice; the last tile's are the ones kept). Vectors 16 and
//   wo - 32 read only columns inside the input. Vector 0's taps with
//   kx < pl would read the left padding: each loads input columns 0..15
//   into an accumulator of its shift s = pl - kx, added s lanes up at the
//   end (lanes under s take the padding's zero). Vector wo - 16's taps past
//   the right edge load columns w - 16 .. w - 1 into an accumulator of their
//   shift, added s lanes down (the depthwise_strided_symbolic.h scheme).
// - Rows: tiles of 2 rows, then the last row when the count is odd;
//   each input row's taps under its bounds test (the padding rows skipped,
//   as the banded kernel's short rows do).
// - Each tile's straight-line vector statements in one unrolled loop, so
//   they reach LLVM as explicit vectors, not as hundreds of small loops
//   (the compile time: depthwise_inplace_symbolic.cc).
// - The epilogue in the tiles' stores (StoresAt).
// Taken at run time for 32 + pl <= wo <= 64 and ho <= 8 (the classifier's
// planes); wider and taller planes (PP-OCRv4's recognizer and detector) keep
// the banded kernel.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_INPLACE_SYMBOLIC_H_
#define KILN_COMPILER_TIR_DEPTHWISE_INPLACE_SYMBOLIC_H_

#include "compiler/ir/tir.h"
#include "compiler/tir/depthwise_banded.h"

namespace kiln {
namespace tir {
namespace dw {

// Whether the kernel can take `d` at some run-time size (static): column
// stride 1, windows at most 5 x 5, left and right padding under 16 with
// the right one static (wo - w a constant).
bool InPlaceFits(const DepthwiseNest& d);

// The run-time test (only for nests InPlaceFits accepts).
ir::PrimExpr TakesInPlace(const DepthwiseNest& d);

// The kernel: one parallel task per (image, channel).
ir::Stmt BuildSymbolicInPlace(const DepthwiseNest& d);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_INPLACE_SYMBOLIC_H_
