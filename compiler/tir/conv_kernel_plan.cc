#include "compiler/tir/conv_kernel.h"

#include <algorithm>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace conv {

using namespace nest;  // NOLINT: the shared nest helpers

ConvKernel::ConvKernel(const ConvNest& cv, const std::vector<Stage>& stages, int threads, const ScheduleKnobs& knobs,
           std::vector<ConcatSource> sources)
    : cv_(cv), stages_(stages), threads_(threads), knobs_(knobs), sources_(std::move(sources)) {
  shift_planes_ = ChooseShiftPlanes();
  offa_max_ = ((cv.kh - 1) * cv.dh) / cv.sh;
  offb_max_ = shift_planes_ ? 0 : ((cv.kw - 1) * cv.dw) / cv.sw;
  wq_ = cv.wo + offb_max_;
  // Packed rows: the ho + offa_max rows the valid outputs read, and one
  // more where a tile reads past them. The halo layout reads it: its
  // padding columns x in [wo, wq) of output row ho - 1 read up to column
  // x + offb_max of row ho - 1 + offa_max, i.e. into row ho + offa_max when
  // offb_max > 0; the band path packs band rows + offa_max + 1 from it.
  // Shift planes (offb_max = 0, wq = wo, always BuildWhole) never do:
  // their tiles cover columns [0, ho * wo) exactly (a whole-plane tile,
  // or tiles whose last one is narrower and ends at ho * wo, TileLoop's
  // last_col) and read at most offa_max rows below, so every read is
  // below (ho + offa_max) * wo (plane_len_ adds only the 64-byte rounding,
  // zeroed by BuildWhole's tail). On a 1-D conv (ho = 1, offa_max = 0) the
  // extra row doubled the packing.
  hq_ = cv.ho + offa_max_ + (shift_planes_ ? 0 : 1);
  planes_ = RowPhases() * ColPlanes();
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
    shapes = {{static_cast<int>(ShiftPlaneRows(j)), static_cast<int>(j)}};
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
  // Pointwise on a plane of at most kMaxRemainderColumns elements (the
  // squeeze-and-excitation FCs on pooled [N, C, 1, 1]): a matrix-vector
  // product, every column a RemainderTile column read in place. The
  // packed 32-column tile computed 32 columns for one (MobileNetV3's
  // 960 -> 240 at 1^2 took 3.2x ONNX Runtime's time, kernel alone).
  const bool gemv = !direct_ && cv.kh == 1 && cv.kw == 1 && cv.sh == 1 && cv.sw == 1 && cv.pt == 0 &&
                    cv.pl == 0 && cv.ho == cv.h && cv.wo == cv.w && cv.groups == 1 && cv.opg > 2 &&
                    RemainderFits(8, hw) && sources_.empty() &&
                    FlatWriteBack(nest::Float32Buffer("probe", {I64(hw), I64(8)}, "local"), MakeVar("o0"), 8,
                                  static_cast<int>(hw), I64(0), true) != nullptr;
  if (gemv) {
    direct_ = true;
    shapes.clear();
    mr_ = 8;
    nr_ = 16;  // nominal: no full column tile runs
    nr_last_ = -static_cast<int>(hw);
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
    if (!tuned.empty() && !gemv) shapes = tuned;
  }
  int64_t best = -1;
  for (const Shape& sh : shapes) {
    int mr = static_cast<int>(std::min<int64_t>(sh.mr, cv.opg));
    int64_t row_tiles = cv.opg / mr + (cv.opg % mr != 0 ? 1 : 0);  // leftovers: one narrower tile
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
    // Column planes (ColumnPlaneTail): likewise a last tile moved back to
    // end at Ho, as wide as the rows left rounded up to whole vectors.
    if (ColumnPlaneTail() && j > sh.nr && j % sh.nr != 0) {
      last = static_cast<int>((j % sh.nr + 15) / 16 * 16);
      cost = row_tiles * ((col_tiles - 1) * tile_cost(sh.nr) + tile_cost(last));
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
  // Shift planes read below hq_ * wq_ only (see hq_); the flat tiles of the
  // halo layout run to jt_ * nr_ columns, past the packed rows.
  plane_len_ = shift_planes_ ? hq_ * wq_ : std::max(hq_ * wq_, jt_ * nr_ + offa_max_ * wq_ + offb_max_);
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

bool ConvKernel::ColumnPlaneTail() const {
  return cv_.wo == 1 && offb_max_ == 0 && !shift_planes_ && !direct_ && cv_.groups == 1 && cv_.opg > 2 &&
         sources_.empty();
}

bool ConvKernel::ChooseShiftPlanes() const {
  const ConvNest& cv = cv_;
  if (cv.sh != 1 || cv.sw != 1 || cv.kw < 2 || cv.opg <= 2 || !sources_.empty()) return false;
  const int64_t exact = cv.ho * cv.wo;
  // Packed weights (blocks of 8 output channels): one-row planes (1-D
  // convolutions) of 17 to 48 columns only, one tile of one weight block's
  // rows, so a tap's weights are the block's contiguous run. DeepCut's
  // 32 -> 200 convs over 21 positions (n symbolic, 64 at run time, one
  // thread, CPU time, loaded machine, same run): widths 2 / 3 / 4 / 5 took
  // 0.80 / 0.87 / 0.93 / 0.86 of the 8 x 32 halo tiles' time; widths 7 and 8
  // (15 and 14 columns, one vector) were slower as shift planes (1.06-1.2,
  // with 8, 16 or 24 rows), so planes of at most 16 columns keep the halo.
  // The conv.shift_planes knob (schedule_knobs.h): 1 never, 2 whenever legal.
  // Legal with packed weights on any plane of one tile whose rows are
  // whole weight blocks; the rule takes those above and the 2-D planes
  // below, the knob lets a search try the rest.
  const int64_t knob = knobs_.Get("conv.shift_planes");
  const bool whole_blocks = cv.wblock != 0 && ShiftPlaneRows(exact) % cv.wblock == 0;
  if (cv.wblock != 0 && knob == 2) return exact <= kMaxShiftPlaneColumns && whole_blocks;
  // 2-D planes of one tile whose rows are whole blocks (at most 6x6) take
  // them by default too, where the plane needs fewer vectors than the halo
  // tile (below).
  const bool plane_2d = cv.ho > 1 && exact <= kMaxShiftPlaneColumns;
  if (cv.wblock != 0 && !plane_2d && (cv.ho != 1 || exact <= 16 || exact > kMaxShiftPlaneColumns)) return false;
  if (cv.wblock != 0 && !whole_blocks) return false;
  if (knob > 0) return knob == 2;
  const int64_t halo = cv.ho * (cv.wo + (cv.kw - 1) * cv.dw);
  // Packed weights on a 2-D plane: the halo tile (8 rows, 32 or 48
  // columns) computes the padding columns of every row; the shift-plane
  // tile pays for packing kw copies of the input. 3x3 convs, constant
  // weights, one thread, 32-512 channels, same run: 2x2 (1 vector against
  // 2) 0.82-0.87 of the halo tile's time, 4x4 (1 against 2) 0.56-0.63,
  // 5x5 (2 against 3) 0.67-0.73; 6x6 (3 against 3) 0.93-1.06, so the
  // shift tile must need fewer vectors per row. Planes narrower than one
  // vector gain less (3x3: 0.88-0.94) and with few taps per channel do not
  // gain (a 2x2 kernel to 3x3: 1.03-1.08 with 24 rows, 0.97-1.01 with 8),
  // so they take them from 3x3 kernels up, and only with 24 rows (one
  // thread, ShiftPlaneRows): with one block's 8, 3x3 took 1.00-1.03.
  if (cv.wblock != 0 && cv.ho > 1) {
    if (exact < 16 && (cv.kh * cv.kw < 9 || threads_ >= 2)) return false;
    int64_t halo_vectors = -1;
    for (int64_t nr : {32, 48}) {
      int64_t v = CeilDiv(halo, nr) * nr / 16;
      halo_vectors = halo_vectors < 0 ? v : std::min(halo_vectors, v);
    }
    return CeilDiv(exact, 16) < halo_vectors;
  }
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

int64_t ConvKernel::ShiftPlaneRows(int64_t cols) const {
  int64_t rows = 24 / CeilDiv(cols, 16);
  // The conv.plane_rows knob: rows of the one-tile tile within the same 24
  // accumulators; with packed weights whole blocks of them (the tile then
  // reads several blocks, o / b and o % b), at least one.
  if (int64_t k = knobs_.Get("conv.plane_rows"); k > 0) {
    rows = std::min(rows, k);
    if (cv_.wblock > 0 && rows >= cv_.wblock) rows = rows / cv_.wblock * cv_.wblock;
    return rows;
  }
  // Packed weights: as many whole blocks as fit (a plane of one vector:
  // three blocks, 24 rows, each tap's input vector feeding three blocks;
  // 3x3 convs, 64-256 channels, against the halo tile: 4x4 0.56-0.59 with
  // 24 rows, 0.63-0.65 with one block's 8; 2x2 0.83 / 0.92; 3x3 0.89 / 1.00;
  // one thread).
  // In kernels built for two threads or more one block: the tiles are the
  // parallel tasks, and 24-row tiles took 1.05-1.84 of the halo tile's
  // time there (3x3 convs over 2x2 to 4x4, 64-512 channels; 11 tasks of 24
  // rows instead of 32 of 8 at 256 channels, load 14 on two cores), one
  // block's 8 0.64-0.65 (4x4).
  if (cv_.wblock > 0 && rows >= cv_.wblock) return threads_ >= 2 ? cv_.wblock : rows / cv_.wblock * cv_.wblock;
  return rows;
}

bool ConvKernel::WholePlaneTailTaps(TapBox* box) const {
  if (!shift_planes_ || nr_ != cv_.ho * cv_.wo || nr_ % 16 == 0 || nr_ < 16) return false;
  *box = TapsReadingInput(cv_, nr_ / 16 * 16, nr_);
  return box->taps() < cv_.kh * cv_.kw;
}

void ConvKernel::ChooseRowTiles() {
  row_tiles_ = false;
  const int64_t taps = cv_.ki * cv_.kh * cv_.kw;
  // The tap limit is where row tiles were measured to pay; conv.row_tiles 2
  // lifts it (a 32 -> 32 1x7 conv has 224 taps and rows of two whole
  // 48-column tiles, against flat tiles over rows 102 apart).
  const bool forced = knobs_.Get("conv.row_tiles") == 2;
  if (direct_ || shift_planes_ || cv_.opg <= 2 || mr_ != 8 || (taps > kMaxRowTileTaps && !forced) || cv_.wo < 16)
    return;
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

void ConvKernel::ChooseBands() {
  band_rows_ = 0;
  const bool grouped = GroupBands();
  if (cv_.opg > 2 && !grouped) return;
  int64_t per_band = cv_.n * cv_.groups;
  int64_t rows = std::min(cv_.ho, std::max(CeilDiv(4 * nr_, wq_), 2 * (offa_max_ + 1)));
  auto tasks = [&](int64_t r) { return per_band * CeilDiv(cv_.ho, r); };
  if (tasks(rows) < kMinConvBandTasks) return;
  while (rows < cv_.ho && tasks(rows + 1) >= 2 * kMinConvBandTasks) ++rows;
  // Grouped: bands of equal rows (28 rows made bands of 27 and 1, the
  // second packing its halo rows for one row of tiles).
  if (grouped) rows = CeilDiv(cv_.ho, CeilDiv(cv_.ho, rows));
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

bool ConvKernel::GroupBands() const {
  return cv_.groups > 1 && cv_.opg > 2 && !direct_ && !row_tiles_ && !shift_planes_ && sources_.empty();
}

bool ConvKernel::PrefetchWeights() const {
  return cv_.wblock > 0 && cv_.o * cv_.ki * cv_.kh * cv_.kw * 4 >= kPrefetchMinWeightBytes;
}

bool ConvKernel::ParallelWork(int64_t count) const {
  int64_t macs = cv_.n * cv_.o * cv_.ho * cv_.wo * cv_.ki * cv_.kh * cv_.kw;
  // Each weight element feeds n * ho * wo multiply-adds. Where that is a few
  // (the matrix-vector products of squeeze-and-excitation FCs on a pooled
  // 1 x 1 plane) the kernel streams its weights from L2 or beyond, and a
  // weight element costs several compute-bound multiply-adds: MobileNetV3's
  // 960 -> 240 at 1^2 (230 K of them, 0.9 MiB of weights) took 23 us on one
  // thread, about ten times its arithmetic at the register-blocked rate.
  // Two cores stream twice the bytes, so such a product is worth a launch
  // from 64 K weight elements (256 KiB).
  int64_t weights = cv_.o * cv_.ki * cv_.kh * cv_.kw;
  int64_t work = std::max(macs, weights * kStreamedWeightWork);
  return threads_ >= 2 && count >= 2 && work >= kMinParallelConvWork;
}

bool ConvKernel::RowBlocksFastest(int64_t rb_count) const {
  constexpr int64_t kMaxRowBlocks = 4, kMinInputBytes = 512 * 1024, kMaxWeightBytes = 64 * 1024;
  int64_t input_bytes = cv_.n * cv_.ch * cv_.h * cv_.w * 4, weight_bytes = cv_.o * cv_.ki * 4;
  return direct_ && rb_count >= 2 && rb_count <= kMaxRowBlocks && input_bytes > kMinInputBytes &&
         weight_bytes <= kMaxWeightBytes;
}

int64_t ConvKernel::ColumnChunkTiles(int64_t rb_count) const {
  // 256 KiB of input per chunk: in L2 beside the weights of a row block and
  // the chunk's output, on the 1.25-2 MiB L2s of current server cores.
  constexpr int64_t kMinInputBytes = 512 * 1024, kChunkBytes = 256 * 1024;
  int64_t input_bytes = cv_.n * cv_.ch * cv_.h * cv_.w * 4;
  if (!direct_ || rb_count < 2 || input_bytes <= kMinInputBytes || RowBlocksFastest(rb_count)) return 0;
  int64_t tiles = std::max<int64_t>(1, kChunkBytes / (int64_t{nr_} * cv_.ki * 4));
  return tiles < jt_ ? tiles : 0;
}

bool ConvKernel::RemainderFits(int mr, int64_t cols) const {
  return cols > 0 && cols <= kMaxRemainderColumns && mr == 8 && cv_.wblock == mr && cv_.opg % mr == 0;
}

}  // namespace conv
}  // namespace tir
}  // namespace kiln
