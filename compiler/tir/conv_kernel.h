// ConvKernel: the register-blocked direct convolution that ScheduleConvs
// (conv_schedule.h, which documents the scheme) emits for one matched nest.
// Internal to the conv schedule; its definitions are split by concept:
//   conv_kernel_plan.cc        tile shape, bands, row/shift-plane choices (cost estimates)
//   conv_kernel_loops.cc       the input packing and the tile loops around the tiles
//   conv_kernel_tile.cc        one tile: accumulators, taps, remainder tiles
//   conv_kernel_write_back.cc  accumulators to the output through the fused epilogue
#ifndef KILN_COMPILER_TIR_CONV_KERNEL_H_
#define KILN_COMPILER_TIR_CONV_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/conv_schedule.h"
#include "compiler/tir/conv_tap_box.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {
namespace conv {

using namespace ir;    // NOLINT: internal header of the conv schedule's files
using nest::I64;

// Estimated cycles of loop, address and broadcast overhead per tap of a tile
// (beyond its FMAs); used to choose the tile shape.
constexpr int kTapOverhead = 4;

// Convolutions with at most this many taps per output (input channels x
// kernel height x width) may run row tiles (ChooseRowTiles). 160 takes in
// ResNet's 3->64 7x7/2 stem (147 taps): with row tiles (32 + 32 + 48
// columns per output row instead of 48-column flat tiles over rows 115
// apart) it took 2.17 against 2.42 ms with one thread, 1.33 against 1.45 ms
// with two (layer alone, kiln-bench medians). Row tiles were not measured
// beyond that.
constexpr int64_t kMaxRowTileTaps = 160;
// What the flat tiles' write-back costs per tile, in taps: per output row
// segment of the tile, its bounds arithmetic, the accumulators copied to
// memory and reloaded at the segment's (unaligned) offset. Measured on
// SqueezeNet's 3->64 3x3/2 stem (27 taps): the write-back took 30 % of the
// kernel, about 11 taps' worth.
constexpr int64_t kFlatWriteBackTaps = 8;

// At most this many last columns of a pointwise convolution are computed
// one channel vector per column (RemainderTile).
constexpr int64_t kMaxRemainderColumns = 4;
// Independent accumulator chains a remainder tile keeps per 8 channels.
constexpr int64_t kRemainderChains = 4;
// Shift planes (ChooseShiftPlanes) for output planes of at most this many
// elements: the whole plane is one tile.
constexpr int64_t kMaxShiftPlaneColumns = 64;
// Shift planes in several column tiles, up to this many elements per plane
// (14 x 14 = 196: 256 -> 256, layer alone, 2.31 -> 2.10 ms with one thread,
// 1.19 -> 1.13 ms with two). At 28 x 28 the halo is 7 % of the columns:
// 128 -> 128 took 2.23 -> 2.04 ms with one thread, but with two 1.13 ->
// 1.08 ms in a quiet run and 1.28 -> 1.44 ms while the second core was
// partly busy (three copies of the input to pack and share between the
// cores), so larger planes keep the halo layout, except in kernels built
// for one thread (kMaxShiftPlaneTiledColumnsOneThread).
constexpr int64_t kMaxShiftPlaneTiledColumns = 256;
// With one thread nothing is shared: 28 x 28 (784) gains the 7 % of halo
// columns (128 -> 128: 2.27 -> 2.08 ms). At 56 x 56 (halo 3.5 %) 64 -> 64
// took 2.26 -> 2.23 ms, within noise, so the limit stays below it.
constexpr int64_t kMaxShiftPlaneTiledColumnsOneThread = 1024;

// Convolutions with a packed weight of at least this many bytes prefetch
// it kPrefetchAheadBytes ahead of the tile's taps. In a model the weights
// do not stay in L2 between calls, and a pointwise tile reads a fresh
// 32-byte weight row per 24 FMAs: too few cache lines in flight to cover L3
// or memory latency. Sixteen 784 -> 784 convs at 7^2 in a chain (38 MB of
// weights), 1 thread, CPU time, loaded 2-core Zen 5: 429 -> 283 us a conv
// (OpenVINO 347); the conv alone 297 -> 283; sixteen 320 -> 320 at 14^2
// 204 -> 173; sixteen grouped 320 / 16 3x3 at 14^2 92 -> 87. 4096 bytes
// ahead beat 1024 (324) and 2048 (294), 8192 was no better. CPU ms a call,
// same run: RegNetY-800MF 9.66 -> 8.40 (8.65 with 1x1 kernels only),
// MobileNetV2 4.37 -> 3.74, DenseNet-121 26.9 -> 25.1.
constexpr int64_t kPrefetchMinWeightBytes = 16 * 1024;
constexpr int64_t kPrefetchAheadBytes = 4096;

// Kernels with more column planes than this (a stride's phases or shift
// planes) pack and zero them in a loop over the planes, not one copy of the
// code per plane. Basic Pitch's 1x256 filters with column stride 256 have
// 256 phases: unrolled, their pack and zero code made each of the four
// largest kernels ~17.7k instructions and the symbolic compile 35 s.
constexpr int64_t kMaxUnrolledColPlanes = 16;
// Prefetch hints per weight row beyond this count run in a loop.
constexpr int64_t kMaxUnrolledPrefetchHints = 16;

// FMA slots of `cols` columns per tile row: a 16-float vector takes both
// FMA pipes (2), a narrower one one.
inline int64_t VectorSlots(int64_t cols) { return 2 * (cols / 16) + (cols % 16 == 0 ? 0 : cols % 16 <= 8 ? 1 : 2); }

// ceil(a / b) for b > 0 and any sign of a.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
inline PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
inline PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }
inline PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
inline PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, std::move(a), std::move(b)); }

inline Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

// for x in [0, extent): body(x), vectorized. (Splitting it into a loop of
// constant 16-wide vectorized loops made LLVM vectorize the outer loop with
// gathers and scatters instead.)
inline Stmt VectorLoop(const std::string& name, const PrimExpr& extent, const std::function<Stmt(PrimExpr)>& body) {
  Var x = MakeVar(name);
  return MakeFor(x, extent, ForKind::kVectorized, body(PrimExpr(x)));
}


class ConvKernel {
 public:
  // `sources`: cv's input is the concatenation of these (pointwise only).
  ConvKernel(const ConvNest& cv, const std::vector<Stage>& stages, int threads, const ScheduleKnobs& knobs,
             std::vector<ConcatSource> sources = {});

  // Shift planes (stride 1, small planes, weights read as given): the packed
  // input holds one plane per kernel column kx, its columns shifted by kx,
  // so that the row pitch is the output's width and tap (ky, kx) reads plane
  // kx ky rows down. The flat columns are then exactly the output's, with no
  // halo columns: 7 x 7 is 49 columns (three 16-float vectors and one of a
  // single float per channel, explicit vectors in the emitter) where the
  // halo layout computes 7 x 9 = 63 as four vectors. Costs kw copies of the
  // (small) input per call. Chosen, when the whole plane fits one tile, if
  // that takes fewer FMA slots (a 16-float vector takes both FMA pipes, a
  // narrower one one) than the halo layout's vectors; for planes of several
  // tiles (up to kMaxShiftPlaneTiledColumns, or kMaxShiftPlaneTiledColumns-
  // OneThread in kernels built for one thread), if the constructor's tile
  // cost estimate over the exact columns, the last tile as narrow as the
  // columns left, is below the halo layout's (14 x 14: 4 x 48 + 4 columns
  // against 7 x 32 over rows 16 apart).
  bool ChooseShiftPlanes() const;
  // Rows of a whole-plane shift-plane tile of `cols` columns: as many as
  // keep 24 accumulator registers; one weight block's rows when the weight
  // is packed and that many fit (a tap's weights then are one contiguous run).
  int64_t ShiftPlaneRows(int64_t cols) const;
  // True when the tile is one whole plane whose tail lanes (past its last
  // whole 16-float vector) are computed one FMA per lane and some taps read
  // only padding for all of them; `box` gets the taps that do not
  // (conv_tap_box.h). At 7^2 the 49th column, (6, 6), reads the input at 4
  // of the 9 taps of a 3x3 kernel with padding 1. The other taps are skipped
  // for the tail (the padding adds w * 0; a weight of inf or NaN would make
  // that NaN, which the skipped taps then do not, as libraries that skip
  // padding do not). 512 -> 512 at 7^2 with run-time weights: 6 channels x
  // 49 columns cost 21 FMA cycles a tap (18 for the three vectors, 3 for six
  // single lanes), now 18 + 4/3.
  bool WholePlaneTailTaps(TapBox* box) const;
  // Column planes of the packed input per row phase: the stride's column
  // phases (plane pw holds input columns b * sw + pw), or the shift planes
  // (plane kx holds b + kx * dw).
  // A 1x1 kernel reads only the first row and column phase of a stride: the
  // others are neither packed nor allocated. (RegNetY-800MF's 1x1/2
  // shortcuts copied all four phases: 32 -> 64 at 112^2 -> 56^2 took 484 us
  // against ONNX Runtime's 153, kernel minima at 1 thread.)
  bool PointTaps() const { return cv_.kh == 1 && cv_.kw == 1 && !shift_planes_; }
  int64_t RowPhases() const { return PointTaps() ? 1 : cv_.sh; }
  int64_t ColPlanes() const { return shift_planes_ ? cv_.kw : PointTaps() ? 1 : cv_.sw; }
  int64_t ColStride() const { return shift_planes_ ? 1 : cv_.sw; }
  int64_t ColShift(int64_t plane) const { return shift_planes_ ? plane * cv_.dw : plane; }

  // Row tiles: each tile is MR channels of NR columns of one output row, the
  // row split into column tiles of row_nr_ and a last one for the
  // row_last_w_ columns left (at most 48), so the accumulators are stored
  // straight to the output row as whole vectors (RowTileWriteBack). The flat tiles run
  // across rows and pay per-segment arithmetic and a copy of the
  // accumulators to write back; with few taps per tile that is a large part
  // of the kernel. Chosen, for convolutions of at most kMaxRowTileTaps taps
  // with whole-input packing and 8-channel row blocks, when the row tiles'
  // FMA cost estimate stays under the flat tiles' plus kFlatWriteBackTaps
  // per tile.
  void ChooseRowTiles();

  // The variables of a tile loop over the whole packed input q_ (image,
  // group, the tile's first column) and how the tiles index q_.
  void BeginWholeInputTiles();

  // The tile loop of row tiles: (image, group, row block, output row,
  // column tile), column tiles fastest, over the packed input q_.
  Stmt RowTileLoop();

  // A row tile's accumulators to output row tile_y_ from column tile_x_,
  // NR columns as whole vectors.
  Stmt RowTileWriteBack(const Buffer& acc, const Var& o0, int rows);

  // Whether the kernel reads the concatenated tensors, not cv's input.
  bool ReadsSources() const { return !sources_.empty(); }

  Stmt Build();

 private:
  // Bands (see kMinConvBandTasks), for groups of at most 2 output channels
  // (depthwise) and GroupBands: the fewest output rows that give a band at least 4 column
  // tiles and keep the repacked halo rows (offa_max + 1 per band) at most
  // half the band, then as many more as still leave 2 * kMinConvBandTasks
  // bands. band_rows_ = 0: one packing pass for the whole input (too few
  // bands, or wider groups: on 64->64 at 56^2 bands of 6 rows took 1.2-1.4x
  // the CPU time of the whole-input scheme, one thread and two).
  void ChooseBands();
  // Grouped convolutions of several output channels per group (RegNet's
  // group width 16, ResNeXt) take the band scheme too: each task packs only
  // its group's input channels for its rows and computes every row block
  // of the group over them while they are in L1/L2. The whole-input scheme
  // packed the whole input first (3.2 MiB for RegNetY-800MF's 64 channels
  // at 112^2, 4 stride phases) and read it back from L3. Layer alone,
  // constant weights, 1 thread, CPU time on a loaded 2-core machine (kiln_
  // conv_kernels_benchmark): 64/16 3x3/2 at 112^2 1443 -> 739 us, 144/16
  // 3x3/2 at 56^2 647 -> 406, 320/16 3x3/2 at 28^2 330 -> 236, 784/16 3x3/2
  // at 14^2 197 -> 152, 320/16 3x3 at 14^2 165 -> 139, 784/16 3x3 at 7^2
  // 132 -> 119. Not with row tiles or shift planes (their tile loops read
  // the whole packed input).
  bool GroupBands() const;
  // Whether tiles whose rows are a block of the packed weight prefetch it
  // ahead (kPrefetchMinWeightBytes).
  bool PrefetchWeights() const;

  // Copies phase rows [a0, a0 + rows) of input channel `src_ch` of image `n`
  // into `q` at q_at(plane, (a - a0) * wq + b): plane (ph, pw) row a holds
  // X[n, src_ch, a*sh + ph - pt, b*sw + pw - pl] inside X, 0 outside. The
  // inside columns of each phase are a static range, so the copy has no
  // per-element test; rows are tested once each.
  Stmt Pack(const PrimExpr& n, const PrimExpr& src_ch, const PrimExpr& a0, const PrimExpr& rows, const Buffer& q,
            const std::function<std::vector<PrimExpr>(PrimExpr, PrimExpr)>& q_at);

  // body(plane) for each of the planes_ packed planes: unrolled, or a loop
  // when there are more than kMaxUnrolledColPlanes column planes.
  Stmt PlaneLoop(const std::function<Stmt(const PrimExpr&)>& body) const;

  // The tile of `rows` channels from o0 of group grp_, for every row block.
  Stmt RowBlocks(const Var& rb);
  // Row blocks of a group: full_ tiles of mr_ channels and, when the
  // channels don't divide, one tile of the rem_ left.
  int64_t RowBlockCount() const { return full_ + (rem_ > 0 ? 1 : 0); }

  bool ParallelWork(int64_t count) const;

  // One parallel loop over (image, group, band of output rows): each task
  // packs the input rows its band reads (the group's channels) into its own
  // buffer, then computes every row block x column tile of the band. No
  // second parallel region, and the packed rows are hot in the computing
  // core's cache.
  Stmt BuildBands();

  // The whole input packed once per call, then one parallel loop over the
  // tiles. The packing is parallel over (image, channel, piece of rows):
  // channels are cut into pieces of rows until there are at least
  // 2 * kMinConvBandTasks tasks (the stem's 3 channels made 3 tasks for 2
  // threads, one thread packing twice as much as the other).
  Stmt BuildWhole();

  // One loop over (image, group, row block, column tile), column tiles
  // fastest, over the whole packed input q_. last_col >= 0: no column tile
  // starts after last_col (BuildDirect: the last one is moved back to end at
  // H * W, and own0_ holds where it would have started).
  Stmt TileLoop(int64_t last_col);
  // Whether the tile loop runs a column tile's row blocks one after the
  // other (its input columns stay in L1) rather than every column tile of a
  // row block (its weights stay in L1, the input streams once per row
  // block). Pointwise convolutions with a few row blocks, an input larger
  // than half of L2 and small weights: 32->16 at 112^2 (MobileNetV2) and
  // 64->16 / 128->16 at 55^2 (SqueezeNet's squeeze layers) read their input
  // from L3 twice otherwise. With many row blocks each column tile's stores
  // go to many channel planes at once (16->96 at 112^2 measured 20 % slower).
  bool RowBlocksFastest(int64_t rb_count) const;
  // Otherwise, for pointwise convolutions whose input is larger than L2
  // can keep, the column tiles in chunks of this many (0: one chunk): the
  // tile loop runs every row block over one chunk's columns before the
  // next chunk, so the input streams from memory once, not once per row
  // block. DenseNet-121's 224 -> 128 at 56^2 (2.8 MiB of input, 16 row
  // blocks) read it 16 times.
  int64_t ColumnChunkTiles(int64_t rb_count) const;

  // Pointwise convolutions (direct_): no packing; Q is a view of the input
  // as [N, C, 1, H * W] (the same memory). Tiles: column tiles fastest
  // unless RowBlocksFastest, the last column tile of a row ending at H * W;
  // it writes back only the columns no earlier tile owns.
  Stmt BuildDirect();

  // Where the tiles read input channels from: Q whole, or (a pointwise
  // convolution of a concatenation) each concatenated tensor in place.
  struct InputPart {
    Buffer q;
    int64_t c0, count;
  };
  std::vector<InputPart> InputParts() const;

  // rows x NR grid, rows unrolled and columns vectorized.
  Stmt Grid(const std::string& tag, int rows, ForKind row_kind, const std::function<Stmt(const Var&, const Var&)>& body);

  // The tile of `rows` output channels from o0 and nr_ flat columns from col0.
  // `spatial`: `rows` output rows (flat columns col0 + ii * wq) of channel o0
  // instead. Neighbouring output rows read the same input rows at other taps
  // (row ii, tap ky and row ii + 1, tap ky - 1); with the ky loop unrolled
  // LLVM loads each such input vector once (144 FMAs from about 90 vector
  // loads per 4 x 64 tile, checked with --emit=asm), where a one-row
  // depthwise tile made one, mostly cache-line-crossing, load per FMA.
  Stmt Tile(const Var& o0, int rows, bool spatial = false);

  // A view of `b` ([.., H, W] -> [.., H * W], the same memory).
  static Buffer FlatView(const Buffer& b);

  // Pointwise convolutions (direct_): flat column p of a tile is output
  // element p of the plane (no halo columns), so the accumulators are
  // stored as the matmul kernel stores them: D[n, o, p] for the tile's NR
  // columns, vectorized, with the epilogue's loads at [.., y, x] read as
  // [.., p] of the same memory. None of the segment arithmetic of
  // WriteBack (which, with 16 input channels, cost more than the FMAs).
  // The last column tile (moved back to end at H * W) stores its whole
  // width: the columns an earlier tile owns get the same values again.
  // Null when an epilogue reads a buffer at other indices of y or x.
  // Whether the last `cols` columns of a pointwise convolution can be one
  // RemainderTile per row block of `mr` channels: the weight packed in
  // blocks of the row block, no leftover single rows.
  bool RemainderFits(int mr, int64_t cols) const;

  // Pointwise: output channels o0.. o0 + 8 at the last `cols` columns of the
  // plane, transposed: acc[column, channel], each column one 8-channel
  // vector (the packed weight's 8 contiguous floats) times the column's
  // input broadcast. A 16-column tile there computes 16 - cols columns
  // twice; 7 x 7 = 49 = 48 + 1 paid a whole 8 x 16 tile for one column.
  // With fewer than kRemainderChains columns, each column keeps several
  // partial sums over interleaved input channels (added up before the
  // write-back): one accumulator's chain of FMAs is latency-bound (7 x 7 =
  // 48 + 1 had one chain per 8 channels). MobileNetV2's 7^2 layers, kernel
  // profile, 1 thread: 320 -> 1280 442 -> 425 us, 960 -> 320 317 -> 306,
  // 160 -> 960 170 -> 152..159; the model 7365 -> 7292 us.
  Stmt RemainderTile(const Var& o0, int64_t cols);

  Stmt FlatWriteBack(const Buffer& acc, const Var& o0, int rows);

  // `cols` columns from `first` (transposed: acc[column, row], stored with
  // the columns unrolled and the rows vectorized).
  Stmt FlatWriteBack(const Buffer& acc, const Var& o0, int rows, int cols, const PrimExpr& first, bool transposed);

  // The store of accumulator value `v` at output point (n, o, y, x) after
  // the fused epilogue stages: the last stage's buffer at its indices.
  Stmt EpilogueStore(PrimExpr v, const std::vector<PrimExpr>& point) const;

  // Depthwise tiles of output rows (spatial): tile row ii is output row
  // tile_y_ + ii, its column jj output column tile_x_ + jj, so every store
  // has static accumulator indices and a static width (NR, or what is left
  // of the row in its last column tile); rows past the band's end are not
  // stored. No copy of the accumulators and none of WriteBack's per-row
  // segment arithmetic, which on 384 channels at 14^2 cost more than the
  // FMAs. Null when the last column tile of a row holds no output column.
  Stmt RowWriteBack(const Buffer& acc, const Var& o0, int rows);

  // Flat tiles of channels exactly one padded row wide (NR == wq, so col0
  // is y * wq): tile column jj is output column jj of row col0 / wq, and
  // the accumulators are stored with static indices and width Wo. Before,
  // WriteBack copied them to the stack and read them back at run-time
  // offsets (the last 16-float piece of a 46-wide row at 30, straddling two
  // of the copy's stores, which the store buffer cannot forward): MTCNN
  // ONet's 3 -> 32 at 48^2 (NR = wq = 48) spent 40 % of its samples there.
  // Null when the tiles are not of that form.
  Stmt RowSpanWriteBack(const Buffer& acc, const Var& o0, int rows);

  // Flat tiles of a column plane (Wo = wq = 1: a Keras Conv1D exported as
  // a conv2d over [N, C, L, 1] with a (k, 1) kernel, magika): tile column
  // jj is output row col0 + jj, so a tile whose NR rows all lie before the
  // band's end stores its accumulators as whole vectors with static
  // indices; WriteBack would store them one float per output row, each
  // with its segment arithmetic. The last tile, NR past the end, keeps
  // WriteBack. Null when the tiles are not of that form.
  Stmt ColumnWriteBack(const Buffer& acc, const Var& o0, int rows);
  // Column planes (Wo = 1, no halo columns: flat column p is output row p)
  // of one group: a last column tile narrower than NR, moved back to end
  // at Ho, as shift planes have (TileLoop's last_col), so that 508 rows
  // are 10 x 48 + 32 computed columns instead of 11 x 48 (magika's conv,
  // at the FMA peak: 2.56 -> 2.47 ms with every tile 32 wide).
  bool ColumnPlaneTail() const;

  // For each row, the output rows y the tile's columns [col0, col0 + NR)
  // cover, and in each the valid x segment: D[n, o, y, x] = f(tile[ii, y*wq + x - col0]).
  Stmt WriteBack(const Buffer& tmp, const Var& o0, int rows, bool spatial);

  const ConvNest& cv_;
  const std::vector<Stage>& stages_;
  int threads_;
  const ScheduleKnobs& knobs_;
  std::vector<ConcatSource> sources_;
  int64_t offa_max_, offb_max_, hq_, wq_, planes_, jt_, plane_len_, full_, rem_;
  int mr_, nr_;
  // Pointwise: the width of the last column tile (<= nr_), or minus the
  // number of last columns computed by RemainderTile.
  int nr_last_ = 0;
  int64_t band_rows_ = 0, nbands_ = 0, band_len_ = 0;
  int64_t srows_ = 0;  // output rows per depthwise tile; 0: tiles of channels
  bool direct_ = false;  // pointwise: tiles read the input in place (BuildDirect)
  bool shift_planes_ = false;  // ChooseShiftPlanes
  // Row tiles (ChooseRowTiles): full column tiles of row_nr_ columns, a last
  // one for the row_last_w_ columns left, row_ncol_ in all.
  bool row_tiles_ = false;
  int64_t row_nr_ = 0, row_ncol_ = 0, row_last_w_ = 0;
  Var own0_;             // set by BuildDirect: the first column a tile writes
  // Depthwise row tiles (srows_ > 0): the tile's first output row and column.
  PrimExpr tile_y_, tile_x_;
  Buffer q_;
  // Image, group, and the tile's first flat column: in the output (col0_)
  // and in the packed buffer (qcol0_; the same without bands).
  Var nn_, grp_, col0_, qcol0_;
  // The end of the output rows the tiles may write (the band's end).
  PrimExpr yend_;
  // The index of packed input (channel within the group, phase, position).
  std::function<std::vector<PrimExpr>(const PrimExpr&, const PrimExpr&, const PrimExpr&)> q_index_;
};

}  // namespace conv
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_KERNEL_H_
