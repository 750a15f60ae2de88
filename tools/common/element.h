// One element of a compact CPU tensor, of any dtype Kiln computes in
// (float16/32/64, bfloat16, int8..64, uint8..64, bool), read or written as a
// number: what inline tensors, printing and comparing need. float16 and
// bfloat16 convert through float32, rounding to nearest even.
//
// Thread-safe: no state; writing an element is the caller's race.
#ifndef KILN_TOOLS_COMMON_ELEMENT_H_
#define KILN_TOOLS_COMMON_ELEMENT_H_

#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace kiln {
namespace tools {

// Whether the functions below handle `dtype` (one lane of the types above).
bool IsElementDType(DType dtype);

// Element `i` (in C order) as a double; uint64 and int64 beyond 2^53 round.
double ElementAsDouble(const Tensor& t, int64_t i);
// Stores `v` (already range-checked by the caller) into element `i`.
void SetElementFromDouble(const Tensor& t, int64_t i, double v);  // float types
void SetElementFromInt(const Tensor& t, int64_t i, int64_t v);    // int types, bool
void SetElementFromUInt(const Tensor& t, int64_t i, uint64_t v);  // uint types

// For people: "true"/"false", integers exactly, floats with 6 significant
// digits ("%g").
std::string FormatElementText(const Tensor& t, int64_t i);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_ELEMENT_H_
