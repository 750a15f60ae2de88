// Removes the arms of IfThenElse statements that the conditions of the
// branches around them already decide.
//
// Symbolic kernels choose among versions at run time (conv_symbolic_schedule.cc
// nests them: channel block ? in place : row >= 16 lanes ? banded : tiles),
// and each version carries ladders of its own (widths, row remainders). A
// version nested under another's `else` may hold arms its own guard cannot
// reach there: the depthwise tiles kernel, reached only where the banded test
// `wo >= 16` failed, still held arms for `wo >= 56`, `wo == 32` or
// `17 <= wo < 25`. LLVM keeps them: the test that excludes them sits outside
// the parallel loop that is outlined into a task function, which sees only
// its arguments. Every such arm costs optimizer and instruction-selection time
// and machine code, and can never run.
//
// Facts: a condition `e OP c` (OP one of <, <=, >, >=, ==; c an integer
// constant, on either side) bounds `e`, matched structurally
// (arith::StructuralEqual), inside its then-arm; its negation inside the
// else-arm. Conjunctions give each conjunct in the then-arm, disjunctions each
// negated disjunct in the else-arm, and any condition is itself known true /
// false in its arms. A nested condition built from these atoms with and / or /
// not that the facts decide loses the arm it cannot take. Only conditions of
// variables and constants count as facts (no buffer loads or calls: a store
// inside the arm could change them); a fact stops at a loop or let that binds
// one of its variables again.
//
// Pre: lowered TIR (no blocks needed). Post: the same function on every
// input, with fewer statements. Returns `func` itself when nothing is pruned.
// Thread-safe: pure.
#ifndef KILN_COMPILER_TIR_PRUNE_GUARDED_BRANCHES_H_
#define KILN_COMPILER_TIR_PRUNE_GUARDED_BRANCHES_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc PruneGuardedBranches(const ir::PrimFunc& func);

// The statement form, for tests and for bodies outside a PrimFunc.
ir::Stmt PruneGuardedBranches(const ir::Stmt& body);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_PRUNE_GUARDED_BRANCHES_H_
