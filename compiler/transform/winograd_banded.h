// The banded Winograd kernel of winograd-conv2d: one PrimFunc that computes
// a 3x3 stride-1 convolution by Winograd F(m x m, 3x3) one band of tile rows
// at a time, so that a band's transformed input and product stay in the L2
// cache (the three-kernel rewrite transforms the whole image first: on
// DNSMOS's 64-channel convolutions over 900 x 161 maps its intermediates,
// 85 MB an image, streamed through memory and it lost to the direct
// convolution).
//
//   Y[n, o, y, x] = sum_{c, ky, kx} X[n, c, y + ky - pt, x + kx - pl] W[o, c, ky, kx]
//   (zeros outside X), from U = the transformed weight, (alpha^2, C, OU),
//   tile-major (winograd_conv2d.cc's TransformWeight, rows of OU >= O floats).
//
// The band loop (image n, tile row ty: one loop of N * th iterations,
// parallel) does, per band, in workspace buffers (tw tiles a row, twp = tw
// rounded up to 16):
//   1. xb[C, m + 2, m twp + 2] = the band's input rows with the padding and
//      zeros past the input (the transforms then test no bounds);
//   2. V[k, c, t] = the input transform of the band's twp tiles: per
//      channel the rows of B^T first over whole rows (contiguous loads),
//      then the columns per tile (loads m apart), the tile loop over whole
//      vectors (the tiles past tw, from zeros, are never stored);
//   3. P[k, o, t] = sum_c U[k, c, o] V[k, c, t]: register tiles of mr
//      channels x nr tiles (U broadcast, V's row vectorized, acc[mr, nr] in
//      vector registers, at most 24 of them);
//   4. the output transform with the tiles in the vector lanes (blocks of
//      16, then 8), each block's m output rows through a small stack buffer
//      (stores m apart interleave there) and then stored as whole rows; the
//      remaining tiles, and every tile of a band with rows past Ho, one at
//      a time with each store tested against Ho and Wo.
// Y is stored by plain stores only, so the convolution's bias, activation
// and residual (fused after it: the kernel is out-ewise-fusable) move into
// those stores (inline-elementwise's reverse inline).
//
// DNSMOS (speechmos sig_bak_ovr, input 1 x 144160, N symbolic), 1 thread,
// CPU time per call on a loaded 2-core machine (load average 10-13), same
// run: 328 ms with its three big convolutions direct, 188 ms with this
// kernel (ONNX Runtime 239 ms); the 128 -> 64 convolution ~192 -> ~96 ms
// (kernel profile share x CPU time). Pinned (N = 1) takes the same kernel:
// 192 ms.
//
// Requirements (the caller checks): C, O static, O a multiple of 16, the
// input width static (tw static), batch and height may be symbolic.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_BANDED_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_BANDED_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

struct BandedWinogradSpec {
  int m = 0, alpha = 0;                      // F(m x m, 3x3), alpha = m + 2
  std::vector<std::vector<double>> bt, at;  // B^T (alpha x alpha), A^T (m x alpha)
  int64_t c = 0, o = 0, ou = 0;              // channels; U's row length
  ir::PrimExpr n, h, w;                      // input (caller's expressions); w static
  ir::PrimExpr ho, wo;                       // output; wo static
  int64_t pad_top = 0, pad_left = 0;         // the convolution's padding before
};

// The kernel (parameters X (N, C, H, W), U (alpha^2, C, OU), Y (N, O, Ho,
// Wo), then the symbolic values no buffer binds) and those values as the
// caller's expressions (the call's tir_vars).
struct BandedWinogradKernel {
  ir::PrimFunc f;
  std::vector<ir::PrimExpr> tir_vars;
};

Result<BandedWinogradKernel> BuildBandedWinograd(const std::string& name, const BandedWinogradSpec& spec);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_BANDED_H_
