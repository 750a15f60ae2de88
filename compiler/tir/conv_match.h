// The convolution nests ScheduleConvs rewrites (conv_schedule.h), and what
// fusion puts around them: the 7-deep conv2d nest as legalize + LowerBlocks
// write it, the elementwise stages after it, and a channel concatenation
// before a pointwise one. Matching only: nothing here rewrites.
#ifndef KILN_COMPILER_TIR_CONV_MATCH_H_
#define KILN_COMPILER_TIR_CONV_MATCH_H_

#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {
namespace conv {

// A matched convolution with its static geometry.
struct ConvNest {
  std::vector<const ir::ForNode*> loops;  // n, o, y, x, c, ky, kx
  ir::Buffer out, data, weight;
  int64_t n, o, ho, wo, ki, kh, kw;   // loop extents
  int64_t ch, h, w;                    // data channels and spatial size
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  int64_t groups = 1, opg = 0;         // output channels per group
  int64_t wblock = 0;                  // b of a packed weight [O/b, I, KH, KW, b]; 0: OIHW
};

// The convolution nest `s` (the nest documented in conv_schedule.h), with
// its geometry; false for anything else (symbolic shapes too).
// `half_operands`: X and W may also be float16 / bfloat16 buffers read
// widened, Cast(float32, X[..]) * Cast(float32, W[..]) (--precision=fp16|
// bf16, docs/precision.md); only for schedules whose kernels widen every
// load of them (WidenF32). The accumulator C stays float32.
bool MatchConv(const ir::Stmt& s, ConvNest* m, bool half_operands = false);

// The reduction of a conv2d nest, shared by MatchConv and the symbolic
// schedule (conv_symbolic_schedule.h): extents, H and W may be symbolic.
struct ConvReduction {
  ir::Buffer out, data, weight;             // compact; out and data of rank 4; out float32,
                                            // data and weight too unless half_operands
  const ir::BufferLoadNode* x_load = nullptr;  // X[n', ch, iy, ix]
  const ir::BufferLoadNode* w_load = nullptr;  // W[o, c, ky, kx] or W[o / b, c, ky, kx, o % b]
  ir::PrimExpr inside;                      // the bounds test of the read; undefined: none
  bool have[4] = {false, false, false, false};  // inside tests iy >= 0, iy < H, ix >= 0, ix < W
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
};

// Whether `body`, under the 7 loops (n, o, y, x, c, ky, kx), is
//   if c == 0 and ky == 0 and kx == 0: C[n, o, y, x] = 0
//   C[n, o, y, x] = C[n, o, y, x] + [if_then_else(inside,] X[..] * W[..][, 0)]
// (or a Select) with iy = y * sh + ky * dh - pt and ix = x * sw + kx * dw - pl
// proven, `inside` only bounds checks of iy and ix against X's height and
// width. X's image and channel indices are not checked (the callers differ).
// `half_operands` as for MatchConv: x_load / w_load are then the loads
// inside the casts.
bool MatchConvReduction(const ir::Stmt& body, const std::vector<const ir::ForNode*>& loops, ConvReduction* r,
                        bool half_operands = false);

// One fused elementwise stage: D[idx] = value, reading `src` at the loop point.
struct Stage {
  std::vector<const ir::ForNode*> loops;
  ir::Buffer src, dst;
  std::vector<ir::PrimExpr> dst_idx;
  ir::PrimExpr value;
};

// Whether `s` is a perfect nest over cv's output extents storing a plain
// float32, float16 or bfloat16 [N, O, Ho, Wo] buffer (not `src`) at the loop point with a value
// that reads `src` only at the loop point and not the stored buffer.
bool MatchStage(const ir::Stmt& s, const ir::Buffer& src, const ConvNest& cv, Stage* e);

// One tensor of a concatenation along channels that a pointwise
// convolution reads: channels [c0, c0 + count) of its input.
struct ConcatSource {
  ir::Buffer buffer;
  int64_t c0 = 0, count = 0;
  ir::Buffer view;  // [N, count, 1, H * W], set by the kernel
};

// Whether `s` is a nest over `dst`'s 4 dims storing
//   dst[n, c, y, x] = if_then_else(c < K1, A[n, c, y, x],
//                       if_then_else(c < K2, B[n, c - K1, y, x], ..))
// (concatenate along axis 1 as legalized), every source a plain float32
// [N, Ck, H, W] tensor; the sources in channel order.
bool MatchChannelConcat(const ir::Stmt& s, const ir::Buffer& dst, std::vector<ConcatSource>* out);

// A float32 buffer of rank `ndim`, compact, with static extents.
bool Float32Plain(const ir::Buffer& b, size_t ndim);
// Float32Plain, or the same of a float16 / bfloat16 buffer.
bool FloatPlain(const ir::Buffer& b, size_t ndim);
// Whether `t` is a 16-bit float scalar type (float16, bfloat16).
bool IsHalfFloat(const DType& t);
// `e` as float32: `e` itself when it is, else Cast(float32, e). The kernels
// of half_operands matches read X and W through it.
ir::PrimExpr WidenF32(const ir::PrimExpr& e);
// Whether the CPU schedules of a convolution with `groups` groups of
// `in_per_group` input channels take float16 / bfloat16 operands (the
// mixed-precision pass keeps a convolution they do not take in float32).
// ConvKernel matches them (MatchConv's half_operands); depthwise
// convolutions (one input channel per group) belong to the depthwise
// schedules (depthwise_*.cc, ScheduleStridedDepthwise) and the window
// schedule, which match float32 only: in half they fell to ConvKernel's
// spatial tiles and the window schedule's generic stores, and MobileNetV3-
// Large / EfficientNet-B0 at fp16 took 3.59 / 8.46 ms CPU against 3.05 /
// 5.92 with those convolutions float32 (1 thread, same run).
bool ScheduledWithHalfOperands(int64_t groups, int64_t in_per_group);
// Static extent `d` of a buffer Float32Plain or FloatPlain accepted.
int64_t Dim(const ir::Buffer& b, size_t d);

}  // namespace conv
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_MATCH_H_
