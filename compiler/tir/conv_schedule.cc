#include "compiler/tir/conv_schedule.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/conv_tap_box.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers
using conv::ConcatSource;
using conv::ConvNest;
using conv::Dim;
using conv::Float32Plain;
using conv::MatchChannelConcat;
using conv::MatchConv;
using conv::MatchStage;
using conv::Stage;
using conv::TapBox;
using conv::TapsReadingInput;

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

// FMA slots of `cols` columns per tile row: a 16-float vector takes both
// FMA pipes (2), a narrower one one.
int64_t VectorSlots(int64_t cols) { return 2 * (cols / 16) + (cols % 16 == 0 ? 0 : cols % 16 <= 8 ? 1 : 2); }

// ceil(a / b) for b > 0 and any sign of a.
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b)); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMin, std::move(a), std::move(b)); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMax, std::move(a), std::move(b)); }

Stmt MakeFor(const Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), std::move(extent), kind, std::move(body));
}

// for x in [0, extent): body(x), vectorized. (Splitting it into a loop of
// constant 16-wide vectorized loops made LLVM vectorize the outer loop with
// gathers and scatters instead.)
Stmt VectorLoop(const std::string& name, const PrimExpr& extent, const std::function<Stmt(PrimExpr)>& body) {
  Var x = MakeVar(name);
  return MakeFor(x, extent, ForKind::kVectorized, body(PrimExpr(x)));
}

Buffer LocalBuffer(const std::string& name, std::vector<PrimExpr> shape, const std::string& scope) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = DType::Float32();
  node->shape = std::move(shape);
  node->scope = scope;
  return node;
}

class ConvKernel {
 public:
  // `sources`: cv's input is the concatenation of these (pointwise only).
  ConvKernel(const ConvNest& cv, const std::vector<Stage>& stages, int threads, const ScheduleKnobs& knobs,
             std::vector<ConcatSource> sources = {})
      : cv_(cv), stages_(stages), threads_(threads), knobs_(knobs), sources_(std::move(sources)) {
    shift_planes_ = ChooseShiftPlanes();
    offa_max_ = ((cv.kh - 1) * cv.dh) / cv.sh;
    offb_max_ = shift_planes_ ? 0 : ((cv.kw - 1) * cv.dw) / cv.sw;
    hq_ = cv.ho + offa_max_ + 1;
    wq_ = cv.wo + offb_max_;
    planes_ = cv.sh * ColPlanes();
    int64_t j = cv.ho * wq_;
    // Tile shape (MR rows x NR columns): each tap costs a tile about
    // MR * NR / 16 FMA cycles plus a few cycles of loop and broadcast
    // overhead, so the larger tile (24 accumulators) is cheaper per output
    // unless it computes many more padding columns. Pick the cheaper shape.
    // (4 x 112, 28 accumulators, made LLVM spill.) Groups of one or two
    // output channels (depthwise) have few rows and few taps, so wider tiles
    // (up to 16 accumulators) amortize the per-tile zeroing and write-back.
    struct Shape {
      int mr, nr;
    };
    std::vector<Shape> shapes = {{8, 32}, {8, 48}};
    if (cv.opg <= 2) shapes.insert(shapes.end(), {{8, 64}, {8, 128}});
    // Shift planes: one tile of the whole plane (j <= kMaxShiftPlaneColumns),
    // as many channels as keep 24 accumulator registers; larger planes in
    // tiles of 32 or 48 and a last one of the columns left (an explicit
    // vector as narrow as they are).
    if (shift_planes_ && j <= kMaxShiftPlaneColumns) {
      shapes = {{static_cast<int>(24 / CeilDiv(j, 16)), static_cast<int>(j)}};
    }
    // Pointwise (1x1, stride 1, no padding): the input already is the
    // packed form (one plane, rows W apart, no halo), so the tiles read it
    // in place. A tile may not run past the end of a plane (past the last
    // channel that would leave the buffer), so NR is at most H * W and the
    // last column tile is moved back to end at H * W.
    int64_t hw = cv.ho * cv.wo;
    direct_ = cv.kh == 1 && cv.kw == 1 && cv.sh == 1 && cv.sw == 1 && cv.pt == 0 && cv.pl == 0 &&
              cv.ho == cv.h && cv.wo == cv.w && hw >= 16 && cv.opg > 2;
    if (!direct_ || cv.groups != 1) sources_.clear();
    if (direct_) {
      shapes = {{8, 16}, {8, 32}, {8, 48}};
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [&](const Shape& sh) { return sh.nr > hw; }),
                   shapes.end());
    }
    // The conv.mr / conv.nr knobs (schedule_knobs.h) replace the rows or
    // columns of every candidate shape (the estimate still picks among what
    // is left); not for the one-tile shift planes, whose width is the plane.
    int64_t kmr = knobs_.Get("conv.mr"), knr = knobs_.Get("conv.nr");
    if ((kmr > 0 || knr > 0) && !(shift_planes_ && j <= kMaxShiftPlaneColumns)) {
      std::vector<Shape> tuned;
      for (const Shape& sh : shapes) {
        Shape t{kmr > 0 ? static_cast<int>(std::min<int64_t>(kmr, 8)) : sh.mr,
                knr > 0 ? static_cast<int>((knr + 15) / 16 * 16) : sh.nr};
        if (!(direct_ && t.nr > hw)) tuned.push_back(t);
      }
      if (!tuned.empty()) shapes = tuned;
    }
    int64_t best = -1;
    for (const Shape& sh : shapes) {
      int mr = static_cast<int>(std::min<int64_t>(sh.mr, cv.opg));
      int64_t row_tiles = cv.opg / mr + cv.opg % mr;  // leftovers: one-row tiles
      // An 8 x 16 tile has too few accumulators to hide the FMA latency.
      auto tile_cost = [&](int nr) { return (mr * nr / 16 + kTapOverhead) * (nr == 16 ? 2 : 1); };
      int64_t col_tiles = (j + sh.nr - 1) / sh.nr;
      int64_t cost = row_tiles * col_tiles * tile_cost(sh.nr);
      int last = sh.nr;
      // Pointwise: the last column tile (moved back to end at H * W) may be
      // narrower, just wide enough for the columns left (13^2 = 169 columns:
      // 3 x 48 + 32 instead of 4 x 48).
      if (shift_planes_ && j > kMaxShiftPlaneColumns && j % sh.nr != 0) {
        last = static_cast<int>(j % sh.nr);
        cost = row_tiles * ((col_tiles - 1) * tile_cost(sh.nr) + mr * VectorSlots(last) / 2 + kTapOverhead);
      }
      if (direct_ && j % sh.nr != 0) {
        last = static_cast<int>((j % sh.nr + 15) / 16 * 16);
        cost = row_tiles * ((col_tiles - 1) * tile_cost(sh.nr) + tile_cost(last));
        // A few columns left: one 8-channel vector per column instead
        // (RemainderTile: partial sums over interleaved channels keep it
        // from waiting on the FMA latency).
        if (RemainderFits(mr, j % sh.nr)) {
          cost = row_tiles * ((col_tiles - 1) * tile_cost(sh.nr) + kTapOverhead + 1);
          last = -static_cast<int>(j % sh.nr);
        }
      }
      if (best < 0 || cost < best) {
        best = cost;
        mr_ = mr;
        nr_ = sh.nr;
        nr_last_ = last;
      }
    }
    jt_ = (j + nr_ - 1) / nr_;
    plane_len_ = std::max(hq_ * wq_, jt_ * nr_ + offa_max_ * wq_ + offb_max_);
    ChooseRowTiles();
    if (row_tiles_) {
      // The last row's last tile reads up to its rounded-up width.
      int64_t end = (cv.ho - 1) * wq_ + (row_ncol_ - 1) * row_nr_ + (row_last_w_ + 15) / 16 * 16 +
                    offa_max_ * wq_ + offb_max_;
      plane_len_ = std::max(plane_len_, end);
    }
    // Planes start on a 64-byte boundary, so tap (0, 0) reads whole cache lines.
    plane_len_ = (plane_len_ + 15) / 16 * 16;
    full_ = cv.opg / mr_;
    rem_ = cv.opg % mr_;
    ChooseBands();
  }

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
  bool ChooseShiftPlanes() const {
    const ConvNest& cv = cv_;
    if (cv.sh != 1 || cv.sw != 1 || cv.kw < 2 || cv.opg <= 2 || cv.wblock != 0 || !sources_.empty()) return false;
    const int64_t exact = cv.ho * cv.wo;
    const int64_t halo = cv.ho * (cv.wo + (cv.kw - 1) * cv.dw);
    if (exact <= kMaxShiftPlaneColumns) return VectorSlots(exact) < 2 * CeilDiv(halo, 16);
    if (exact > (threads_ >= 2 ? kMaxShiftPlaneTiledColumns : kMaxShiftPlaneTiledColumnsOneThread)) return false;
    auto tile_cost = [](int64_t nr) { return 8 * nr / 16 + kTapOverhead; };
    int64_t halo_cost = -1, shift_cost = -1;
    for (int64_t nr : {32, 48}) {
      int64_t h = CeilDiv(halo, nr) * tile_cost(nr);
      int64_t s = exact / nr * tile_cost(nr) + (exact % nr ? 8 * VectorSlots(exact % nr) / 2 + kTapOverhead : 0);
      halo_cost = halo_cost < 0 ? h : std::min(halo_cost, h);
      shift_cost = shift_cost < 0 ? s : std::min(shift_cost, s);
    }
    return shift_cost < halo_cost;
  }
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
  bool WholePlaneTailTaps(TapBox* box) const {
    if (!shift_planes_ || nr_ != cv_.ho * cv_.wo || nr_ % 16 == 0 || nr_ < 16) return false;
    *box = TapsReadingInput(cv_, nr_ / 16 * 16, nr_);
    return box->taps() < cv_.kh * cv_.kw;
  }
  // Column planes of the packed input per row phase: the stride's column
  // phases (plane pw holds input columns b * sw + pw), or the shift planes
  // (plane kx holds b + kx * dw).
  int64_t ColPlanes() const { return shift_planes_ ? cv_.kw : cv_.sw; }
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
  void ChooseRowTiles() {
    row_tiles_ = false;
    const int64_t taps = cv_.ki * cv_.kh * cv_.kw;
    if (direct_ || shift_planes_ || cv_.opg <= 2 || mr_ != 8 || taps > kMaxRowTileTaps || cv_.wo < 16) return;
    auto tile_cost = [&](int64_t nr) { return (mr_ * nr / 16 + kTapOverhead) * (nr == 16 ? 2 : 1); };
    int64_t flat = CeilDiv(cv_.ho * wq_, nr_) * (tile_cost(nr_) * taps + kFlatWriteBackTaps * tile_cost(nr_));
    int64_t best = -1;
    for (int64_t nr : {32, 48}) {
      for (int64_t ncol = 1; (ncol - 1) * nr < cv_.wo; ++ncol) {
        int64_t last = cv_.wo - (ncol - 1) * nr;
        if (last < 1 || last > 48 || (last + 15) / 16 * 16 > cv_.wo) continue;
        int64_t cost = cv_.ho * ((ncol - 1) * tile_cost(nr) + tile_cost((last + 15) / 16 * 16)) * taps;
        if (best < 0 || cost < best) {
          best = cost;
          row_nr_ = nr;
          row_ncol_ = ncol;
          row_last_w_ = last;
        }
      }
    }
    row_tiles_ = best >= 0 && best < flat;
    // The conv.row_tiles knob: 1 never, 2 whenever they apply.
    if (knobs_.Get("conv.row_tiles") > 0) row_tiles_ = best >= 0 && knobs_.Get("conv.row_tiles") == 2;
  }

  // The variables of a tile loop over the whole packed input q_ (image,
  // group, the tile's first column) and how the tiles index q_.
  void BeginWholeInputTiles() {
    nn_ = MakeVar("n");
    grp_ = MakeVar("g");
    col0_ = MakeVar("col0");
    qcol0_ = col0_;
    yend_ = I64(cv_.ho);
    q_index_ = [this](const PrimExpr& c, const PrimExpr& phase, const PrimExpr& pos) {
      PrimExpr chan = cv_.groups == 1 ? c : PrimExpr(grp_) * I64(cv_.ki) + c;
      return std::vector<PrimExpr>{PrimExpr(nn_), chan, phase, pos};
    };
  }

  // The tile loop of row tiles: (image, group, row block, output row,
  // column tile), column tiles fastest, over the packed input q_.
  Stmt RowTileLoop() {
    int64_t rb_count = full_ + rem_;
    int64_t per_row = row_ncol_, per_block = per_row * cv_.ho;
    int64_t count = cv_.n * cv_.groups * rb_count * per_block;
    Var t = MakeVar("tile"), y = MakeVar("y"), ct = MakeVar("ct"), rb = MakeVar("rb");
    BeginWholeInputTiles();
    // The last column tile is moved back to end at the row's end: all its
    // columns are stored (its first few again, with the same values). With
    // dead lanes at its end LLVM split its accumulators into 8 + 4 + 2 + 1
    // lanes and spilled them (47 of 48 columns: 1.3x the flat tiles' time).
    const int64_t last_nr = (row_last_w_ + 15) / 16 * 16;
    Var x0 = MakeVar("x0");
    tile_y_ = PrimExpr(y);
    tile_x_ = PrimExpr(x0);
    PrimExpr tt(t);
    std::vector<std::pair<Var, PrimExpr>> lets = {
        {ct, Mod(tt, I64(per_row))},
        {y, Mod(Div(tt, I64(per_row)), I64(cv_.ho))},
        {rb, Mod(Div(tt, I64(per_block)), I64(rb_count))},
        {grp_, Mod(Div(tt, I64(per_block * rb_count)), I64(cv_.groups))},
        {nn_, Div(tt, I64(per_block * rb_count * cv_.groups))},
        {x0, Min(PrimExpr(ct) * I64(row_nr_), I64(cv_.wo - last_nr))},
        {col0_, PrimExpr(y) * I64(wq_) + PrimExpr(x0)}};
    const int full_nr = nr_;
    nr_ = static_cast<int>(row_nr_);
    Stmt inner = RowBlocks(rb);
    nr_ = static_cast<int>(last_nr);
    Stmt last = RowBlocks(rb);
    nr_ = full_nr;
    if (row_ncol_ > 1) {
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(ct), I64(row_ncol_ - 1)), inner, last);
    } else {
      inner = last;
    }
    for (size_t l = lets.size(); l-- > 0;) inner = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, inner);
    return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, inner);
  }

  // A row tile's accumulators to output row tile_y_ from column tile_x_,
  // NR columns as whole vectors.
  Stmt RowTileWriteBack(const Buffer& acc, const Var& o0, int rows) {
    Var ii = MakeVar("ii_out");
    auto vector_at = [&](int64_t from) {
      Var l = MakeVar("lane");
      std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0) + PrimExpr(ii), tile_y_,
                                     tile_x_ + I64(from) + PrimExpr(l)};
      return MakeFor(l, I64(16), ForKind::kVectorized,
                     EpilogueStore(Load(acc, {PrimExpr(ii), I64(from) + PrimExpr(l)}), point));
    };
    std::vector<Stmt> stores;
    for (int64_t v = 0; v < nr_; v += 16) stores.push_back(vector_at(v));
    return MakeFor(ii, I64(rows), ForKind::kUnrolled, Seq(stores));
  }

  // Whether the kernel reads the concatenated tensors, not cv's input.
  bool ReadsSources() const { return !sources_.empty(); }

  Stmt Build() {
    if (direct_) return BuildDirect();
    return band_rows_ > 0 ? BuildBands() : BuildWhole();
  }

 private:
  // Bands (see kMinConvBandTasks), for groups of at most 2 output channels
  // (depthwise): the fewest output rows that give a band at least 4 column
  // tiles and keep the repacked halo rows (offa_max + 1 per band) at most
  // half the band, then as many more as still leave 2 * kMinConvBandTasks
  // bands. band_rows_ = 0: one packing pass for the whole input (too few
  // bands, or wider groups: on 64->64 at 56^2 bands of 6 rows took 1.2-1.4x
  // the CPU time of the whole-input scheme, one thread and two).
  void ChooseBands() {
    band_rows_ = 0;
    if (cv_.opg > 2) return;
    int64_t per_band = cv_.n * cv_.groups;
    int64_t rows = std::min(cv_.ho, std::max(CeilDiv(4 * nr_, wq_), 2 * (offa_max_ + 1)));
    auto tasks = [&](int64_t r) { return per_band * CeilDiv(cv_.ho, r); };
    if (tasks(rows) < kMinConvBandTasks) return;
    while (rows < cv_.ho && tasks(rows + 1) >= 2 * kMinConvBandTasks) ++rows;
    band_rows_ = rows;
    nbands_ = CeilDiv(cv_.ho, rows);
    int64_t cols = CeilDiv(rows * wq_, nr_) * nr_;
    band_len_ = std::max((rows + offa_max_ + 1) * wq_, cols + offa_max_ * wq_ + offb_max_);
    // Depthwise (one output channel per group) on rows of 12 columns or
    // more: tiles of several output rows of one channel (see Tile), NR the
    // row width rounded up to 16 (at most 64, then several column tiles).
    if (cv_.opg == 1 && wq_ >= 12) {
      nr_ = static_cast<int>(std::min<int64_t>(64, (wq_ + 15) / 16 * 16));
      // 8 to 16 accumulators; fewer rows when that computes fewer rows past
      // the band's end (14 rows: 2 tiles of 7, not 2 of 8). Each tile also
      // loads its offa_max halo rows.
      int64_t most = nr_ == 16 ? 8 : nr_ == 32 ? 6 : 4;
      srows_ = most;
      auto cost = [&](int64_t s) { return CeilDiv(rows, s) * (s + offa_max_); };
      for (int64_t s = most - 1; s >= (most + 1) / 2; --s)
        if (cost(s) < cost(srows_)) srows_ = s;
      band_len_ = std::max(band_len_, (CeilDiv(rows, srows_) * srows_ + offa_max_) * wq_ +
                                          CeilDiv(wq_, nr_) * nr_ + offb_max_);
    }
    band_len_ = (band_len_ + 15) / 16 * 16;
  }

  // Copies phase rows [a0, a0 + rows) of input channel `src_ch` of image `n`
  // into `q` at q_at(plane, (a - a0) * wq + b): plane (ph, pw) row a holds
  // X[n, src_ch, a*sh + ph - pt, b*sw + pw - pl] inside X, 0 outside. The
  // inside columns of each phase are a static range, so the copy has no
  // per-element test; rows are tested once each.
  Stmt Pack(const PrimExpr& n, const PrimExpr& src_ch, const PrimExpr& a0, const PrimExpr& rows, const Buffer& q,
            const std::function<std::vector<PrimExpr>(PrimExpr, PrimExpr)>& q_at) {
    std::vector<Stmt> phases;
    for (int64_t ph = 0; ph < cv_.sh; ++ph) {
      // iy = a*sh + ph - pt in [0, H)  <=>  a in [a_lo, a_hi); same for b.
      int64_t a_lo = std::clamp<int64_t>(CeilDiv(cv_.pt - ph, cv_.sh), 0, hq_);
      int64_t a_hi = std::clamp<int64_t>(CeilDiv(cv_.h + cv_.pt - ph, cv_.sh), a_lo, hq_);
      const int64_t cplanes = ColPlanes(), cstride = ColStride();
      std::vector<int64_t> b_lo(cplanes), b_hi(cplanes);
      int64_t common_lo = 0, common_hi = wq_;
      for (int64_t pw = 0; pw < cplanes; ++pw) {
        b_lo[pw] = std::clamp<int64_t>(CeilDiv(cv_.pl - ColShift(pw), cstride), 0, wq_);
        b_hi[pw] = std::clamp<int64_t>(CeilDiv(cv_.w + cv_.pl - ColShift(pw), cstride), b_lo[pw], wq_);
        common_lo = std::max(common_lo, b_lo[pw]);
        common_hi = std::min(common_hi, b_hi[pw]);
      }
      Var r = MakeVar("r");
      PrimExpr a = a0 + PrimExpr(r), row = PrimExpr(r) * I64(wq_);
      PrimExpr iy = a * I64(cv_.sh) + I64(ph - cv_.pt);
      auto plane = [&](int64_t pw) { return I64(ph * cplanes + pw); };
      // Zeroes [from, from + count) of a plane.
      auto zero = [&](int64_t pw, PrimExpr from, int64_t count) -> Stmt {
        return VectorLoop("z", I64(count), [&](PrimExpr z) {
          return Store(q, FloatImm(DType::Float32(), 0), q_at(plane(pw), from + z));
        });
      };
      auto copy_at = [&](int64_t pw, PrimExpr b) {
        PrimExpr ix = b * I64(cstride) + I64(ColShift(pw) - cv_.pl);
        return Store(q, Load(cv_.data, {n, src_ch, iy, ix}), q_at(plane(pw), row + b));
      };
      auto copy = [&](int64_t pw, int64_t from, int64_t to, ForKind kind) -> Stmt {
        Var b = MakeVar("b");
        return MakeFor(b, I64(to - from), kind, copy_at(pw, PrimExpr(b) + I64(from)));
      };
      std::vector<Stmt> parts, outside;
      for (int64_t pw = 0; pw < cplanes; ++pw) outside.push_back(zero(pw, row, wq_));
      if (a_hi > a_lo) {
        // With a stride, the phases' columns are copied in one loop over the
        // columns they share (the loads X[b*sw + pw - pl] of all pw form one
        // interleaved group that LLVM vectorizes with wide loads and
        // shuffles; a loop per phase was vectorized with gathers), and the
        // few columns at the edges one by one.
        bool shared = !shift_planes_ && cv_.sw > 1 && common_hi > common_lo;
        for (int64_t pw = 0; pw < cplanes; ++pw) {
          if (b_lo[pw] > 0) parts.push_back(zero(pw, row, b_lo[pw]));
          if (!shared && b_hi[pw] > b_lo[pw]) parts.push_back(copy(pw, b_lo[pw], b_hi[pw], ForKind::kVectorized));
          if (shared && common_lo > b_lo[pw]) parts.push_back(copy(pw, b_lo[pw], common_lo, ForKind::kSerial));
        }
        if (shared) {
          Var b = MakeVar("b");
          std::vector<Stmt> stores;
          for (int64_t pw = 0; pw < cplanes; ++pw) stores.push_back(copy_at(pw, PrimExpr(b) + I64(common_lo)));
          parts.push_back(MakeFor(b, I64(common_hi - common_lo), ForKind::kVectorized, Seq(stores)));
        }
        for (int64_t pw = 0; pw < cplanes; ++pw) {
          if (shared && b_hi[pw] > common_hi) parts.push_back(copy(pw, common_hi, b_hi[pw], ForKind::kSerial));
          if (wq_ > b_hi[pw]) parts.push_back(zero(pw, row + I64(b_hi[pw]), wq_ - b_hi[pw]));
        }
        PrimExpr inside = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, a, I64(a_lo)),
                                     MakeBinary(TirKind::kLT, a, I64(a_hi)));
        phases.push_back(MakeFor(r, rows, ForKind::kSerial,
                                 std::make_shared<IfThenElseNode>(inside, Seq(parts), Seq(outside))));
      } else {
        phases.push_back(MakeFor(r, rows, ForKind::kSerial, Seq(outside)));
      }
    }
    return Seq(phases);
  }

  // The tile of `rows` channels from o0 of group grp_, for every row block.
  Stmt RowBlocks(const Var& rb) {
    PrimExpr group_base = PrimExpr(grp_) * I64(cv_.opg);
    Var o0 = MakeVar("o0");
    Stmt inner = std::make_shared<LetStmtNode>(o0, group_base + PrimExpr(rb) * I64(mr_), Tile(o0, mr_));
    if (rem_ != 0) {
      Var o1 = MakeVar("o0");
      Stmt one = std::make_shared<LetStmtNode>(o1, group_base + I64(full_ * mr_) + (PrimExpr(rb) - I64(full_)),
                                               Tile(o1, 1));
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(rb), I64(full_)), inner, one);
    }
    return inner;
  }

  bool ParallelWork(int64_t count) const {
    int64_t work = cv_.n * cv_.o * cv_.ho * cv_.wo * cv_.ki * cv_.kh * cv_.kw;
    return threads_ >= 2 && count >= 2 && work >= kMinParallelConvWork;
  }

  // One parallel loop over (image, group, band of output rows): each task
  // packs the input rows its band reads (the group's channels) into its own
  // buffer, then computes every row block x column tile of the band. No
  // second parallel region, and the packed rows are hot in the computing
  // core's cache.
  Stmt BuildBands() {
    q_ = LocalBuffer(cv_.data->name + "_band", {I64(cv_.ki), I64(planes_), I64(band_len_)}, "global");
    Var t = MakeVar("band"), bi = MakeVar("bi"), y0 = MakeVar("y0"), yend = MakeVar("yend");
    nn_ = MakeVar("n");
    grp_ = MakeVar("g");
    col0_ = MakeVar("col0");
    qcol0_ = MakeVar("qcol0");
    yend_ = PrimExpr(yend);
    q_index_ = [](const PrimExpr& c, const PrimExpr& phase, const PrimExpr& pos) {
      return std::vector<PrimExpr>{c, phase, pos};
    };
    Var cp = MakeVar("cp");
    PrimExpr src_ch = PrimExpr(grp_) * I64(cv_.ki) + PrimExpr(cp);
    PrimExpr rows = Min(I64(band_rows_ + offa_max_ + 1), I64(hq_) - PrimExpr(y0));
    Stmt pack = MakeFor(cp, I64(cv_.ki), ForKind::kSerial,
                        Pack(PrimExpr(nn_), src_ch, PrimExpr(y0), rows, q_, [&](PrimExpr plane, PrimExpr pos) {
                          return std::vector<PrimExpr>{PrimExpr(cp), plane, pos};
                        }));
    Var rb = MakeVar("rb"), ct = MakeVar("ct");
    Stmt tiles;
    if (srows_ > 0) {
      Var o0 = MakeVar("o0");
      tile_y_ = PrimExpr(y0) + PrimExpr(rb) * I64(srows_);
      tile_x_ = PrimExpr(ct) * I64(nr_);
      Stmt inner = std::make_shared<LetStmtNode>(o0, PrimExpr(grp_), Tile(o0, static_cast<int>(srows_), true));
      inner = std::make_shared<LetStmtNode>(col0_, PrimExpr(y0) * I64(wq_) + PrimExpr(qcol0_), inner);
      inner = std::make_shared<LetStmtNode>(qcol0_, PrimExpr(rb) * I64(srows_ * wq_) + PrimExpr(ct) * I64(nr_), inner);
      PrimExpr row_groups = Div(PrimExpr(yend) - PrimExpr(y0) + I64(srows_ - 1), I64(srows_));
      tiles = MakeFor(rb, row_groups, ForKind::kSerial, MakeFor(ct, I64(CeilDiv(wq_, nr_)), ForKind::kSerial, inner));
    } else {
      Stmt inner = RowBlocks(rb);
      inner = std::make_shared<LetStmtNode>(col0_, PrimExpr(y0) * I64(wq_) + PrimExpr(qcol0_), inner);
      inner = std::make_shared<LetStmtNode>(qcol0_, PrimExpr(ct) * I64(nr_), inner);
      PrimExpr ncols = Div((PrimExpr(yend) - PrimExpr(y0)) * I64(wq_) + I64(nr_ - 1), I64(nr_));
      tiles = MakeFor(rb, I64(full_ + rem_), ForKind::kSerial, MakeFor(ct, ncols, ForKind::kSerial, inner));
    }
    Stmt body = std::make_shared<AllocateNode>(q_, Seq({pack, tiles}));
    int64_t count = cv_.n * cv_.groups * nbands_;
    PrimExpr tt(t);
    std::vector<std::pair<Var, PrimExpr>> lets = {
        {bi, Mod(tt, I64(nbands_))},
        {grp_, Mod(Div(tt, I64(nbands_)), I64(cv_.groups))},
        {nn_, Div(tt, I64(nbands_ * cv_.groups))},
        {y0, PrimExpr(bi) * I64(band_rows_)},
        {yend, Min(I64(cv_.ho), PrimExpr(y0) + I64(band_rows_))},
    };
    for (size_t l = lets.size(); l-- > 0;) body = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, body);
    return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, body);
  }

  // The whole input packed once per call, then one parallel loop over the
  // tiles. The packing is parallel over (image, channel, piece of rows):
  // channels are cut into pieces of rows until there are at least
  // 2 * kMinConvBandTasks tasks (the stem's 3 channels made 3 tasks for 2
  // threads, one thread packing twice as much as the other).
  Stmt BuildWhole() {
    q_ = LocalBuffer(cv_.data->name + "_padded", {I64(cv_.n), I64(cv_.ch), I64(planes_), I64(plane_len_)}, "global");
    bool par = threads_ >= 2;
    int64_t pieces = std::min(hq_, std::max<int64_t>(1, CeilDiv(2 * kMinConvBandTasks, cv_.n * cv_.ch)));
    int64_t piece_rows = CeilDiv(hq_, pieces);
    pieces = CeilDiv(hq_, piece_rows);
    Var p = MakeVar("pack"), n = MakeVar("n"), ch = MakeVar("ch"), a0 = MakeVar("a0");
    Stmt pack = Pack(PrimExpr(n), PrimExpr(ch), PrimExpr(a0), Min(I64(piece_rows), I64(hq_) - PrimExpr(a0)), q_,
                     [&](PrimExpr plane, PrimExpr pos) {
                       return std::vector<PrimExpr>{PrimExpr(n), PrimExpr(ch), plane, PrimExpr(a0) * I64(wq_) + pos};
                     });
    // The columns past the packed rows (to plane_len_) are read by the last
    // column tiles for outputs that are dropped; zeroed so that they hold no
    // leftover denormals or NaNs. Unwritten, PP-OCRv4's SE convolutions on
    // 1 x 1 planes (120 -> 480 and 60 -> 240, 32-column tiles of one output
    // column) read 31 stale floats a tap and took 570 and 250 us; zeroed,
    // 40 to 50 and 12 (kernel profile, 1 thread).
    if (int64_t tail = plane_len_ - hq_ * wq_; tail > 0) {
      std::vector<Stmt> zeros;
      for (int64_t pl = 0; pl < planes_; ++pl) {
        zeros.push_back(VectorLoop("z", I64(tail), [&](PrimExpr z) {
          return Store(q_, FloatImm(DType::Float32(), 0), {PrimExpr(n), PrimExpr(ch), I64(pl), I64(hq_ * wq_) + z});
        }));
      }
      Stmt last_piece = std::make_shared<IfThenElseNode>(
          MakeBinary(TirKind::kGE, PrimExpr(a0) + I64(piece_rows), I64(hq_)), Seq(zeros), nullptr);
      pack = Seq({pack, last_piece});
    }
    PrimExpr pp(p);
    pack = std::make_shared<LetStmtNode>(a0, Mod(pp, I64(pieces)) * I64(piece_rows), pack);
    pack = std::make_shared<LetStmtNode>(ch, Mod(Div(pp, I64(pieces)), I64(cv_.ch)), pack);
    pack = std::make_shared<LetStmtNode>(n, Div(pp, I64(pieces * cv_.ch)), pack);
    int64_t pack_tasks = cv_.n * cv_.ch * pieces;
    pack = MakeFor(p, I64(pack_tasks), par && pack_tasks >= 2 ? ForKind::kParallel : ForKind::kSerial, pack);

    // Shift planes in several tiles: the last one is narrower (TileLoop's
    // last column tile).
    int64_t last_col = shift_planes_ && nr_last_ != nr_ ? cv_.ho * cv_.wo - nr_last_ : -1;
    return std::make_shared<AllocateNode>(q_, Seq({pack, row_tiles_ ? RowTileLoop() : TileLoop(last_col)}));
  }

  // One loop over (image, group, row block, column tile), column tiles
  // fastest, over the whole packed input q_. last_col >= 0: no column tile
  // starts after last_col (BuildDirect: the last one is moved back to end at
  // H * W, and own0_ holds where it would have started).
  Stmt TileLoop(int64_t last_col) {
    int64_t rb_count = full_ + rem_;
    int64_t count = cv_.n * cv_.groups * rb_count * jt_;
    Var t = MakeVar("tile");
    BeginWholeInputTiles();
    Var rb = MakeVar("rb");
    PrimExpr tt(t);
    // Column tiles fastest, or (RowBlocksFastest) row blocks fastest.
    const bool rb_fast = RowBlocksFastest(rb_count);
    PrimExpr col_tile = rb_fast ? Mod(Div(tt, I64(rb_count)), I64(jt_)) : Mod(tt, I64(jt_));
    PrimExpr start = col_tile * I64(nr_);
    std::vector<std::pair<Var, PrimExpr>> lets;
    if (last_col >= 0) {
      own0_ = MakeVar("own0");
      lets = {{own0_, start}, {col0_, Min(PrimExpr(own0_), I64(last_col))}};
    } else {
      lets = {{col0_, start}};
    }
    lets.push_back({rb, rb_fast ? Mod(tt, I64(rb_count)) : Mod(Div(tt, I64(jt_)), I64(rb_count))});
    lets.push_back({grp_, Mod(Div(tt, I64(jt_ * rb_count)), I64(cv_.groups))});
    lets.push_back({nn_, Div(tt, I64(jt_ * rb_count * cv_.groups))});
    Stmt inner = RowBlocks(rb);
    if (last_col >= 0 && nr_last_ < 0) {
      // The last few columns: one vector of the row block's channels each
      // (or, when the epilogue can't be stored flat, a 16-column tile ending
      // at H * W: last_col is H * W - 16).
      Var o0 = MakeVar("o0");
      Stmt last;
      if (Stmt rem = RemainderTile(o0, -nr_last_)) {
        last = std::make_shared<LetStmtNode>(o0, PrimExpr(grp_) * I64(cv_.opg) + PrimExpr(rb) * I64(mr_), rem);
      } else {
        int full_nr = nr_;
        nr_ = 16;
        last = RowBlocks(rb);
        nr_ = full_nr;
      }
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, col_tile, I64(jt_ - 1)), inner, last);
    } else if (last_col >= 0 && nr_last_ != nr_) {
      // The narrower last column tile: the same kernel built for its width.
      int full_nr = nr_;
      nr_ = nr_last_;
      Stmt last = RowBlocks(rb);
      nr_ = full_nr;
      inner = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, col_tile, I64(jt_ - 1)), inner, last);
    }
    for (size_t l = lets.size(); l-- > 0;) inner = std::make_shared<LetStmtNode>(lets[l].first, lets[l].second, inner);
    return MakeFor(t, I64(count), ParallelWork(count) ? ForKind::kParallel : ForKind::kSerial, inner);
  }
  // Whether the tile loop runs a column tile's row blocks one after the
  // other (its input columns stay in L1) rather than every column tile of a
  // row block (its weights stay in L1, the input streams once per row
  // block). Pointwise convolutions with a few row blocks, an input larger
  // than half of L2 and small weights: 32->16 at 112^2 (MobileNetV2) and
  // 64->16 / 128->16 at 55^2 (SqueezeNet's squeeze layers) read their input
  // from L3 twice otherwise. With many row blocks each column tile's stores
  // go to many channel planes at once (16->96 at 112^2 measured 20 % slower).
  bool RowBlocksFastest(int64_t rb_count) const {
    constexpr int64_t kMaxRowBlocks = 4, kMinInputBytes = 512 * 1024, kMaxWeightBytes = 64 * 1024;
    int64_t input_bytes = cv_.n * cv_.ch * cv_.h * cv_.w * 4, weight_bytes = cv_.o * cv_.ki * 4;
    return direct_ && rb_count >= 2 && rb_count <= kMaxRowBlocks && input_bytes > kMinInputBytes &&
           weight_bytes <= kMaxWeightBytes;
  }

  // Pointwise convolutions (direct_): no packing; Q is a view of the input
  // as [N, C, 1, H * W] (the same memory). Tiles: column tiles fastest
  // unless RowBlocksFastest, the last column tile of a row ending at H * W;
  // it writes back only the columns no earlier tile owns.
  Stmt BuildDirect() {
    int64_t hw = cv_.ho * cv_.wo;
    auto view = std::make_shared<BufferNode>(*cv_.data);
    view->shape = {I64(cv_.n), I64(cv_.ch), I64(1), I64(hw)};
    q_ = view;
    for (ConcatSource& src : sources_) {
      auto part = std::make_shared<BufferNode>(*src.buffer);
      part->shape = {I64(cv_.n), I64(src.count), I64(1), I64(hw)};
      src.view = part;
    }
    return TileLoop(nr_last_ < 0 ? hw - 16 : hw - nr_last_);
  }

  // Where the tiles read input channels from: Q whole, or (a pointwise
  // convolution of a concatenation) each concatenated tensor in place.
  struct InputPart {
    Buffer q;
    int64_t c0, count;
  };
  std::vector<InputPart> InputParts() const {
    if (sources_.empty()) return {{q_, 0, cv_.ki}};
    std::vector<InputPart> parts;
    for (const ConcatSource& src : sources_) parts.push_back({src.view, src.c0, src.count});
    return parts;
  }

  // rows x NR grid, rows unrolled and columns vectorized.
  Stmt Grid(const std::string& tag, int rows, ForKind row_kind, const std::function<Stmt(const Var&, const Var&)>& body) {
    Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
    Stmt inner = MakeFor(jj, I64(nr_), ForKind::kVectorized, body(ii, jj));
    return MakeFor(ii, I64(rows), row_kind, inner);
  }

  // The tile of `rows` output channels from o0 and nr_ flat columns from col0.
  // `spatial`: `rows` output rows (flat columns col0 + ii * wq) of channel o0
  // instead. Neighbouring output rows read the same input rows at other taps
  // (row ii, tap ky and row ii + 1, tap ky - 1); with the ky loop unrolled
  // LLVM loads each such input vector once (144 FMAs from about 90 vector
  // loads per 4 x 64 tile, checked with --emit=asm), where a one-row
  // depthwise tile made one, mostly cache-line-crossing, load per FMA.
  Stmt Tile(const Var& o0, int rows, bool spatial = false) {
    DType f32 = DType::Float32();
    Buffer acc = LocalBuffer("acc", {I64(rows), I64(nr_)}, "local");
    Buffer tmp = LocalBuffer("tile", {I64(rows), I64(nr_)}, "local");
    Stmt zero = Grid("_init", rows, ForKind::kUnrolled, [&](const Var& ii, const Var& jj) {
      return Store(acc, FloatImm(f32, 0), {PrimExpr(ii), PrimExpr(jj)});
    });
    // A packed weight whose blocks are the tile's rows (o0 a multiple of b):
    // the tap's weights are W[ob, c, ky, kx, 0..rows), contiguous.
    const int64_t b = cv_.wblock;
    bool block_rows = b > 0 && rows == b && cv_.opg % b == 0;
    Var ob = MakeVar("ob");
    // The taps of input channels [c_off, c_off + count), read from q at
    // channel c - c_off.
    auto part_taps = [&](const Buffer& q, int64_t c_off, int64_t count) -> Stmt {
      Var c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
      // Phase and offset of tap (ky, kx) in Q; affine when the stride is 1.
      PrimExpr ya = PrimExpr(ky) * I64(cv_.dh), xa = PrimExpr(kx) * I64(cv_.dw);
      PrimExpr phase = I64(0), off;
      if (cv_.sh == 1) {
        off = ya * I64(wq_);
      } else {
        phase = Mod(ya, I64(cv_.sh)) * I64(cv_.sw);
        off = Div(ya, I64(cv_.sh)) * I64(wq_);
      }
      if (shift_planes_) {
        phase = PrimExpr(kx);
      } else if (cv_.sw == 1) {
        off = off + xa;
      } else {
        phase = phase + Mod(xa, I64(cv_.sw));
        off = off + Div(xa, I64(cv_.sw));
      }
      PrimExpr wc = c_off == 0 ? PrimExpr(c) : PrimExpr(c) + I64(c_off);
      auto weight_at = [&](const PrimExpr& ii) -> PrimExpr {
        std::vector<PrimExpr> cky = {wc, PrimExpr(ky), PrimExpr(kx)};
        if (b == 0) return Load(cv_.weight, {PrimExpr(o0) + ii, cky[0], cky[1], cky[2]});
        if (block_rows) return Load(cv_.weight, {PrimExpr(ob), cky[0], cky[1], cky[2], ii});
        PrimExpr o = PrimExpr(o0) + ii;
        return Load(cv_.weight, {Div(o, I64(b)), cky[0], cky[1], cky[2], Mod(o, I64(b))});
      };
      auto tap_fma = [&](const Var& ii, const PrimExpr& jj) -> Stmt {
        PrimExpr wv = weight_at(spatial ? I64(0) : PrimExpr(ii));
        PrimExpr pos = PrimExpr(qcol0_) + off + jj;
        if (spatial) pos = pos + PrimExpr(ii) * I64(wq_);
        PrimExpr xv = Load(q, q_index_(PrimExpr(c), phase, pos));
        PrimExpr cur = Load(acc, {PrimExpr(ii), jj});
        return Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{wv, xv, cur})),
                     {PrimExpr(ii), jj});
      };
      Stmt update;
      TapBox box;
      if (!spatial && WholePlaneTailTaps(&box)) {
        // The whole-vector columns take every tap; the tail's few columns
        // only the taps that read inside the input for one of them
        // (WholePlaneTailTaps).
        const int64_t main_w = nr_ / 16 * 16;
        Var ii = MakeVar("ii"), jj = MakeVar("jj"), it = MakeVar("ii_tail"), jt = MakeVar("jj_tail");
        Stmt main = MakeFor(ii, I64(rows), ForKind::kUnrolled,
                            MakeFor(jj, I64(main_w), ForKind::kVectorized, tap_fma(ii, PrimExpr(jj))));
        Stmt tail = MakeFor(it, I64(rows), ForKind::kUnrolled,
                            MakeFor(jt, I64(nr_ - main_w), ForKind::kVectorized, tap_fma(it, I64(main_w) + PrimExpr(jt))));
        auto in = [](const Var& v, int64_t lo, int64_t hi) {
          return MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, PrimExpr(v), I64(lo)),
                            MakeBinary(TirKind::kLE, PrimExpr(v), I64(hi)));
        };
        PrimExpr inside = MakeBinary(TirKind::kAnd, in(ky, box.ky_lo, box.ky_hi), in(kx, box.kx_lo, box.kx_hi));
        update = Seq({main, std::make_shared<IfThenElseNode>(inside, tail, nullptr)});
      } else {
        update = Grid("", rows, ForKind::kUnrolled, [&](const Var& ii, const Var& jj) { return tap_fma(ii, PrimExpr(jj)); });
      }
      Stmt t = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, update);
      t = MakeFor(ky, I64(cv_.kh), spatial ? ForKind::kUnrolled : ForKind::kSerial, t);
      return MakeFor(c, I64(count), ForKind::kSerial, t);
    };
    std::vector<Stmt> parts;
    for (const InputPart& part : InputParts()) parts.push_back(part_taps(part.q, part.c0, part.count));
    Stmt taps = Seq(parts);
    if (block_rows) taps = std::make_shared<LetStmtNode>(ob, Div(PrimExpr(o0), I64(b)), taps);
    // The accumulators go to memory with static indices only (so they stay in
    // registers during the reduction); the write-back reads that copy.
    // In 16-float pieces: one vector load and store each (LLVM turned a
    // 48-wide copy loop into gathers and scatters across the rows).
    Stmt copy;
    {
      Var ii = MakeVar("ii_copy"), v = MakeVar("v_copy"), l = MakeVar("l_copy");
      PrimExpr jj = PrimExpr(v) * I64(16) + PrimExpr(l);
      copy = MakeFor(l, I64(16), ForKind::kVectorized,
                     Store(tmp, Load(acc, {PrimExpr(ii), jj}), {PrimExpr(ii), jj}));
      copy = MakeFor(v, I64(nr_ / 16), ForKind::kUnrolled, copy);
      if (nr_ % 16 != 0) {  // shift-plane tiles: widths that are not whole vectors
        Var t = MakeVar("l_tail");
        PrimExpr jt = I64(nr_ / 16 * 16) + PrimExpr(t);
        copy = Seq({copy, MakeFor(t, I64(nr_ % 16), ForKind::kUnrolled,
                                  Store(tmp, Load(acc, {PrimExpr(ii), jt}), {PrimExpr(ii), jt}))});
      }
      copy = MakeFor(ii, I64(rows), ForKind::kUnrolled, copy);
    }
    if (row_tiles_ && !spatial) {
      return std::make_shared<AllocateNode>(acc, Seq({zero, taps, RowTileWriteBack(acc, o0, rows)}));
    }
    // Pointwise and shift-plane tiles: their columns are the output's, in
    // order.
    if ((direct_ || shift_planes_) && !spatial) {
      if (Stmt flat = FlatWriteBack(acc, o0, rows)) return std::make_shared<AllocateNode>(acc, Seq({zero, taps, flat}));
    }
    if (spatial) {
      if (Stmt by_row = RowWriteBack(acc, o0, rows)) {
        return std::make_shared<AllocateNode>(acc, Seq({zero, taps, by_row}));
      }
    }
    return std::make_shared<AllocateNode>(
        acc, Seq({zero, taps, std::make_shared<AllocateNode>(tmp, Seq({copy, WriteBack(tmp, o0, rows, spatial)}))}));
  }

  // A view of `b` ([.., H, W] -> [.., H * W], the same memory).
  static Buffer FlatView(const Buffer& b) {
    auto view = std::make_shared<BufferNode>(*b);
    view->shape.pop_back();
    view->shape.back() = I64(Dim(b, b->shape.size() - 2) * Dim(b, b->shape.size() - 1));
    return view;
  }

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
  bool RemainderFits(int mr, int64_t cols) const {
    return cols > 0 && cols <= kMaxRemainderColumns && mr == 8 && cv_.wblock == mr && cv_.opg % mr == 0;
  }

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
  Stmt RemainderTile(const Var& o0, int64_t cols) {
    DType f32 = DType::Float32();
    const int64_t hw = cv_.ho * cv_.wo;
    const int64_t chains = std::max<int64_t>(1, kRemainderChains / cols);
    Buffer acc = LocalBuffer("acc_rem", {I64(chains * cols), I64(mr_)}, "local");
    Var jz = MakeVar("jj_init"), iz = MakeVar("ii_init");
    Stmt zero = MakeFor(jz, I64(chains * cols), ForKind::kUnrolled,
                        MakeFor(iz, I64(mr_), ForKind::kVectorized,
                                Store(acc, FloatImm(f32, 0), {PrimExpr(jz), PrimExpr(iz)})));
    Var ob = MakeVar("ob");
    std::vector<Stmt> parts;
    for (const InputPart& part : InputParts()) {
      // Channels [first, first + count / chains * chains) in groups of
      // `chains` (channel u of a group into partial sum u), then the rest
      // into partial sum 0.
      auto taps = [&](int64_t groups, int64_t group_size, int64_t first) {
        Var c = MakeVar("c"), u = MakeVar("u"), jj = MakeVar("jj"), ii = MakeVar("ii");
        PrimExpr ch = PrimExpr(c) * I64(group_size) + PrimExpr(u) + I64(first);
        PrimExpr wc = part.c0 == 0 ? ch : ch + I64(part.c0);
        PrimExpr wv = Load(cv_.weight, {PrimExpr(ob), wc, I64(0), I64(0), PrimExpr(ii)});
        PrimExpr xv = Load(part.q, q_index_(ch, I64(0), I64(hw - cols) + PrimExpr(jj)));
        PrimExpr row = PrimExpr(u) * I64(cols) + PrimExpr(jj);
        PrimExpr cur = Load(acc, {row, PrimExpr(ii)});
        Stmt fma = Store(acc, PrimExpr(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{wv, xv, cur})),
                         {row, PrimExpr(ii)});
        Stmt body = MakeFor(u, I64(group_size), ForKind::kUnrolled,
                            MakeFor(jj, I64(cols), ForKind::kUnrolled, MakeFor(ii, I64(mr_), ForKind::kVectorized, fma)));
        return MakeFor(c, I64(groups), ForKind::kSerial, body);
      };
      const int64_t groups = part.count / chains, rest = part.count % chains;
      if (groups > 0) parts.push_back(taps(groups, chains, 0));
      if (rest > 0) parts.push_back(taps(rest, 1, groups * chains));
    }
    if (chains > 1) {
      Var jj = MakeVar("jj_sum"), ii = MakeVar("ii_sum");
      PrimExpr sum = Load(acc, {PrimExpr(jj), PrimExpr(ii)});
      for (int64_t u = 1; u < chains; ++u) sum = sum + Load(acc, {I64(u * cols) + PrimExpr(jj), PrimExpr(ii)});
      parts.push_back(MakeFor(jj, I64(cols), ForKind::kUnrolled,
                              MakeFor(ii, I64(mr_), ForKind::kVectorized, Store(acc, sum, {PrimExpr(jj), PrimExpr(ii)}))));
    }
    Stmt taps = std::make_shared<LetStmtNode>(ob, Div(PrimExpr(o0), I64(mr_)), Seq(parts));
    Stmt out = FlatWriteBack(acc, o0, mr_, static_cast<int>(cols), I64(hw - cols), true);
    if (!out) return nullptr;
    return std::make_shared<AllocateNode>(acc, Seq({zero, taps, out}));
  }

  Stmt FlatWriteBack(const Buffer& acc, const Var& o0, int rows) {
    return FlatWriteBack(acc, o0, rows, nr_, PrimExpr(col0_), false);
  }

  // `cols` columns from `first` (transposed: acc[column, row], stored with
  // the columns unrolled and the rows vectorized).
  Stmt FlatWriteBack(const Buffer& acc, const Var& o0, int rows, int cols, const PrimExpr& first, bool transposed) {
    Var ii = MakeVar("ii_out"), jj = MakeVar("jj_out");
    PrimExpr pos = first + PrimExpr(jj), o = PrimExpr(o0) + PrimExpr(ii);
    PrimExpr v = transposed ? Load(acc, {PrimExpr(jj), PrimExpr(ii)}) : Load(acc, {PrimExpr(ii), PrimExpr(jj)});
    Buffer dst = FlatView(cv_.out);
    for (const Stage& e : stages_) {
      const VarNode* yv = e.loops[2]->loop_var.get();
      const VarNode* xv = e.loops[3]->loop_var.get();
      // Loads of 4-d [.., H, W] buffers at [.., y, x] -> their flat views.
      struct Flatten : StmtExprMutator {
        const VarNode *y, *x;
        int64_t h, w;
        PrimExpr pos;
        bool ok = true;
        PrimExpr MutateExpr(const PrimExpr& e) override {
          const auto* l = e.as<BufferLoadNode>();
          if (l == nullptr) return StmtExprMutator::MutateExpr(e);
          const auto& idx = l->indices;
          bool uses = false;
          for (const PrimExpr& i : idx) uses |= Uses(i, {y, x});
          if (!uses) return e;
          size_t nd = idx.size();
          if (nd < 2 || !IsVar(idx[nd - 2], y) || !IsVar(idx[nd - 1], x) || !Float32Plain(l->buffer, nd) ||
              Dim(l->buffer, nd - 2) != h || Dim(l->buffer, nd - 1) != w) {
            ok = false;
            return e;
          }
          std::vector<PrimExpr> flat(idx.begin(), idx.end() - 2);
          for (const PrimExpr& i : flat) ok = ok && !Uses(i, {y, x});
          flat.push_back(pos);
          return Load(FlatView(l->buffer), flat);
        }
      } flatten;
      flatten.y = yv;
      flatten.x = xv;
      flatten.h = cv_.ho;
      flatten.w = cv_.wo;
      flatten.pos = pos;
      PrimExpr value = flatten.MutateExpr(ReplaceLoads(e.src->data.get(), v).MutateExpr(e.value));
      if (!flatten.ok || e.dst_idx.size() != 4 || !IsVar(e.dst_idx[2], yv) || !IsVar(e.dst_idx[3], xv)) return nullptr;
      VarMap map{{e.loops[0]->loop_var.get(), PrimExpr(nn_)}, {e.loops[1]->loop_var.get(), o}};
      v = Substitute(value, map);
      dst = FlatView(e.dst);
    }
    Stmt store = Store(dst, v, {PrimExpr(nn_), o, pos});
    if (transposed) {
      return MakeFor(jj, I64(cols), ForKind::kUnrolled, MakeFor(ii, I64(rows), ForKind::kVectorized, store));
    }
    return MakeFor(ii, I64(rows), ForKind::kUnrolled, MakeFor(jj, I64(cols), ForKind::kVectorized, store));
  }

  // The store of accumulator value `v` at output point (n, o, y, x) after
  // the fused epilogue stages: the last stage's buffer at its indices.
  Stmt EpilogueStore(PrimExpr v, const std::vector<PrimExpr>& point) const {
    Buffer dst = cv_.out;
    std::vector<PrimExpr> idx = point;
    for (const Stage& e : stages_) {
      VarMap map;
      for (size_t d = 0; d < 4; ++d) map[e.loops[d]->loop_var.get()] = point[d];
      v = Substitute(ReplaceLoads(e.src->data.get(), v).MutateExpr(e.value), map);
      dst = e.dst;
      idx.clear();
      for (const PrimExpr& d : e.dst_idx) idx.push_back(Substitute(d, map));
    }
    return Store(dst, v, idx);
  }

  // Depthwise tiles of output rows (spatial): tile row ii is output row
  // tile_y_ + ii, its column jj output column tile_x_ + jj, so every store
  // has static accumulator indices and a static width (NR, or what is left
  // of the row in its last column tile); rows past the band's end are not
  // stored. No copy of the accumulators and none of WriteBack's per-row
  // segment arithmetic, which on 384 channels at 14^2 cost more than the
  // FMAs. Null when the last column tile of a row holds no output column.
  Stmt RowWriteBack(const Buffer& acc, const Var& o0, int rows) {
    int64_t ncol = CeilDiv(wq_, nr_);
    int64_t last_w = cv_.wo - (ncol - 1) * nr_;
    if (last_w <= 0 || last_w > nr_) return nullptr;
    Var ii = MakeVar("ii_out");
    PrimExpr y = tile_y_ + PrimExpr(ii);
    auto row_store = [&](int64_t width) {
      Var xx = MakeVar("xx");
      std::vector<PrimExpr> point = {PrimExpr(nn_), PrimExpr(o0), y, tile_x_ + PrimExpr(xx)};
      return MakeFor(xx, I64(width), ForKind::kVectorized,
                     EpilogueStore(Load(acc, {PrimExpr(ii), PrimExpr(xx)}), point));
    };
    Stmt row = row_store(last_w);
    if (last_w < nr_ && ncol > 1) {
      row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLE, tile_x_ + I64(nr_), I64(cv_.wo)),
                                             row_store(nr_), row);
    } else if (last_w < nr_) {
      // One column tile per row, wider than the row: when the rows its last
      // NR - Wo lanes land on (the next one or, for rows narrower than
      // that, the next few) are the band's too, the row is stored whole;
      // those rows' own stores come later in the same task and overwrite
      // the spilled lanes. The band's last rows are stored Wo wide. With
      // every row stored Wo wide, LLVM dropped the dead lanes and split the
      // accumulators into 8 + 4 + 2 lanes (14 columns), loads and FMAs
      // included.
      int64_t spill_rows = CeilDiv(nr_ - cv_.wo, cv_.wo);
      row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, y + I64(spill_rows), yend_), row_store(nr_),
                                             row);
    }
    row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, y, yend_), row, nullptr);
    return MakeFor(ii, I64(rows), ForKind::kUnrolled, row);
  }

  // For each row, the output rows y the tile's columns [col0, col0 + NR)
  // cover, and in each the valid x segment: D[n, o, y, x] = f(tile[ii, y*wq + x - col0]).
  Stmt WriteBack(const Buffer& tmp, const Var& o0, int rows, bool spatial) {
    Var ii = MakeVar("ii_out"), yy = MakeVar("yy"), xx = MakeVar("xx");
    Var y0 = MakeVar("y0"), y1 = MakeVar("y1"), y = MakeVar("y"), lo = MakeVar("x0"), hi = MakeVar("x1");
    PrimExpr col0 = spatial ? PrimExpr(col0_) + PrimExpr(ii) * I64(wq_) : PrimExpr(col0_);
    PrimExpr x = PrimExpr(lo) + PrimExpr(xx);
    PrimExpr o = spatial ? PrimExpr(o0) : PrimExpr(o0) + PrimExpr(ii);
    std::vector<PrimExpr> point = {PrimExpr(nn_), o, PrimExpr(y), x};
    Stmt store = EpilogueStore(Load(tmp, {PrimExpr(ii), PrimExpr(y) * I64(wq_) + x - col0}), point);
    // A segment of len >= 16 is stored as whole 16-float vectors, the last
    // one overlapping the previous (the same values are stored twice; the
    // epilogue never reads what it stores). A loop of runtime length would
    // be vectorized 64 wide and run these short segments scalar. Shorter
    // segments (outputs narrower than a vector) are stored one by one.
    auto at = [&](PrimExpr x_at) { return Substitute(store, VarMap{{xx.get(), x_at}}); };
    Var len = MakeVar("len"), piece = MakeVar("piece"), lane = MakeVar("lane"), one = MakeVar("xx");
    PrimExpr start = Min(PrimExpr(piece) * I64(16), PrimExpr(len) - I64(16));
    Stmt vec = MakeFor(lane, I64(16), ForKind::kVectorized, at(start + PrimExpr(lane)));
    vec = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kLT, PrimExpr(piece) * I64(16), PrimExpr(len)), vec,
                                           nullptr);
    vec = MakeFor(piece, I64((nr_ + 15) / 16), ForKind::kUnrolled, vec);
    Stmt scalar = MakeFor(one, PrimExpr(len), ForKind::kSerial, at(PrimExpr(one)));
    // Segments of 4 to 15 floats (outputs 7 or 14 wide, tile edges): two
    // overlapping vectors of 8 or 4.
    for (int64_t width : {4, 8}) {
      Var l0 = MakeVar("lane"), l1 = MakeVar("lane");
      Stmt pair = Seq({MakeFor(l0, I64(width), ForKind::kVectorized, at(PrimExpr(l0))),
                       MakeFor(l1, I64(width), ForKind::kVectorized, at(PrimExpr(len) - I64(width) + PrimExpr(l1)))});
      scalar = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, PrimExpr(len), I64(width)), pair, scalar);
    }
    Stmt st = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kGE, PrimExpr(len), I64(16)), vec, scalar);
    // Empty when the row's part of the tile is all padding columns (x >= Wo).
    st = std::make_shared<LetStmtNode>(len, Max(PrimExpr(hi) - PrimExpr(lo), I64(0)), st);
    st = std::make_shared<LetStmtNode>(hi, Min(I64(cv_.wo), col0 + I64(nr_) - PrimExpr(y) * I64(wq_)), st);
    // Columns before own0 belong to an earlier tile (direct_'s last tile).
    PrimExpr first = own0_ ? PrimExpr(own0_) : col0;
    st = std::make_shared<LetStmtNode>(lo, Max(I64(0), first - PrimExpr(y) * I64(wq_)), st);
    st = std::make_shared<LetStmtNode>(y, PrimExpr(y0) + PrimExpr(yy), st);
    st = MakeFor(yy, Max(PrimExpr(y1) - PrimExpr(y0), I64(0)), ForKind::kSerial, st);
    st = std::make_shared<LetStmtNode>(y1, Min(yend_, Div(col0 + I64(nr_ - 1), I64(wq_)) + I64(1)), st);
    st = std::make_shared<LetStmtNode>(y0, Div(first, I64(wq_)), st);
    return MakeFor(ii, I64(rows), ForKind::kSerial, st);
  }

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

// Depthwise convolutions (one input and one output channel per group) with
// a stride: the window schedule (pool_schedule.h) computes them straight
// from the input with strided vector loads, each output once; the tile
// scheme here would first split the input into stride x stride phase planes
// (4x the output's size, copied per call) for 9 FMAs per output.
// On MobileNetV2's stride-2 layers (1 thread) this took 120, 48 and 69 us
// where the tiles took 382, 125 and 87; at stride 1 the tiles are faster
// (243 against 436 us at 144 x 56^2), so those stay here.
bool LeftToWindowSchedule(const ConvNest& cv) {
  return cv.opg == 1 && cv.ki == 1 && (cv.sh > 1 || cv.sw > 1);
}

// Finds convolution nests in statement sequences and rewrites them with their
// fusable epilogues.
class ConvRewriter : public StmtExprMutator {
 public:
  ConvRewriter(const PrimFunc& func, int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
    all_refs_ = RefsOf(func->body);
  }
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* seq = As<SeqStmtNode>(s)) return RewriteSeq(seq->seq, s);
    if (As<ForNode>(s)) return RewriteSeq({s}, s);
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  Stmt RewriteSeq(const std::vector<Stmt>& in, const Stmt& orig) {
    std::vector<Stmt> out;
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      ConvNest cv;
      if (!MatchConv(in[i], &cv) || LeftToWindowSchedule(cv)) {
        Stmt m = As<ForNode>(in[i]) ? in[i] : StmtExprMutator::MutateStmt(in[i]);
        any = any || m != in[i];
        out.push_back(m);
        continue;
      }
      std::vector<Stage> stages;
      Buffer cur = cv.out;
      int cur_refs_here = 3;  // the nest's own load and two stores of C
      std::unordered_set<const VarNode*> chain = {cur->data.get()};
      std::unordered_set<const VarNode*> reads = {cv.data->data.get(), cv.weight->data.get()};
      std::vector<Stmt> moved;
      size_t next = i + 1, resume = i + 1;
      while (next < in.size() && !params_.count(cur->data.get())) {
        BufferRefs r = RefsOf(in[next]);
        Stage e;
        if (MatchStage(in[next], cur, cv, &e) &&
            all_refs_.Refs(cur->data.get()) == cur_refs_here + r.Refs(cur->data.get())) {
          // Statements skipped since the last stage run before the kernel.
          for (size_t j = resume; j < next; ++j) moved.push_back(in[j]);
          for (const auto& kv : r.loads) reads.insert(kv.first);
          chain.insert(e.dst->data.get());
          stages.push_back(e);
          cur = e.dst;
          cur_refs_here = 1;  // the stage's store
          resume = ++next;
          continue;
        }
        // Skip statements independent of the chain (the per-channel scale and
        // shift of a batch norm sit between the convolution and its use).
        bool blocked = false;
        for (const VarNode* b : chain) blocked |= r.Refs(b) > 0;
        for (const auto& kv : r.stores) blocked |= reads.count(kv.first) > 0;
        ConvNest other;
        if (blocked || MatchConv(in[next], &other)) break;
        ++next;
      }
      // A pointwise convolution of a concatenation just computed (and read
      // nowhere else) reads the concatenated tensors in place: the copy goes.
      std::vector<ConcatSource> sources;
      bool concat_before = !out.empty() && i > 0 && out.back() == in[i - 1] &&
                           !params_.count(cv.data->data.get()) && all_refs_.Refs(cv.data->data.get()) == 2 &&
                           MatchChannelConcat(out.back(), cv.data, &sources);
      ConvKernel kernel(cv, stages, threads_, knobs_, std::move(sources));
      if (concat_before && kernel.ReadsSources()) out.pop_back();
      for (const Stmt& m : moved) out.push_back(MutateStmt(m));
      out.push_back(kernel.Build());
      i = resume - 1;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  int threads_;
  ScheduleKnobs knobs_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleConvs(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  ConvRewriter rewriter(func, num_threads_hint, knobs);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
