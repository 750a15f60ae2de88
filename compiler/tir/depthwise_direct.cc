#include "compiler/tir/depthwise_direct.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace tir {
namespace dw {

using namespace ir;  // NOLINT
using conv::CeilDiv;
using conv::ConvNest;
using conv::MakeFor;
using nest::I64;

namespace {

constexpr int64_t kLanes = 16;

// Windows at most this wide. Every tap column is a stride-2 load (two wide
// loads and a shuffle) per input row of the tile, so a 5x5 window makes 5
// per input row against the band kernel's plain loads: 72 ch 56^2 -> 28^2
// 5x5/2 took 47-58 us here with every tile of 1..6 rows x 1..2 vectors,
// against the band kernel's 32 (1 thread, same run). At 3x3: 64 ch 56^2 ->
// 28^2 15.2 against 17.7 us; 16 ch 112^2 -> 56^2 16.4 against the window
// schedule's 16.8-18.0; 32 ch 112^2 level (35.0 against 34.9).
constexpr int64_t kMaxDirectWindow = 3;

// The edge buffer's row pitch: the padding's zeros at 16 - pl .. 15, the
// input's first 32 columns at 16 .. 47 (64: each row's copy on whole lines).
constexpr int64_t kEdgePitch = 64;

// The output range [a, b) along one axis whose taps are all inside the
// input's extent `size` (stride s, window k, leading padding p), clamped to
// [0, out).
std::pair<int64_t, int64_t> InsideRange(int64_t s, int64_t k, int64_t p, int64_t size, int64_t out) {
  int64_t a = std::min(out, CeilDiv(p, s));
  int64_t last = size - k + p;  // x * s <= last
  int64_t b = last < 0 ? 0 : std::min(out, last / s + 1);
  return {a, std::max(a, b)};
}

// Whether the first vector (columns 0..15) takes the left edge columns
// (x < xa, whose taps reach into the padding): it reads its taps from a
// copy of each input row's first 32 columns behind pl zeros, so the edge
// columns get vector FMAs and a vector epilogue instead of one scalar chain
// each. Needs the vector's taps within those 32 columns and 1 <= pl < 16.
bool LeftEdgeInVector(const ConvNest& cv, int64_t xa) {
  return xa > 0 && cv.pl >= 1 && cv.pl < kLanes && (kLanes - 1) * cv.sw + cv.kw - cv.pl <= 2 * kLanes &&
         2 * kLanes <= cv.w;
}

// Whether the first vector (columns 0..15) takes the left edge column by
// shifting its kx = 0 taps (ShiftedLeftEdge in Kernel::Tile): 3-wide windows
// of column stride 2 and left padding 1, where tap 0 of column j reads input
// column 2j - 1, tap 2's column of j - 1. Column 0's tap 0 is the padding.
bool ShiftedLeftEdge(const ConvNest& cv, int64_t xa) {
  return xa == 1 && cv.pl == 1 && cv.sw == 2 && cv.kw == 3 && 2 * kLanes <= cv.w;
}

class Kernel {
 public:
  Kernel(const ConvNest& cv, const ScheduleKnobs& knobs) : cv_(cv) {
    std::tie(xa_, xb_) = InsideRange(cv_.sw, cv_.kw, cv_.pl, cv_.w, cv_.wo);
    std::tie(ya_, yb_) = InsideRange(cv_.sh, cv_.kh, cv_.pt, cv_.h, cv_.ho);
    // The inside columns in vectors, the last moved back to end at xb.
    for (int64_t x = xa_; x < xb_; x += kLanes) starts_.push_back(std::min(x, xb_ - kLanes));
    int64_t r = knobs.Get("depthwise.rows");
    rows_ = r > 0 ? std::min<int64_t>(r, 8) : 4;
    int64_t c = knobs.Get("depthwise.cols");
    cols_ = std::min<int64_t>(static_cast<int64_t>(starts_.size()), c > 0 ? std::min<int64_t>(c, 4) : 2);
    // The left edge columns in the first vector (LeftEdgeInVector), its
    // tile after the row's others, which hide the wait for the copy's
    // stores. A row of one tile (28^2 out at 2 vectors a tile) has nothing
    // to hide it: 64 and 144 ch 56^2 -> 28^2 took 1.18x and 1.21x the
    // scalar edge's CPU time (SiLU 1.31x).
    left_ = LeftEdgeInVector(cv_, xa_) && static_cast<int64_t>(starts_.size()) > cols_;
    // 3x3/2 with padding 1 shifts the edge column in instead, one tile a
    // row or several (no copy, and a third fewer of the first vector's
    // stride-2 loads; ShiftedLeftEdge).
    shift_ = ShiftedLeftEdge(cv_, xa_);
    if (shift_) left_ = false;
    if (left_ || shift_) {
      starts_.clear();
      for (int64_t x = 0; x < xb_; x += kLanes) starts_.push_back(std::min(x, xb_ - kLanes));
    }
  }

  Stmt Build() {
    Var t = MakeVar("dw_task");
    n_ = cv_.n == 1 ? I64(0) : conv::Div(PrimExpr(t), I64(cv_.o));
    o_ = cv_.n == 1 ? PrimExpr(t) : conv::Mod(PrimExpr(t), I64(cv_.o));
    std::vector<Stmt> body;
    if (left_) {
      // The padding columns of every row of the edge buffer, zeros once.
      edge_rows_ = (rows_ - 1) * cv_.sh + cv_.kh;
      edge_ = nest::Float32Buffer(cv_.data->name + "_left", {I64(edge_rows_ * kEdgePitch)}, "global");
      Var r = MakeVar("er"), j = MakeVar("ej");
      body.push_back(MakeFor(r, I64(edge_rows_), ForKind::kSerial,
                             MakeFor(j, I64(cv_.pl), ForKind::kSerial,
                                     Store(edge_, FloatImm(DType::Float32(), 0),
                                           {PrimExpr(r) * I64(kEdgePitch) + I64(kLanes - cv_.pl) + PrimExpr(j)}))));
    }
    // Rows above the inside ones, each with its own taps.
    for (int64_t y = 0; y < ya_; ++y) body.push_back(Rows(I64(y), 1, y));
    int64_t inner = yb_ - ya_, full = inner / rows_, rest = inner % rows_;
    if (full > 0) {
      Var rb = MakeVar("rb");
      body.push_back(MakeFor(rb, I64(full), ForKind::kSerial, Rows(I64(ya_) + PrimExpr(rb) * I64(rows_), rows_, -1)));
    }
    if (rest > 0) body.push_back(Rows(I64(ya_ + full * rows_), rest, -1));
    for (int64_t y = std::max(yb_, ya_); y < cv_.ho; ++y) body.push_back(Rows(I64(y), 1, y));
    Stmt task = Seq(body);
    if (left_) task = std::make_shared<AllocateNode>(edge_, task);
    return MakeFor(t, I64(cv_.n * cv_.o), ForKind::kParallel, task);
  }

 private:
  // Whether input row `iy` of output row `y` (static; -1: an inside row)
  // and tap row ky is inside the input.
  bool RowInside(int64_t y, int64_t ky) const {
    if (y < 0) return true;
    int64_t iy = y * cv_.sh + ky - cv_.pt;
    return iy >= 0 && iy < cv_.h;
  }

  PrimExpr X(const PrimExpr& y, int64_t ky, const PrimExpr& ix) const {
    return Load(cv_.data, {n_, o_, y * I64(cv_.sh) + I64(ky - cv_.pt), ix});
  }
  PrimExpr W(int64_t ky, int64_t kx) const { return Load(cv_.weight, {o_, I64(0), I64(ky), I64(kx)}); }
  PrimExpr Fma(PrimExpr a, PrimExpr b, PrimExpr c) const {
    return PrimExpr(std::make_shared<CallNode>(DType::Float32(), "fma", std::vector<PrimExpr>{a, b, c}));
  }

  // Output rows [y0, y0 + rows): the vector tiles, then the edge columns.
  // `fixed` >= 0: the one row y0 == fixed, outside the inside rows.
  Stmt Rows(const PrimExpr& y0, int64_t rows, int64_t fixed) {
    std::vector<Stmt> parts, first;
    // The edge buffer's rows first, and the tile that reads them last, so
    // that the other tiles' work hides the wait for those stores (the
    // tile's loads straddle them: no store forwarding).
    if (left_) parts.push_back(EdgeCopy(y0, rows, fixed));
    for (size_t c0 = 0; c0 < starts_.size(); c0 += cols_) {
      std::vector<int64_t> xs(starts_.begin() + c0, starts_.begin() + std::min(starts_.size(), c0 + cols_));
      (left_ && c0 == 0 ? first : parts).push_back(Tile(y0, rows, xs, fixed));
    }
    parts.insert(parts.end(), first.begin(), first.end());
    std::vector<int64_t> edges;
    for (int64_t x = 0; x < (left_ || shift_ ? 0 : xa_); ++x) edges.push_back(x);
    for (int64_t x = xb_; x < cv_.wo; ++x) edges.push_back(x);
    if (!edges.empty()) parts.push_back(Edges(y0, rows, edges, fixed));
    return Seq(parts);
  }

  // Input rows y0 * Sh - pt + r (r < (rows - 1) * Sh + kh, those inside
  // the input) into the edge buffer: their first 32 columns at row r's
  // column 16, behind the zeros of the padding.
  Stmt EdgeCopy(const PrimExpr& y0, int64_t rows, int64_t fixed) {
    std::vector<Stmt> copies;
    for (int64_t r = 0; r < (rows - 1) * cv_.sh + cv_.kh; ++r) {
      if (!RowInside(fixed, r)) continue;
      for (int64_t q = 0; q < 2; ++q) {
        Var j = MakeVar("ec");
        PrimExpr col = PrimExpr(j) + I64(q * kLanes);
        copies.push_back(MakeFor(j, I64(kLanes), ForKind::kVectorized,
                                 Store(edge_, X(y0, r, col), {I64(r * kEdgePitch + kLanes) + col})));
      }
    }
    return Seq(copies);
  }

  // Rows [y0, y0 + rows) x the vectors starting at `xs`: every inside tap's
  // FMA into acc, its input a stride-2 load; then the plain stores.
  Stmt Tile(const PrimExpr& y0, int64_t rows, const std::vector<int64_t>& xs, int64_t fixed) {
    DType f32 = DType::Float32();
    int64_t cols = static_cast<int64_t>(xs.size());
    Buffer acc = nest::Float32Buffer("acc", {I64(rows), I64(cols * kLanes)}, "local");
    // One unrolled loop over the rows, a 16-lane vector loop per vector.
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&, int64_t, const PrimExpr&)>& f) {
      Var ii = MakeVar("ii" + tag);
      std::vector<Stmt> vecs;
      for (int64_t k = 0; k < cols; ++k) {
        Var jj = MakeVar("jj" + tag);
        vecs.push_back(MakeFor(jj, I64(kLanes), ForKind::kVectorized, f(PrimExpr(ii), k, PrimExpr(jj))));
      }
      return MakeFor(ii, I64(rows), ForKind::kUnrolled, Seq(vecs));
    };
    std::vector<Stmt> steps;
    steps.push_back(grid("_init", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) {
      return Store(acc, FloatImm(f32, 0), {ii, I64(k * kLanes) + jj});
    }));
    // The vector at column 0 with the edge column shifted in: its kx = 0
    // taps (input column 2j - 1) are kx = 2's loads (column 2j + 1) into
    // `shifted`, added one lane up at the end (lane 0 gets the padding's 0).
    bool shifted_vector = shift_ && xs[0] == 0;
    Buffer shifted;
    if (shifted_vector) {
      shifted = nest::Float32Buffer("acc_shifted", {I64(rows), I64(kLanes)}, "local");
      Var ii = MakeVar("ii_sinit"), jj = MakeVar("jj_sinit");
      steps.push_back(MakeFor(ii, I64(rows), ForKind::kUnrolled,
                              MakeFor(jj, I64(kLanes), ForKind::kVectorized,
                                      Store(shifted, FloatImm(f32, 0), {PrimExpr(ii), PrimExpr(jj)}))));
    }
    // By input row, then tap column: each stride-2 load feeds the FMAs of
    // every output row that reads it next to it (by tap row, the rows a
    // 5x5 tile shares were loaded long before their second use, and LLVM
    // spilled registers: 72 ch 56^2 5x5/2 took twice the band kernel's time).
    for (int64_t r = 0; r < (rows - 1) * cv_.sh + cv_.kh; ++r) {
      for (int64_t kx = 0; kx < cv_.kw; ++kx) {
        for (int64_t ii = 0; ii < rows; ++ii) {
          int64_t ky = r - ii * cv_.sh;
          if (ky < 0 || ky >= cv_.kh || !RowInside(fixed, ky)) continue;
          for (int64_t k = 0; k < cols; ++k) {
            Var jj = MakeVar("jj");
            bool shift = shifted_vector && k == 0 && kx == 0;
            int64_t col = shift ? kx + cv_.sw : kx;
            PrimExpr ix = PrimExpr(jj) * I64(cv_.sw) + I64(xs[k] * cv_.sw + col - cv_.pl);
            std::vector<PrimExpr> at = {I64(ii), I64(k * kLanes) + PrimExpr(jj)};
            if (shift) {
              std::vector<PrimExpr> sat = {I64(ii), PrimExpr(jj)};
              steps.push_back(MakeFor(jj, I64(kLanes), ForKind::kVectorized,
                                      Store(shifted, Fma(W(ky, kx), X(y0 + I64(ii), ky, ix), Load(shifted, sat)), sat)));
              continue;
            }
            PrimExpr x = X(y0 + I64(ii), ky, ix);
            // The first vector of a left edge reads the edge buffer's row r
            // (column c of the input at r * pitch + 16 + c, the padding's
            // zeros before it).
            if (left_ && xs[k] == 0) x = Load(edge_, {I64(r * kEdgePitch + kLanes) + ix});
            steps.push_back(MakeFor(jj, I64(kLanes), ForKind::kVectorized,
                                    Store(acc, Fma(W(ky, kx), x, Load(acc, at)), at)));
          }
        }
      }
    }
    if (shifted_vector) {
      Var ii = MakeVar("ii_shift"), jj = MakeVar("jj_shift");
      std::vector<PrimExpr> at = {PrimExpr(ii), I64(1) + PrimExpr(jj)};
      steps.push_back(MakeFor(
          ii, I64(rows), ForKind::kUnrolled,
          MakeFor(jj, I64(kLanes - 1), ForKind::kVectorized,
                  Store(acc, Load(acc, at) + Load(shifted, {PrimExpr(ii), PrimExpr(jj)}), at))));
    }
    steps.push_back(grid("_out", [&](const PrimExpr& ii, int64_t k, const PrimExpr& jj) {
      return Store(cv_.out, Load(acc, {ii, I64(k * kLanes) + jj}), {n_, o_, y0 + ii, I64(xs[k]) + jj});
    }));
    Stmt body = std::make_shared<AllocateNode>(acc, Seq(steps));
    return shifted_vector ? std::make_shared<AllocateNode>(shifted, body) : body;
  }

  // Rows [y0, y0 + rows) x the edge columns `xs`, one by one, each with the
  // taps inside the input (a one-element accumulator per column, so that
  // the store is a plain one the epilogue can be inlined into).
  Stmt Edges(const PrimExpr& y0, int64_t rows, const std::vector<int64_t>& xs, int64_t fixed) {
    DType f32 = DType::Float32();
    int64_t n = static_cast<int64_t>(xs.size());
    Buffer acc = nest::Float32Buffer("edge_acc", {I64(n)}, "local");
    Var ii = MakeVar("ie");
    PrimExpr y = y0 + PrimExpr(ii);
    std::vector<Stmt> steps;
    for (int64_t k = 0; k < n; ++k) {
      steps.push_back(Store(acc, FloatImm(f32, 0), {I64(k)}));
      for (int64_t ky = 0; ky < cv_.kh; ++ky) {
        if (!RowInside(fixed, ky)) continue;
        for (int64_t kx = 0; kx < cv_.kw; ++kx) {
          int64_t ix = xs[k] * cv_.sw + kx - cv_.pl;
          if (ix < 0 || ix >= cv_.w) continue;
          steps.push_back(Store(acc, Fma(W(ky, kx), X(y, ky, I64(ix)), Load(acc, {I64(k)})), {I64(k)}));
        }
      }
      steps.push_back(Store(cv_.out, Load(acc, {I64(k)}), {n_, o_, y, I64(xs[k])}));
    }
    return std::make_shared<AllocateNode>(acc, MakeFor(ii, I64(rows), ForKind::kUnrolled, Seq(steps)));
  }

  const ConvNest& cv_;
  int64_t xa_ = 0, xb_ = 0, ya_ = 0, yb_ = 0, rows_ = 4, cols_ = 2;
  bool left_ = false;       // the left edge columns in the first vector
  bool shift_ = false;      // the left edge column in the first vector, its kx = 0 taps shifted
  int64_t edge_rows_ = 0;   // rows of the edge buffer (a tile's input rows)
  Buffer edge_;             // the tile's input rows' first columns, zeros before them
  std::vector<int64_t> starts_;  // the first column of each inside vector
  PrimExpr n_, o_;
};

}  // namespace

bool DirectApplies(const ConvNest& cv) {
  if (cv.sw != 2 || cv.kw > kMaxDirectWindow) return false;
  auto [xa, xb] = InsideRange(cv.sw, cv.kw, cv.pl, cv.w, cv.wo);
  return xb - xa >= kLanes;
}

Stmt BuildDirectDepthwise(const ConvNest& cv, const ScheduleKnobs& knobs) { return Kernel(cv, knobs).Build(); }

}  // namespace dw
}  // namespace tir
}  // namespace kiln
