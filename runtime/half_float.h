// float32 <-> float16 / bfloat16 on the host, bit-exact and the same
// everywhere Kiln converts (constants in Relax text, ONNX scalar constants,
// the tools' inputs, mixed-precision weights): float32 to half rounds to
// nearest even, overflow gives inf, NaN stays a quiet NaN; half to float32 is
// exact.
#ifndef KILN_RUNTIME_HALF_FLOAT_H_
#define KILN_RUNTIME_HALF_FLOAT_H_

#include <cstdint>

namespace kiln {

// IEEE binary16.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

// bfloat16: the top 16 bits of a float32.
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace kiln

#endif  // KILN_RUNTIME_HALF_FLOAT_H_
