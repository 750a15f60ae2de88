// Which kernel taps of a convolution read inside its input (not the padding)
// for a run of output positions: the geometry behind skipping padding taps
// for a tile's tail columns (conv_schedule.cc, shift-plane tiles).
#ifndef KILN_COMPILER_TIR_CONV_TAP_BOX_H_
#define KILN_COMPILER_TIR_CONV_TAP_BOX_H_

#include <cstdint>

#include "compiler/tir/conv_match.h"

namespace kiln {
namespace tir {
namespace conv {

// Kernel rows [ky_lo, ky_hi] x columns [kx_lo, kx_hi]; empty when ky_hi < ky_lo.
struct TapBox {
  int64_t ky_lo = 0, ky_hi = -1, kx_lo = 0, kx_hi = -1;
  bool empty() const { return ky_hi < ky_lo || kx_hi < kx_lo; }
  int64_t taps() const { return empty() ? 0 : (ky_hi - ky_lo + 1) * (kx_hi - kx_lo + 1); }
};

// The smallest box holding every tap (ky, kx) that reads inside cv's input
// for at least one output position of [p_lo, p_hi), positions counted
// row-major over one output plane (p = oy * wo + ox). Taps outside the box
// read only padding for all of them.
TapBox TapsReadingInput(const ConvNest& cv, int64_t p_lo, int64_t p_hi);

}  // namespace conv
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_TAP_BOX_H_
