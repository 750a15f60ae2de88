// Internal to compiler/text: the elements of constant tensors as Python
// literals, for R.const(value, "dtype") in both directions.
//
// Supported element dtypes: float16, bfloat16, float32, float64, int8/16/32/64,
// uint8/16/32/64 and bool. float16 and bfloat16 round to nearest even when
// stored; a stored value prints as the shortest decimal that reads back to the
// same bits.
#ifndef KILN_COMPILER_TEXT_CONSTANT_DATA_H_
#define KILN_COMPILER_TEXT_CONSTANT_DATA_H_

#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace kiln {
namespace text {

// A literal of the source: an integer (or bool) or a float.
struct Literal {
  bool is_float = false;
  double f = 0;
  int64_t i = 0;
};

bool IsConstantDType(DType t);

// Whether StoreLiteral can store `v` in dtype `t`: anything but a float
// literal for an integer dtype that is not finite or lies outside int64
// (converting those has no defined result).
bool LiteralFits(const Literal& v, DType t);

// Writes element `index` (row-major) of a compact CPU tensor whose dtype
// IsConstantDType. Integers given a float literal truncate toward zero, as
// numpy's astype does; one that does not LiteralFits is stored as 0.
void StoreLiteral(const Tensor& t, int64_t index, const Literal& v);

// Element `index` as Python text: "1.5", "3.0", "-2", "True", "float(\"inf\")".
// Requires IsConstantDType(t.dtype()).
std::string LiteralText(const Tensor& t, int64_t index);

}  // namespace text
}  // namespace kiln

#endif  // KILN_COMPILER_TEXT_CONSTANT_DATA_H_
