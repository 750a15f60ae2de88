// Pass: annotate-op-pattern — give every PrimFunc an "op_pattern" attribute
// (op_pattern.h) so that fuse_ops can decide what to fuse.
//
// PrimFuncs that already carry the attribute (legalized operators, which take
// it from the operator table, or TIR written with T.func_attr) keep it. For the
// others the kind is derived from the TIR (AnalyzeOpPattern).
//
// Pre: none (PrimFuncs may be in block form or already lowered).
// Post: every PrimFunc has an integer "op_pattern" attribute; Relax functions
//       are unchanged. Never fails. Returns the same PrimFunc nodes where
//       nothing was added.
#ifndef KILN_COMPILER_FUSION_ANNOTATE_OP_PATTERN_H_
#define KILN_COMPILER_FUSION_ANNOTATE_OP_PATTERN_H_

#include "compiler/fusion/op_pattern.h"
#include "compiler/ir/module.h"

namespace kiln {
namespace fusion {

// The kind of one PrimFunc, read from its body: the most restrictive kind over
// its blocks (a function that is a sequence of blocks is as fusable as its
// least fusable block). For each block, with S its single BufferStore:
// - no reduction iteration variable, S indexes its buffer by distinct plain
//   variables, and every load reads another buffer with
//     the same indices                                   -> elemwise,
//     a subsequence of them and/or constants              -> broadcast,
//     any expressions of them (and of shape variables)    -> injective;
//   a block with no load at all (a fill)                  -> broadcast;
// - a reduction iteration variable, S updates its own element and
//     the update is an accumulated product (C += A * B)   -> out_ewise_fusable,
//     every other load indexes by single variables or
//     constants (sum/max over axes)                       -> comm_reduce,
//     otherwise (windows such as i * 2 + k: pooling)      -> out_ewise_fusable.
// Anything else is opaque: a block with several stores or nested blocks, data-
// dependent indices, stores outside blocks (lowered loops), if/let statements,
// a spatial block that reads the buffer it writes.
OpPattern AnalyzeOpPattern(const ir::PrimFunc& func);

ir::IRModule AnnotateOpPattern(const ir::IRModule& mod);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_ANNOTATE_OP_PATTERN_H_
