// 1-D convolutions as 2-D ones of height 1. The conv schedules
// (conv_schedule.h, conv_symbolic_schedule.h) match the 7-deep conv2d nest;
// a conv1d legalizes to a 5-deep one (n, o, x, c, kx) over rank-3 buffers
// and so got no tiled schedule (AttaCut's dilated 48->64 convolutions ran at
// under 1 GFLOP/s). This pass rewrites such nests, and the elementwise nests
// after them that read their output, to the conv2d form over rank-4 views
// (a unit axis inserted before the last one: the same memory), so both
// schedules take them. Semantics are unchanged whether or not a schedule
// matches afterwards.
#ifndef KILN_COMPILER_TIR_CONV1D_LIFT_H_
#define KILN_COMPILER_TIR_CONV1D_LIFT_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc LiftConv1dNests(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV1D_LIFT_H_
