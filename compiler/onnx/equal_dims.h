// Dimensions an operator needs equal (Concat's other axes, MatMul's and
// Gemm's reduction axis) that the importer cannot prove equal: two names the
// model gives apart (`h`, `g`), equal for the inputs it is meant for. The
// operand is matched to the wanted dimensions by R.match_cast, which checks
// them when the program runs with a message naming the node, both inputs and
// both dimensions (as MatchUnprovenDims does for elementwise operands), so
// the kernels never read with a wrong extent.
#ifndef KILN_COMPILER_ONNX_EQUAL_DIMS_H_
#define KILN_COMPILER_ONNX_EQUAL_DIMS_H_

#include <vector>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {

// Axis `axis` of input `input` must equal axis `want_axis` of input
// `want_input`.
struct EqualDim {
  size_t axis;
  size_t want_input;
  size_t want_axis;
};

// `value` (input `input` of the node, or what the converter made of it with
// the same axes) with each dimension of `dims` that is not provably equal to
// the wanted one matched to it; `value` itself when all are proven (or
// provably different: the operator's own inference then reports them).
Result<ir::Expr> MatchEqualDims(NodeCtx& ctx, ir::Expr value, size_t input, const std::vector<EqualDim>& dims);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_EQUAL_DIMS_H_
