#include "tools/common/compare.h"

#include <cmath>

#include "tools/common/element.h"

namespace kiln {
namespace tools {
namespace {

bool ReadAsDouble(const Tensor& t, int64_t i, double* v) {
  if (!IsElementDType(t.dtype())) return false;
  *v = ElementAsDouble(t, i);
  return true;
}

}  // namespace

Result<CompareResult> CompareTensors(const Tensor& got, const Tensor& expected, double atol, double rtol) {
  if (got.dtype() != expected.dtype() || got.shape() != expected.shape()) {
    return InvalidArgument("got " + got.TypeString() + ", expected " + expected.TypeString());
  }
  double probe;
  if (!got.IsCompact() || !expected.IsCompact() || (got.NumElements() > 0 && !ReadAsDouble(got, 0, &probe))) {
    return InvalidArgument("cannot compare " + got.TypeString() + " values");
  }
  CompareResult r;
  r.elements = got.NumElements();
  double worst_diff = -1;
  bool worst_is_mismatch = false;
  for (int64_t i = 0; i < r.elements; ++i) {
    double g = 0, e = 0;
    ReadAsDouble(got, i, &g);
    ReadAsDouble(expected, i, &e);
    bool match;
    double diff;
    if (std::isnan(g) || std::isnan(e)) {
      match = std::isnan(g) && std::isnan(e);
      diff = match ? 0 : INFINITY;
    } else if (std::isinf(g) || std::isinf(e)) {
      match = g == e;
      diff = match ? 0 : INFINITY;
    } else {
      diff = std::fabs(g - e);
      match = diff <= atol + rtol * std::fabs(e);
    }
    if (!match) ++r.mismatches;
    if (!(std::isnan(g) && std::isnan(e)) && diff > r.max_abs_diff) r.max_abs_diff = diff;
    // A mismatch always beats a match; among equals, the larger difference.
    bool better = (!match && !worst_is_mismatch) || ((!match) == worst_is_mismatch && diff > worst_diff);
    if (r.worst_index < 0 || better) {
      r.worst_index = i;
      r.worst_got = g;
      r.worst_expected = e;
      worst_diff = diff;
      worst_is_mismatch = !match;
    }
  }
  if (r.worst_index >= 0) {
    r.worst_position.assign(got.shape().size(), 0);
    int64_t rest = r.worst_index;
    for (size_t d = got.shape().size(); d-- > 0;) {
      r.worst_position[d] = rest % got.shape()[d];
      rest /= got.shape()[d];
    }
  }
  return r;
}

std::string DescribeComparison(const CompareResult& r, double atol, double rtol) {
  if (r.ok()) {
    return StrFormat("all %lld elements match (max |diff| %g)", static_cast<long long>(r.elements), r.max_abs_diff);
  }
  return StrFormat("%lld of %lld elements differ (atol %g, rtol %g); the worst at %s: got %.9g, expected %.9g, "
                   "|diff| %g",
                   static_cast<long long>(r.mismatches), static_cast<long long>(r.elements), atol, rtol,
                   ShapeToString(r.worst_position).c_str(), r.worst_got, r.worst_expected,
                   std::fabs(r.worst_got - r.worst_expected));
}

}  // namespace tools
}  // namespace kiln
