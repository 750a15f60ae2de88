// Operands that choose axes (Squeeze/Unsqueeze/Reduce* axes, Slice's
// starts/ends/axes/steps, CumSum's axis), Tile's repeats and Pad's
// constant_value when they only arrive as run-time tensors, as the ONNX node
// tests feed them (run_time_axes.cc). The operand's length is static, so the
// result's rank is; the sizes are computed as int64 tensors when the program
// runs and read into symbolic values (R.tensor_to_shape), and the data moves
// through kernels with static axes over those symbolic extents.
#ifndef KILN_COMPILER_ONNX_RUN_TIME_AXES_H_
#define KILN_COMPILER_ONNX_RUN_TIME_AXES_H_

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {

// Whether input i exists and its integer contents are not known at import
// time (a graph input or a computed tensor, not a constant or shape
// arithmetic that folded to constants).
bool IsRunTimeOperand(NodeCtx& ctx, size_t i);

// Squeeze (at least one axis) / Unsqueeze with run-time axes (input 1).
Status RunTimeSqueeze(NodeCtx& ctx);
Status RunTimeUnsqueeze(NodeCtx& ctx);
// A reduction (`relax_op`: sum, mean, max, min, prod) over run-time axes
// (input 1) of static length > 0, or of symbolic length with keepdims.
Status RunTimeReduce(NodeCtx& ctx, const char* relax_op, bool keepdims, bool noop_with_empty_axes);
// Slice with any of starts/ends/axes/steps (inputs 1-4) at run time.
Status RunTimeSlice(NodeCtx& ctx);
// CumSum with a run-time axis (input 1).
Status RunTimeCumSum(NodeCtx& ctx, bool exclusive, bool reverse);
// Tile with run-time repeats (input 1).
Status RunTimeTile(NodeCtx& ctx);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_RUN_TIME_AXES_H_
