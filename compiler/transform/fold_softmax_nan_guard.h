// Pass: fold-softmax-nan-guard — a softmax whose NaNs are replaced by a
// constant becomes one softmax that writes the constant itself.
//
//   s = R.nn.softmax(x, axis=a)
//   c = R.isnan(s)
//   y = R.where(c, k, s)             k a float32 constant of one element
// becomes
//   y = R.nn.softmax(x, axis=a, nan_to=k)
// (s and c are left for dead-code elimination). torch's export of masked
// attention guards fully masked rows so (minilm_l6_int8, six times): the
// isnan/where pass read and wrote the whole attention matrix once more.
//
// Only where s and c have no other use (else the softmax would be computed
// twice) and s, k are float32 (the constant is stored as an attribute).
//
// Pre: normalized, A-normal form. Post: normalized. No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_FOLD_SOFTMAX_NAN_GUARD_H_
#define KILN_COMPILER_TRANSFORM_FOLD_SOFTMAX_NAN_GUARD_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> FoldSoftmaxNanGuard(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_FOLD_SOFTMAX_NAN_GUARD_H_
