// Internal header of the symbolic conv schedule's files (conv_symbolic_*.cc):
// the nest it matches (SymConv), the matchers, and the kernel builder
// (SymConvKernel), whose methods are spread over conv_symbolic_kernel.cc (the
// register tiles), conv_symbolic_pack.cc (padded copies and stride phases),
// conv_symbolic_depthwise.cc (per-channel depthwise tiles) and
// conv_symbolic_planes.cc (flat plane tiles). What the kernel computes and
// why: conv_symbolic_schedule.h.
#ifndef KILN_COMPILER_TIR_CONV_SYMBOLIC_KERNEL_H_
#define KILN_COMPILER_TIR_CONV_SYMBOLIC_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/conv_symbolic_concat.h"
#include "compiler/tir/conv_symbolic_plane_tail.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace symconv {

using namespace ir;    // NOLINT: internal header of the symbolic conv schedule's files
using namespace nest;  // NOLINT: the shared nest helpers

// Column tile widths tried widest first (the row's width decides at run
// time); 32 columns x 8 channels is 16 AVX-512 accumulators.
constexpr int64_t kTileWidths[] = {32, 16, 8};
// Accumulator vectors a tile of channels may hold. A static row narrower
// than 32 columns takes tiles of several output rows (channels x rows x
// one vector of 16 or 8 columns), each tap's weight broadcast then serving
// every row: PLCMOS's 64 -> 128-channel 3 x 3 on rows of 16 (symbolic
// height) took 8 x 16 tiles, 8 accumulators and a broadcast an FMA.
constexpr int64_t kMaxTileAccumulators = 24;
// Pointwise planes are cut into rows of this many columns (TryFlat): rows
// long enough for 48-column tiles, and (channel tile, row) tasks enough for
// the threads. The last row takes the columns left over, kFlatTileWidth to
// kFlatRow + kFlatTileWidth - 1 of them (a plane of 256: one row of
// 4 x 48 + 2 x 32, not 240 and a row of 16).
constexpr int64_t kFlatRow = 240;
// Flat rows of 48 columns and more take tiles of 8 channels x 48 columns,
// then at most two of 32 (WideRowTiles: their 16-column vectors covered
// exactly; before, 48-column tiles where they recomputed no more columns
// than 32-column tiles, else 32-column tiles): 24 accumulators, three
// vector loads and eight broadcasts per 24 FMAs against two and eight per
// 16. Pointwise convolutions with a hard-swish alone, symbolic H and W, one
// thread, loaded machine, kiln-bench p50 over that of 8 x 32 tiles on rows
// of 256 in the same run: PP-OCRv4 rec's 480 -> 480 on 6 x 80 and 3 x 80
// 0.90 and 0.86, 240 -> 240 on 12 x 80 0.87; 96 -> 96 on 80 x 80 (det)
// 0.83; 240 -> 240 from 7 x 16 to 20 x 80 0.75 to 1.00.
constexpr int64_t kFlatTileWidth = 48;
// Weights up to this size are read again for every output row (TileLoop's
// row-outer order): a quarter of a 4 MiB L2, half of a 2 MiB one.
constexpr int64_t kRowOuterWeightBytes = 1 << 20;
// Output channels per tile, the largest of these that divides O.
constexpr int64_t kTileRows[] = {8, 6, 4, 3, 2, 1};
// Depthwise (one input channel per output channel) tiles of this many output
// rows of one channel, the taps unrolled: neighbouring rows read the same
// input rows at other taps (row ii, tap ky and row ii + 1, tap ky - 1), so
// LLVM loads each input vector once for several FMAs, where a tile of
// channels made one load per FMA (a different input channel per row). Rows
// x columns per width (the widest that fits the row): 6 x 32 and 8 x 16
// are 12 and 8 vector accumulators of 16 lanes, 8 x 8 eight of 8 lanes.
struct SpatialTile {
  int64_t rows, cols;
};
constexpr SpatialTile kSpatialTiles[] = {{6, 32}, {8, 16}, {8, 8}};
// Depthwise at stride 1 on planes whose width the spatial tiles cover badly
// (PlaneTilesPay): each channel's padded plane is read as one flat row of
// Hp * Wp floats, output point (y, x) at y * Wp + x, tap (ky, kx) at
// ky * dh * Wp + kx * dw further on; tiles of kPlaneChannels channels x NR
// flat columns (4 x 32: 8 independent accumulator vectors) run over the
// flat span, computing the Wp - Wo columns between rows for nothing, into a
// per-channel buffer from which the rows are copied out through the
// epilogue. A 10 x 10 plane (5 x 5 kernel, Wp 14) computes 160 flat columns
// in tiles of 32 where 8 x 8 spatial tiles computed 256, and 7 x 7 planes,
// narrower than any spatial tile, no longer fall to one-column tiles
// (512 channels, 5 x 5, at 7 x 7, 1 thread, CPU time per call in one run:
// 188 -> 65 us, pinned 61 us).
constexpr int64_t kPlaneChannels[] = {4, 3, 2, 1};
// Convolutions that are not depthwise (strided, or stride 1 with a kernel
// of more than one tap) whose output rows are narrower than this take the
// flat (phase-)plane tiles (StridedPlanes).
constexpr int64_t kStridedPlaneWidth = 64;
// Padded stride-1 1-D convolutions (one output row, a lifted conv1d) whose
// symbolic row holds at most this many columns at run time take ShortRows:
// per channel group one tile of 8, 16, ..., 48 columns (the narrowest that
// holds the row), where the flat planes took 8 channels x two overlapping
// tiles (8 + 8 columns, 8 accumulators of 8 lanes, on 9 to 15 columns;
// 16 + 8 on 17 to 23, 32 + 8 on 33 to 39). AttaCut's 48 -> 64 dilated
// convolutions, the model, 1 thread, CPU per call in one run: 12 positions
// 19.2 -> 11.0 us (pinned 10.5), 17 to 28 up to 17 % faster, 33 to 44
// 5 to 7 % faster, 24, 32 and 48 within 2 %.
constexpr int64_t kShortRowWidth = 48;
// Output channels per short-row tile of up to 16 columns, the largest of
// these that divides O (none: no short-row tiles); wider tiles take half as
// many: 16 AVX-512 accumulators up to 32 columns, 24 (kMaxTileAccumulators)
// at 40 and 48.
constexpr int64_t kShortRowChannels[] = {16, 12, 8};
// Input channels at most that PointDots gathers into a local column.
// (Its column of 8 points x C floats then stays within 32 KiB.) Tiles of
// output channels run in parallel from this many MACs a point (O x C) on.
constexpr int64_t kMaxPointDotChannels = 1024;
constexpr int64_t kParallelPointDotMacs = 1 << 15;
// Flat pointwise rows (weight packed in blocks of mr_) that end 1 to this
// many columns past a 16-column vector take those last columns as vectors
// of output channels (PointColumns), as the pinned kernel's remainder tile
// does (conv_kernel.h's kMaxRemainderColumns, 4). Each column costs one
// mr_-lane FMA per input channel where one more 16-column vector cost mr_,
// but its write-back is mr_ scalar stores: 1 x 1 with a scale, shift and
// hard-swish, symbolic H and W, batch 2, one thread, loaded machine, CPU
// time per call after / before over 5 alternating kiln-bench rounds: two
// columns (1 x 50) 32 -> 200 0.93, 16 -> 88 0.98; four (2 x 50) 32 -> 200
// 1.02, 16 -> 88 1.03.
constexpr int64_t kMaxPointColumns = 2;
// Accumulator vectors of those columns in all (partial sums over
// interleaved input channels): independent FMAs to hide their latency.
constexpr int64_t kPointColumnAccumulators = 8;
// Columns per chunk of the stride-phase copy (PackPhases): one vector.
constexpr int64_t kPhaseChunk = 16;
// Output planes of at most this many points (a run-time test) take the
// channel-lane tiles (SmallPlaneLanes), a version per few point counts.
constexpr int64_t kMaxLanePoints = 16;

inline PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
inline PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }
inline PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
inline PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, std::move(a), std::move(b)); }
inline PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
inline PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }

inline Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

// A load at the loop point of `loops`: each index the loop's variable, or 0
// where the loop's extent is 1 (legalize writes X[0, c, y, x] for a batch
// of one; the epilogue of such a convolution is still at the loop point).
bool AtLoopPoint(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops);

// Whether index d of `idx` is the variable of loop first + d, for every d.
bool ExactlyVars(const std::vector<PrimExpr>& idx, const std::vector<const ForNode*>& loops, size_t first);

// Whether any extent of `shape` is not a constant.
bool AnySymbolic(const std::vector<PrimExpr>& shape);

// A convolution nest with a symbolic extent somewhere.
struct SymConv {
  std::vector<const ForNode*> loops;  // n, o, y, x, c, ky, kx
  Buffer out, data, weight;
  const BufferLoadNode* x_load = nullptr;
  const BufferLoadNode* w_load = nullptr;
  int64_t o = 0, ki = 0, kh = 0, kw = 0;
  int64_t wblock = 0;  // b of a weight packed as [O / b, I, KH, KW, b] (OIHW<b>o); 0: OIHW
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  bool guarded = false;            // reads through an `inside` test
  std::vector<Stmt> epilogue;      // statements after the reduction, inside (n, o, y, x)
};

// Whether the epilogue of `cv` may run on its tiles: stores only, each at
// the loop point, C read only there, no buffer read before it is stored (the
// overlapping tiles compute some points twice), X and W never stored.
bool EpilogueOk(const SymConv& cv);

// Whether `s` is a convolution nest (with its epilogue) that this schedule
// takes: static channels and taps, something symbolic.
bool MatchSymConv(const Stmt& s, SymConv* m);

// The elementwise nest `s` after a convolution: four loops over the
// convolution's output extents (any kinds: the default schedule may have
// vectorized or parallelized them) around stores at the loop point; its
// statements with the convolution's loop variables, or false.
bool MatchEpilogueNest(const Stmt& s, const SymConv& cv, std::vector<Stmt>* out);

// The value that the elementwise nest `s` stores into `dst` at the point
// `at` (an index list of dst): `s` is loops from 0 (any kinds: the default
// schedule has fused and parallelized them) around one store
// dst[e0, ..] = v, each e_k a loop variable or, for two fused loops, the
// pair (v // K, v % K); every loop variable is in the indices, so each loop
// point stores its own element. v with each e_k replaced by at[k], when no
// loop variable is left and it does not read dst; else false.
// (A squeeze-excite block scales a convolution's input by channel:
// X[n, c, y, x] = A[n, c, y, x] * S[n, c, 0, 0], done in a pass of its own.)
// Only a value of at most kMaxPrologueOps adds, subtracts, multiplies,
// minima and maxima, reading one tensor over the plane (others per image
// and channel): the tiles compute it again for every tile of channels.
constexpr int kMaxPrologueOps = 4;
bool MatchPrologueNest(const Stmt& s, const Buffer& dst, const std::vector<PrimExpr>& at, PrimExpr* value);

class SymConvKernel {
 public:
  // `params`: the function's buffer parameters (flat views only of those).
  // `sources`: X is the concatenation of these, computed just before (read
  // in place when the kernel takes flat rows: ReadsSources).
  // `prologue`: the elementwise nest that computes X just before, read
  // nowhere else (MatchPrologueNest), or null.
  SymConvKernel(const SymConv& cv, int threads, bool store_out, const std::unordered_set<const VarNode*>& params,
                std::vector<SymConcatSource> sources = {}, const Stmt& prologue = Stmt());

  // Whether the tiles read the concatenated sources, not X (the caller then
  // drops the concatenation's copy).
  bool ReadsSources() const { return !source_views_.empty(); }

  // Whether the tiles compute X's values from what the prologue reads, not
  // read X (the caller then drops the prologue): flat rows only, where every
  // access of that value is at the output point of a parameter. A
  // squeeze-excite scale X = A * S[n, c] wrote and read X whole for a 1x1
  // convolution (PP-OCR's LCNet blocks); the tiles now multiply each vector
  // of A as they load it (the same product, rounded once as before).
  bool ReadsPrologue() const { return reads_prologue_; }

  Stmt Build();

 private:
  // Pointwise planes of fewer than kTileWidths[2] points (a 1 x 1 plane at
  // the end of mtcnn_pnet at 12 x 12): per point, X's channels gathered
  // once, then per tile of up to 4 output channels dot products in vectors
  // of 16 (or 8) input channels, their lanes summed by halves, through the
  // epilogue, where the flat rows took one-column tiles (a scalar FMA
  // chain per channel: 0.09 us for 32 -> 4 against the pinned build's 0.03).
  // (The reduction is summed in vl partial sums.) Flat rows reading X only,
  // an OIHW weight (its rows contiguous over input channels), C a multiple
  // of 8 up to kMaxPointDotChannels.
  bool PointDotsApply() const;
  Stmt PointDots();

  // Flat rows with a weight packed in blocks of mr_ output channels whose
  // last rem = wo % 16 columns number 1 to kMaxPointColumns: the tiles over
  // the row's first wo - rem columns (whole 16-column vectors), then the
  // rem columns as vectors of the mr_ output channels, acc[:] =
  // fma(W[o0 / b, c, :], X[c, column] broadcast, acc[:]) over c, through
  // the epilogue. Before, the row's last tiles were moved back to end at
  // the row's end: PP-OCR cls's 1 x 50 planes took two tiles of 32
  // columns, 64 columns for 50, where the pinned kernel computes 48 and
  // two remainder columns. Else `row` (a test of the run-time width picks).
  bool PointColumnsApply() const;
  Stmt WithPointColumns(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo, const Stmt& row);
  // Output channels [o0, o0 + mr_) at flat columns [x0, x0 + cols) of
  // flat row y, the columns unrolled.
  Stmt PointColumns(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, int64_t cols);

  // X's value at the point `map` gives the nest's variables, as the tiles
  // of an unpadded convolution read it: a load of X (or of its flat view),
  // or the prologue's value (ReadsPrologue) with its loads at that point.
  PrimExpr XAt(const VarMap& map) const;

  // Pointwise (1x1, stride 1, no padding) reads and writes every plane as
  // flat rows of kFlatRow columns, not image row by image row (20 x 20
  // planes: rows of 20 took tiles of 8 or overlapping tiles of 16). Every access that uses y or x must be B[.., y, x] of a
  // compact buffer whose last two extents are the output's: it becomes
  // B_flat[.., j] (a view of the same memory). Otherwise rows.
  void TryFlat();

  // Q[c, a, b] = X[n, c, a - pt, b - pl] inside X, else 0: each row zeroed,
  // then its interior copied (both plain vector loops).
  Stmt Pack(const PrimExpr& ch, const PrimExpr& hp, const PrimExpr& wp);

  // Channel c of the padded copy.
  Stmt PackChannel(const PrimExpr& c, const PrimExpr& hp, const PrimExpr& wp);

  // X's image index at image n_ (the original may be 0 for a batch of one).
  PrimExpr NImage() const;

  // The tile loop: depthwise planes of at least kSpatialRows output rows in
  // tiles of rows (SpatialTileLoop), others (and smaller planes) in tiles
  // of channels.
  Stmt Tiling(const PrimExpr& ho, const PrimExpr& wo);

  // Spatial tiles of this size while building them (At, Tile read it).
  void BeginSpatial(const SpatialTile& t);
  void EndSpatial() { spatial_ = false; }

  // Whether planes of ho x wo take the current spatial tiles.
  PrimExpr FitsSpatial(const PrimExpr& ho, const PrimExpr& wo) const;

  // Depthwise, padded, output channel o reading input channel o: for each
  // channel (in parallel), its padded copy, then its spatial tiles.
  // With a column stride, the copy is split into column phases instead
  // (PackPhases), so that the tiles read contiguous vectors.
  Stmt PerChannel(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp);

  // Channel c of the padded input split into the sw column phases of a
  // stride-sw convolution: qs_[a, p * Wph + b] = Q[c, a, b * sw + p] (or
  // qs_[c, a, ..] when it holds every channel, phases_by_channel_; Q the
  // zero-padded copy of PackChannel), so that tap kx of output columns
  // x0 .. x0 + NR reads qs_[.., ((kx * dw) % sw) * Wph + x0 + (kx * dw) / sw
  // ..], one contiguous vector, where Q needed a strided load (a permute per
  // FMA: PP-OCRv4's and PP-LCNet's stride-2 depthwise layers ran 2.2-3.9x
  // slower than their pinned schedule). Each row: zeroed, then the columns
  // whose sw phases all lie inside X copied in one loop (an interleaved
  // load), the few at the edges one by one with their bounds test (0
  // outside); rows outside X zeroed.
  Stmt PackPhases(const PrimExpr& c, const PrimExpr& hp);

  // Strided convolutions (not depthwise) on rows narrower than
  // kStridedPlaneWidth: every input channel's padded copy split into its
  // sh * sw phase planes, P[c, (a % sh) * sw + p, (a / sh) * Wph + b] =
  // Q[c, a, b * sw + p] (PackPhases), each plane flat with rows of Wph =
  // ceil(Wp / sw) columns. Output point (y, x) is then flat column
  // j = y * Wph + x of every plane, and tap (ky, kx) reads plane
  // ((ky * dh) % sh) * sw + (kx * dw) % sw at j + ((ky * dh) / sh) * Wph +
  // (kx * dw) / sw: tiles of MR channels x NR flat columns run over the
  // span (Ho - 1) * Wph + Wo like the pointwise flat rows, computing the
  // Wph - Wo columns between rows for nothing, into per-tile-group planes
  // whose rows are copied out through the epilogue. Rows of 10 or 20 output
  // columns took tiles of 8 or 16 columns, the last one overlapping (16 x 2
  // for 20 columns).
  Stmt StridedPlanes(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp);

  // Spans of at most kTileWidths[0] columns (small output planes): one tile
  // from column 0 of the narrowest width that holds the span per group of
  // mr_ channels, reading the zeroed tail of each phase plane (ZeroPhaseTails:
  // kTileWidths[0] columns after plane_size); else `wider`
  // (conv_symbolic_strided_small.cc).
  Stmt StridedSmallSpan(const PrimExpr& ho, const PrimExpr& wo, const Buffer& pq, const Stmt& wider);
  Stmt ZeroPhaseTails(const PrimExpr& c, const PrimExpr& plane_size);
  // `taps` (one input channel c of the group at o0) after hints that
  // prefetch the packed weight's row kPrefetchAheadBytes ahead, when the
  // weight is packed in blocks of mr_ channels; else `taps` unchanged.
  Stmt WithWeightPrefetch(const PrimExpr& o0, const Var& c, Stmt taps) const;

  // Unpadded stride-1 convolutions (not depthwise, more than one tap) on
  // rows narrower than kStridedPlaneWidth of a symbolic width: the flat
  // plane tiles of StridedPlanes reading X itself (X[n, c] one flat row of
  // H * W: no copy, nothing outside X read). Rows under 8 columns took
  // one-column tiles (mtcnn_pnet's 16 -> 32 3 x 3 on 7 x 7 planes ran 10x
  // its pinned time, which reads the plane flat).
  // small_only: the caller takes it only for spans under kTileWidths[0].
  Stmt InPlacePlanes(const PrimExpr& ho, const PrimExpr& wo, bool small_only);

  // InPlacePlanes' tile channels: the most up to 8 that divide O (and fit
  // a packed weight's blocks), at least mr_.
  int64_t PlaneChannels() const;

  // InPlacePlanes on a span under the widest tile width (tiny planes: a 5 x
  // 5 input to a 3 x 3 is a span of 13, one output point a span of 1): X[n]
  // copied flat (xf its flat view) with a zeroed tail, then per group of
  // channels one tile from column 0 of the narrowest width that holds the
  // span, where the in-place tiles took two overlapping tiles of 8 (13) or
  // single columns (under 8).
  Stmt SmallPlanes(const PrimExpr& ho, const PrimExpr& wo, const Buffer& xf);

  // InPlacePlanes on a span under 8 columns (a 3 x 3 output of 1 x 1, a
  // matrix-vector product): vectors of output channels, not columns. For
  // each flat column j and tile of up to 4 weight blocks, acc[b, :] =
  // fma(W[block b, c, ky, kx, :], X[n, c, j + tap offset], acc[b, :]) over
  // (c, ky, kx) in the nest's order, every lane useful, where a tile of 8
  // columns computed 8 - span of them for nothing (mtcnn_pnet's 16 -> 32 at
  // 12 x 12: one column, 0.84 us, pinned 0.77). Only with a weight packed
  // in blocks of 8 or more (its block a contiguous vector) and one group.
  bool ChannelVectorsApply() const;
  Stmt ChannelVectorPoints(const PrimExpr& ho, const PrimExpr& wo, const Buffer& xf);

  // Unpadded convolutions (one group, more than one tap, a weight packed in
  // blocks of 8 or more) on output planes of at most kMaxLanePoints points
  // at run time (conv_symbolic_small_plane.cc): output channels in the
  // vector lanes, as the static channel-lane kernel (conv_channel_lanes.h)
  // puts them, a version per few point counts, every point's input read in
  // place (broadcast), so no lane and no column between rows is computed
  // for nothing; tiles of few accumulators split the reduction over input
  // channels into partial sums. The flat tiles took mtcnn_pnet's 10 -> 16
  // on a 3 x 3 output as 8 channels x 16 columns of a 13-column span.
  bool SmallPlaneLanesApply() const;
  Stmt SmallPlaneLanes(const PrimExpr& ho, const PrimExpr& wo);
  // The version of `points` points for planes of `from` to `points` points
  // (`count` at run time).
  Stmt SmallPlaneLanesOf(int64_t points, int64_t from, const PrimExpr& count, const PrimExpr& wo, const Buffer& os,
                         const Buffer& ot);

  // StridedPlanes' tiles and rows out, per group of mr_ output channels (in
  // parallel), reading the planes `pq` (in_place_: X's flat view).
  Stmt PlaneGroups(const PrimExpr& ho, const PrimExpr& wo, const Buffer& pq);
  bool in_place_ = false;

  // The span (at least nr columns) in tiles of nr columns and its
  // remainder as conv_symbolic_plane_tail.h plans it: widened into the last
  // tile (nr + 8 or nr + 16 columns, one pass over the weights) where that
  // fits the span and the registers, else in a tile of its own.
  Stmt StridedPlaneSpan(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr);

  // The tile loop that StridedPlaneRow and PlaneTileRow share: ceil(span /
  // nr) tiles (the last moved back to end at the span's end; nr == 1: one
  // column each), each zeroing `acc` (rows x nr), running `taps` (the
  // reduction into acc at columns x0 ..) and copying acc to tf[r, x0 + j].
  // `which` other than kCover: the whole tiles, all but the last of them,
  // or the one tile ending at the span's end (conv_symbolic_plane_tail.h).
  // `direct` (ShiftedPlanes): the statements that write tile row wi's value
  // v at flat column col straight to the output, instead of to tf.
  using FlatWrite = std::function<Stmt(const Var& wi, const PrimExpr& col, const PrimExpr& v)>;
  static Stmt FlatTileLoop(const Var& xt, const Var& x0, const Buffer& acc, int64_t rows, int64_t nr, const Buffer& tf,
                           const PrimExpr& span, const Stmt& taps, FlatTiles which = FlatTiles::kCover,
                           const FlatWrite& direct = nullptr);

  // ceil(span / nr) tiles of mr_ channels x nr flat columns of StridedPlanes
  // (the last moved back to end at the span's end; nr == 1: one column
  // each; `which`: FlatTileLoop's), reduced over (c, ky, kx) in the nest's
  // order; `prefetch`: each input channel's taps WithWeightPrefetch.
  Stmt StridedPlaneRow(const PrimExpr& o0, const Buffer& pq, const Buffer& tf, const PrimExpr& span, int64_t nr,
                       FlatTiles which = FlatTiles::kCover, bool prefetch = false);

  // Unpadded stride-1 convolutions (not depthwise, more than one tap) on
  // rows narrower than kStridedPlaneWidth, where X's channels times the
  // kernel's width are at most O (the copy below then holds no more floats
  // than the output) and the epilogue can be written flat (its accesses at
  // (y, x) those of parameters shaped like the output): every input
  // channel copied once per kernel column kx with rows of Wo columns,
  // S[c, kx, a * Wo + b] = X[n, c, a, b + kx * dw], so that output (y, x)
  // is flat column j = y * Wo + x of the output plane itself and tap
  // (ky, kx) reads S[c, kx, j + ky * dh * Wo]. The tiles of
  // StridedPlaneSpan then run over the Ho * Wo span with no column computed
  // for nothing and write the output (through the epilogue) straight from
  // their accumulators, where InPlacePlanes computed the W - Wo columns
  // between rows too and copied every row out of a per-group buffer.
  // Spans of 8 columns and more (a run-time test; InPlacePlanes below).
  bool ShiftedPlanesApply() const;
  Stmt ShiftedPlanes(const PrimExpr& ho, const PrimExpr& wo);
  bool shifted_ = false;  // building ShiftedPlanes' tiles (StridedPlaneRow)
  std::vector<Stmt> shifted_epilogue_;  // the epilogue and C over the flat column shifted_j_
  Buffer shifted_out_;
  std::vector<PrimExpr> shifted_out_idx_;
  Var shifted_j_;

  // The epilogue (and C's store) with every access at (y, x) rewritten to
  // a flat view at column j (as TryFlat does for 1x1 convolutions), or
  // false when some access cannot be.
  bool FlatEpilogue(const Var& j, std::vector<Stmt>* epi, Buffer* out, std::vector<PrimExpr>* out_idx) const;

  // Whether ShortRows may replace the flat planes (conv1d_symbolic_rows.cc):
  // padded, stride 1, one output row of an input of height 1, kh == 1, not
  // depthwise, and O a multiple of one of kShortRowChannels.
  bool ShortRowsApply(const PrimExpr& ho) const;
  int64_t ShortRowChannels() const;

  // A row of wo <= kShortRowWidth columns (wp padded): every input channel
  // copied into a zeroed row of nr + (kw - 1) * dw columns, then per group
  // of mr output channels (in parallel) one tile of nr columns from column
  // 0 (nr the narrowest multiple of 8 that holds the row; mr
  // ShortRowChannels(), halved past 16 columns), its columns from wo on
  // computed for nothing, copied out through the epilogue for x < wo.
  Stmt ShortRows(const PrimExpr& wo, const PrimExpr& wp);
  Stmt ShortRowTiles(const PrimExpr& wo, const PrimExpr& wp, int64_t nr, int64_t mr);

  // Rows out of flat planes: C[n, o0 + r, y, x] = tf[r, y * row + x]
  // through the epilogue, for r < rows_of_channels.
  Stmt PlaneRowsOut(const PrimExpr& o0, int64_t channels, const Buffer& tf, const PrimExpr& ho, const PrimExpr& wo,
                    const PrimExpr& row);

  // Whether the flat plane tiles (kPlaneChannels) replace the spatial ones
  // at run time: rows narrower than 8 columns (no spatial tile fits), and
  // widths whose last spatial tile recomputes at least half its columns
  // (8 x 8 tiles on 9 to 12 columns, 8 x 16 on 17 to 24); the flat span
  // wastes (Wp - Wo) / Wp, 4 of 14 columns for a 5 x 5 kernel on 10.
  PrimExpr PlaneTilesPay(const PrimExpr& wo) const;

  // The flat plane tiles: for each group of pc channels (in parallel), their
  // padded planes copied flat, the tiles over the flat span into `acc`
  // planes, then each output row copied out of them through the epilogue.
  Stmt PlaneTiles(const PrimExpr& ho, const PrimExpr& wo, const PrimExpr& hp, const PrimExpr& wp);

  // ceil(span / nr) tiles of pc channels x nr flat columns (the last moved
  // back to end at the span's end; nr == 1: one column each).
  Stmt PlaneTileRow(const PrimExpr& o0, int64_t pc, const Buffer& qf, const Buffer& tf, const PrimExpr& span,
                    const PrimExpr& wp, int64_t nr);

  // for t in O * ceil(Ho / SR): channel o = t / ceil(Ho / SR), output rows
  // [y0, y0 + SR), the last tile of rows moved back to end at Ho (rows
  // computed twice store the same values, as columns do in Tiles).
  Stmt SpatialTileLoop(const PrimExpr& ho, const PrimExpr& wo);

  // Rows per channel tile (kMaxTileAccumulators): 1 unless the row may be
  // narrower than the widest column tile (a static width of 8 to 31
  // columns, or any symbolic width: ChannelTiles then tests it at run time).
  int64_t RowTileCount(const PrimExpr& wo) const;

  // Whether a symbolic row of `wo` columns takes the tiles of several rows:
  // 8 to 31 columns (one 16- or 8-column vector per row, as a static width
  // does), and 33 to 48 (three 16-column vectors, 48 columns computed where
  // 32-column tiles computed 64). YOLOv8n's stride-2 3 x 3 convolutions at
  // 320 x 320, symbolic H and W, wrote rows of 10, 20 and 40 columns as
  // tiles of one row (8 accumulators for 10 and 20 columns: too few to hide
  // the FMA latency, and the overlapping last tile doubling the work).
  PrimExpr RowTilesFit(const PrimExpr& wo) const;

  // TileLoop, in tiles of RowTileCount rows where the plane has that many
  // (a run-time test of the symbolic height, and of a symbolic width).
  Stmt ChannelTiles(const PrimExpr& ho, const PrimExpr& wo);

  // for t in (O / MR) * ceil(Ho / YR): every column tile of rows [y, y +
  // YR), channels [c * MR, +MR), where the row tile is t % ceil(Ho / YR) and
  // c = t / ceil(Ho / YR) -- or, where the whole weight fits in the cache
  // (RowOuter), the row tile is t / (O / MR) and c = t % (O / MR):
  // consecutive tasks then read the same input rows of every channel (and
  // the next row shares KH - 1 of them), which stay in cache for all channel
  // tiles, where channel-tile order streamed the whole input once per tile.
  // The last tile of rows is moved back to end at Ho (rows computed twice
  // store the same values).
  Stmt TileLoop(const PrimExpr& ho, const PrimExpr& wo);

  // Flat row y's columns: kFlatRow, the last row the rest, written without
  // a select: min(1, rows - 1 - y) is 1 before the last row, 0 at it.
  PrimExpr FlatRowWidth(const PrimExpr& y) const;

  // Rows outside channel tiles when the weight (read again for every row)
  // fits in the cache; with one tile of channels the orders are the same.
  // Pointwise convolutions with a hard-swish epilogue (as in PP-OCRv4 det),
  // symbolic H and W, one thread, CPU time per call on a loaded machine:
  // 96 -> 96 on 80 x 80 1.82 -> 0.93 ms, 48 -> 48 on 160 x 160 2.00 ->
  // 0.95 ms; a padded 3 x 3 96 -> 24 on 160 x 160 about the same (9.4 ->
  // 9.2 ms: its 9 taps reuse each input row already).
  bool RowOuter() const;

  // The row's columns in tiles of the widest width that fits it.
  Stmt Row(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo);

  // A row (image or flat) of at least kFlatTileWidth columns:
  // tiles of 48 columns, then at most two of 32 (the last moved back to end
  // at wo), that together cover the row's 16-column vectors exactly
  // (160 = 2 x 48 + 2 x 32). 8 channels x 48 columns are 24 accumulators,
  // three vector loads and eight broadcasts per 24 FMAs, against two and
  // eight per 16 in 8 x 32 tiles.
  Stmt WideRowTiles(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo);

  // Whether rows of `wo` columns take tiles of `nr`: the widest that fits.
  // (Narrower tiles to recompute fewer columns, 40 columns as 3 x 16
  // instead of 2 x 32, measured no faster: an 8 x 16 tile has too few
  // accumulators to hide the FMA latency.)
  PrimExpr Fits(const PrimExpr& wo, int64_t nr) const { return Ge(wo, I64(nr)); }

  // ceil(Wo / nr) tiles, the last one moved back to end at Wo.
  Stmt Tiles(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& wo, int64_t nr);

  // Substitution of the nest's variables at tile row ii, column jj.
  // With row tiles (yr_ > 1), `ri` is the tile's row.
  VarMap At(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, const Var& ii, const PrimExpr& jj,
            const Var& ri = Var()) const;

  Stmt Tile(const PrimExpr& o0, const PrimExpr& y, const PrimExpr& x0, int64_t nr);

  // W's indices for output channel o0 + ii (o0 a multiple of `step`, ii in
  // [0, step)) at the point `map` gives the reduction's variables (c, ky,
  // kx). OIHW: W[o0 + ii, c, ky, kx]. Packed in blocks of b
  // (cv_.wblock, made by transform::PackConstantWeights): W[o / b, c, ky,
  // kx, o % b] written so that the unrolled rows ii of a tile read
  // consecutive floats of one block -- (o0 / b + ii / b, .., ii % b) where
  // b divides step, (o0 / b, .., o0 % b + ii) where step divides b -- as the
  // static kernel reads its packed weight, where OIHW reads every row's
  // weight C * KH * KW floats from the last.
  std::vector<PrimExpr> WeightIndex(const PrimExpr& o0, int64_t step, const PrimExpr& ii, const VarMap& map) const;

  const SymConv& cv_;
  int threads_;
  bool store_out_;
  const std::unordered_set<const VarNode*>& params_;
  std::vector<SymConcatSource> sources_;
  std::vector<Buffer> source_views_;  // flat views of sources_, when the tiles read them
  Stmt prologue_;
  bool reads_prologue_ = false;
  int64_t mr_ = 1;
  PrimExpr flat_rows_;  // flat_: the number of flat rows
  // Output rows per channel tile (RowTileCount): more than 1 only while
  // building the tiles of several rows (TileLoop over row tiles).
  int64_t yr_ = 1;
  bool spatial_ok_ = false;  // depthwise: spatial tiles where the plane fits them
  int64_t srows_ = 0, scols_ = 0;  // the spatial tile being built
  bool spatial_ = false;  // building the spatial tiles (At, Tile)
  bool own_channel_ = false;  // depthwise: output channel o reads input channel o
  Var n_;
  Buffer q_;
  // Building PerChannel's tiles of a column stride: they read qs_, the
  // channel's padded rows in column phases of wph_ columns (PackPhases).
  bool phased_ = false;
  // qs_ holds every channel (ch, rows, phase columns), not one (rows, phase
  // columns): the strided convolutions that are not depthwise.
  bool phases_by_channel_ = false;
  std::vector<PrimExpr> PhaseIndex(const PrimExpr& c, const PrimExpr& row, const PrimExpr& col) const;
  // Where PackPhases stores padded row `row`, column phase p, phase column
  // b: PhaseIndex's row of sw phases, or (row_phases_, StridedPlanes) plane
  // (row % sh) * sw + p of channel c, flat at (row / sh) * Wph + b.
  std::vector<PrimExpr> PhaseAt(const PrimExpr& c, const PrimExpr& row, const PrimExpr& p, const PrimExpr& b) const;
  bool row_phases_ = false;
  // The channel tiles being built serve only rows of kStridedPlaneWidth
  // columns and more (StridedPlanes takes the narrower ones): no row tiles.
  bool wide_rows_only_ = false;
  Buffer qs_;
  PrimExpr wph_;
  // What the tiles read, store and apply, over the nest's variables (and
  // j_, the flat column, when flat_).
  PrimExpr x_expr_;
  std::vector<Stmt> epilogue_;
  Buffer out_;
  std::vector<PrimExpr> out_idx_;
  bool flat_ = false;
  Var j_;
  PrimExpr hw_;  // flat_: H * W
};

}  // namespace symconv
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SYMBOLIC_KERNEL_H_
