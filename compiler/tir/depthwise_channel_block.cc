#include "compiler/tir/depthwise_channel_block.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
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
// Output rows at most this wide: a row's accumulators (one vector per
// pixel) stay in registers beside the weight and input vectors.
constexpr int64_t kMaxBlockColumns = 14;
// The transposed window at most this big (it is written, then read by
// every tap: it must stay in L1). At 56 KiB, 240 ch 28^2 -> 14^2 3x3/2 (a
// 54 KiB window) took 25.0 us against the band kernel's 16.6.
constexpr int64_t kMaxWindowBytes = 32 * 1024;

int64_t WindowRows(const ConvNest& cv) { return (cv.ho - 1) * cv.sh + cv.kh; }
int64_t WindowCols(const ConvNest& cv) { return (cv.wo - 1) * cv.sw + cv.kw; }

std::vector<int64_t> ChunkStarts(int64_t n) { return nest::ChunkStarts(n, kLanes); }
using nest::Fma;

// A plane's last pixels (n % 16 of them), when at most this many, are
// moved one pixel at a time (16 channels: a gather in, a scatter out)
// instead of in one more transpose16 that redoes 15 pixels: 7^2 planes
// (49 = 3 * 16 + 1) take three transposes in and three out, not four.
// CPU time per call, four -> three transposes each way (1 thread, 5
// alternating rounds, load 7-12, bias + ReLU): 960 ch 7^2 3x3 10.42 ->
// 9.93 us, 1152 ch 7^2 3x3 12.38 -> 11.84, 1152 ch 7^2 5x5 22.64 -> 21.84,
// 576 ch 14^2 -> 7^2 3x3/2 9.10 -> 8.79, 672 ch 14^2 -> 7^2 5x5/2 18.53 ->
// 17.31. Four loose pixels (14^2 planes, 196 = 12 * 16 + 4) were slower
// (672 ch 14^2 -> 7^2 5x5/2 19.59).
constexpr int64_t kMaxLoosePixels = 1;

int64_t LoosePixels(int64_t n) { return n % kLanes <= kMaxLoosePixels ? n % kLanes : 0; }

// The chunks of a plane of n pixels that are transposed: ChunkStarts(n)
// but for the last when it would add only LoosePixels(n) new pixels.
std::vector<int64_t> TransposedChunks(int64_t n) {
  std::vector<int64_t> starts = ChunkStarts(n);
  if (LoosePixels(n) > 0) starts.pop_back();
  return starts;
}

class Kernel {
 public:
  explicit Kernel(const ConvNest& cv)
      : cv_(cv), hp_(WindowRows(cv)), wp_(WindowCols(cv)), plane_(cv.h * cv.w), out_plane_(cv.ho * cv.wo) {}

  Stmt Build() {
    // Channels not a multiple of 16 (MobileNetV3's 184 and 200): the last
    // block moved back to end at the last channel, its first channels
    // computed twice (the same values, stored twice).
    int64_t blocks = CeilDiv(cv_.o, kLanes);
    Var t = MakeVar("dwc_task");
    n_ = cv_.n == 1 ? I64(0) : conv::Div(PrimExpr(t), I64(blocks));
    c0_ = (cv_.n == 1 ? PrimExpr(t) : conv::Mod(PrimExpr(t), I64(blocks))) * I64(kLanes);
    if (cv_.o % kLanes != 0) c0_ = MakeBinary(TirKind::kMin, c0_, I64(cv_.o - kLanes));
    // One slot past the window takes the input pixels no tap reads.
    xs_ = nest::Float32Buffer(cv_.data->name + "_cmajor", {I64((hp_ * wp_ + 1) * kLanes)}, "global");
    ws_ = nest::Float32Buffer(cv_.weight->name + "_cmajor", {I64((cv_.kh * cv_.kw + 1) * kLanes)}, "global");
    os_ = nest::Float32Buffer(cv_.out->name + "_cmajor", {I64(out_plane_ * kLanes)}, "global");
    ot_ = nest::Float32Buffer(cv_.out->name + "_planes", {I64(kLanes * out_plane_)}, "global");
    Var y = MakeVar("y_row");
    Stmt body = Seq({Window(), Weights(), MakeFor(y, I64(cv_.ho), ForKind::kSerial, Row(PrimExpr(y))), Output()});
    for (const Buffer& b : {ot_, os_, ws_, xs_}) body = std::make_shared<AllocateNode>(b, body);
    return MakeFor(t, I64(cv_.n * blocks), ForKind::kParallel, body);
  }

 private:
  // A 16-channel vector loop: body(c) for c in [0, 16), inside a one-trip
  // unrolled loop (the code generator's explicit vectors).
  template <typename F>
  Stmt Lanes(const std::string& tag, F body) {
    Var u = MakeVar("u" + tag), c = MakeVar("c" + tag);
    return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(c, I64(kLanes), ForKind::kVectorized, body(PrimExpr(c))));
  }

  PrimExpr XsIndex(const PrimExpr& iy, const PrimExpr& ix, const PrimExpr& c) const {
    return (iy * I64(wp_) + ix) * I64(kLanes) + c;
  }

  // transpose16 (the code generator's 16 x 16 shuffle transpose): rows of
  // `src` from `from`, `stride` apart, into rows of `dst` at `offsets`.
  static Stmt Transpose(const Buffer& src, std::vector<PrimExpr> from, int64_t stride, const Buffer& dst,
                        std::vector<PrimExpr> at, const std::vector<int64_t>& offsets) {
    std::vector<PrimExpr> args{Load(src, std::move(from)), I64(stride), Load(dst, std::move(at))};
    for (int64_t o : offsets) args.push_back(I64(o));
    return std::make_shared<EvaluateNode>(PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", args)));
  }

  // xs[iy][ix][c] = X[n, c0 + c, iy - pt, ix - pl], zeros outside the input:
  // the planes' pixels in chunks of 16, each chunk transposed into the
  // window's pixels it lands on.
  Stmt Window() {
    int64_t r0 = std::min(hp_, std::max<int64_t>(0, cv_.pt)), r1 = std::max(r0, std::min(hp_, cv_.pt + cv_.h));
    int64_t k0 = std::min(wp_, std::max<int64_t>(0, cv_.pl)), k1 = std::max(k0, std::min(wp_, cv_.pl + cv_.w));
    std::vector<Stmt> parts;
    auto zero_run = [&](const PrimExpr& iy, int64_t from, int64_t count) {
      if (count <= 0) return;
      Var ix = MakeVar("zx");
      parts.push_back(MakeFor(ix, I64(count), ForKind::kSerial, Lanes("_z", [&](const PrimExpr& c) {
        return Store(xs_, FloatImm(DType::Float32(), 0), {XsIndex(iy, PrimExpr(ix) + I64(from), c)});
      })));
    };
    for (int64_t iy = 0; iy < r0; ++iy) zero_run(I64(iy), 0, wp_);
    for (int64_t iy = r1; iy < hp_; ++iy) zero_run(I64(iy), 0, wp_);
    if (r1 > r0 && (k0 > 0 || k1 < wp_)) {
      Var iy = MakeVar("wy");
      std::vector<Stmt> saved;
      saved.swap(parts);
      zero_run(PrimExpr(iy), 0, k0);
      zero_run(PrimExpr(iy), k1, wp_ - k1);
      std::vector<Stmt> row;
      row.swap(parts);
      parts.swap(saved);
      parts.push_back(std::make_shared<ForNode>(iy, I64(r0), I64(r1 - r0), ForKind::kSerial, Seq(row)));
    }
    for (int64_t p0 : TransposedChunks(plane_)) {
      std::vector<int64_t> offsets;
      for (int64_t p = p0; p < p0 + kLanes; ++p) {
        int64_t iy = p / cv_.w + cv_.pt, ix = p % cv_.w + cv_.pl;
        bool read = iy < hp_ && ix < wp_;
        offsets.push_back((read ? iy * wp_ + ix : hp_ * wp_) * kLanes);
      }
      parts.push_back(Transpose(cv_.data, {n_, c0_, I64(p0 / cv_.w), I64(p0 % cv_.w)}, plane_, xs_, {I64(0)}, offsets));
    }
    for (int64_t p = plane_ - LoosePixels(plane_); p < plane_; ++p) {
      int64_t iy = p / cv_.w + cv_.pt, ix = p % cv_.w + cv_.pl;
      if (iy >= hp_ || ix >= wp_) continue;
      parts.push_back(Lanes("_p", [&](const PrimExpr& c) {
        return Store(xs_, Load(cv_.data, {n_, c0_ + c, I64(p / cv_.w), I64(p % cv_.w)}), {XsIndex(I64(iy), I64(ix), c)});
      }));
    }
    return Seq(parts);
  }

  // ws[ky][kx][c] = W[c0 + c, 0, ky, kx]: each channel's kh * kw taps are
  // a row of W, so 16 of them transpose in chunks of 16 taps (a load per
  // element: 1152 ch 7^2 5x5 32.2 us, 3x3 15.8; transposed 29.5 and
  // 14.8). Windows of fewer than 16 taps read on into the next channel's
  // row, or, in the last block, from the previous one's (the extra columns
  // land in a discarded slot); a single block (16 channels) of them loads
  // element by element.
  Stmt Weights() {
    int64_t taps = cv_.kh * cv_.kw, discard = taps * kLanes;
    auto chunk = [&](int64_t k0) {
      std::vector<int64_t> offsets;
      for (int64_t k = k0; k < k0 + kLanes; ++k) offsets.push_back(k >= 0 && k < taps ? k * kLanes : discard);
      PrimExpr from = c0_ * I64(taps) + I64(k0);
      return Transpose(cv_.weight, {conv::Div(from, I64(taps)), I64(0), I64(0), conv::Mod(from, I64(taps))}, taps,
                       ws_, {I64(0)}, offsets);
    };
    if (taps >= kLanes) {
      std::vector<Stmt> parts;
      for (int64_t k0 : ChunkStarts(taps)) parts.push_back(chunk(k0));
      return Seq(parts);
    }
    if (cv_.o > kLanes) {
      PrimExpr last = MakeBinary(TirKind::kEQ, c0_, I64(cv_.o - kLanes));
      return std::make_shared<IfThenElseNode>(last, chunk(taps - kLanes), chunk(0));
    }
    Var k = MakeVar("wk");
    return MakeFor(k, I64(taps), ForKind::kSerial, Lanes("_w", [&](const PrimExpr& c) {
      PrimExpr ky = conv::Div(PrimExpr(k), I64(cv_.kw)), kx = conv::Mod(PrimExpr(k), I64(cv_.kw));
      return Store(ws_, Load(cv_.weight, {c0_ + c, I64(0), ky, kx}), {PrimExpr(k) * I64(kLanes) + c});
    }));
  }

  // Output row y: wo accumulators of 16 channels, every tap's FMAs, then
  // stored channel-minor, os[y * wo + x][c]. The FMAs go by input pixel:
  // for each tap row, each window pixel of that row is loaded once and
  // feeds the FMAs of every output pixel whose taps read it, with the tap
  // row's kw weights (kw + wo + 1 vectors live). By tap (each tap's FMAs
  // over the row's pixels), LLVM scheduled each pixel's kh * kw FMAs as
  // one chain, every weight live at once: at 5x5 it spilled loaded input
  // vectors to the stack (350 instructions for a row's 175 FMAs; now 217).
  // CPU time per call, by tap -> by pixel (1 thread, alternating, load 8):
  // 1152 ch 7^2 5x5 28.7 -> 23.3 us; 3x3 windows unchanged (no spills).
  Stmt Row(const PrimExpr& y) {
    Buffer acc = nest::Float32Buffer("acc", {I64(cv_.wo), I64(kLanes)}, "local");
    std::vector<Stmt> steps;
    auto lanes = [&](const std::function<Stmt(const PrimExpr&)>& body) {
      Var u = MakeVar("u"), c = MakeVar("c");
      return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(c, I64(kLanes), ForKind::kVectorized, body(PrimExpr(c))));
    };
    for (int64_t ky = 0; ky < cv_.kh; ++ky) {
      for (int64_t ix = 0; ix < wp_; ++ix) {
        for (int64_t kx = 0; kx < cv_.kw; ++kx) {
          // Output pixel x reads window column x * sw + kx.
          if (ix < kx || (ix - kx) % cv_.sw != 0 || (ix - kx) / cv_.sw >= cv_.wo) continue;
          int64_t x = (ix - kx) / cv_.sw;
          steps.push_back(lanes([&](const PrimExpr& c) {
            PrimExpr w = Load(ws_, {I64((ky * cv_.kw + kx) * kLanes) + c});
            PrimExpr v = Load(xs_, {XsIndex(y * I64(cv_.sh) + I64(ky), I64(ix), c)});
            std::vector<PrimExpr> at{I64(x), c};
            // The first tap of each pixel (ky = kx = 0) starts its sum.
            return Store(acc, ky == 0 && kx == 0 ? w * v : Fma(w, v, Load(acc, at)), at);
          }));
        }
      }
    }
    steps.push_back(PixelsOut(acc, y));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // The row's accumulators into os.
  Stmt PixelsOut(const Buffer& acc, const PrimExpr& y) {
    Var x = MakeVar("x_out"), c = MakeVar("c_out");
    return MakeFor(x, I64(cv_.wo), ForKind::kUnrolled,
                   MakeFor(c, I64(kLanes), ForKind::kVectorized,
                           Store(os_, Load(acc, {PrimExpr(x), PrimExpr(c)}),
                                 {(y * I64(cv_.wo) + PrimExpr(x)) * I64(kLanes) + PrimExpr(c)})));
  }

  // os transposed into one row of pixels per channel (ot[c][p]), then each
  // channel's rows stored into its NCHW plane (OutputStores). The epilogue
  // is inlined into these stores after the schedules.
  Stmt Output() {
    std::vector<Stmt> parts;
    for (int64_t p0 : TransposedChunks(out_plane_)) {
      std::vector<int64_t> offsets;
      for (int64_t r = 0; r < kLanes; ++r) offsets.push_back(r * out_plane_ + p0);
      parts.push_back(Transpose(os_, {I64(p0 * kLanes)}, kLanes, ot_, {I64(0)}, offsets));
    }
    for (int64_t p = out_plane_ - LoosePixels(out_plane_); p < out_plane_; ++p) {
      parts.push_back(Lanes("_q", [&](const PrimExpr& c) {
        return Store(ot_, Load(os_, {I64(p * kLanes) + c}), {c * I64(out_plane_) + I64(p)});
      }));
    }
    Var c = MakeVar("c_plane");
    std::vector<Stmt> rows;
    for (auto [y, lanes] : OutputStores(cv_.ho, cv_.wo)) {
      Var u = MakeVar("u_out"), x = MakeVar("x_out");
      PrimExpr v = Load(ot_, {PrimExpr(c) * I64(out_plane_) + I64(y * cv_.wo) + PrimExpr(x)});
      rows.push_back(MakeFor(u, I64(1), ForKind::kUnrolled,
                             MakeFor(x, I64(lanes), ForKind::kVectorized,
                                     Store(cv_.out, v, {n_, c0_ + PrimExpr(c), I64(y), PrimExpr(x)}))));
    }
    parts.push_back(MakeFor(c, I64(kLanes), ForKind::kSerial, Seq(rows)));
    return Seq(parts);
  }

  const ConvNest& cv_;
  int64_t hp_, wp_;            // the window's rows and columns
  int64_t plane_, out_plane_;  // pixels of an input and of an output plane
  PrimExpr n_, c0_;
  Buffer xs_, ws_, os_, ot_;
};

}  // namespace

std::vector<std::pair<int64_t, int64_t>> OutputStores(int64_t ho, int64_t wo) {
  // A 16-lane store from row y's start covers 16 / wo whole rows and runs
  // on into the next row (the same values, which that row's store, later,
  // writes again); so the next store starts 16 / wo rows on. The rows whose
  // 16 lanes would leave the plane are stored one by one, exactly (each
  // element's last store at its own row and column: an epilogue operand
  // broadcast along the rows reads the right element there).
  std::vector<std::pair<int64_t, int64_t>> stores;
  int64_t step = std::max<int64_t>(1, kLanes / wo), y = 0;
  for (; y < ho && y * wo + kLanes <= ho * wo; y += step) stores.push_back({y, kLanes});
  for (; y < ho; ++y) stores.push_back({y, wo});
  return stores;
}

bool ChannelBlockApplies(const ConvNest& cv) {
  return cv.opg == 1 && cv.ki == 1 && cv.wblock == 0 && cv.dh == 1 && cv.dw == 1 && cv.o >= kLanes &&
         cv.ch == cv.o && cv.ho > 0 && cv.wo > 0 && cv.wo <= kMaxBlockColumns && cv.h * cv.w >= kLanes &&
         cv.ho * cv.wo >= kLanes &&
         WindowRows(cv) * WindowCols(cv) * kLanes * 4 <= kMaxWindowBytes;
}

Stmt BuildChannelBlockDepthwise(const ConvNest& cv) { return Kernel(cv).Build(); }

}  // namespace dw
}  // namespace tir
}  // namespace kiln
