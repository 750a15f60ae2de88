// Internal to compiler/codegen: math functions emitted as straight-line LLVM
// IR (range reduction + polynomial, selects for special values), so that a
// loop using them vectorizes (AVX-512/AVX2/NEON) and the kernel library calls
// no libm. Every function takes a float or double value, scalar or vector, and
// returns one of the same type; there are no branches, no calls (only
// llvm.fmuladd/fabs/copysign/sqrt and, with native rounding, llvm.floor & co.,
// which every supported target lowers to instructions).
//
// Accuracy: maximum error in ULP of the result, as measured by
// tests/codegen/vector_math_test.cc against libm in a wider type (double for
// float32, long double for float64) over the ranges given, which the test
// sweeps densely (and over random bit patterns of every binade):
//              float32                           float64
//   exp        0.86 ULP  [-103.9, 88.7]           0.87 ULP  [-745, 709.7]
//   exp(min(x, 0))  ULP  [-103.9, 0]                   as exp
//   exp2       0.87      [-149, 127.9]            0.91      [-1074, 1023.9]
//   log        0.92      all positive floats      1.25      all positive doubles
//   log2       1.82      all positive floats      1.56      all positive doubles (at 1.40945;
//                                                          1.29 over random bit patterns)
//   tanh       2.49      all floats               2.48      all doubles
//   sigmoid    2.16      all floats               2.10      all doubles
//   erf        1.80      all floats               1.68      all doubles
//   sin, cos   0.50      |x| <= 1e5               2.25      |x| <= 1e5
//   pow        0.50      x in [1e-3, 1e3], |y log x| < 80 (log and exp in double)
//   sqrt 0.5, rsqrt 1.48 (1 / sqrt, both correctly rounded)
// (float exp/exp2/sigmoid since the degree-6 minimax exp of 2026-11-22; before:
// 0.94, 0.92, 2.08.) The tests assert these bounds rounded up (exp/exp2/log 1, log2 2, tanh 3,
// sigmoid 2.5, erf 2, ...). Beyond the ranges: exp overflows to inf and
// underflows through the denormals to 0 like libm; sin/cos lose accuracy
// past |x| ~ 1.6e6 (three-part pi/2 reduction in double, no Payne-Hanek:
// absolute error about |x| * 2^-53, still ~1 ULP for float32 up to ~1e9) and
// return NaN from |x| >= 2^50, where the quadrant is unknown; float64 pow has relative error about
// (|y log x| + 4) * 2^-53 (no extra-precision logarithm).
// Special values follow C99 Annex F: exp(-inf) = 0, exp(inf) = inf, log(0) =
// -inf, log(x < 0) = NaN, tanh(+-inf) = +-1, erf(+-inf) = +-1, sigmoid(-inf) =
// 0, sin/cos(inf) = NaN, NaN in -> NaN out, signed zeros are kept where C keeps
// them (tanh, erf, sin of -0 is -0). pow follows C for zero, one, infinite and
// negative bases (negative base with a non-integer exponent is NaN).
//
// Rounding (floor, ceil, trunc, round-half-to-even): with `native_rounding`
// the llvm.floor/ceil/trunc/roundeven intrinsics (one instruction on x86 with
// SSE4.1 and on AArch64); without it an exact arithmetic sequence (add and
// subtract 2^23 / 2^52) that needs no libm either.
#ifndef KILN_COMPILER_CODEGEN_VECTOR_MATH_H_
#define KILN_COMPILER_CODEGEN_VECTOR_MATH_H_

#include "compiler/codegen/llvm_headers.h"

namespace kiln {
namespace codegen {
namespace math {

// Pre: x (and y) are float or double, scalar or fixed vector, same type.
llvm::Value* Exp(llvm::IRBuilderBase& b, llvm::Value* x);
// exp(min(x, 0)) (NaN kept): softmax's exp(x - max). Its result is at most 1,
// so float32 scales by 2^k in one step (vector_math.cc), with exp's accuracy.
llvm::Value* ExpNonPositive(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Exp2(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Log(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Log2(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Tanh(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Sigmoid(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Erf(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Sin(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Cos(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* Pow(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y);

enum class Rounding { kFloor, kCeil, kTrunc, kHalfToEven };
llvm::Value* Round(llvm::IRBuilderBase& b, llvm::Value* x, Rounding mode, bool native_rounding);

}  // namespace math
}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_VECTOR_MATH_H_
