// Pass: fuse-ops — group kernel calls of dataflow blocks into fused Relax
// functions, so that fuse_tir can merge each group into one kernel.
//
// The nodes are the bindings of one dataflow block; a binding is fusable when
// it is `R.call_tir(cls.f, (args...), out_sinfo=R.Tensor(shape, dtype))` with
// one tensor output, optional tir_vars, and a PrimFunc whose "op_pattern"
// (annotate_op_pattern.h) is not opaque; everything else (packed calls,
// tuples, match_cast, opaque kernels) is a node that is never fused, so no
// group reaches across it. A group grows from a producer to its immediate
// post-dominator (the first binding every use of the producer eventually
// reaches), taking every binding on the paths between, and only when those
// bindings allow it (TVM's rules):
//  - phase 1: an out_ewise_fusable group (matmul, conv) takes its epilogue when
//    every edge on the way is elementwise (a broadcast whose argument already
//    has the output's shape counts as elementwise: matmul + bias add) and
//    every node on the way is at most broadcast: matmul + add + relu;
//    an elemwise/broadcast group fuses into a post-dominator reached through
//    injective-or-less nodes, which may itself be injective, a reduction, or
//    the epilogue of a matmul group;
//  - phase 2: an injective group fuses into an injective-or-less post-dominator;
//    an injective-or-less group whose post-dominator belongs to a group
//    anchored by a reduction or an out_ewise_fusable kernel fuses into it as
//    an input, through injective-or-less nodes only (the transpose of a
//    weight into its matmul; a transpose before exp + sum). Each kernel of a
//    fused group still runs to completion before the next (fuse_tir), so this
//    never repeats work; whether to inline is left to scheduling.
//  - in both phases, a group joining a reduction / matmul / conv / pooling
//    group as its input (rather than as its epilogue) passes the cost check
//    of prologue_cost.h first: it stays out when recomputing it at each of
//    the anchor's reads of an element (a 3x3 convolution reads each input
//    element 9 times per tile of 8 output channels) would cost more than
//    writing its result and reading it back.
// A binding whose value is visible after the block (R.output) is never an
// inner member of a group, and since a group is closed under the paths to its
// post-dominator, only the group's last binding is used outside it: nothing is
// computed twice. Groups of one binding are left alone.
//
// Each group becomes a private Relax function `fused_<kernel names>` with
// attribute "Primitive": 1 whose parameters are the group's inputs (variables
// and constants from outside the group, in order of first use) and whose body
// is one dataflow block holding the group's bindings; the group's last binding
// becomes a call of it. A symbolic variable the group's shapes or tir_vars use
// that is not a plain dimension of its inputs or output (the fused kernel
// could not bind it from its arguments) is passed in a trailing parameter
// `tir_vars: R.Shape([n, ...])` (variables in order of first use), the call
// giving `R.shape([n, ...])`. A group is not formed when an input has no
// known shape.
//
// Pre: InferStructInfo ran; PrimFuncs carry "op_pattern" (missing: opaque).
// Post: fused functions are appended to the module; callers' bindings outside
//       fused groups are the same nodes. Functions with "Primitive" are not
//       visited again, so running the pass twice fuses nothing new. Never
//       fails on a normalized module.
#ifndef KILN_COMPILER_FUSION_FUSE_OPS_H_
#define KILN_COMPILER_FUSION_FUSE_OPS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace fusion {

// Attribute of fused Relax functions (an int, 1).
constexpr const char kPrimitiveAttr[] = "Primitive";
// The name of a fused function's trailing R.Shape parameter holding the
// symbolic variables its kernels take as scalars.
constexpr const char kScalarsParam[] = "tir_vars";

// Whether `f` is a fused function (attribute "Primitive" set to a non-zero int).
bool IsPrimitiveFunction(const ir::FunctionExpr& f);

Result<ir::IRModule> FuseOps(const ir::IRModule& mod);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_FUSE_OPS_H_
