// The double-precision reference of a depthwise conv2d (groups = channels,
// square kernel, symmetric padding) and its epilogue, as the symbolic
// depthwise tests check the compiled kernels' numbers against it.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_REFERENCE_TEST_UTIL_H_
#define KILN_COMPILER_TIR_DEPTHWISE_REFERENCE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace tir {
namespace dw_test {

struct DwReference {
  int64_t c, k, sh, sw, pad;
  std::string epilogue;  // none | bn_relu | hardswish (scale unused, shift the bias)
};

// Compares got [n, c, ho, wo] with the reference of x [n, c, h, wd] and
// weights w [c, 1, k, k]; reports the first five mismatches.
inline void ExpectDepthwise(const DwReference& k, const float* got, const std::vector<float>& x,
                            const std::vector<float>& w, const std::vector<float>& scale,
                            const std::vector<float>& shift, int64_t n, int64_t h, int64_t wd) {
  const int64_t ho = (h + 2 * k.pad - k.k) / k.sh + 1, wo = (wd + 2 * k.pad - k.k) / k.sw + 1;
  int bad = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < k.c; ++o) {
      for (int64_t y = 0; y < ho; ++y) {
        for (int64_t xo = 0; xo < wo; ++xo) {
          double acc = 0;
          for (int64_t ky = 0; ky < k.k; ++ky)
            for (int64_t kx = 0; kx < k.k; ++kx) {
              int64_t iy = y * k.sh + ky - k.pad, ix = xo * k.sw + kx - k.pad;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              acc += double(x[((b * k.c + o) * h + iy) * wd + ix]) * w[(o * k.k + ky) * k.k + kx];
            }
          double want = acc;
          if (k.epilogue == "bn_relu") want = std::max(acc * scale[o] + shift[o], 0.0);
          if (k.epilogue == "hardswish") {
            double v = acc + shift[o];
            want = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
          }
          double tol = 1e-5 * double(k.k * k.k) + 1e-5;
          int64_t at = ((b * k.c + o) * ho + y) * wo + xo;
          if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "n " << b << " o " << o << " y " << y << " x " << xo << ": got " << got[at]
                          << ", want " << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace dw_test
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_REFERENCE_TEST_UTIL_H_
