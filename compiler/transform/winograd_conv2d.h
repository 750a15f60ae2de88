// Pass: winograd-conv2d — 3x3 stride-1 convolutions with constant weights
// as Winograd F(2x2, 3x3): 16 multiplies per 2x2 outputs and input channel
// instead of 36 (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015).
//
//   y = R.nn.conv2d(x, W)       x: (N, C, H, W), W: a constant (O, C, 3, 3)
// becomes
//   xp = R.nn.pad(x, ...)                                       (conv padding, +1
//                                                                 row/col for odd outputs)
//   v  = R.call_tir(cls.winograd_input_f2x3, (xp,), out_sinfo=(16, C, T))
//   m  = R.matmul(U, v)                                         U: a constant (16, O, C)
//   y  = R.call_tir(cls.winograd_output_f2x3, (m,), out_sinfo=(N, O, Ho, Wo))
// with T = N * ceil(Ho / 2) * ceil(Wo / 2) tiles of 2x2 outputs, tile t of
// image n at tile row ty, column tx being t = (n * th + ty) * tw + tx, and
//   U[4i + j, o, c] = sum_ab G[i][a] W[o, c, a, b] G[j][b]    (computed here, in double)
//   v[4i + j, c, t] = sum_ab B[a][i] d[a][b] B[b][j]          (d: the 4x4 input patch of tile t)
//   y[.., 2ty + i, 2tx + j] = sum_ab A[a][i] m[4a + b, .., t] A[b][j]
// for the F(2x2, 3x3) matrices G (4x3), B (4x4) and A (4x2). The 16
// products become one batched matmul (the generated matmul kernel) and the
// transforms are additions only. The output transform is injective, so the
// convolution's bias, activation and residual fuse into it; the input
// transform is opaque (fused into the matmul as a prologue, together with
// the pad and the previous layer's output transform, it ran 1.7x slower).
//
// Rewritten: conv2d calls with default layouts (NCHW / OIHW), float32, no
// out_dtype, groups 1, strides 1, dilation 1, a static 3x3 constant weight
// (directly or a variable bound to one), a static input, at least
// kMinWinogradInputChannels input and kMinWinogradOutputChannels output
// channels and kMinWinogradTiles tiles. Everything else is left alone. Results differ from the direct
// convolution by rounding only (the transforms add and subtract; G's 1/2 is
// exact); measured error on ResNet-18 is in docs/performance.md.
//
// Pre: normalized and flattened; bind-params ran. Post: normalized. Run
// after dispatch-library (a convolution sent to a library stays there) and
// before pack-constant-weights.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_

#include <cstdint>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// Below these the transforms cost more than the multiplies they save.
// Measured (1 thread, 3x3 + bias + relu, direct -> Winograd, median of 5
// alternating runs): 256 channels at 14^2 (49 tiles) 2.54 -> 1.82 ms, 512
// at 7^2 (16 tiles) 3.67 -> 2.54 ms. The input channels are the matmul's
// reduction: with 16 (SqueezeNet's 16 -> 64 at 55^2, kernel profile, 1
// thread) the transforms and a 16-deep matmul took 678 us against 572 us
// for the direct convolution; with 32 (32 -> 128 at 27^2) 333 against 562.
constexpr int64_t kMinWinogradInputChannels = 32;
constexpr int64_t kMinWinogradOutputChannels = 16;
constexpr int64_t kMinWinogradTiles = 16;

Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_
