// Structural equality of IR: two modules are equal when they have the same
// functions (matched by name, in any order) and each pair has the same
// structure. Variables and buffers are matched by where they are defined
// (parameters, loop variables, block iterators, bindings, allocated buffers;
// symbolic dimensions at their first use), never by pointer or by name, so a
// module and its print -> parse round trip compare equal.
//
// Compared: node kinds, dtypes, literal values, operator and function names,
// attributes, struct info (a Relax Var's effective struct info is its
// struct_info when normalization set it, else its annotation). Not compared:
// variable and buffer names, source spans.
//
// Thread-safe (no shared state).
#ifndef KILN_COMPILER_IR_STRUCTURAL_EQUAL_H_
#define KILN_COMPILER_IR_STRUCTURAL_EQUAL_H_

#include <string>

#include "compiler/ir/module.h"

namespace kiln {
namespace ir {

// On a mismatch, `why_not` (when non-null) receives the path to the first
// difference and what differs, e.g.
//   "function main / block 0 / binding 2 (lv1) / value / arg 1: variable x vs w0".
bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why_not = nullptr);
bool StructuralEqual(const PrimFunc& a, const PrimFunc& b, std::string* why_not = nullptr);
bool StructuralEqual(const Function& a, const Function& b, std::string* why_not = nullptr);
// Free variables of the two expressions are matched at first use.
bool StructuralEqual(const PrimExpr& a, const PrimExpr& b, std::string* why_not = nullptr);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_STRUCTURAL_EQUAL_H_
