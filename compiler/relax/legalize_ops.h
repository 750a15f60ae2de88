// Pass: legalize — replace every operator call by a call to a kernel.
//
// Each `R.<op>(...)` binding becomes `R.call_tir(cls.<op>, (args), out_sinfo)`
// with a new PrimFunc built from the operator's compute definition. Calls
// sent to a library (transform/dispatch_library.h) arrive here already as
// `R.call_dps_packed` and are left alone.
//
// Pre: InferStructInfo ran (operands have struct info).
// Post: no OpExpr calls remain except call_tir / call_dps_packed; new
//       PrimFuncs are appended to the module with unique names.
#ifndef KILN_COMPILER_RELAX_LEGALIZE_OPS_H_
#define KILN_COMPILER_RELAX_LEGALIZE_OPS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

// Nothing to choose yet; kept so callers need not change when there is.
struct LegalizeOptions {};

Result<ir::IRModule> LegalizeOps(const ir::IRModule& mod, const LegalizeOptions& options);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_LEGALIZE_OPS_H_
