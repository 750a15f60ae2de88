// Pass: guard-raise-arms — an If one of whose arms always raises becomes a
// guard, and the other arm's bindings follow it at the function's top level.
//
//   x = if c:                                   g = if c:
//         <bindings A>                                R.prim_value(0)
//         a                                         else:
//       else:                             =>          e = R.call_packed("vm.builtin.raise", msg)
//         e = R.call_packed("vm.builtin.raise",       R.prim_value(0)
//                           msg)                    <bindings A>
//         e                                         x = a
//   ... (uses of x)                                 ... (uses of x)
//
// The ONNX importer writes such an If where the code after an If only
// type-checks for one of its branches (compiler/onnx/if_tail.cc: silero-vad's
// decoder). Kept as an If, the good arm calls the lifted branch and tail
// functions: the calls cannot be inlined into the arm usefully (fusion works
// on top-level dataflow blocks only), each checks its arguments again, and
// nothing fuses across them or across the If. As a guard, the same message is
// raised for the same inputs, and what follows is ordinary top-level code
// (inline-functions then inlines the calls, and canonicalize-bindings drops
// the importer's match_casts after the If that the inlined shapes prove).
// x keeps the struct info both arms shared: the arm's result may be a call
// whose declared result is in its callee's symbolic variables.
//
// The guard moves up past the pure bindings before it (IsPureValue, not a
// match_cast) that its condition does not read: those compute values only,
// so raising before them instead of after them is not observable, and the
// code before and after the guard joins one dataflow block (RegroupDataflow).
// Only Ifs bound at a function's top level are rewritten; an arm "always
// raises" when one of its top-level bindings calls vm.builtin.raise.
//
// Pre: normalized. Post: normalized. No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_GUARD_RAISE_ARMS_H_
#define KILN_COMPILER_TRANSFORM_GUARD_RAISE_ARMS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> GuardRaiseArms(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_GUARD_RAISE_ARMS_H_
