// Pass: mixed-precision — `kiln-compile --precision=fp16|bf16`: weights and
// activations in half precision, accumulation in float32.
//
// In every dataflow block, operators are in one of three classes:
// - compute-heavy (matmul, linear, conv1d, conv2d, conv2d_transpose) with
//   float32 operands and result: the operands are taken in half precision
//   and the call gets out_dtype="float32", so the kernel accumulates in
//   float32 (legalization casts each operand element up before the multiply);
//   its float32 result is rounded to half only where a consumer takes half;
// - "follow" operators (elementwise arithmetic and activations, data
//   movement, max / min): computed in half when every float32 operand is
//   computed in half (by a compute-heavy call or another follow operator)
//   or is a constant, and some consumer wants the result in half (a
//   compute-heavy call, or a follow operator whose result is wanted). So a
//   chain between two matmuls or convolutions is half (bias, batch-norm
//   scale, relu, residual add, reshape, transpose, max pooling), while one
//   that only float32 operators read (scores before a softmax) and a
//   residual stream that starts float32 stay float32. A gather (take,
//   gather_nd) from a constant table is always half, so embedding tables
//   are stored half too;
// - everything else stays float32 and gets float32 operands: the deny list
//   (mixed_precision.cc says why for each) is softmax / log_softmax, the
//   norms (layer, rms, group, batch: their statistics), reductions that
//   accumulate (sum, mean, variance, std, prod, cumsum, cumprod, average
//   pooling), exp / log / power / square (overflow: fp16 tops out at 65504),
//   attention and recurrences, casts, and calls of kernels and packed
//   functions (written for the dtypes they were given).
// Constants that a half operand needs are converted here, at compile time
// (round to nearest even); a constant no float32 user still needs leaves the
// module, so its weights shrink about 2x. Casts are inserted only at the
// boundaries between the classes, at most one per value and direction and
// block. Values leaving a dataflow block, and so the function's results, are
// float32: the function's signature does not change.
//
// Pre: normalized, A-normal form; runs after the weight packing passes
// (fold-constant has given constants their final layout) and before
// legalize. Post: normalized. Values outside dataflow blocks are left
// alone. No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_MIXED_PRECISION_H_
#define KILN_COMPILER_TRANSFORM_MIXED_PRECISION_H_

#include <string>

#include "compiler/ir/module.h"
#include "runtime/dtype.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

enum class Precision { kFloat32, kFloat16, kBFloat16 };

// "fp32", "fp16", "bf16" (what --precision takes) to a Precision; an
// InvalidArgument naming the accepted values otherwise.
Result<Precision> ParsePrecision(const std::string& text);
// The half dtype of `p` (float16 or bfloat16); float32 for kFloat32.
DType PrecisionDType(Precision p);

// The module with its compute in `precision`; unchanged for kFloat32.
Result<ir::IRModule> ToMixedPrecision(const ir::IRModule& mod, Precision precision);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_MIXED_PRECISION_H_
