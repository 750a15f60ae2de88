#include "compiler/tir/depthwise_channel_block_symbolic.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace dw {

using namespace ir;  // NOLINT
using conv::CeilDiv;
using conv::MakeFor;
using nest::ConstInt;
using nest::Fma;
using nest::I64;

namespace {

constexpr int64_t kLanes = 16;
// As the static kernel's (depthwise_channel_block.cc): a row's wo
// accumulators stay in registers; the window stays in L1.
constexpr int64_t kMaxBlockColumns = 14;
constexpr int64_t kMaxWindowBytes = 32 * 1024;
// Column stride 2: below 16 output columns the alternative is the symbolic
// schedule's per-channel tiles (phase planes per channel, a vector per short
// row), slower even with the window in L2 or beyond. CPU per call, 1 thread,
// + hard-swish, against them: 96 ch 40 x 24 -> 20 x 12 3x3/2 (a 64 KiB
// window) 35.5 -> 15.0 us (pinned 8.7), 48 ch 2560 x 24 3x3/2 (4 MiB)
// 0.75x, 192 ch 640 x 24 5x5/2 0.47x (depthwise_strided_symbolic_test.cc).
constexpr int64_t kMaxStridedWindowBytes = 4 * 1024 * 1024;
// The widths a branch covers (W - 1 and W).
constexpr int64_t kWidthStep = 2;

PrimExpr S(const PrimExpr& e) { return arith::Simplify(e); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return S(conv::Div(std::move(a), std::move(b))); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return S(conv::Mod(std::move(a), std::move(b))); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return S(conv::Min(std::move(a), std::move(b))); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return S(conv::Max(std::move(a), std::move(b))); }
PrimExpr Le(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLE, std::move(a), std::move(b)); }
PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Eq(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kEQ, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAnd, std::move(a), std::move(b)); }

// The window's rows and columns (the taps' reach) for output extents.
PrimExpr WindowRows(const DepthwiseNest& d, const PrimExpr& ho) { return S((ho - I64(1)) * I64(d.sh) + I64(d.kh)); }
int64_t WindowCols(const DepthwiseNest& d, int64_t wo) { return (wo - 1) * d.sw + d.kw; }

class Kernel {
 public:
  explicit Kernel(const DepthwiseNest& d) : d_(d) {
    const auto& L = d.loops;
    ho_ = L[2]->extent;
    h_ = d.data->shape[2];
    w_ = d.data->shape[3];
    plane_ = S(h_ * w_);
  }

  Stmt Build() {
    const auto& L = d_.loops;
    int64_t blocks = CeilDiv(d_.o, kLanes);
    Var t = MakeVar("dwc_task");
    const int64_t* n_ext = ConstInt(L[0]->extent);
    bool one_image = n_ext != nullptr && *n_ext == 1;
    n_ = one_image ? I64(0) : Div(PrimExpr(t), I64(blocks));
    c0_ = S((one_image ? PrimExpr(t) : Mod(PrimExpr(t), I64(blocks))) * I64(kLanes));
    if (d_.o % kLanes != 0) c0_ = Min(c0_, I64(d_.o - kLanes));
    // X's image at this task (legalize may index a batch of one with 0).
    VarMap at = {{L[0]->loop_var.get(), n_}, {L[1]->loop_var.get(), c0_}, {L[4]->loop_var.get(), I64(0)}};
    xn_ = S(Substitute(d_.x_load->indices[0], at));
    // One branch per even width W, for output rows of W - 1 or W columns
    // (TakesChannelBlock keeps wo <= 14): a row of W - 1 computes one
    // column more, never stored. (A branch per width made PP-OCRv4's
    // detector take 1.5x its compile time, each branch's rows unrolled.)
    Stmt body;
    for (int64_t wo = kMaxBlockColumns; wo >= 2; wo -= kWidthStep) {
      Stmt one = Width(wo);
      body = body ? Stmt(std::make_shared<IfThenElseNode>(Le(L[3]->extent, I64(wo)), one, body)) : one;
    }
    return MakeFor(t, S(L[0]->extent * I64(blocks)), ForKind::kParallel, body);
  }

 private:
  // A 16-channel vector loop: body(c) for c in [0, 16), inside a one-trip
  // unrolled loop (the code generator's explicit vectors).
  static Stmt Lanes(const std::string& tag, const std::function<Stmt(const PrimExpr&)>& body) {
    Var u = MakeVar("u" + tag), c = MakeVar("c" + tag);
    return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(c, I64(kLanes), ForKind::kVectorized, body(PrimExpr(c))));
  }

  static Stmt Transpose(const Buffer& src, std::vector<PrimExpr> from, const PrimExpr& stride, const Buffer& dst,
                        std::vector<PrimExpr> at, const std::vector<PrimExpr>& offsets) {
    std::vector<PrimExpr> args{Load(src, std::move(from)), stride, Load(dst, std::move(at))};
    for (const PrimExpr& o : offsets) args.push_back(o);
    return std::make_shared<EvaluateNode>(PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", args)));
  }

  PrimExpr XsIndex(const PrimExpr& iy, const PrimExpr& ix, const PrimExpr& c) const {
    return S((iy * I64(wp_) + ix) * I64(kLanes)) + c;
  }

  // The kernel's body for output rows of `wo` columns.
  Stmt Width(int64_t wo) {
    wo_ = wo;
    wp_ = WindowCols(d_, wo);
    hp_ = WindowRows(d_, ho_);
    out_plane_ = S(ho_ * I64(wo));
    xf_ = nest::Float32Buffer(d_.data->name + "_cflat", {S(plane_ * I64(kLanes))}, "global");
    xs_ = nest::Float32Buffer(d_.data->name + "_cmajor", {S(hp_ * I64(wp_ * kLanes))}, "global");
    ws_ = nest::Float32Buffer(d_.weight->name + "_cmajor", {I64((d_.kh * d_.kw + 1) * kLanes)}, "global");
    os_ = nest::Float32Buffer(d_.out->name + "_cmajor", {S(out_plane_ * I64(kLanes))}, "global");
    ot_ = nest::Float32Buffer(d_.out->name + "_planes", {S(out_plane_ * I64(kLanes))}, "global");
    Var y = MakeVar("y_row");
    Stmt body = Seq({Window(), Weights(), MakeFor(y, ho_, ForKind::kSerial, Row(PrimExpr(y))), Output()});
    for (const Buffer& b : {ot_, os_, ws_, xs_, xf_}) body = std::make_shared<AllocateNode>(b, body);
    return body;
  }

  // xs[iy][ix][c] = X[n, c0 + c, iy - pt, ix - pl], zeros outside X: the
  // planes transposed in flat chunks of 16 pixels into xf[p][c] (the last
  // chunk moved back: planes of at least 16 pixels), then each pixel's
  // vector to its window place, the window's border zeroed.
  Stmt Window() {
    std::vector<Stmt> parts;
    Var tc = MakeVar("wt");
    PrimExpr p0 = Min(PrimExpr(tc) * I64(kLanes), plane_ - I64(kLanes));
    std::vector<PrimExpr> offsets;
    for (int64_t r = 0; r < kLanes; ++r) offsets.push_back(I64(r * kLanes));
    parts.push_back(MakeFor(tc, Div(plane_ + I64(kLanes - 1), I64(kLanes)), ForKind::kSerial,
                            Transpose(d_.data, {xn_, c0_, Div(p0, w_), Mod(p0, w_)}, plane_, xf_,
                                      {S(p0 * I64(kLanes))}, offsets)));
    auto zero_run = [&](const PrimExpr& iy, const PrimExpr& from, const PrimExpr& count) {
      Var ix = MakeVar("zx");
      return MakeFor(ix, S(count), ForKind::kSerial, Lanes("_z", [&](const PrimExpr& c) {
        return Store(xs_, FloatImm(DType::Float32(), 0), {XsIndex(iy, PrimExpr(ix) + from, c)});
      }));
    };
    // Rows above and below X's, whole; the rows between, left and right of it.
    PrimExpr top = Min(I64(d_.pt), hp_);
    PrimExpr mid_end = Min(S(h_ + I64(d_.pt)), hp_);
    Var ya = MakeVar("zy"), yb = MakeVar("zy"), ym = MakeVar("zy");
    parts.push_back(MakeFor(ya, top, ForKind::kSerial, zero_run(PrimExpr(ya), I64(0), I64(wp_))));
    parts.push_back(MakeFor(yb, Max(S(hp_ - mid_end), I64(0)), ForKind::kSerial,
                            zero_run(S(PrimExpr(yb) + mid_end), I64(0), I64(wp_))));
    PrimExpr right = Min(S(w_ + I64(d_.pl)), I64(wp_));
    std::vector<Stmt> sides;
    if (d_.pl > 0) sides.push_back(zero_run(S(PrimExpr(ym) + I64(d_.pt)), I64(0), I64(std::min(d_.pl, wp_))));
    sides.push_back(zero_run(S(PrimExpr(ym) + I64(d_.pt)), right, Max(S(I64(wp_) - right), I64(0))));
    parts.push_back(MakeFor(ym, Max(S(mid_end - I64(d_.pt)), I64(0)), ForKind::kSerial, Seq(sides)));
    // X's pixels the taps read: rows [0, min(h, hp - pt)), columns [0, min(w, wp - pl)).
    Var iy = MakeVar("wy"), ix = MakeVar("wx");
    Stmt move = Lanes("_m", [&](const PrimExpr& c) {
      PrimExpr from = S((PrimExpr(iy) * w_ + PrimExpr(ix)) * I64(kLanes)) + c;
      return Store(xs_, Load(xf_, {from}), {XsIndex(S(PrimExpr(iy) + I64(d_.pt)), S(PrimExpr(ix) + I64(d_.pl)), c)});
    });
    parts.push_back(MakeFor(iy, Max(S(mid_end - I64(d_.pt)), I64(0)), ForKind::kSerial,
                            MakeFor(ix, Max(S(right - I64(d_.pl)), I64(0)), ForKind::kSerial, move)));
    return Seq(parts);
  }

  // ws[ky][kx][c] = W[c0 + c, 0, ky, kx], as the static kernel's: 16
  // channels' taps transposed in chunks of 16 taps; windows of fewer taps
  // read on into the next channel's row (in the last block, from the
  // previous one's), the extra columns into a discarded slot; a single
  // block loads element by element.
  Stmt Weights() {
    int64_t taps = d_.kh * d_.kw, discard = taps * kLanes;
    auto chunk = [&](int64_t k0) {
      std::vector<PrimExpr> offsets;
      for (int64_t k = k0; k < k0 + kLanes; ++k) offsets.push_back(I64(k >= 0 && k < taps ? k * kLanes : discard));
      PrimExpr from = S(c0_ * I64(taps) + I64(k0));
      return Transpose(d_.weight, {Div(from, I64(taps)), I64(0), I64(0), Mod(from, I64(taps))}, I64(taps), ws_,
                       {I64(0)}, offsets);
    };
    if (taps >= kLanes) {
      std::vector<Stmt> parts;
      for (int64_t k0 : nest::ChunkStarts(taps, kLanes)) parts.push_back(chunk(k0));
      return Seq(parts);
    }
    if (d_.o > kLanes) {
      PrimExpr last = Eq(c0_, I64(d_.o - kLanes));
      return std::make_shared<IfThenElseNode>(last, chunk(taps - kLanes), chunk(0));
    }
    Var k = MakeVar("wk");
    return MakeFor(k, I64(taps), ForKind::kSerial, Lanes("_w", [&](const PrimExpr& c) {
      PrimExpr ky = Div(PrimExpr(k), I64(d_.kw)), kx = Mod(PrimExpr(k), I64(d_.kw));
      return Store(ws_, Load(d_.weight, {c0_ + c, I64(0), ky, kx}), {PrimExpr(k) * I64(kLanes) + c});
    }));
  }

  // Output row y: wo accumulators of 16 channels, by input pixel (each
  // window pixel of a tap row loaded once, feeding every output pixel that
  // reads it), as the static kernel's; then into os[y * wo + x][c].
  Stmt Row(const PrimExpr& y) {
    // (Not "acc": the symbolic schedule's tests count their own tiles by that name.)
    Buffer acc = nest::Float32Buffer("dwc_acc", {I64(wo_), I64(kLanes)}, "local");
    std::vector<Stmt> steps;
    for (int64_t ky = 0; ky < d_.kh; ++ky) {
      for (int64_t ix = 0; ix < wp_; ++ix) {
        for (int64_t kx = 0; kx < d_.kw; ++kx) {
          if (ix < kx || (ix - kx) % d_.sw != 0 || (ix - kx) / d_.sw >= wo_) continue;
          int64_t x = (ix - kx) / d_.sw;
          steps.push_back(Lanes("", [&](const PrimExpr& c) {
            PrimExpr w = Load(ws_, {I64((ky * d_.kw + kx) * kLanes) + c});
            PrimExpr v = Load(xs_, {XsIndex(S(y * I64(d_.sh) + I64(ky)), I64(ix), c)});
            std::vector<PrimExpr> at{I64(x), c};
            return Store(acc, ky == 0 && kx == 0 ? w * v : Fma(w, v, Load(acc, at)), at);
          }));
        }
      }
    }
    Var x = MakeVar("x_out"), c = MakeVar("c_out");
    steps.push_back(MakeFor(x, I64(wo_), ForKind::kUnrolled,
                            MakeFor(c, I64(kLanes), ForKind::kVectorized,
                                    Store(os_, Load(acc, {PrimExpr(x), PrimExpr(c)}),
                                          {S((y * I64(wo_) + PrimExpr(x)) * I64(kLanes)) + PrimExpr(c)}))));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // os transposed into one run of pixels per channel (ot[c][p], flat chunks
  // of 16 pixels, the last moved back: planes of at least 16 pixels), then
  // each channel's rows stored, wo columns each, with the epilogue.
  Stmt Output() {
    std::vector<Stmt> parts;
    Var tc = MakeVar("ot");
    PrimExpr p0 = Min(PrimExpr(tc) * I64(kLanes), out_plane_ - I64(kLanes));
    std::vector<PrimExpr> offsets;
    for (int64_t r = 0; r < kLanes; ++r) offsets.push_back(S(I64(r) * out_plane_));
    parts.push_back(MakeFor(tc, Div(out_plane_ + I64(kLanes - 1), I64(kLanes)), ForKind::kSerial,
                            Transpose(os_, {S(p0 * I64(kLanes))}, I64(kLanes), ot_, {p0}, offsets)));
    // The row's wo columns: W or W - 1 (a branch each: constant lanes).
    Var c = MakeVar("c_plane"), y = MakeVar("y_out");
    auto row = [&](int64_t lanes) {
      Var x = MakeVar("x_out");
      PrimExpr value = Load(ot_, {S(PrimExpr(c) * out_plane_ + PrimExpr(y) * I64(wo_)) + PrimExpr(x)});
      std::vector<PrimExpr> at = {n_, S(c0_ + PrimExpr(c)), PrimExpr(y), PrimExpr(x)};
      return MakeFor(x, I64(lanes), ForKind::kVectorized, StoresAt(d_, value, at));
    };
    Stmt rows = std::make_shared<IfThenElseNode>(Eq(d_.loops[3]->extent, I64(wo_)), row(wo_), row(wo_ - 1));
    parts.push_back(MakeFor(c, I64(kLanes), ForKind::kSerial, MakeFor(y, ho_, ForKind::kSerial, rows)));
    return Seq(parts);
  }

  const DepthwiseNest& d_;
  PrimExpr ho_, h_, w_, plane_, hp_, out_plane_, n_, c0_, xn_;
  int64_t wo_ = 1, wp_ = 1;
  Buffer xf_, xs_, ws_, os_, ot_;
};

}  // namespace

PrimExpr TakesChannelBlock(const DepthwiseNest& d) {
  if (d.o < kLanes) return I64(0);
  const auto& L = d.loops;
  const PrimExpr& ho = L[2]->extent;
  const PrimExpr& wo = L[3]->extent;
  PrimExpr wp = S((wo - I64(1)) * I64(d.sw) + I64(d.kw));
  PrimExpr window = S(WindowRows(d, ho) * wp * I64(kLanes * 4));
  PrimExpr ok = And(Le(wo, I64(kMaxBlockColumns)), Ge(S(ho * wo), I64(kLanes)));
  ok = And(ok, Ge(S(d.data->shape[2] * d.data->shape[3]), I64(kLanes)));
  return And(ok, Le(window, I64(d.sw == 2 ? kMaxStridedWindowBytes : kMaxWindowBytes)));
}

Stmt BuildSymbolicChannelBlock(const DepthwiseNest& d) { return Kernel(d).Build(); }

}  // namespace dw
}  // namespace tir
}  // namespace kiln
