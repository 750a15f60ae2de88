#include "compiler/tir/depthwise_schedule.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
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

// The band's bytes at most: it is written (zeros, then the input) and read
// (every tap) in turn, so it must stay in L1. At 112^2 -> 56^2 (a 59 KiB
// band) this schedule took 1.6-1.8x the window schedule's time (16 and 96
// channels, 3x3, SiLU, 1 thread); at 56^2 and below (<= 16 KiB) 0.13-0.35x.
constexpr int64_t kMaxBandBytes = 32 * 1024;

int64_t BandFloats(const ConvNest& cv) {
  int64_t nv = CeilDiv(cv.wo, kLanes);
  return cv.sh * cv.sw * (cv.ho + (cv.kh - 1) / cv.sh) * (nv * kLanes + (cv.kw - 1) / cv.sw);
}

bool Handles(const ConvNest& cv) {
  return cv.opg == 1 && cv.ki == 1 && cv.wblock == 0 && cv.dh == 1 && cv.dw == 1 && (cv.sh > 1 || cv.sw > 1) &&
         cv.ho > 0 && cv.wo > 0 && cv.n > 0 && cv.o > 0 && BandFloats(cv) * 4 <= kMaxBandBytes;
}

// The smallest j >= 0 with j * s + phase - pad >= 0.
int64_t FirstInside(int64_t s, int64_t phase, int64_t pad) { return std::max<int64_t>(0, CeilDiv(pad - phase, s)); }
// One past the largest j with j * s + phase - pad < size, at most `limit`.
int64_t EndInside(int64_t s, int64_t phase, int64_t pad, int64_t size, int64_t limit) {
  int64_t last = size - 1 + pad - phase;  // j * s <= last
  if (last < 0) return 0;
  return std::min(limit, last / s + 1);
}

class Kernel {
 public:
  Kernel(const ConvNest& cv, const ScheduleKnobs& knobs) : cv_(cv) {
    nv_ = CeilDiv(cv_.wo, kLanes);
    rows_band_ = cv_.ho + (cv_.kh - 1) / cv_.sh;
    pitch_ = nv_ * kLanes + (cv_.kw - 1) / cv_.sw;
    plane_ = rows_band_ * pitch_;
    int64_t r = knobs.Get("depthwise.rows");
    rows_ = std::min<int64_t>(cv_.ho, r > 0 ? std::min<int64_t>(r, 8) : 4);
    int64_t c = knobs.Get("depthwise.cols");
    cols_ = std::min<int64_t>(nv_, c > 0 ? std::min<int64_t>(c, 4) : 2);
  }

  Stmt Build() {
    Var t = MakeVar("dw_task");
    n_ = cv_.n == 1 ? I64(0) : Div(PrimExpr(t), I64(cv_.o));
    o_ = cv_.n == 1 ? PrimExpr(t) : Mod(PrimExpr(t), I64(cv_.o));
    band_ = nest::Float32Buffer(cv_.data->name + "_phases", {I64(cv_.sh * cv_.sw * plane_)}, "global");
    std::vector<Stmt> body = {Copy()};
    // Full row tiles in a loop, the last rows (fewer) after it.
    int64_t full = cv_.ho / rows_, rest = cv_.ho % rows_;
    if (full > 0) {
      Var rb = MakeVar("rb");
      body.push_back(MakeFor(rb, I64(full), ForKind::kSerial, Columns(PrimExpr(rb) * I64(rows_), rows_)));
    }
    if (rest > 0) body.push_back(Columns(I64(full * rows_), rest));
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
    return I64((py * cv_.sw + px) * plane_) + row * I64(pitch_) + col;
  }

  // The input rows and columns that land in the band, for each phase, and
  // zeros everywhere else (the padding and the columns past the plane; not
  // the whole band first: a third more stores, no faster in our runs).
  Stmt Copy() {
    std::vector<Stmt> rows;
    for (int64_t py = 0; py < cv_.sh; ++py) {
      int64_t i0 = FirstInside(cv_.sh, py, cv_.pt), i1 = EndInside(cv_.sh, py, cv_.pt, cv_.h, rows_band_);
      i1 = std::max(i0, std::min(i1, rows_band_));
      i0 = std::min(i0, rows_band_);
      for (int64_t px = 0; px < cv_.sw; ++px) {
        // Whole rows above and below the input's.
        for (Stmt z : {ZeroRun(BandIndex(py, px, I64(0), I64(0)), i0 * pitch_),
                       ZeroRun(BandIndex(py, px, I64(i1), I64(0)), (rows_band_ - i1) * pitch_)})
          if (z) rows.push_back(z);
      }
      if (i1 <= i0) continue;
      Var i = MakeVar("pi");
      PrimExpr iy = PrimExpr(i) * I64(cv_.sh) + I64(py - cv_.pt);
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
        return Store(band_, Load(cv_.data, {n_, o_, iy, ix}), {BandIndex(py, px, PrimExpr(i), j)});
      };
      std::vector<Stmt> parts;
      // Each phase's columns left and right of the input's, in these rows.
      for (int64_t px = 0; px < cv_.sw; ++px) {
        auto [j0, j1] = ranges[px];
        if (j1 <= j0) j0 = j1 = 0;
        for (Stmt z : {ZeroRun(BandIndex(py, px, PrimExpr(i), I64(0)), j0),
                       ZeroRun(BandIndex(py, px, PrimExpr(i), I64(j1)), pitch_ - j1)})
          if (z) parts.push_back(z);
      }
      if (hi > lo) {
        Var j = MakeVar("pj");
        std::vector<Stmt> both;
        for (int64_t px = 0; px < cv_.sw; ++px) both.push_back(copy(px, PrimExpr(j) + I64(lo)));
        parts.push_back(MakeFor(j, I64(hi - lo), ForKind::kVectorized, Seq(both)));
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
      if (parts.empty()) continue;
      rows.push_back(std::make_shared<ForNode>(i, I64(i0), I64(i1 - i0), ForKind::kSerial, Seq(parts)));
    }
    return Seq(rows);
  }

  // Output rows [y0, y0 + rows) of every column, in tiles of cols_ vectors.
  Stmt Columns(const PrimExpr& y0, int64_t rows) {
    std::vector<Stmt> tiles;
    for (int64_t c0 = 0; c0 < nv_; c0 += cols_) tiles.push_back(Tile(y0, rows, c0, std::min(cols_, nv_ - c0)));
    return Seq(tiles);
  }

  Stmt Tile(const PrimExpr& y0, int64_t rows, int64_t c0, int64_t cols) {
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
    steps.push_back(MakeFor(
        ii, I64(rows), ForKind::kUnrolled,
        MakeFor(xx, I64(width), ForKind::kVectorized,
                Store(cv_.out, Load(acc, {PrimExpr(ii), PrimExpr(xx)}),
                      {n_, o_, y0 + PrimExpr(ii), PrimExpr(xx) + I64(c0 * kLanes)}))));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  const ConvNest& cv_;
  int64_t nv_ = 0, rows_band_ = 0, pitch_ = 0, plane_ = 0, rows_ = 1, cols_ = 1;
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
      if (MatchConv(s, &cv) && Handles(cv)) {
        changed = true;
        return Kernel(cv, knobs_).Build();
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
