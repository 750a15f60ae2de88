#include "compiler/tir/conv_tap_box.h"

#include <algorithm>

namespace kiln {
namespace tir {
namespace conv {

TapBox TapsReadingInput(const ConvNest& cv, int64_t p_lo, int64_t p_hi) {
  TapBox box;
  bool any = false;
  for (int64_t p = p_lo; p < p_hi; ++p) {
    const int64_t oy = p / cv.wo, ox = p % cv.wo;
    for (int64_t ky = 0; ky < cv.kh; ++ky) {
      const int64_t iy = oy * cv.sh - cv.pt + ky * cv.dh;
      if (iy < 0 || iy >= cv.h) continue;
      for (int64_t kx = 0; kx < cv.kw; ++kx) {
        const int64_t ix = ox * cv.sw - cv.pl + kx * cv.dw;
        if (ix < 0 || ix >= cv.w) continue;
        box.ky_lo = any ? std::min(box.ky_lo, ky) : ky;
        box.ky_hi = any ? std::max(box.ky_hi, ky) : ky;
        box.kx_lo = any ? std::min(box.kx_lo, kx) : kx;
        box.kx_hi = any ? std::max(box.kx_hi, kx) : kx;
        any = true;
      }
    }
  }
  return box;
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
