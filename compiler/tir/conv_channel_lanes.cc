#include "compiler/tir/conv_channel_lanes.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/depthwise_channel_block.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

namespace {

constexpr int64_t kLanes = kChannelLaneBlock;
// Points of a register tile: one 16-channel accumulator each, as the
// grouped block kernel (conv_grouped_block.cc: 24 spilled there).
constexpr int64_t kMaxTilePixels = 16;
// Planes of at most this many points: the tiles are unrolled tap by tap
// and point by point, so the code grows with the plane.
constexpr int64_t kMaxChannelLaneLegalPixels = 64;
// Kernels of at most this many taps (7 x 7), for the same reason: Basic
// Pitch's 1 x 256 filter bank at stride 256 (one row of 13 outputs) would
// unroll 256 taps x 13 points a tile.
constexpr int64_t kMaxChannelLaneTaps = 49;
// The rule's bounds (ChannelLanesRuleTakes). Layer alone, constant
// weights, 1 thread, CPU time against the direct kernel (conv_kernel.h),
// channels in = out, loaded 2-core machine, same run:
//   3 x 3, pad 1: 2 x 2 0.15-0.31 (32-512 channels), 3 x 3 0.45-0.47,
//   4 x 4 0.58-0.62 (128: 20.1 -> 12.2 us; oneDNN blocked 13.0),
//   5 x 5 0.58-0.61, 6 x 6 0.61-0.63, 7 x 7 0.69-0.84, 8 x 8 0.57-0.63,
//   one row of 16 / 32 / 64: 0.26-0.31 / 0.34 / 0.29, a 1 x 1 plane (the
//   centre tap only) 0.02. (Winograd F(2x2), which takes 3 x 3 convs of
//   16 tiles or more before this schedule sees them, beats it at 7 x 7
//   and 8 x 8 with 32+ channels: 1.0-1.43 of Winograd's time.)
//   1 x 1 kernels (no padding to leave out; the broadcast per FMA costs):
//   2 x 2 0.28-0.82, 3 x 3 0.55-0.74, 4 x 4 and 1 x 16 0.93-1.02, 5 x 5
//   0.71-0.92, then 6 x 6 1.05-1.17, 7 x 7 1.13-1.35, 8 x 8 1.46-1.49,
//   1 x 32 1.36-1.62; a 1 x 1 plane (a matrix-vector product) 0.62 at 128
//   channels but 1.33 at 512 (1 MiB of weights: 16 blocks' streams at once
//   against the direct kernel's prefetched one).
constexpr int64_t kMaxChannelLanePixels = 64;
constexpr int64_t kMaxChannelLanePointwisePixels = 25;

}  // namespace

bool ChannelLanesRuleTakes(int64_t out_channels, int64_t in_channels, int64_t kh, int64_t kw, int64_t ho, int64_t wo,
                           int64_t groups) {
  if (groups != 1 || out_channels % kLanes != 0 || out_channels <= kLanes || in_channels <= 0 || kh <= 0 || kw <= 0 ||
      kh * kw > kMaxChannelLaneTaps || ho <= 0 || wo <= 0)
    return false;
  const int64_t points = ho * wo;
  if (kh * kw == 1) return points >= 2 && points <= kMaxChannelLanePointwisePixels;
  return points <= kMaxChannelLanePixels;
}

namespace conv {

namespace {

using nest::Fma;

class Kernel {
 public:
  Kernel(const ConvNest& cv, int threads, const ScheduleKnobs& knobs)
      : cv_(cv), threads_(threads), plane_(cv.ho * cv.wo) {
    full_ = cv.o / kLanes;
    rest_ = cv.o % kLanes;
    const int64_t tiles = CeilDiv(plane_, kMaxTilePixels);
    tp_ = CeilDiv(plane_, tiles);
    pp_ = std::max(plane_, kLanes);
    // Planes of fewer points than accumulators: several blocks a tile, each
    // point's broadcast input feeding every block (knob conv.lane_blocks).
    nb_ = std::max<int64_t>(1, kMaxTilePixels / tp_);
    if (int64_t k = knobs.Get("conv.lane_blocks"); k > 0) nb_ = k;
    nb_ = std::max<int64_t>(1, std::min(nb_, full_));
    if (!InPlace()) nb_ = 1;
  }

  Stmt Build() {
    std::vector<Stmt> parts;
    // Tasks of nb_ whole blocks, then one of the whole blocks left, then
    // the partial block.
    const int64_t groups = full_ / nb_, left = full_ % nb_;
    if (groups > 0) {
      Var t = MakeVar("cl_task");
      const int64_t tasks = cv_.n * groups;
      PrimExpr n = cv_.n == 1 ? I64(0) : Div(PrimExpr(t), I64(groups));
      PrimExpr ob = groups == 1 ? I64(0) : Mod(PrimExpr(t), I64(groups)) * I64(nb_);
      const int64_t macs = cv_.n * cv_.o * plane_ * cv_.ki * cv_.kh * cv_.kw;
      const bool parallel = threads_ >= 2 && tasks >= 2 && macs >= kMinParallelConvWork;
      parts.push_back(
          MakeFor(t, I64(tasks), parallel ? ForKind::kParallel : ForKind::kSerial, Block(n, ob, nb_, kLanes)));
    }
    if (left > 0) {
      Var n = MakeVar("cl_image_left");
      parts.push_back(MakeFor(n, I64(cv_.n), ForKind::kSerial, Block(PrimExpr(n), I64(groups * nb_), left, kLanes)));
    }
    if (rest_ > 0) {
      Var n = MakeVar("cl_image");
      parts.push_back(MakeFor(n, I64(cv_.n), ForKind::kSerial, Block(PrimExpr(n), I64(full_), 1, rest_)));
    }
    return Seq(parts);
  }

 private:
  // Weights read in place: packed in blocks of 16 (every block whole).
  bool InPlace() const { return cv_.wblock == kLanes; }

  // A vector loop of `lanes`, body(l), in a one-trip unrolled loop (the
  // code generator's explicit vectors).
  static Stmt Lanes(const std::string& tag, int64_t lanes, const std::function<Stmt(const PrimExpr&)>& body) {
    Var u = MakeVar("u" + tag), l = MakeVar("l" + tag);
    return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(l, I64(lanes), ForKind::kVectorized, body(PrimExpr(l))));
  }

  // The 16 (or `lanes`) weights of block `ob` at input channel c, tap (ky, kx).
  PrimExpr Weight(const PrimExpr& ob, const PrimExpr& c, int64_t ky, int64_t kx, const PrimExpr& l) const {
    if (InPlace()) return Load(cv_.weight, {ob, c, I64(ky), I64(kx), l});
    return Load(ws_, {(c * I64(cv_.kh * cv_.kw) + I64(ky * cv_.kw + kx)) * I64(kLanes) + l});
  }
  // Block b of a task's weights (its ws copy has one block).
  PrimExpr Weight(const PrimExpr& ob, int64_t b, const PrimExpr& c, int64_t ky, int64_t kx, const PrimExpr& l) const {
    return Weight(InPlace() ? ob + I64(b) : ob, c, ky, kx, l);
  }

  // ws[((c * kh + ky) * kw + kx) * 16 + o] = W[ob * 16 + o, c, ky, kx] for
  // o < lanes: runs of b floats from a packed weight, one float at a time
  // from OIHW.
  Stmt Weights(const PrimExpr& ob, int64_t lanes) {
    const int64_t b = cv_.wblock;
    Var k = MakeVar("cl_wtap");
    PrimExpr kv(k);
    PrimExpr c = Div(kv, I64(cv_.kh * cv_.kw)), ky = Mod(Div(kv, I64(cv_.kw)), I64(cv_.kh)), kx = Mod(kv, I64(cv_.kw));
    Stmt body;
    if (b > 0) {
      Var r = MakeVar("cl_wrun");
      PrimExpr blk = ob * I64(kLanes / b) + PrimExpr(r);
      body = MakeFor(r, I64(lanes / b), ForKind::kUnrolled, Lanes("_clw", b, [&](const PrimExpr& l) {
        return Store(ws_, Load(cv_.weight, {blk, c, ky, kx, l}), {kv * I64(kLanes) + PrimExpr(r) * I64(b) + l});
      }));
    } else {
      Var o = MakeVar("cl_wo");
      body = MakeFor(o, I64(lanes), ForKind::kUnrolled,
                     Store(ws_, Load(cv_.weight, {ob * I64(kLanes) + PrimExpr(o), c, ky, kx}),
                           {kv * I64(kLanes) + PrimExpr(o)}));
    }
    return MakeFor(k, I64(cv_.ki * cv_.kh * cv_.kw), ForKind::kSerial, body);
  }

  // The input element of output point p at tap (ky, kx), or undefined
  // where it reads padding.
  bool Inside(int64_t p, int64_t ky, int64_t kx, int64_t* iy, int64_t* ix) const {
    *iy = (p / cv_.wo) * cv_.sh + ky * cv_.dh - cv_.pt;
    *ix = (p % cv_.wo) * cv_.sw + kx * cv_.dw - cv_.pl;
    return *iy >= 0 && *iy < cv_.h && *ix >= 0 && *ix < cv_.w;
  }

  // Points [p0, p0 + count) of image n, block ob: accumulators of `lanes`
  // channels a point, every input channel's inside taps, then os[p][o].
  Stmt Tile(const PrimExpr& n, const PrimExpr& ob, int64_t nb, int64_t lanes, int64_t p0, int64_t count) {
    DType f32 = DType::Float32();
    Buffer acc = nest::Float32Buffer("acc_cl", {I64(count), I64(nb * kLanes)}, "local");
    auto at = [&](int64_t p, int64_t b, const PrimExpr& l) { return std::vector<PrimExpr>{I64(p), I64(b * kLanes) + l}; };
    std::vector<Stmt> steps;
    steps.push_back(Lanes("_cli", lanes, [&](const PrimExpr& l) {
      std::vector<Stmt> s;
      for (int64_t p = 0; p < count; ++p)
        for (int64_t b = 0; b < nb; ++b) s.push_back(Store(acc, FloatImm(f32, 0), at(p, b, l)));
      return Seq(s);
    }));
    Var c = MakeVar("cl_c");
    std::vector<Stmt> taps;
    for (int64_t ky = 0; ky < cv_.kh; ++ky) {
      for (int64_t kx = 0; kx < cv_.kw; ++kx) {
        std::vector<std::pair<int64_t, PrimExpr>> reads;
        for (int64_t p = 0; p < count; ++p) {
          int64_t iy, ix;
          if (Inside(p0 + p, ky, kx, &iy, &ix)) reads.push_back({p, Load(cv_.data, {n, PrimExpr(c), I64(iy), I64(ix)})});
        }
        if (reads.empty()) continue;  // padding for every point of the tile
        taps.push_back(Lanes("_clt", lanes, [&](const PrimExpr& l) {
          std::vector<PrimExpr> w;
          for (int64_t b = 0; b < nb; ++b) w.push_back(Weight(ob, b, PrimExpr(c), ky, kx, l));
          std::vector<Stmt> s;
          for (const auto& [p, x] : reads)
            for (int64_t b = 0; b < nb; ++b) s.push_back(Store(acc, Fma(w[b], x, Load(acc, at(p, b, l))), at(p, b, l)));
          return Seq(s);
        }));
      }
    }
    if (!taps.empty()) steps.push_back(MakeFor(c, I64(cv_.ki), ForKind::kSerial, Seq(taps)));
    steps.push_back(Lanes("_clo", lanes, [&](const PrimExpr& l) {
      std::vector<Stmt> s;
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t p = 0; p < count; ++p)
          s.push_back(Store(os_, Load(acc, at(p, b, l)), {I64((b * pp_ + p0 + p) * kLanes) + l}));
      return Seq(s);
    }));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // os transposed into one run of pixels a channel (ot[o][p], rows pp_
  // apart), then each of the `lanes` channels' plane stored from it: rows
  // of fewer than 16 points as the depthwise channel block stores them
  // (dw::OutputStores), wider rows in 16-lane pieces (the last moved back).
  Stmt Output(const PrimExpr& n, const PrimExpr& ob, int64_t b, int64_t lanes) {
    std::vector<Stmt> parts;
    for (int64_t p0 : nest::ChunkStarts(pp_, kLanes)) {
      std::vector<PrimExpr> args{Load(os_, {I64((b * pp_ + p0) * kLanes)}), I64(kLanes), Load(ot_, {I64(0)})};
      for (int64_t r = 0; r < kLanes; ++r) args.push_back(I64(r * pp_ + p0));
      parts.push_back(std::make_shared<EvaluateNode>(
          PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", std::move(args)))));
    }
    Var o = MakeVar("cl_o");
    PrimExpr oc = (ob + I64(b)) * I64(kLanes) + PrimExpr(o);
    std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> stores;  // (row, (first column, lanes))
    if (cv_.wo < kLanes) {
      for (auto [y, width] : dw::OutputStores(cv_.ho, cv_.wo)) stores.push_back({y, {0, width}});
    } else {
      for (int64_t y = 0; y < cv_.ho; ++y)
        for (int64_t x0 : nest::ChunkStarts(cv_.wo, kLanes)) stores.push_back({y, {x0, kLanes}});
    }
    std::vector<Stmt> rows;
    for (const auto& [y, piece] : stores) {
      const int64_t x0 = piece.first;
      rows.push_back(Lanes("_cls", piece.second, [&](const PrimExpr& x) {
        PrimExpr v = Load(ot_, {PrimExpr(o) * I64(pp_) + I64(y * cv_.wo + x0) + x});
        return Store(cv_.out, v, {n, oc, I64(y), I64(x0) + x});
      }));
    }
    parts.push_back(MakeFor(o, I64(lanes), ForKind::kSerial, Seq(rows)));
    return Seq(parts);
  }

  // One task: blocks [ob, ob + nb) (of `lanes` channels each) of image n.
  Stmt Block(const PrimExpr& n, const PrimExpr& ob, int64_t nb, int64_t lanes) {
    os_ = nest::Float32Buffer(cv_.out->name + "_cl_cminor", {I64(nb * pp_ * kLanes)}, "global");
    ot_ = nest::Float32Buffer(cv_.out->name + "_cl_rows", {I64(kLanes * pp_)}, "global");
    ws_ = nest::Float32Buffer(cv_.weight->name + "_cl_block", {I64(cv_.ki * cv_.kh * cv_.kw * kLanes)}, "global");
    std::vector<Stmt> steps;
    // A ws copy holds one block: weights not in place compute block by block.
    if (!InPlace()) {
      for (int64_t b = 0; b < nb; ++b) {
        steps.push_back(Weights(ob + I64(b), lanes));
        for (int64_t p0 = 0; p0 < plane_; p0 += tp_)
          steps.push_back(Tile(n, ob + I64(b), 1, lanes, p0, std::min(tp_, plane_ - p0)));
        steps.push_back(Output(n, ob + I64(b), 0, lanes));
      }
    } else {
      for (int64_t p0 = 0; p0 < plane_; p0 += tp_) steps.push_back(Tile(n, ob, nb, lanes, p0, std::min(tp_, plane_ - p0)));
      for (int64_t b = 0; b < nb; ++b) steps.push_back(Output(n, ob, b, lanes));
    }
    Stmt body = Seq(steps);
    body = std::make_shared<AllocateNode>(ot_, body);
    body = std::make_shared<AllocateNode>(os_, body);
    if (!InPlace()) body = std::make_shared<AllocateNode>(ws_, body);
    return body;
  }

  const ConvNest& cv_;
  int threads_;
  int64_t plane_, full_ = 0, rest_ = 0, tp_ = 0, pp_ = 0;
  int64_t nb_ = 1;  // blocks a task (and a tile, with weights in place)
  Buffer os_, ot_, ws_;
};

}  // namespace

bool ChannelLanesApply(const ConvNest& cv) {
  const bool weights = cv.wblock == 0 || (cv.wblock <= kLanes && kLanes % cv.wblock == 0 && cv.o % cv.wblock == 0);
  return cv.groups == 1 && cv.ch == cv.ki && cv.n > 0 && cv.o > 0 && cv.ki > 0 && cv.ho > 0 && cv.wo > 0 &&
         cv.ho * cv.wo <= kMaxChannelLaneLegalPixels && cv.kh * cv.kw <= kMaxChannelLaneTaps && weights && Float32Plain(cv.data, 4) &&
         Float32Plain(cv.out, 4) && cv.weight->dtype == DType::Float32() && Dim(cv.data, 0) == cv.n;
}

}  // namespace conv

namespace {

using namespace ir;  // NOLINT

// The rule: weights packed for this kernel (the packing pass asked
// ChannelLanesRuleTakes of the same geometry).
bool Takes(const conv::ConvNest& cv, const ScheduleKnobs& knobs) {
  const int64_t mode = knobs.Get("conv.channel_lanes");
  if (mode == 2 || !conv::ChannelLanesApply(cv)) return false;
  return mode == 1 || (cv.wblock == kLanes && ChannelLanesRuleTakes(cv.o, cv.ki, cv.kh, cv.kw, cv.ho, cv.wo, cv.groups));
}

class Rewriter : public StmtExprMutator {
 public:
  Rewriter(int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      conv::ConvNest cv;
      if (conv::MatchConv(s, &cv) && Takes(cv, knobs_)) {
        changed = true;
        return conv::Kernel(cv, threads_, knobs_).Build();
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int threads_;
  ScheduleKnobs knobs_;
};

}  // namespace

PrimFunc ScheduleChannelLaneConvs(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  const int64_t mode = knobs.Get("conv.channel_lanes");
  if (mode == 2) return func;
  // The rule gives way to a kernel asked for by its own knob (those
  // schedules run after this one and would find no conv nest left).
  if (mode == 0 && (knobs.Get("conv.im2col") > 0 || knobs.Get("conv.border_split") == 1)) return func;
  Rewriter r(num_threads_hint, knobs);
  Stmt body = r.MutateStmt(func->body);
  if (!r.changed) return func;
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
