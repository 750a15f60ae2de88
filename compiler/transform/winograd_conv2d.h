// Pass: winograd-conv2d — 3x3 stride-1 convolutions with constant weights
// as Winograd F(m x m, 3x3), m = 2 or 4 (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015): alpha^2 = (m + 2)^2 multiplies per
// m x m outputs and input channel instead of 9 m^2 (F(2x2): 16 for 36,
// F(4x4): 36 for 144).
//
//   y = R.nn.conv2d(x, W)       x: (N, C, H, W), W: a constant (O, C, 3, 3)
// becomes
//   xp = R.nn.pad(x, ...)                   (conv padding, plus rows / columns up
//                                             to whole tiles)
//   v  = R.call_tir(cls.winograd_input_f{m}x3, (xp,), out_sinfo=(alpha^2, C, T))
//   m  = R.matmul(U, v)                     U: a constant (alpha^2, O, C)
//   y  = R.call_tir(cls.winograd_output_f{m}x3, (m,), out_sinfo=(N, O, Ho, Wo))
// with T = N * ceil(Ho / m) * ceil(Wo / m) tiles, tile t of image n at tile
// row ty, column tx being t = (n * th + ty) * tw + tx, and
//   U[alpha i + j, o, c] = sum_ab G[i][a] W[o, c, a, b] G[j][b]    (computed here, in double)
//   v[alpha i + j, c, t] = sum_ab B[a][i] d[a][b] B[b][j]          (d: the alpha^2 input patch of tile t)
//   y[.., m ty + i, m tx + j] = sum_ab A[a][i] m[alpha a + b, .., t] A[b][j]
// The alpha^2 products become one batched matmul (the generated matmul
// kernel); B^T and A^T have small integer entries. The output transform is
// injective, so the convolution's bias, activation and residual fuse into
// it; the input transform is opaque (fused into the matmul as a prologue,
// together with the pad and the previous layer's output transform, it ran
// 1.7x slower).
//
// Tile-major product. With few tiles per row (tw < kTileMajorMaxTileCols)
// and O a multiple of kTileMajorLanes, the product is m[k, t, o] =
// R.call_tir(cls.winograd_matmul, (v, U)) with U stored (alpha^2, C, O)
// instead: the matmul kernel vectorizes over the output channels (a
// multiple of 16) rather than over T (13^2 outputs in 2x2 tiles: 49 columns
// in four 16-float vectors), and the output transform computes each tile
// for 16 channels at once from contiguous loads. U's rows are padded when O
// floats are a multiple of 1 KiB (rows that far apart share L1 sets).
//
// F(4x4) against F(2x2). F(4x4) does 36 / 64 of F(2x2)'s multiplies but
// its transformed weight is 36 / 16 as large, and with few tiles the
// matmul streams that weight rather than computes (each weight value is
// used T times). F(4x4) when it has kMinWinogradF4Tiles tiles or more,
// else F(2x2). Layers alone, 1 thread, kernel profile: 128 -> 128 at 28^2
// 1.52 ms (F(2x2)) -> 0.95 ms (F(4x4), tile-major); 32 -> 128 at 27^2 379
// -> 238 us; 64 -> 64 at 56^2 1.36 -> 1.19 ms (F(4x4)); 256 -> 256 at 14^2
// (16 tiles of 4x4) 1.55 -> 1.28 ms as tile-major F(2x2), 1.42 ms as
// F(4x4); 64 -> 256 at 13^2 349 -> 281 us (tile-major F(2x2)).
//
// Symbolic shapes. The batch, height and width may be symbolic (a model
// compiled once for every size; the channels stay static). T and the tile
// rows / columns are then ceil-divisions of the symbolic output, the
// kernels take the symbolic values they cannot bind from a buffer as
// tir_vars, and:
//   - symbolic batch only: everything else as above (pads, partial tiles
//     and the product's layout are static);
//   - symbolic height or width: the input transform (F(4x4) and F(2x2))
//     reads the unpadded input in blocks of 16 tile columns
//     (winograd_input_rows.h: no pad kernel); the output transform stores
//     the partial last tile row and column under a test against Ho and Wo;
//     its tile columns go in static blocks of kWinogradInputLanes vector
//     lanes (channel-major rows of kWinogradWideLanes tiles or more: blocks
//     of that many through a stack buffer, see kWinogradWideTileCols).
//   - either way only convolutions with O a multiple of kTileMajorLanes
//     are rewritten (with other O a channel-major product over a symbolic
//     number of tiles was slower than the direct convolution; measurements
//     in RewriteConv), and the product is tile-major, except for a symbolic
//     height or width with long tile rows (kWinogradWideTileCols), where
//     it is channel-major.
// The cost rule below decides at a nominal shape: a symbolic batch at 1,
// symbolic image dimensions at kWinogradNominalImage, carried through the
// expressions of the layers before (a layer at 1/32 of the image sees 10).
//
// Rewritten: conv2d calls with default layouts (NCHW / OIHW), float32, no
// out_dtype, groups 1, strides 1, dilation 1, a static 3x3 constant weight
// (directly or a variable bound to one), static input channels, at least
// kMinWinogradInputChannels input (kMinWinogradF2InputChannels for F(2x2))
// and kMinWinogradOutputChannels output channels (in F(4x4), at least 2 *
// kTileMajorLanes when not a multiple of kTileMajorLanes) and kMinWinogradTiles
// tiles of 2x2 (at the nominal shape when symbolic). Everything else is left
// alone. Results differ from the direct convolution by rounding: the
// F(2x2) transforms add and subtract (G's 1/2 is exact), F(4x4)'s multiply
// by 2, 4, 5 and 8 (exact) and its G has 1/6, 1/12 and 1/24 (applied in
// double); measured error on ResNet-18 is in docs/performance.md.
//
// Pre: normalized and flattened; bind-params ran. Post: normalized. Run
// after dispatch-library (a convolution sent to a library stays there) and
// before pack-constant-weights.
#ifndef KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_
#define KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_

#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// Below these the transforms cost more than the multiplies they save.
// Measured (1 thread, 3x3 + bias + relu, direct -> Winograd F(2x2), median
// of 5 alternating runs): 256 channels at 14^2 (49 tiles) 2.54 -> 1.82 ms,
// 512 at 7^2 (16 tiles) 3.67 -> 2.54 ms. The input channels are the
// matmul's reduction: with 16 (SqueezeNet's 16 -> 64 at 55^2, kernel
// profile, 1 thread) F(2x2)'s transforms and 16-deep matmul took 678 us
// against 572 us for the direct convolution, F(4x4) 438 against 596 us;
// with 32 (32 -> 128 at 27^2) F(2x2) took 333 against 562.
constexpr int64_t kMinWinogradInputChannels = 16;    // F(4x4)
constexpr int64_t kMinWinogradF2InputChannels = 32;  // F(2x2)
constexpr int64_t kMinWinogradOutputChannels = 16;
constexpr int64_t kMinWinogradTiles = 16;
// F(4x4) from 32 tiles (a 24^2 output); 16 (ResNet-18's 14^2) was slower.
constexpr int64_t kMinWinogradF4Tiles = 32;
// A symbolic batch (static planes) whose F(4x4) transformed weight (36 C O
// floats) is at most this many bytes takes F(4x4) whenever the rule at
// batch 1 takes F(2x2): the weight stays in L2, so a product of few tiles
// costs little either way, and a larger batch gets F(4x4)'s 36 / 64 of
// the multiplies, as its pinned build does. MTCNN ONet's 64 -> 64 at 10^2
// (8^2 outputs, 4 F(4x4) tiles an image, 576 KiB), 1 thread, sums of kernel
// minima of the whole model, median of 3 alternating rounds: at batch 1
// 95.0 us F(2x2) / 95.1 F(4x4); at batch 17 the layer's kernels (input
// transform, product, output transform, pools) 208 -> 129 us in the pinned
// build's F(4x4).
constexpr int64_t kSymbolicBatchF4MaxWeightBytes = int64_t{1} << 20;
// Tile-major products: channel vectors of 16 floats, and rows of fewer
// than 8 tiles (at 56^2 in F(4x4), 14 tiles a row, it was 1.29 against
// 1.19 ms: its output transform's stores are Ho * Wo apart).
constexpr int64_t kTileMajorLanes = 16;
constexpr int64_t kTileMajorMaxTileCols = 8;
// The most bytes one image's transformed tiles (the larger of input and
// output) may take for the three-kernel rewrite; above, static or
// symbolic, one banded kernel (winograd_banded.h) when the width is static
// and O a multiple of 16, else the direct convolution.
constexpr int64_t kMaxSymbolicWinogradBytes = int64_t{32} << 20;
// Symbolic image sizes: the cost rule above is applied with each symbolic
// height and width of the model's input at this size (and a symbolic batch
// at 1), carried through the layers before the convolution. An assumption,
// not a measurement: a typical detector / OCR input.
constexpr int64_t kWinogradNominalImage = 320;
// Symbolic widths: the output transform's tile columns go in static blocks of this
// many vector lanes. 64 -> 64 + SiLU, symbolic height and width, 1 thread,
// CPU time per call: at 20^2 (5 tiles of 4x4 a row) 0.17-0.18 ms with 4
// lanes, 0.22-0.23 with 8 (no whole block: every tile one at a time), the
// static module 0.17-0.19; at 40^2 4 and 8 within noise (0.66-0.72).
constexpr int64_t kWinogradInputLanes = 4;
// The channel-major output transform's symbolic widths take blocks of this
// many tile columns first, then blocks of kWinogradInputLanes, then single
// tiles. (F(2x2)'s symbolic input transform took these blocks too, from a
// padded input, until it moved to winograd_input_rows.h.) MTCNN PNet's
// 16 -> 32 layer alone at 117 x 157 (39 tiles a row), 1 thread, perf
// samples per kernel on a loaded 2-core machine: that input transform's
// samples over the (unchanged) matmul's in the same process
// 1.49-1.54 -> 1.15-1.21; whole-model CPU time within that machine's noise.
// What keeps the symbolic PNet behind is the tile-major output transform:
// forced on the static shape it took 1.9x the matmul's samples where the
// static channel-major one takes 0.66x (its copy from channel lanes to
// rows of the output moves one float at a time).
constexpr int64_t kWinogradWideLanes = 16;
// Symbolic height or width whose whole tile rows hold at least this many
// tiles at the nominal shape: a channel-major product instead of
// tile-major (the output transform vectorized over the tile columns, in
// blocks of kWinogradWideLanes, as the static kernel), so the output rows
// are stored as vectors rather than copied from channel lanes. With all m
// rows stored to Y in one loop, stores a symbolic Wo apart, LLVM's
// vectorizer could not prove the rows' interleaved stores independent and
// left the loop scalar (MTCNN PNet's 16 -> 32 layer: 1.4x the tile-major
// kernel's perf samples). Each block was then stored one output row at a
// time, loading and summing M once per row, and the row's last tiles went
// in blocks of 4 and one at a time. Since 2026-11-29, in rows of
// kWinogradWideLanes tiles or more, a block's m rows go to a stack buffer in
// one loop and are copied out row by row, and one more block ending at the
// row's last tile stores what the whole blocks left: 32 -> 32 + ReLU alone,
// symbolic height and width, 1 thread, CPU time per call, 3 alternating
// rounds at load 16: 117 x 157 1.83-1.98 -> 1.37-1.48 ms, 80^2 0.45-0.53 ->
// 0.40-0.42, 240 x 320 7.42-7.67 -> 6.81-6.88; PNet's 16 -> 32 layer as
// Winograd (kernel minima) 481-529 -> 215 us (pinned 187-202). Before
// that (the row passes' own change), MTCNN PNet at 1 x 240 x 320
// (39 tile columns), 1 thread, perf samples per kernel as a ratio to an
// unchanged kernel's (the first convolution's) in the same run, on a
// loaded 2-core machine: output transform (with its PReLU) 1.80-2.03 ->
// 1.29-1.37, product 0.76-0.87 (tile-major) -> 1.02-1.20 (relax.matmul);
// whole model CPU time per call 5.2-5.5 -> 4.8-4.9 ms (pinned 3.8-4.1).
// Rows of 10 tiles (64 -> 64 at 40^2) measured better tile-major before
// (RewriteConv), hence the threshold.
constexpr int64_t kWinogradWideTileCols = 16;
// Symbolic height or width with fewer than 2 * kTileMajorLanes input
// channels: both the tile-major Winograd bindings and the direct
// convolution, and an If on the shape at run time (winograd_choice.h):
// Winograd where the static rule takes it (T >= kMinWinogradF4Tiles on the
// run-time number of tiles T), on rows of fewer than
// kRunTimeWinogradMaxTileCols tiles, with the transformed output
// (alpha^2 * O * T floats) at most kRunTimeWinogradMaxBytes. The symbolic
// tile-major form is close to the static build's on short rows, where the
// channel-major form (chosen before by the nominal shape's long rows, and
// only from 384 tiles) took 2-2.5x the direct convolution: its output
// transform, in blocks of 4 tiles and single ones, took 185 us where the
// static tile-major one takes 18 (MTCNN PNet's 16 -> 32 at 2 x 44 x 26).
// One convolution + bias + ReLU, symbolic n / h / w, 1 thread, minimum us
// of 3 alternating rounds (load 13-15), direct / channel-major / tile-major
// by output plane (tiles, tile columns):
//   16 -> 32: 20^2 (25, 5) 22.2 / 47.9 / 11.5; 32^2 (64, 8) 34.4 / 111 /
//   36.2; 2 x 44 x 26 (154, 7) 97.9 / 270 / 64.9 (pinned 53.5); 40^2 (100,
//   10) 67.9 / 134 / 42.2; 60^2 (225, 15) 130 / 288 / 91.5; 400 x 40 (1000,
//   10) 647 / 1281 / 456; 80^2 (400, 20) 217 / 196 / 178; 117 x 157
//   (1200, 40) 633 / 488 / 538, CPU per call 681 / 646 / 801.
//   16 -> 16: 2 x 40^2 (200, 10) 67.7 / 139 / 62.5; 80^2 (400, 20) 108 /
//   116 / 127; 160^2 (1600, 40) 433 / 575 / 717.
// With long rows the tile-major form loses in CPU time and the
// channel-major one wins only in a narrow window: the direct convolution.
// Whole models, symbolic build before / after this rule, 1 thread, CPU ms
// per call, medians of alternating rounds (load 5-11): MTCNN PNet 2 x 97 x
// 61 0.206 / 0.169, 1 x 240 x 320 1.23 / 1.27 (its 117 x 157 layer lost
// the channel-major window); NudeNet 320n 2 x 160 x 160 5.20 / 4.87,
// 320 x 320 8.23 / 8.08. (A second If choosing the channel-major form on
// long rows could keep that window; not done.)
// (Earlier, channel-major, MTCNN PNet whole model p50 ms direct / Winograd
// by the layer's plane: 55 x 75 0.30 / 0.31; 75 x 102 0.57-0.58 / 0.54;
// 115 x 155 1.23-1.25 / 1.17-1.21; 155 x 155 1.75-1.93 / CPU 2.04-2.22;
// 235 x 315 5.3-5.6 / 8.6-9.0: the product leaves the cache past
// kRunTimeWinogradMaxBytes, 1365 tiles at 32 output channels.)
constexpr int64_t kRunTimeWinogradMaxTileCols = 16;
constexpr int64_t kRunTimeWinogradMaxBytes = int64_t{6} << 20;
// Rows of kRunTimeWinogradMaxTileCols tiles or more take the tile-major
// form too when the output has two or more blocks of kTileMajorLanes
// channels and the product (alpha^2 * O * T floats) is at most this many
// bytes (a core's 2 MiB L2 plus some: the input transform's V streams).
// Since the guarded tiles' copy took run-time extents (OutputTransform),
// MTCNN PNet (its 16 -> 32 layer), 1 thread, whole model CPU us per call,
// direct / tile-major, 3 alternating rounds at load 10: 1 x 120 x 160
// (T 300, 20 tile columns, 1.4 MB) 296-301 / 265-273; 150 x 200 (432, 25,
// 2.0 MB) 489-494 / 453-460; 180 x 240 (638, 29, 2.9 MB) 730-752 /
// 624-664; 200 x 280 (816, 34, 3.8 MB) 969-1012 / 874-1039; at 240 x 320
// (1200, 40, 5.5 MB) perf samples put the layer even (47.4 / 46.2 % of
// the model). With one channel block (NudeNet 320n's two 16 -> 16 layers
// at 80^2, T 400, kernel medians) 293 direct against 306 us tile-major.
constexpr int64_t kRunTimeWinogradLongRowMaxBytes = int64_t{3} << 20;

Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod);
// With upper bounds of symbolic variables by name (kiln-compile --bound):
// a run-time choice whose tiles T stay under kMinWinogradF4Tiles
// when every variable of T is at its bound is decided at compile time
// (the direct convolution, no If). Unbounded variables change nothing.
Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod, const std::map<std::string, int64_t>& upper_bounds);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_WINOGRAD_CONV2D_H_
