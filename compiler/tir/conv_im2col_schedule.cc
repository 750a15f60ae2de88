#include "compiler/tir/conv_im2col_schedule.h"

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
using conv::ConvNest;
using conv::Div;
using conv::MakeFor;
using conv::MatchConv;
using conv::Mod;

constexpr int64_t kLanes = 16;
// The panel's bytes at most (taps x lanes x 4): it is streamed once per
// tile of output channels, so it should stay in L2; 1 MiB is far above the
// worst shapes' (1152 taps x 16 lanes = 72 KiB).
constexpr int64_t kMaxPanelBytes = 1 << 20;

PrimExpr And(PrimExpr a, PrimExpr b) {
  if (!a.defined()) return b;
  return MakeBinary(TirKind::kAnd, std::move(a), std::move(b));
}
PrimExpr Lt(PrimExpr a, int64_t b) { return MakeBinary(TirKind::kLT, std::move(a), I64(b)); }
PrimExpr Ge(PrimExpr a, int64_t b) { return MakeBinary(TirKind::kGE, std::move(a), I64(b)); }

class Kernel {
 public:
  Kernel(const ConvNest& cv, int64_t points, int threads, const ScheduleKnobs& knobs) : cv_(cv), threads_(threads) {
    if (cv_.wo >= points) {
      rows_ = 1;
      cols_ = points;
    } else {
      cols_ = cv_.wo;
      rows_ = std::min(cv_.ho, std::max<int64_t>(1, points / cv_.wo));
    }
    lanes_ = CeilDiv(rows_ * cols_, kLanes) * kLanes;
    col_chunks_ = CeilDiv(cv_.wo, cols_);
    chunks_ = CeilDiv(cv_.ho, rows_) * col_chunks_;
    taps_ = cv_.ki * cv_.kh * cv_.kw;
    int64_t mr = knobs.Get("conv.mr");
    mr_ = std::min(cv_.o, mr > 0 ? std::min<int64_t>(mr, 8) : (lanes_ / kLanes >= 4 ? 6 : 8));
  }

  static bool Fits(const ConvNest& cv, int64_t points) {
    int64_t cols = cv.wo >= points ? points : cv.wo;
    int64_t rows = cv.wo >= points ? 1 : std::min(cv.ho, std::max<int64_t>(1, points / cv.wo));
    int64_t lanes = CeilDiv(rows * cols, kLanes) * kLanes;
    return cv.ki * cv.kh * cv.kw * lanes * 4 <= kMaxPanelBytes;
  }

  Stmt Build() {
    Var t = MakeVar("im2col_chunk");
    n_ = cv_.n == 1 ? I64(0) : Div(PrimExpr(t), I64(chunks_));
    PrimExpr q = cv_.n == 1 ? PrimExpr(t) : Mod(PrimExpr(t), I64(chunks_));
    y0_ = col_chunks_ == 1 ? q * I64(rows_) : Div(q, I64(col_chunks_)) * I64(rows_);
    x0_ = col_chunks_ == 1 ? I64(0) : Mod(q, I64(col_chunks_)) * I64(cols_);
    panel_ = nest::Float32Buffer(cv_.data->name + "_panel", {I64(taps_ * lanes_)}, "global");
    std::vector<Stmt> body = {Pack()};
    int64_t full = cv_.o / mr_, rest = cv_.o % mr_;
    if (full > 0) {
      Var ot = MakeVar("ot");
      body.push_back(MakeFor(ot, I64(full), ForKind::kSerial, Tile(PrimExpr(ot) * I64(mr_), mr_)));
    }
    if (rest > 0) body.push_back(Tile(I64(full * mr_), rest));
    Stmt task = std::make_shared<AllocateNode>(panel_, Seq(body));
    int64_t tasks = cv_.n * chunks_;
    return MakeFor(t, I64(tasks), threads_ >= 2 && tasks >= 2 ? ForKind::kParallel : ForKind::kSerial, task);
  }

 private:
  // The output point of lane p of the chunk, and whether it is one (lanes
  // past the chunk's points, rows past the plane, columns past the row).
  void Point(const PrimExpr& p, PrimExpr* y, PrimExpr* x, PrimExpr* valid) const {
    *valid = PrimExpr();
    if (rows_ == 1) {
      *y = y0_;
      *x = x0_ + p;
      if (cv_.wo % cols_ != 0) *valid = Lt(*x, cv_.wo);
      if (lanes_ > cols_) *valid = And(*valid, Lt(p, cols_));
    } else {
      *y = y0_ + Div(p, I64(cols_));
      *x = Mod(p, I64(cols_));
      if (lanes_ > rows_ * cols_) *valid = Lt(p, rows_ * cols_);
      if (cv_.ho % rows_ != 0) *valid = And(*valid, Lt(*y, cv_.ho));
    }
  }

  // P[tap][p] for every tap of the chunk: the input under it or zero.
  Stmt Pack() {
    DType f32 = DType::Float32();
    Var c = MakeVar("pc"), ky = MakeVar("pky"), kx = MakeVar("pkx"), p = MakeVar("pp");
    PrimExpr y, x, valid;
    Point(PrimExpr(p), &y, &x, &valid);
    PrimExpr iy = y * I64(cv_.sh) + PrimExpr(ky) * I64(cv_.dh) - I64(cv_.pt);
    PrimExpr ix = x * I64(cv_.sw) + PrimExpr(kx) * I64(cv_.dw) - I64(cv_.pl);
    PrimExpr inside = And(And(And(And(valid, Ge(iy, 0)), Lt(iy, cv_.h)), Ge(ix, 0)), Lt(ix, cv_.w));
    PrimExpr value(std::make_shared<CallNode>(
        f32, "if_then_else", std::vector<PrimExpr>{inside, Load(cv_.data, {n_, PrimExpr(c), iy, ix}), FloatImm(f32, 0)}));
    PrimExpr tap = (PrimExpr(c) * I64(cv_.kh) + PrimExpr(ky)) * I64(cv_.kw) + PrimExpr(kx);
    Stmt st = Store(panel_, value, {tap * I64(lanes_) + PrimExpr(p)});
    st = MakeFor(p, I64(lanes_), ForKind::kVectorized, st);
    st = MakeFor(kx, I64(cv_.kw), ForKind::kSerial, st);
    st = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, st);
    return MakeFor(c, I64(cv_.ki), ForKind::kSerial, st);
  }

  // Output channels [o0, o0 + rows) of the chunk.
  Stmt Tile(const PrimExpr& o0, int64_t rows) {
    DType f32 = DType::Float32();
    Buffer acc = nest::Float32Buffer("acc", {I64(rows), I64(lanes_)}, "local");
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&, const PrimExpr&)>& body) {
      Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
      return MakeFor(ii, I64(rows), ForKind::kUnrolled,
                     MakeFor(jj, I64(lanes_), ForKind::kVectorized, body(PrimExpr(ii), PrimExpr(jj))));
    };
    std::vector<Stmt> steps;
    steps.push_back(grid("_init", [&](const PrimExpr& ii, const PrimExpr& jj) {
      return Store(acc, FloatImm(f32, 0), {ii, jj});
    }));
    // Every tap: a broadcast weight per row times the panel's row.
    Var c = MakeVar("c"), ky = MakeVar("ky"), kx = MakeVar("kx");
    PrimExpr tap = (PrimExpr(c) * I64(cv_.kh) + PrimExpr(ky)) * I64(cv_.kw) + PrimExpr(kx);
    Stmt fma = grid("", [&](const PrimExpr& ii, const PrimExpr& jj) {
      PrimExpr w = Load(cv_.weight, {o0 + ii, PrimExpr(c), PrimExpr(ky), PrimExpr(kx)});
      PrimExpr x = Load(panel_, {tap * I64(lanes_) + jj});
      PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, {ii, jj})}));
      return Store(acc, call, {ii, jj});
    });
    fma = MakeFor(kx, I64(cv_.kw), cv_.kw <= 8 ? ForKind::kUnrolled : ForKind::kSerial, fma);
    fma = MakeFor(ky, I64(cv_.kh), ForKind::kSerial, fma);
    steps.push_back(MakeFor(c, I64(cv_.ki), ForKind::kSerial, fma));
    // The chunk's points of each row, one vector loop per output channel.
    Var ii = MakeVar("ii_out"), p = MakeVar("p_out");
    PrimExpr y, x, valid;
    Point(PrimExpr(p), &y, &x, &valid);
    Stmt st = Store(cv_.out, Load(acc, {PrimExpr(ii), PrimExpr(p)}), {n_, o0 + PrimExpr(ii), y, x});
    if (valid.defined()) st = std::make_shared<IfThenElseNode>(valid, st, nullptr);
    steps.push_back(MakeFor(ii, I64(rows), ForKind::kUnrolled, MakeFor(p, I64(lanes_), ForKind::kVectorized, st)));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  const ConvNest& cv_;
  int threads_ = 1;
  int64_t rows_ = 1, cols_ = 1, lanes_ = kLanes, col_chunks_ = 1, chunks_ = 1, taps_ = 1, mr_ = 1;
  PrimExpr n_, y0_, x0_;
  Buffer panel_;
};

bool Handles(const ConvNest& cv, int64_t points) {
  return cv.groups == 1 && cv.wblock == 0 && cv.ch == cv.ki && cv.n > 0 && cv.o > 0 && cv.ho > 0 && cv.wo > 0 &&
         cv.ki > 0 && conv::Float32Plain(cv.data, 4) && conv::Dim(cv.data, 0) == cv.n && Kernel::Fits(cv, points);
}

class Rewriter : public StmtExprMutator {
 public:
  Rewriter(int64_t points, int threads, const ScheduleKnobs& knobs)
      : points_(points), threads_(threads), knobs_(knobs) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      ConvNest cv;
      if (MatchConv(s, &cv) && Handles(cv, points_)) {
        changed = true;
        return Kernel(cv, points_, threads_, knobs_).Build();
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int64_t points_;
  int threads_;
  ScheduleKnobs knobs_;
};

}  // namespace

PrimFunc ScheduleIm2colConvs(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  int64_t points = knobs.Get("conv.im2col");
  if (points <= 0) return func;
  // Whole vectors of points, 16 to 64.
  points = std::min<int64_t>(64, std::max<int64_t>(kLanes, points / kLanes * kLanes));
  Rewriter r(points, num_threads_hint, knobs);
  Stmt body = r.MutateStmt(func->body);
  if (!r.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
