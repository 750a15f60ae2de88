// The interior of a stride-2 window row (pool_schedule.h), computed from
// deinterleaved copies of its input rows.
//
// With stride 2, output x reads input columns 2x + a for each tap's offset
// a. Vectorized as they stand, those loads are strided (wide loads and
// shuffles per tap) and a row's last Wo mod 16 outputs run one tap at a time
// (MobileNetV2's 7-wide depthwise rows: no vector at all). Instead,
// each input row the taps read is split into its even and odd columns,
// one small local buffer per parity and offset the taps read (E[j] =
// X[.., 2j], O[j] = X[.., 2j + 1], E1[j] = X[.., 2j + 2] for a 3-tap
// window), so tap a reads its half at x itself, contiguous; the row is
// computed into a local buffer rounded up to a whole vector (the lanes past
// the row read buffer padding and are dropped), then copied to the output.
// Applied to short rows only (kMaxDeinterleaveColumns, or `max_columns`:
// the pool.deinterleave knob).
//
// A half per offset, not per parity: tap 2 reading E at x + 1 was a vector
// load straddling the two vector stores that had just filled E, which the
// store buffer cannot forward. Max pools 3x3 / 2 alone (1 thread, CPU time
// per call, three alternating runs on a loaded machine, Zen 5): 17 x 32 x
// 46^2 0.24-0.26 -> 0.12-0.13 ms, 17 x 64 x 21^2 0.23 -> 0.056 ms.
#ifndef KILN_COMPILER_TIR_WINDOW_DEINTERLEAVE_H_
#define KILN_COMPILER_TIR_WINDOW_DEINTERLEAVE_H_

#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Interior columns per row for which the split pays (1 thread, each layer
// alone, median of 3 to 5 alternating runs against the strided loads).
// The halves are explicit vectors (codegen/vector_loop.h: a wide masked
// load and a shuffle each): 6 columns (576 channels, 14^2 -> 7^2, 3x3
// depthwise) 68 -> 53 us, 13 columns (192 channels, 28^2 -> 14^2) 36.4 ->
// 35.4 us, 27 columns (144 channels, 56^2 -> 28^2) 92.5 -> 76 us; 55
// columns (96 channels, 112^2 -> 56^2) 230 -> 233 us, no gain, so rows that
// long keep the strided loads. (Before the explicit vectors LLVM filled the
// halves lane by lane or with gathers: 13 columns took 106 us, 27 took 333.)
// Below 4 columns the strided loop has no vector at all either way.
constexpr int64_t kMinDeinterleaveColumns = 4;
constexpr int64_t kMaxDeinterleaveColumns = 32;

// The statement computing out[idx] = value for x in [x_lo, x_hi) of one row
// (the other loops bound outside) when every load of `value` that uses x
// reads it as 2 * x + c in its last index only, and some load does; null
// otherwise. The input columns of [x_lo, x_hi) must all be inside their
// rows (the window schedule's interior).
ir::Stmt DeinterleavedInterior(const ir::Buffer& out, const std::vector<ir::PrimExpr>& idx, const ir::VarNode* x,
                               int64_t x_lo, int64_t x_hi, const ir::PrimExpr& value,
                               int64_t max_columns = kMaxDeinterleaveColumns);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_WINDOW_DEINTERLEAVE_H_
