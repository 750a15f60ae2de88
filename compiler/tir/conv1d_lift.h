// 1-D convolutions as 2-D ones of height 1. The conv schedules
// (conv_schedule.h, conv_symbolic_schedule.h) match the 7-deep conv2d nest;
// a conv1d legalizes to a 5-deep one (n, o, x, c, kx) over rank-3 buffers
// and so got no tiled schedule (AttaCut's dilated 48->64 convolutions ran at
// under 1 GFLOP/s). This pass rewrites such nests, and the elementwise nests
// after them that read their output, to the conv2d form over rank-4 views
// (a unit axis inserted before the last one: the same memory), so both
// schedules take them. A stage before a convolution that stores its input
// (a Pad fused with it) is rewritten to store the view too. Semantics are unchanged whether or not a schedule
// matches afterwards.
#ifndef KILN_COMPILER_TIR_CONV1D_LIFT_H_
#define KILN_COMPILER_TIR_CONV1D_LIFT_H_

#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// `outputs`, when given, receives the data handles of the lifted
// convolutions' outputs.
ir::PrimFunc LiftConv1dNests(const ir::PrimFunc& func, std::vector<const ir::VarNode*>* outputs = nullptr);

// Whether `func` still stores into one of `outputs` a value that reads the
// same buffer (the naive reduction: a lifted nest no schedule took). The
// caller then keeps the function unlifted: views left in naive nests broke
// later passes (Silero VAD's stride-2 convolutions of output width 1 in
// loops the default schedule had split, which neither schedule takes).
bool HasNaiveUpdate(const ir::PrimFunc& func, const std::vector<const ir::VarNode*>& outputs);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV1D_LIFT_H_
