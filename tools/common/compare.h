// Comparing a result tensor with an expected one (kiln-run --expected_output).
//
// Element i matches when |got - expected| <= atol + rtol * |expected|
// (NumPy's allclose rule), or when both are NaN, or both are the same
// infinity. Integer and bool tensors compare exactly as numbers with the same
// rule (so atol 0.5 lets 1 match 2 only if you ask for it).
//
// Thread-safe: no state.
#ifndef KILN_TOOLS_COMMON_COMPARE_H_
#define KILN_TOOLS_COMMON_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace tools {

struct CompareResult {
  int64_t elements = 0;
  int64_t mismatches = 0;
  // The element with the largest |got - expected| among the mismatches (or
  // among all elements when everything matches); -1 for empty tensors.
  int64_t worst_index = -1;
  std::vector<int64_t> worst_position;  // worst_index as a multi-index
  double worst_got = 0;
  double worst_expected = 0;
  double max_abs_diff = 0;  // over all elements (NaN pairs excluded)
  bool ok() const { return mismatches == 0; }
};

// kInvalidArgument when dtypes or shapes differ (the message names both) or a
// tensor is not a compact CPU tensor of a supported dtype.
Result<CompareResult> CompareTensors(const Tensor& got, const Tensor& expected, double atol, double rtol);

// "3 of 6 elements differ (atol 1e-05, rtol 1e-05); the worst at [1, 2]: got 7,
// expected 7.5, |diff| 0.5" or "all 6 elements match (max |diff| 0)".
std::string DescribeComparison(const CompareResult& result, double atol, double rtol);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_COMPARE_H_
