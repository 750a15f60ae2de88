// ScheduleWindowReductions: the default schedule of pooling-like nests
// (max_pool2d, avg_pool2d's sum, their 1-D forms) on lowered TIR.
//
// A window reduction is a perfect nest over spatial loops s.. followed by
// window loops r.. (all static, starting at 0; at most kMaxWindowTaps taps
// in all), whose body is
//   if r.. == 0: S[.., s..] = <float constant>
//   S[.., s..] = OP(S[.., s..], f(s.., r..))        OP: max, min or float add
// where the store's leading indices use no loop of the nest and f stores
// nothing. As lowered, every output element runs a scalar loop over its
// window with a bounds test per tap (the padding), and nothing vectorizes.
//
// The rewrite unrolls the window into one expression per output element:
// for a sum OP(..OP(OP(init, f(tap 0)), f(tap 1)).., f(tap n-1)) in the
// original tap order (so it rounds exactly as before), for max and min a
// balanced tree (the same value; a short dependency chain). It splits the two
// innermost spatial loops (y, x) into an interior, where every bounds test of
// f that depends on them is proven true for every tap (interval arithmetic)
// and is dropped, and the borders. The interior's x loop is vectorized
// (LLVM turns the strided window loads into wide loads and shuffles). With
// at most kMaxStaticBorder border rows and columns each (padding 1 to 4),
// every border row and column gets its tests decided too: a border column
// is one store per row, a border row an interior-like vector row whose taps
// outside the plane are their padding value; otherwise border rows and
// columns run the tested expression serially.
// Kinds of the loops outside the two innermost (parallel, serial) are kept.
//
// Symbolic row or column extents (a model compiled for every image size):
// the interior is a run of columns computed at run time from each test's
// linear bound, vectorized (masked tail) when its loads step by 1, and the
// rows whose taps all lie inside the plane a run of rows found the same
// way (a row loop of its own); in those rows' runs no test is left. Every other
// test (rows outside the run, border columns) becomes a select over loads
// clamped into the plane; tests that hold in the whole nest go. At stride 2
// the column run is whole 16-column vectors (explicit, unmasked) and one
// more ending at the run's end (a scalar loop when the run is shorter);
// wider strides over run-time rows are left as lowered (LLVM's loop was
// faster). Ahead of that nest, tests on the run-time extents pick a
// test-free nest where they hold: one row loop of runs when no output
// reaches the padding, or over the taps of the tap rows that are inside
// for every output row when the others are inside for none (tiny planes;
// taps outside must give OP's identity).
// Windows of more than kMaxWindowTaps taps (13 x 13), and of more than 9
// over run-time planes (SPPF's 5 x 5: the unrolled tree of clamped selects
// cost compile memory), keep their tap loops,
// outside a vector row per tap over the columns where that tap is inside,
// when the padding is OP's identity. A max, min or sum of two tap loops at
// column stride 1 and more than 9 taps is separable instead (any plane):
// per output row, a row of X's width set to OP over the tap rows, then the
// output row to OP over the tap columns of it (kh + kw row vectors instead
// of kh * kw); when the column tests are X's bounds those rows are padded
// with OP's identity, kept for a block of output rows (pass 1 for the
// block, then pass 2), and each pass is one test-free vector loop with its
// taps unrolled. A separable sum adds in another order than the taps'
// (pairwise trees: at most kh + kw adds per tap, against kh * kw), which
// ONNX allows (its tests take a relative 1e-3); sums of up to 9 taps keep
// the taps' order.
// Knobs: schedule_knobs.h, pool.*.
//
// Pre: lowered, default kinds chosen (a parallel loop of the nest stays
// parallel). Returns the same PrimFunc when no nest matches.
#ifndef KILN_COMPILER_TIR_POOL_SCHEDULE_H_
#define KILN_COMPILER_TIR_POOL_SCHEDULE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

// Windows with more taps are not unrolled (the expression would be too
// large to pay for itself): tap loops around vector rows instead.
constexpr int64_t kMaxWindowTaps = 64;

// `knobs` (schedule_knobs.h: pool.*) override the constants above; empty
// knobs give the rules.
ir::PrimFunc ScheduleWindowReductions(const ir::PrimFunc& func, const ScheduleKnobs& knobs = {});

// The most taps a window may have for ScheduleWindowReductions to unroll it
// under `knobs` (kMaxWindowTaps, or the pool.taps knob). Larger windows take
// the tap-loop form, whose accumulator goes through memory once per tap.
int64_t MaxUnrolledWindowTaps(const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_POOL_SCHEDULE_H_
