#include "compiler/tune/lower.h"

#include "compiler/tir/alias_output_buffers.h"
#include "compiler/tir/compact_loop_buffers.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/extend_allocate_scopes.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"

namespace kiln {
namespace tune {

namespace {

// What follows the schedule in the driver (see compile.cc "lower-tir" for
// why each step is there).
ir::PrimFunc AfterSchedule(const ir::PrimFunc& f) {
  return tir::AliasOutputBuffers(tir::CompactLoopBuffers(tir::ExtendAllocateScopes(tir::InlineElementwise(f))));
}

}  // namespace

ir::PrimFunc LowerWithDefaultSchedule(const ir::PrimFunc& func, int threads) {
  return AfterSchedule(tir::ApplyDefaultSchedule(tir::InlineElementwise(tir::LowerBlocks(func)), threads));
}

ir::PrimFunc LowerScheduled(const ir::PrimFunc& scheduled) { return AfterSchedule(tir::LowerBlocks(scheduled)); }

}  // namespace tune
}  // namespace kiln
