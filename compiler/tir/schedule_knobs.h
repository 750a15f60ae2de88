// ScheduleKnobs: the constants of the default schedules that auto-tuning may
// choose (compiler/tune/space_default.cc samples them). A knob that is absent
// or 0 means "the default schedule's own rule", so empty knobs are exactly
// today's default schedule and every tuned point is a variation of it.
//
// Knobs travel in the trace of a tuning record as annotations of the root
// block ("kiln.knob.<name>" = integer, set by Schedule::Annotate) and are read
// back when the function is lowered (KnobsFromFunc).
//
// Matmul (matmul_schedule.h):
//   matmul.mr         rows of accumulators per tile (1..8), clamped to M
//   matmul.nr         columns per tile (a multiple of 16), clamped to N
//   matmul.pack       1: never pack B, 2: pack B whenever it is legal
//                     (static shapes, full column blocks, B shared by the batch)
//   matmul.row_split  partial sums of a one-row tile (1, 2, 4, 8)
//   matmul.parallel   1: the tile loop serial, 2: parallel (with >= 2 threads)
//   matmul.prefetch   1: never prefetch B ahead, 2: for any B of static shape
//                     (the rule: B of 2 MiB or more)
//
// Convolution (conv_schedule.h):
//   conv.mr           rows (output channels) of the tile, 1..8
//   conv.nr           columns of the tile (a multiple of 16); both replace
//                     that side of every shape the rule estimates among
//   conv.row_tiles    1: never row tiles, 2: row tiles whenever they apply
//                     (also beyond kMaxRowTileTaps, where the rule stops)
//   conv.im2col       output points per chunk (16..64) of the im2col panel
//                     kernel (conv_im2col_schedule.h) instead of the direct
//                     one, for convs of one group; conv.mr sets its tile too
//   conv.shift_planes 1: the halo layout (one packed copy of the input, its
//                     rows padded), 2: shift planes (kw copies, each shifted
//                     by a kernel column, rows as wide as the output's)
//                     wherever they are legal (stride 1, kw >= 2, more than
//                     two output channels a group, weights read as given).
//                     The layout decides the packing's cost and whether the
//                     taps' loads are aligned: a 1-D conv of 500 columns
//                     packed five shifted copies, more than its halo copy
//                     costs in unaligned loads. With packed weights the
//                     rule takes one-row planes of 17-48 columns and 2-D
//                     planes of one tile needing fewer vectors than the
//                     halo tile; 2 takes any plane of one tile whose rows
//                     are whole blocks
//   conv.plane_rows   rows (output channels) of the one-tile shift-plane
//                     tile, 8..24, within the rule's 24 accumulators (the
//                     rule: 24 / vectors; with packed weights the whole
//                     blocks within that, several read per tile)
//   conv.border_split 1: interior / border tiles (conv_border_split_schedule.h)
//                     instead of the direct kernel (stride 1, one group):
//                     interior tiles read the input in place, border tiles a
//                     copy of their rows, only valid taps; conv.mr / nr its
//                     tile. 2: never; 0: the rule (kernels along long lines)
//   conv.channel_lanes 1: 16 output channels in the lanes, the taps that
//                     read padding left out (conv_channel_lanes.h) for every
//                     conv of one group over a plane of at most 64 points;
//                     2: never; 0: the rule (weights packed in blocks of 16
//                     by pack-constant-weights, which asks the same rule)
//   conv.lane_blocks  blocks of 16 output channels a tile of that kernel
//                     (1..16; the rule: as many as keep 16 accumulators)
//
// Strided depthwise convolution (depthwise_schedule.h):
//   depthwise.rows    output rows per register tile, 1..8
//   depthwise.cols    16-column vectors per register tile, 1..4
//   depthwise.flat    1: row tiles always, 2: the plane as one flat run
//                     whenever it fits (static kernel only)
//   depthwise.copy    1: the band copied a row tile ahead of the taps
//                     instead of whole first (static kernel only)
//   depthwise.unit_stride  1: stride-1 planes with rows of 12 or more too,
//                     2: no stride-1 plane (the rule: rows of 12..16, flat runs)
//   depthwise.banded  1: planes whose band exceeds L1 (112^2) in blocks of
//                     rows (depthwise_banded.h) instead of the window schedule
//   depthwise.direct  1: column-stride-2 planes copied into phase planes
//                     (the band) instead of read in place (depthwise_direct.h)
//   depthwise.block   1: small planes of 16+ channels one channel at a time
//                     (the kernels above) instead of 16 channels at a time
//                     (depthwise_channel_block.h)
//
// Elementwise loops (default_schedule.h): the innermost loops the default
// schedule vectorizes, when their static extent is a multiple of both:
//   elementwise.vector  lanes of explicit vectors (the loop split by it)
//   elementwise.unroll  vectors per unrolled step of the loop outside
//   (unset: default_schedule.h's split rules, aligned and explicit vectors)
//
// Row reductions (reduce_schedule.h): softmax, norms, sums over the last axis:
//   reduce.lanes         lanes of the vectorized reduction (16, 32, 64)
//   reduce.unroll        lane blocks per unrolled step (2, 4, 8)
//   reduce.split_chunks  chunks per thread of a long row split across threads
//
// The thread hint (compiler/tune/space.h, "threads") is on the root block
// too: the default schedule is planned for that many threads.
//
// Window reductions (pool_schedule.h):
//   pool.taps         windows of more taps keep their loop (not unrolled)
//   pool.borders      1: borders keep their tests, 2: StaticBorders up to 8
//                     border rows and columns (the rule: 4)
//   pool.deinterleave 1: never split stride-2 rows into even/odd columns,
//                     2: split rows of up to 64 columns (the rule: 32)
//   pool.vector       1: interior rows stay serial loops
#ifndef KILN_COMPILER_TIR_SCHEDULE_KNOBS_H_
#define KILN_COMPILER_TIR_SCHEDULE_KNOBS_H_

#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Prefix of the root-block annotations that carry knobs.
constexpr char kKnobAnnotationPrefix[] = "kiln.knob.";

struct ScheduleKnobs {
  std::map<std::string, int64_t> values;
  // The knob's value, 0 when unset (the default rule).
  int64_t Get(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? 0 : it->second;
  }
  bool empty() const { return values.empty(); }
};

// The knobs annotated on `func`'s root block (block form), empty when none
// (or when `func` is lowered). Values that are not integers are skipped.
ScheduleKnobs KnobsFromFunc(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SCHEDULE_KNOBS_H_
