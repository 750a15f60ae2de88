// Comparing a Kiln result with an ONNX test's expected output.
//
// Floating point (float32, float64, float16) passes when every element has
// |got - expected| <= atol + rtol * |expected| (numpy.testing.assert_allclose,
// what ONNX's backend tests use; NaN matches NaN, infinities must match
// exactly). Integers and bools must be equal. Shapes and dtypes must match.
//
// Failure: kInvalidArgument whose message starts with `what` and names the
// first differing element, how many differ and the largest difference.
// Thread-safe: no state.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_COMPARE_H_
#define KILN_TESTS_ONNX_CONFORMANCE_COMPARE_H_

#include <string>

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace conformance {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

Status CompareTensors(const Tensor& got, const Tensor& expected, const Tolerance& tolerance,
                      const std::string& what);

// IEEE half-precision bits to float.
float HalfToFloat(uint16_t bits);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_COMPARE_H_
