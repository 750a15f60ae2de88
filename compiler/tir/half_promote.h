// Half-valued elementwise expressions computed in float32.
//
// At --precision=fp16|bf16 (docs/precision.md) a kernel's fused epilogue
// often continues in half after rounding its float32 accumulator:
//   D[..] = max(f16(acc) + b[o], 0)          (b a float16 bias)
// The code generator emits each half operation as one LLVM `half` /
// `bfloat` operation, which x86 computes by widening both operands and
// rounding the result, op by op, and which its explicit vector loops
// (compiler/codegen/vector_loop.cc) do not take. The same expression in
// float32,
//   D[..] = f16(max(acc + f32(b[o]), 0))
// is plain float32 arithmetic over widened loads with one rounding at the
// store: the form the schedules' vector loops emit as 16-lane vectors.
// It differs from the half form only by the roundings it leaves out (each
// intermediate value is exact or closer to the float32 result).
#ifndef KILN_COMPILER_TIR_HALF_PROMOTE_H_
#define KILN_COMPILER_TIR_HALF_PROMOTE_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// `e` with every float16 / bfloat16 value computed in float32: half loads
// widened, half constants made float32, casts to half of a float32 value
// dropped, arithmetic, min / max, selects, comparisons and float intrinsics
// over the promoted operands. A half-typed `e` yields a float32 result, any
// other keeps its dtype. False (and *out untouched) when `e` holds something
// this does not know how to promote (a half variable, an opaque call).
bool PromoteHalf(const ir::PrimExpr& e, ir::PrimExpr* out);

// The value to store into `dst` for the value expression `v`: when `dst`
// holds float16 / bfloat16 or float32, `v` computes in half somewhere and
// promotes, the promoted value (rounded once, by a cast, into a half
// `dst`); otherwise `v` unchanged. (An epilogue that leaves the network in
// float32, f32(max(f16(acc) * s + b, 0)), is half arithmetic too.)
ir::PrimExpr HalfStoreValue(const ir::Buffer& dst, const ir::PrimExpr& v);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_HALF_PROMOTE_H_
