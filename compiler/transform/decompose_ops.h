// Pass: decompose-ops — rewrites inference-time composite operators into
// ordinary arithmetic that folding and fusion understand (TVM's
// DecomposeOpsForInference).
//
//   y = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=e)
// becomes, with c = (C, 1, 1) broadcasting along `axis`,
//   scale = gamma / sqrt(var + e)        (C,)   (folds when weights are bound)
//   shift = beta - mean * scale          (C,)
//   y     = (x * expand(scale) + expand(shift), mean, var)
// and `y[i]` reads of that tuple become the fields themselves, so the
// convolution before it can fuse the scale, shift and a following ReLU.
// center=False / scale=False drop beta / gamma as the operator does.
//
// Pre: normalized and flattened (A-normal form). Post: normalized; no
// relax.nn.batch_norm call remains whose data has a known rank.
#ifndef KILN_COMPILER_TRANSFORM_DECOMPOSE_OPS_H_
#define KILN_COMPILER_TRANSFORM_DECOMPOSE_OPS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> DecomposeOpsForInference(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_DECOMPOSE_OPS_H_
