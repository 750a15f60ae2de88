// Pass: canonicalize bindings — remove aliases.
//
// - `y = x` (a binding whose value is a variable) is removed and every use of
//   y becomes x (transitively).
// - A match_cast whose struct info the value already has (same kind, dtype,
//   rank, and every dimension provably equal) is such an alias too.
// - Inside a dataflow block, a dataflow variable that leaves the block only
//   through an alias (`lv = f(..); gv = lv; R.output(gv)`) is defined as the
//   output directly (`gv = f(..)`), and its other uses read gv.
//
// Pre: InferStructInfo ran (trivial match_casts are recognized by struct
// info). Post: struct info of kept nodes is unchanged; the result is
// normalized. Never fails except through normalization.
#ifndef KILN_COMPILER_TRANSFORM_CANONICALIZE_BINDINGS_H_
#define KILN_COMPILER_TRANSFORM_CANONICALIZE_BINDINGS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> CanonicalizeBindings(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_CANONICALIZE_BINDINGS_H_
