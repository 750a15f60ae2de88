// ExtendAllocateScopes: in every statement sequence, an Allocate that is
// followed by more statements takes those statements into its body.
//
//   seq(Allocate(Y, a), b, c)  ->  Allocate(Y, seq(a, b, c))
//   seq(a, seq(b, c), d)       ->  seq(a, b, c, d)   (then as above)
//
// Schedules may leave a buffer's later uses (an epilogue store reading the
// accumulator) after the Allocate's body; code generation does not mind (the
// storage lives for the whole kernel), but the text form cannot say "this
// allocation ends here": `Y = T.decl_buffer(...)` covers the rest of its
// block. Extending the scopes makes the lowered module print as text that
// parses back to the same structure, and makes the IR say what the code does.
// Results are unchanged (buffer names are unique within a kernel).
// Returns the same PrimFunc when nothing changes.
#ifndef KILN_COMPILER_TIR_EXTEND_ALLOCATE_SCOPES_H_
#define KILN_COMPILER_TIR_EXTEND_ALLOCATE_SCOPES_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc ExtendAllocateScopes(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_EXTEND_ALLOCATE_SCOPES_H_
