// Pass: legalize — replace every operator call by a call to a kernel.
//
// Each `R.<op>(...)` binding becomes `R.call_tir(cls.<op>, (args), out_sinfo)`
// with a new PrimFunc built from the operator's compute definition. A kernel
// that needs a symbolic variable no buffer of it has as a plain dimension
// (add on (n * 2,) tensors needs n) takes it as an int64 scalar parameter and
// the call passes it: `R.call_tir(cls.add, (a, a), out_sinfo,
// tir_vars=R.shape([n]))`. Calls
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
