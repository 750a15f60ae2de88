// Pass: shape-condition — an If whose condition is computed from shape
// values and constants only becomes an If on that arithmetic.
//
//   s = R.shape_to_tensor(R.shape([(n + 64) // 128]))
//   e = R.equal(s, R.const([1], "int64"))
//   c = R.reshape(e, R.shape([]))
//   if c: ...
// becomes
//   if R.prim_value((n + 64) // 128 == 1): ...
// (the tensor bindings are left for dead-code elimination). ONNX exporters
// write torch's data-dependent squeeze as If(Shape(x)[-1] == 1, ...)
// (silero-vad): with symbolic dimensions each call built a shape tensor, ran
// two kernels and read the result back; the VM computes the comparison on
// its shape heap with the rest of the function's shape arithmetic.
//
// Followed through: shape_to_tensor of a shape with known values, integer
// and bool constants of at most 16 elements, the comparisons and logical
// and/or/not on those, and reshape/squeeze/expand_dims (which keep the
// element order). Anything else leaves the If as it was.
//
// Pre: normalized, A-normal form. Post: normalized. No failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_SHAPE_CONDITION_H_
#define KILN_COMPILER_TRANSFORM_SHAPE_CONDITION_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> FoldShapeConditions(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_SHAPE_CONDITION_H_
