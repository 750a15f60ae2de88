// Pass: view-reshapes — a kernel call that only copies its argument in
// row-major order (a reshape, squeeze or expand_dims, or a leading slice)
// becomes a view of the argument, without a kernel and without a copy:
//
//   y = R.call_tir(cls.reshape2, (x,), out_sinfo=R.Tensor((s, b, 768), "float32"))
// where reshape2 stores  out[i0, i1, i2] = in[b * i0 + i1, i2]
// becomes
//   y = R.call_packed("vm.builtin.reshape_view", x, R.shape([s, b, 768]),
//                     sinfo_args=(R.Tensor((s, b, 768), "float32"),))
//
// A PrimFunc qualifies when, after block lowering, it takes one input and one
// output buffer of the same dtype (compact, global), and its body is one loop
// nest over the whole output (loops from 0, extents the output's dimensions,
// the store's indices the loop variables in order) whose store reads one
// element of the input at the same row-major position: the two linear
// indices must be provably equal (arith::CanProveEqual), whatever the values
// of the symbolic sizes. A position that is the same only for some sizes
// (a squeeze of a dimension that is 1 at run time only) is left alone.
//
// Why: with symbolic sizes, fusion cannot fold such copies into their
// neighbours the way it does with static ones (the ONNX RNN projection's
// [T*B, I] <-> [T, B, I] reshapes, the squeezes around a recurrent cell), so
// the symbolic build ran copies the pinned build does not have.
//
// Only calls whose output shape has a symbolic dimension: a static program
// keeps its kernels, so the static graph executor (which runs kernel calls
// only) still takes it. Memory planning (memory/plan_memory.h) treats the
// view as the argument itself (an alias), so the argument's memory lives as
// long as the view. CPU targets only (the driver does not run it for CUDA).
//
// Pre: after fuse-tir (the copies that remain are standalone calls).
// Post: unchanged otherwise; the copying PrimFuncs may become unused
// (remove-unused drops them). No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_VIEW_RESHAPES_H_
#define KILN_COMPILER_TRANSFORM_VIEW_RESHAPES_H_

#include "compiler/ir/module.h"
#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// The VM builtin the rewritten calls go to (vm/builtins.def).
constexpr const char* kReshapeViewBuiltin = "vm.builtin.reshape_view";

Result<ir::IRModule> ViewReshapes(const ir::IRModule& mod);

// Whether `f` only copies its first buffer into its second in row-major
// order (the condition above); exposed for tests.
bool IsRowMajorCopy(const ir::PrimFunc& f);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_VIEW_RESHAPES_H_
