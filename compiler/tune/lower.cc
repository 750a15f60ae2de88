#include "compiler/tune/lower.h"

#include "compiler/tir/alias_output_buffers.h"
#include "compiler/tir/compact_loop_buffers.h"
#include "compiler/tir/concat_slice_reads.h"
#include "compiler/tir/deinterleave_channels.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/extend_allocate_scopes.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule_knobs.h"
#include "compiler/tir/split_concat.h"
#include "compiler/tir/upsample_loops.h"

namespace kiln {
namespace tune {

namespace {

// What follows the schedule. Elementwise chains are inlined before
// scheduling (they reach the anchors' epilogue matchers as one stage) and
// after (a schedule that turned a reduction into plain stores, as the window
// schedule does, takes the epilogue that follows into them). Then buffers
// that hold one slice per iteration of a loop move inside it (after the
// scopes are extended: an Allocate's body must hold every use of its
// buffer). Then a workspace of the output's shape that feeds the output's
// store moves into the output (a long row's softmax). Last, nearest
// upsampling loops of run-time width read each source column once
// (upsample_loops.h), and an NHWC input of 2-3 channels transposed into an
// own buffer over a symbolic plane is read in 16-pixel chunks
// (deinterleave_channels.h: its Allocate holds every use by then).
ir::PrimFunc AfterSchedule(const ir::PrimFunc& f) {
  return tir::DeinterleaveChannels(tir::SplitUpsampleLoops(tir::AliasOutputBuffers(tir::ReadConcatSlicesInPlace(
      tir::CompactLoopBuffers(tir::ExtendAllocateScopes(tir::InlineElementwise(f, /*after_schedule=*/true)))))));
}

}  // namespace

ir::PrimFunc LowerWithDefaultSchedule(const ir::PrimFunc& func, int threads) {
  return AfterSchedule(tir::ApplyDefaultSchedule(tir::SplitConcatenationsAndInline(tir::LowerBlocks(func)), threads));
}

ir::PrimFunc LowerScheduled(const ir::PrimFunc& scheduled) {
  // A point of the default schedules' space (space.h, DefaultSpace): its
  // knobs are on the root block, and the default schedule applies them.
  tir::ScheduleKnobs knobs = tir::KnobsFromFunc(scheduled);
  if (!knobs.empty()) {
    int threads = static_cast<int>(knobs.Get("threads"));
    return AfterSchedule(
        tir::ApplyDefaultSchedule(tir::SplitConcatenationsAndInline(tir::LowerBlocks(scheduled)), threads < 1 ? 1 : threads, knobs));
  }
  return AfterSchedule(tir::LowerBlocks(scheduled));
}

}  // namespace tune
}  // namespace kiln
