// The tile-major loop layout of the static channel-major F(4x4, 3x3)
// output transform (winograd_conv2d.cc's OutputTransform, static sizes,
// product M (alpha^2, O, T)). Per output channel o:
//   1. one vectorized loop over all T tiles of the channel (images
//      included) computes each tile's m x m outputs,
//        y[(m i + j) S + t] = sum_b A^T[j][b] sum_a A^T[i][a] M[alpha a + b, o, t],
//      into a stack buffer (S = T rounded up to 16 floats): contiguous
//      loads of M and contiguous stores;
//   2. each output row m ty + i of each image is one vectorized loop over
//      its Wo / m whole tiles tx storing columns m tx + j (j < m) from
//      y[(m i + j) S + (n th + ty) tw + tx]: contiguous loads, stores m
//      apart that LLVM interleaves; then the Wo % m columns of the partial
//      last tile, and the partial last tile row's rows only.
// The row layout before it looped over one tile row's tw tiles (14 lanes at
// ResNet-18's 56^2, which LLVM splits into 8 + 4 + 2) and stored each of
// the 16 outputs at stride m into the image row. Fused epilogues (bias,
// residual, ReLU) land on step 2's stores. Same sums in the same order:
// bit-identical. Measured by hand in TIR first (benchmarks/results/
// 2026-11-29-tune21): fused_winograd_output_f4x3_add1_relu1 at 64 x 56^2,
// 1 thread, alone: 101.5 -> 81.4 us.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_OUTPUT_TILE_MAJOR_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_OUTPUT_TILE_MAJOR_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace transform {

// The stack buffer (m^2 S floats) stays within half a 48 KiB L1 data cache
// (ResNet-18's 56^2: 196 tiles, 13 KiB).
constexpr int64_t kTileMajorOutputMaxBytes = 24 * 1024;
int64_t TileMajorOutputStride(int64_t tiles);
inline bool TileMajorOutputFits(int64_t tiles, int m) {
  return tiles > 0 && int64_t{m} * m * TileMajorOutputStride(tiles) * 4 <= kTileMajorOutputMaxBytes;
}

struct TileMajorOutputSpec {
  int m = 0, alpha = 0;
  std::vector<std::vector<double>> at;  // A^T (m x alpha)
  int64_t n = 0, ho = 0, wo = 0, th = 0, tw = 0;
  // M[k, o, t] of the channel being built.
  std::function<ir::PrimExpr(int k, const ir::PrimExpr& t)> load;
};

// Output channel o's two steps, storing Y[n, o, r, col] into `y`.
ir::Stmt TileMajorOutputChannel(const ir::Buffer& y, const ir::Var& o, const TileMajorOutputSpec& spec);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_OUTPUT_TILE_MAJOR_H_
