// Internal to compiler/codegen: merges the outlined parallel loops of
// different kernels that came out as the same LLVM IR.
//
// A model often has kernels that differ only in their names and their
// buffers' names (the same conv at the same symbolic shape in several
// blocks of a network): their checks on entry name the buffers, so the
// kernels stay apart, but their parallel loops (@k.parK and its @k.parK.task,
// kernel_emitter.cc) are often the same functions, optimized and compiled
// once per copy (ppocr_cls_v2: 42 of the 446 functions of its library before
// the optimizer, 6.5 % of its machine code). Any difference (a workspace
// error message names its kernel and buffer) keeps two functions apart.
#ifndef KILN_COMPILER_CODEGEN_MERGE_OUTLINED_H_
#define KILN_COMPILER_CODEGEN_MERGE_OUTLINED_H_

#include <cstddef>

namespace llvm {
class Module;
}  // namespace llvm

namespace kiln {
namespace codegen {

// Replaces every internal function of `module` that no exported function
// calls directly (the outlined loops and their tasks, not a kernel's @k.body)
// and that is the same as an earlier such function (llvm::FunctionComparator:
// same instructions, types, attributes, constants and callees) by that earlier
// one, until no two are the same; returns how many it removed. A kernel's
// @k.body is left alone so that, as its kernel's only callee, the inliner
// still folds it into the kernel. Deterministic: the first function in
// module order is kept.
size_t MergeIdenticalOutlinedFunctions(llvm::Module* module);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_MERGE_OUTLINED_H_
