// LowerBlocks: replaces every BlockRealize of a PrimFunc by plain statements,
// the form code generation and the default schedule work on.
//
// For `BlockRealize(values, predicate, block)`:
// - uses of the block's iteration variables are replaced by their bound values;
// - `block.init` (reductions) becomes `if (v0 == min0 && v1 == min1 ...) init`
//   over the reduction iteration variables (after substitution), placed before
//   the body; with no reduction variable the init runs unconditionally;
// - `block.alloc_buffers` become AllocateNodes around init + body;
// - a predicate other than the constant true (T.where) becomes an IfThenElse
//   around all of it;
// - reads/writes regions and annotations are dropped.
// Nested blocks are lowered inside out. Pre: none. Post: no BlockRealize left.
// Returns the same PrimFunc when it holds no block.
#ifndef KILN_COMPILER_TIR_LOWER_BLOCKS_H_
#define KILN_COMPILER_TIR_LOWER_BLOCKS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc LowerBlocks(const ir::PrimFunc& func);
// The statement-level form, for tests and other passes.
ir::Stmt LowerBlocks(const ir::Stmt& body);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_LOWER_BLOCKS_H_
