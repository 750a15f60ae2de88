// Pass: remove unused functions — drops PrimFuncs no Relax function calls
// (e.g. the TIR matmul after it was dispatched to oneDNN) and private Relax
// functions nobody calls. Public Relax functions are entry points and stay.
#ifndef KILN_COMPILER_RELAX_REMOVE_UNUSED_H_
#define KILN_COMPILER_RELAX_REMOVE_UNUSED_H_

#include "compiler/ir/module.h"

namespace kiln {
namespace relax {

ir::IRModule RemoveUnusedFunctions(const ir::IRModule& mod);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_REMOVE_UNUSED_H_
