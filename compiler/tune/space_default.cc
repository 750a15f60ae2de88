// The design space of the default schedules' knobs (space.h, DefaultSpace).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/conv_schedule.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/depthwise_schedule.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/matmul_schedule.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/schedule_knobs.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {

namespace {

// Whether some conv knob value makes the default schedule of `lowered`
// differ from its own choice (each side of the tile and the row tiles, one
// value at a time: a knob the rule already chose gives the same function).
bool ConvKnobsApply(const ir::PrimFunc& lowered, int threads) {
  ir::PrimFunc base = tir::ApplyDefaultSchedule(lowered, threads);
  for (const auto& [name, value] : std::vector<std::pair<const char*, int64_t>>{
           {"conv.mr", 2}, {"conv.mr", 8}, {"conv.nr", 16}, {"conv.nr", 64}, {"conv.row_tiles", 1}}) {
    tir::ScheduleKnobs probe;
    probe.values[name] = value;
    if (!ir::StructuralEqual(tir::ApplyDefaultSchedule(lowered, threads, probe), base)) return true;
  }
  return false;
}

// Whether some value of knob `name` changes the default schedule of `lowered`.
bool KnobApplies(const ir::PrimFunc& lowered, int threads, const ir::PrimFunc& base, const char* name,
                 const std::vector<int64_t>& values) {
  for (int64_t v : values) {
    tir::ScheduleKnobs probe;
    probe.values[name] = v;
    if (!ir::StructuralEqual(tir::ApplyDefaultSchedule(lowered, threads, probe), base)) return true;
  }
  return false;
}

// Whether conv.plane_rows changes the kernel, alone or with
// conv.shift_planes 2 (packed weights take shift planes only by the knob).
bool PlaneRowsApply(const ir::PrimFunc& lowered, int threads) {
  for (int64_t planes : {0, 2}) {
    tir::ScheduleKnobs k;
    if (planes) k.values["conv.shift_planes"] = planes;
    ir::PrimFunc base = tir::ApplyDefaultSchedule(lowered, threads, k);
    for (int64_t rows : {8, 16, 24}) {
      tir::ScheduleKnobs probe = k;
      probe.values["conv.plane_rows"] = rows;
      if (!ir::StructuralEqual(tir::ApplyDefaultSchedule(lowered, threads, probe), base)) return true;
    }
  }
  return false;
}

// A pool knob that changes every window the schedule unrolls (its
// interior rows serial), so a window nest's schedule differs under it.
tir::ScheduleKnobs PoolProbe() {
  tir::ScheduleKnobs k;
  k.values["pool.vector"] = 1;
  return k;
}

// The thread hint as a decision: candidate 0 is `threads` (what kiln-tune
// measures with, and what kiln-compile --threads builds for), the others
// the hints among 1, 2, 4 and 2 x threads that plan the kernel otherwise
// (parallel loops or not, how many chunks). Empty when no hint changes it.
std::vector<int64_t> ThreadHintCandidates(const ir::PrimFunc& lowered, int threads) {
  ir::PrimFunc base = tir::ApplyDefaultSchedule(lowered, threads);
  std::vector<int64_t> out = {threads};
  for (int h : {1, 2, 4, 2 * threads}) {
    if (std::find(out.begin(), out.end(), h) != out.end()) continue;
    if (!ir::StructuralEqual(tir::ApplyDefaultSchedule(lowered, h), base)) out.push_back(h);
  }
  if (out.size() == 1) out.clear();
  return out;
}

// The knobs of the schedule that the default schedule picks for `func`.
std::vector<Knob> ScheduleKnobsOf(const ir::PrimFunc& func, const ir::PrimFunc& lowered, int threads) {
  std::vector<Knob> knobs;
  // A matmul nest is there when the matmul schedule rewrites the lowered
  // function (the same test the default schedule makes).
  (void)func;
  if (tir::ScheduleMatmuls(lowered, threads).get() != lowered.get()) {
    knobs.push_back({"matmul.mr", {0, 1, 2, 3, 4, 5, 6, 7, 8}});
    knobs.push_back({"matmul.nr", {0, 16, 32, 48, 64, 96, 128}});
    knobs.push_back({"matmul.pack", {0, 1, 2}});
    knobs.push_back({"matmul.row_split", {0, 1, 2, 4, 8}});
    if (threads >= 2) knobs.push_back({"matmul.parallel", {0, 1, 2}});
    // Prefetching B ahead (the rule: weights of 2 MiB or more), offered
    // where turning it off or on changes the kernel (a B of static shape).
    ir::PrimFunc base = tir::ApplyDefaultSchedule(lowered, threads);
    if (KnobApplies(lowered, threads, base, "matmul.prefetch", {1, 2}))
      knobs.push_back({"matmul.prefetch", {0, 1, 2}});
    return knobs;
  }
  // A static strided (or wide) depthwise conv (depthwise_schedule.h): its
  // tile shape, the flat run, the copy's order.
  // (depthwise.unit_stride 2 leaves only strided ones; 1 takes wide stride-1 rows too.)
  tir::ScheduleKnobs unit_stride, never, banded;
  unit_stride.values["depthwise.unit_stride"] = 1;
  never.values["depthwise.unit_stride"] = 2;
  banded = unit_stride;
  banded.values["depthwise.banded"] = 1;
  bool strided = tir::ScheduleStridedDepthwise(lowered, never).get() != lowered.get();
  if (strided || tir::ScheduleStridedDepthwise(lowered, unit_stride).get() != lowered.get()) {
    knobs.push_back({"depthwise.rows", {0, 1, 2, 4, 6, 8}});
    knobs.push_back({"depthwise.cols", {0, 1, 2, 3, 4}});
    knobs.push_back({"depthwise.flat", {0, 1, 2}});
    knobs.push_back({"depthwise.copy", {0, 1}});
    if (!strided) knobs.push_back({"depthwise.unit_stride", {0, 1, 2}});
    // Where the direct kernel takes it (depthwise_direct.h): the band instead.
    tir::ScheduleKnobs band;
    band.values["depthwise.direct"] = 1;
    if (!ir::StructuralEqual(tir::ScheduleStridedDepthwise(lowered), tir::ScheduleStridedDepthwise(lowered, band)))
      knobs.push_back({"depthwise.direct", {0, 1}});
    // Where the channel-block kernel takes it (depthwise_channel_block.h):
    // the per-channel kernels instead.
    tir::ScheduleKnobs per_channel;
    per_channel.values["depthwise.block"] = 1;
    if (!ir::StructuralEqual(tir::ScheduleStridedDepthwise(lowered),
                             tir::ScheduleStridedDepthwise(lowered, per_channel)))
      knobs.push_back({"depthwise.block", {0, 1}});
    return knobs;
  }
  // A plane too big for L1 (112^2): the window schedule's knobs below, and
  // the banded kernel (depthwise.banded 1; at stride 1 with unit_stride 1).
  if (tir::ScheduleStridedDepthwise(lowered, banded).get() != lowered.get()) {
    knobs.push_back({"depthwise.banded", {0, 1}});
    knobs.push_back({"depthwise.rows", {0, 1, 2, 4, 6, 8}});
    knobs.push_back({"depthwise.cols", {0, 1, 2, 3, 4}});
    knobs.push_back({"depthwise.unit_stride", {0, 1}});
  }
  // A conv nest: ScheduleConvs rewrites it as lowered, or one of the conv
  // knobs changes what the whole default schedule makes of it (the tile
  // kernels of convs that only the batch-peeling or 1-D-lifting paths reach,
  // as a 3x3 conv over a 4x4 plane).
  // Besides, the im2col panels (conv_im2col_schedule.h) where they apply (a
  // conv of one group, 1-D ones too): a structurally different kernel.
  ir::PrimFunc base = tir::ApplyDefaultSchedule(lowered, threads);
  const bool im2col = KnobApplies(lowered, threads, base, "conv.im2col", {16});
  // And the interior / border tiles (conv_border_split_schedule.h) where
  // they apply (stride 1, one group, lines of a vector or more): on (1) or
  // off (2) against the rule (0), which takes some of them.
  const bool border_split = KnobApplies(lowered, threads, base, "conv.border_split", {1, 2});
  // And the channel-lane kernel (conv_channel_lanes.h) where it applies
  // (one group, a plane of at most 64 points): on (1) or off (2) against
  // the rule (0, weights packed for it).
  const bool channel_lanes = KnobApplies(lowered, threads, base, "conv.channel_lanes", {1, 2});
  if (tir::ScheduleConvs(lowered, threads).get() != lowered.get() || ConvKnobsApply(lowered, threads)) {
    knobs.push_back({"conv.mr", {0, 2, 4, 6, 8}});
    knobs.push_back({"conv.nr", {0, 16, 32, 48, 64, 96}});
    knobs.push_back({"conv.row_tiles", {0, 1, 2}});
    if (im2col) knobs.push_back({"conv.im2col", {0, 16, 32, 48, 64}});
    if (border_split) knobs.push_back({"conv.border_split", {0, 1, 2}});
    if (channel_lanes) {
      knobs.push_back({"conv.channel_lanes", {0, 1, 2}});
      knobs.push_back({"conv.lane_blocks", {0, 1, 2, 4}});
    }
    // The packed input's layout (halo rows or shift planes): a different
    // packing and tile loop, offered where one of them is not the rule's.
    if (KnobApplies(lowered, threads, base, "conv.shift_planes", {1, 2}))
      knobs.push_back({"conv.shift_planes", {0, 1, 2}});
    // The rows of a one-tile shift-plane tile (the rule: 24 / vectors, one
    // weight block with packed weights), where they change the kernel the
    // rule makes or the shift planes of conv.shift_planes 2.
    if (PlaneRowsApply(lowered, threads)) knobs.push_back({"conv.plane_rows", {0, 8, 16, 24}});
    return knobs;
  }
  if (im2col || border_split || channel_lanes) {
    if (im2col) knobs.push_back({"conv.im2col", {0, 16, 32, 48, 64}});
    if (channel_lanes) {
      knobs.push_back({"conv.channel_lanes", {0, 1, 2}});
      knobs.push_back({"conv.lane_blocks", {0, 1, 2, 4}});
    }
    if (border_split) {
      knobs.push_back({"conv.border_split", {0, 1, 2}});
      knobs.push_back({"conv.nr", {0, 16, 32, 48, 64}});
    }
    knobs.push_back({"conv.mr", {0, 2, 4, 6, 8}});
    return knobs;
  }
  // A window reduction (pooling) the window schedule unrolls: its
  // constants (pool_schedule.h), with whatever elementwise knobs apply.
  const bool pool = tir::ScheduleWindowReductions(lowered).get() != lowered.get() &&
                    !ir::StructuralEqual(tir::ApplyDefaultSchedule(lowered, threads, PoolProbe()), base);
  // Vector loops the default schedule makes, when splitting them changes
  // the function (a static extent above the vector width). Not offered with
  // a matmul: its epilogue stages fuse only while their loops are unsplit.
  if (KnobApplies(lowered, threads, base, "elementwise.vector", {4})) {
    knobs.push_back({"elementwise.vector", {0, 4, 8, 16, 32, 64}});
    knobs.push_back({"elementwise.unroll", {0, 1, 2, 4, 8}});
  }
  // The row-reduction schedule's (softmax, norms, row sums), each offered
  // where one of its values changes the schedule.
  if (KnobApplies(lowered, threads, base, "reduce.lanes", {16, 32, 64}))
    knobs.push_back({"reduce.lanes", {0, 16, 32, 64}});
  if (KnobApplies(lowered, threads, base, "reduce.unroll", {2}))
    knobs.push_back({"reduce.unroll", {0, 2, 4, 8}});
  if (KnobApplies(lowered, threads, base, "reduce.split_chunks", {1, 8}))
    knobs.push_back({"reduce.split_chunks", {0, 1, 2, 8}});
  if (pool) {
    knobs.push_back({"pool.taps", {0, 9, 25}});
    knobs.push_back({"pool.borders", {0, 1, 2}});
    knobs.push_back({"pool.deinterleave", {0, 1, 2}});
    knobs.push_back({"pool.vector", {0, 1}});
  }
  return knobs;
}

}  // namespace

std::vector<Knob> DefaultSpaceKnobs(const ir::PrimFunc& func, int threads) {
  ir::PrimFunc lowered = tir::InlineElementwise(tir::LowerBlocks(func));
  std::vector<Knob> knobs = ScheduleKnobsOf(func, lowered, threads);
  std::vector<int64_t> hints = ThreadHintCandidates(lowered, threads);
  if (!hints.empty()) knobs.push_back({kThreadsKnob, hints});
  return knobs;
}

Result<tir::Trace> DefaultPoint(const tir::Trace& space_trace) {
  tir::Trace t = space_trace;
  for (size_t i = 0; i < t.instructions().size(); ++i)
    if (t.instructions()[i].name == "sample_categorical") t.SetDecision(i, {0});
  return t;
}

Status ApplyDefaultSpace(tir::Schedule* sch, const std::vector<Knob>& knobs, int threads) {
  // The thread hint first: lowering reads it with the knobs, so a record
  // replays with the hint it chose. One candidate (`threads`) unless `knobs`
  // offer others (DefaultSpaceKnobs: where a hint changes the schedule);
  // `threads` then weighs as much as the others together.
  std::vector<int64_t> hints = {threads};
  for (const Knob& k : knobs)
    if (k.name == kThreadsKnob && !k.candidates.empty()) hints = k.candidates;
  std::vector<double> hint_probs(hints.size(), hints.size() > 1 ? 1.0 / (hints.size() - 1) : 1.0);
  hint_probs[0] = 1.0;
  KILN_ASSIGN_OR_RETURN(tir::ExprRV t, sch->SampleCategorical(hints, hint_probs));
  KILN_RETURN_IF_ERROR(sch->Annotate(std::string(tir::kKnobAnnotationPrefix) + kThreadsKnob, t));
  for (const Knob& k : knobs) {
    if (k.name == kThreadsKnob) continue;
    // The rule's choice weighs as much as all the others together: half the
    // samples keep it, so single changes of the default are tried often.
    std::vector<double> probs(k.candidates.size(), 1.0 / (k.candidates.size() - 1));
    probs[0] = 1.0;
    KILN_ASSIGN_OR_RETURN(tir::ExprRV v, sch->SampleCategorical(k.candidates, probs));
    KILN_RETURN_IF_ERROR(sch->Annotate(tir::kKnobAnnotationPrefix + k.name, v));
  }
  return Status::Ok();
}

}  // namespace tune
}  // namespace kiln
