// Tensors written on a command line, and printing tensors for people.
//
// Inline syntax (kiln-run --input=...):
//   2x3xf32=1,2,3,4,5,6     dimensions, then a dtype, '=' and exactly
//                           prod(dims) comma-separated values (C order)
//   f32=1                   a scalar (0-d tensor)
//   0xf32=                  an empty tensor takes an empty value list
//   128x784xf32=random:42   deterministic pseudo-random values, seed 42
//   1x3x224x224xf32=@x.bin  raw little-endian elements in C order from a file
//                           of exactly prod(dims) x dtype-size bytes
// Dtypes: f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool, or their long
// names (float16, bfloat16, ...). float16 and bfloat16 values round to nearest
// even.
// Bool values are 0, 1, true or false. Values are required: "2x3xf32" alone is
// an error, and a count mismatch names both counts.
//
// The random generator, identical on every machine: SplitMix64 with state
// `seed`; per element, in C order, state += 0x9E3779B97F4A7C15 and
//   z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB; z ^= z >> 31.
// float32: (z >> 40) * 2^-24 * 2 - 1, float64: (z >> 11) * 2^-53 * 2 - 1, both
// exactly representable and in [-1, 1) (float16, bfloat16: float32's value,
// rounded); int types: (z >> 60) - 8, in [-8, 8) (uint types: z >> 60, in
// [0, 16)); bool: z >> 63.
//
// Failures are kInvalidArgument naming the offending part of the text.
// Thread-safe: no state.
#ifndef KILN_TOOLS_COMMON_INLINE_TENSOR_H_
#define KILN_TOOLS_COMMON_INLINE_TENSOR_H_

#include <cstdint>
#include <string>

#include "runtime/any.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace tools {

// Parses the inline syntax above into a new owned tensor.
Result<Tensor> ParseInlineTensor(const std::string& text);

// "@path.npy" reads a .npy file; anything else is inline syntax.
Result<Tensor> ParseTensorArgument(const std::string& text);

// One step of SplitMix64 (documented above); advances *state.
uint64_t SplitMix64Next(uint64_t* state);
// Fills a compact tensor of a supported dtype with the documented sequence.
Status FillRandom(const Tensor& tensor, uint64_t seed);

struct PrintOptions {
  // Tensors with more elements than this show only `edge_items` at each end of
  // every dimension, with "..." between.
  int64_t threshold = 64;
  int64_t edge_items = 3;
};

// "float32[2, 3]\n[[1, 2, 3],\n [4, 5, 6]]": the type line, then the values in
// nested brackets (floats with 6 significant digits).
std::string FormatTensor(const Tensor& tensor, const PrintOptions& options = {});
// A result value: tensors as above, scalars and shapes on one line, tuples by field.
std::string FormatValue(const Any& value, const PrintOptions& options = {});

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_INLINE_TENSOR_H_
