// Part of fuse-ops: moves a run-time shape check from a kernel's result to
// the shape the kernel is about to produce, so that the kernel and the
// operator that reads its result can fuse.
//
// An importer that cannot prove two dimensions equal (the ONNX importer for
// Add or Concat of a 2x nearest upsampling, [.., h // 16 * 2, ..], and a map
// of [.., h // 8, ..] from the encoder) checks them at run time:
//
//   x: R.Tensor(S) = R.call_tir(f, args, out_sinfo=R.Tensor(S)[, tir_vars])
//   y: R.Tensor(S') = R.match_cast(x, R.Tensor(S'), messages=[...])
//   z = R.call_tir(add, (w, y), ...)
//
// fuse-ops never fuses across a match_cast, so the upsampled map was written
// to memory whole and read back by the add. This rewrite checks the shape
// before the kernel runs and lets the kernel produce y directly:
//
//   y_check: R.Shape(S') = R.match_cast(R.shape(S), R.Shape(S'), messages=[...])
//   y: R.Tensor(S') = R.call_tir(f, args, out_sinfo=R.Tensor(S')[, tir_vars])
//
// The check compares the same numbers (the kernel's output dimensions S,
// computed from the bound symbolic variables, against S') and reports the
// same messages; it only runs before the kernel instead of after it. The
// kernel sees an output tensor of shape S' = S at run time, as before.
//
// Rewritten only when y is read by elementwise or broadcast kernels only
// (op_pattern.h), where inline_elementwise can compute the kernel's value in
// place, or by concatenations that split_concat.h splits into one copy per
// source, where inline_elementwise makes the kernel write its slice of the
// concatenation (PP-OCRv4 det's 4-way concatenation of 1/8, 1/4, 1/2 and
// full-size maps; while the concatenation was one select chain, fusing the
// upsamplings into it only took longer: 3.7 -> 4.0 ms).
// And only when: both bindings are in the same dataflow block, x is a
// dataflow variable read by nothing but the match_cast, the match_cast keeps
// x's rank and dtype and has messages (a check that nothing reads is kept by
// dead-code elimination only then: dead_code_elimination.h), and every symbolic variable of S' occurs in S, in the
// shapes of the call's arguments or in its tir_vars (so the check binds no
// new variable and all of S' is known where the kernel is called), or in the
// shapes of the function's parameters (`params`, CollectShapeVars). Other
// bindings are returned as the same nodes.
#ifndef KILN_COMPILER_FUSION_HOIST_SHAPE_CHECKS_H_
#define KILN_COMPILER_FUSION_HOIST_SHAPE_CHECKS_H_

#include <set>

#include "compiler/ir/module.h"
#include "compiler/ir/relax.h"

namespace kiln {
namespace fusion {

// Adds the symbolic variables of the shapes in `s` (tensor, shape, prim
// value, tuples of them) to `out`.
void CollectShapeVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out);

// The block with every such pair rewritten; `*changed` is set when one was.
ir::BindingBlock HoistShapeChecks(const ir::IRModule& mod, const ir::BindingBlock& block,
                                  const std::set<const ir::VarNode*>& params, bool* changed);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_HOIST_SHAPE_CHECKS_H_
