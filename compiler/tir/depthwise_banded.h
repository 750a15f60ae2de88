// A depthwise convolution kernel for nests with a symbolic extent (batch,
// height or width: a model compiled once for every image size), of any
// stride: the scheme of ScheduleStridedDepthwise's static kernel
// (depthwise_schedule.h) with run-time extents. ScheduleSymbolicConvs
// (conv_symbolic_schedule.h) gathers the nest's epilogue and calls it.
// Against that schedule's own depthwise tiles (one channel's padded copy,
// the taps reading it with a column stride's phases split per channel),
// CPU time per call at 1 thread, PP-OCRv4 recognizer shapes with symbolic
// height and width, hard-swish fused (busy machine, same run):
// 64 ch 24 x 160 3x3/(2,1) 0.100 -> 0.061 ms, 240 ch 12 x 80 5x5/(2,1)
// 0.182 -> 0.129, 480 ch 6 x 80 5x5/(2,1) 0.210 -> 0.125, 128 ch 12 x 160
// 3x3/(1,2) 0.080 -> 0.075; stride 1: 128 ch 12 x 160 3x3 0.139 -> 0.097,
// 240 ch 12 x 80 5x5 0.27 -> 0.20.
// Static 112^2 -> 56^2 planes in row blocks were slower than the window
// schedule (32 ch 3x3/2: 0.126 against 0.118 ms), so static nests come
// here only by the knob depthwise.banded (depthwise_schedule.h).
//
// The scheme (phase planes in a band, output tiles of rows x 16-column
// vectors with every tap's FMA in registers, the epilogue applied to the
// accumulators in the tile's stores), with every extent an expression:
// - Rows in blocks: the band holds the phase rows of `rb` output rows (and
//   their halo), rb chosen at run time so that the band stays within
//   kBandFloats when the width allows; the blocks' halo rows are copied
//   once more each.
// - Columns: tiles of `cols` vectors over the row; at stride 1 the rest in
//   the last tile, widened by the vectors it needs (the last moved back to
//   end at the row's end: those columns computed and stored twice, the
//   same values), strided planes and a block's last rows single vectors
//   for it, but a block's last one or two rows at column stride 1 tiles of
//   up to 8 vectors across the row, their kernel rows that read only
//   padding skipped; a row narrower than one vector computes one and stores its
//   columns one by one (the symbolic schedule runs its own kernel there
//   instead: TakesRow).
// - Rows of a block: tiles of `rows` rows, then one tile of the rows left
//   (a branch for each count below `rows`).
// - The copy of a band row (its row phases side by side, so that the
//   input's rows are read in order): the columns whose every phase lies
//   inside the input in chunks of 16 (a constant-extent vector loop, which
//   the codegen emits as wide loads and shuffles), the few at the edges
//   with their bounds test, zeros past them; rows outside the input zeroed.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_BANDED_H_
#define KILN_COMPILER_TIR_DEPTHWISE_BANDED_H_

#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {
namespace dw {

// Band size (floats) the run-time row block aims for: the band is written
// and read in turn and must stay in L1 (32 KiB).
constexpr int64_t kBandFloats = 8 * 1024;

// A depthwise convolution nest (one input and one output channel per group,
// OIHW weights, no dilation), perfect (the 7 loops n, o, y, x, c, ky, kx
// with c of extent 1), extents static or symbolic.
struct DepthwiseNest {
  std::vector<const ir::ForNode*> loops;
  ir::Buffer out, data, weight;
  const ir::BufferLoadNode* x_load = nullptr;
  int64_t o = 0, kh = 0, kw = 0, sh = 1, sw = 1, pt = 0, pl = 0;
  bool symbolic = false;  // some extent of the nest or of X is symbolic
  // Elementwise statements after the reduction inside the (n, o, y, x)
  // loops (what InlineElementwise fuses there), each a store at the loop
  // point reading C there; C itself is stored too when `store_out`.
  std::vector<ir::Stmt> epilogue;
  bool store_out = true;
};

// Whether `s` is such a nest (output channel o reading input channel o,
// padding through the bounds test or none), perfect or with an epilogue.
// store_out is set true; the caller clears it when nothing else reads C.
// The nest may be static too (the tests build it so).
bool MatchDepthwiseNest(const ir::Stmt& s, DepthwiseNest* d);

// The run-time test under which ScheduleSymbolicConvs runs the banded
// kernel instead of its own: output rows of at least one 16-float vector
// (narrower ones keep its flat plane tiles, which compute no padding lanes).
ir::PrimExpr TakesRow(const DepthwiseNest& d);

// What the nest stores when C's value at the loop point `at` (n, o, y, x) is
// `value`: C itself (when store_out, or without an epilogue), then the
// epilogue at that point with its loads of C reading `value`. The banded and
// the channel-block kernels write their accumulators back through it.
ir::Stmt StoresAt(const DepthwiseNest& d, const ir::PrimExpr& value, const std::vector<ir::PrimExpr>& at);

// Where a kernel's parallel task `t` (one per image and channel, t = n * o +
// c; with a batch of one, t is the channel) is: its image and channel, and
// X's image and channel indices there (legalize may index a batch of one
// with 0, and the channel through the group arithmetic). The banded, strided
// and in-place kernels start their tasks from it.
struct TaskPoint {
  ir::PrimExpr n, ch, xn, xc;
};
TaskPoint TaskImageChannel(const DepthwiseNest& d, const ir::Var& t);

// The banded kernel for `d`: one parallel task per (image, channel).
// Knobs: depthwise.rows, depthwise.cols (as the whole-plane kernel's).
ir::Stmt BuildBandedDepthwise(const DepthwiseNest& d, const ScheduleKnobs& knobs);

}  // namespace dw
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_BANDED_H_
