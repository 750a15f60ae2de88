// Internal to the ONNX importer: the dimensions of the graph inputs as the
// model declares them, and the values `--dim` (ImportOptions::fixed_dims)
// gives some of them.
//
// A dimension is static (a dim_value >= 1) or symbolic. A symbolic dimension
// has a name: its dim_param, or, when the model leaves it unknown (dim_value
// -1 or 0, dim_param "?", or neither field set), a fresh name
// "<input>_dim<position>" made of identifier characters ("input.1" position
// 2 -> "input_1_dim2"), distinct from every dim_param and from each other.
// Dimensions sharing a dim_param are one variable; fresh ones never are.
//
// A fixed dim names a symbolic dimension by that name ("batch", "x_dim2") or
// a dimension by input and position ("x:2"); the latter may name a static
// dimension if it gives the same value, and pins the dimension's variable
// wherever it is used. Errors name the key as given.
#ifndef KILN_COMPILER_ONNX_INPUT_DIMS_H_
#define KILN_COMPILER_ONNX_INPUT_DIMS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/status.h"

namespace kiln {
namespace onnx {

struct InputDim {
  std::optional<int64_t> value;  // static dimension
  std::string name;              // symbolic: dim_param or fresh name
};

struct InputShape {
  std::string input;  // the graph input's ONNX name
  std::vector<InputDim> dims;
};

// `name` as an identifier of the text form: every character other than a
// letter, digit or '_' becomes '_', and a leading digit (or nothing) gets a
// 'v' before it ("input.1" -> "input_1", "0" -> "v0").
std::string IdentifierText(const std::string& name);

// Names the unknown dimensions of `inputs` (their dims with `value` unset and
// `name` empty), given the dimensions as read by ReadInputShape.
void NameUnknownDims(std::vector<InputShape>* inputs);

// The dimensions of a tensor-typed graph input with a shape; unknown
// dimensions come back with neither value nor name (see NameUnknownDims).
// Fails for a dim_value above `max_dim`.
Result<InputShape> ReadInputShape(const ::onnx::ValueInfoProto& vi, int64_t max_dim);

// The value of each pinned symbolic name, from `fixed` (name or
// "input:position" -> value). Appends one message per bad entry to `problems`:
// a name that is neither a symbolic dimension nor "input:position", an unknown
// input, a position out of range, a static dimension given another value, two
// values for one name.
std::map<std::string, int64_t> ResolveFixedDims(const std::vector<InputShape>& inputs,
                                                const std::map<std::string, int64_t>& fixed,
                                                std::vector<std::string>* problems);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_INPUT_DIMS_H_
