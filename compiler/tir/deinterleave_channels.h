// DeinterleaveChannels: a transpose of an NHWC input of 2 or 3 channels
// into a function's own NCHW buffer over a symbolic plane (a first conv's
// fused input layout) becomes a loop over the plane in 16-pixel chunks,
// each one wide load of the interleaved pixels and one shuffle per channel.
//
// Matched (after the default schedule): an Allocate of a compact float32
// buffer D of shape (N, C, H, W), C 2 or 3, H * W not static, whose body
// holds a perfect nest (loops from 0, any kinds) around one store
//   D[e0, e1, e2, e3] = B[e0, e2, e3, e1]
// with B a parameter of shape (N, H, W, C), compact, and the nest's extents
// multiplying to N * C * H * W (it writes every element once, as lowered);
// every other reference to D is a load or store with four indices.
// As scheduled, the row loop `for w in T.vectorized(W)` reads B with a
// stride of C, which the codegen leaves scalar over a run-time extent (a
// gather per lane loses to it): mtcnn_pnet's symbolic 12 x 12 input took
// 0.10 us a call for 432 floats, its pinned twin's static loop a fraction.
//
// Rewrite: D becomes D' of shape (N, C, H * W) (the same memory; every
// access D[a, b, h, w] becomes D'[a, b, h * W + w]), and the nest
//   for n in range(N):
//     if H * W >= 16:
//       for q in T.parallel(ceil(H * W / 16)):
//         s = min(q * 16, H * W - 16)
//         for j in T.vectorized(16):
//           D'[n, c, s + j] = B'[n, s * C + j * C + c]   (each c)
//     else:
//       for p in range(H * W): D'[n, c, p] = B'[n, p * C + c]   (each c)
// with B' the view of B as (N, H * W * C). The last chunk overlaps the one
// before it when 16 does not divide H * W: it rewrites some elements with
// the same values. Every element of D gets the value it got before.
// Returns `func` itself when nothing matches.
#ifndef KILN_COMPILER_TIR_DEINTERLEAVE_CHANNELS_H_
#define KILN_COMPILER_TIR_DEINTERLEAVE_CHANNELS_H_

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc DeinterleaveChannels(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEINTERLEAVE_CHANNELS_H_
