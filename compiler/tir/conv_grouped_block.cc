#include "compiler/tir/conv_grouped_block.h"

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
namespace conv {

namespace {

constexpr int64_t kLanes = 16;
// The band's input window at most this big. Every tap of every tile reads
// it (broadcasts, which L2 serves at the FMAs' pace), and each band copies
// its halo rows again: 64 / 16 3x3/2 at 112^2 (layer alone, 1 thread, best
// of a loaded machine) took 300 us with windows of 40 KiB (bands of 2
// rows), 293 with 96 KiB (4), 290 with 160 KiB (8); 144 / 16 3x3/2 at 56^2
// 168, 167, 167.
constexpr int64_t kMaxGroupedWindowBytes = 160 * 1024;
// Pixels of a register tile: one 16-channel accumulator each. LLVM keeps
// the broadcast inputs that neighbouring taps share in registers too: with
// 24 (7^2 in tiles of 3 rows) the FMA loop spilled, and 784 / 16 at 7^2
// took 54 us against 51.5 with 16 (tiles of 2 rows).
constexpr int64_t kMaxTilePixels = 16;
// Tile columns at most this many: wider rows are cut into equal pieces.
constexpr int64_t kMaxTileColumns = 16;
// Sub-bands of at least this many output pixels (of the band's rows):
// each is transposed and stored right after its tiles, so its stores
// (which in a model miss every cache) drain while the next sub-band
// computes. Storing a whole band at its end took a quarter of the kernel
// in RegNetY-800MF (144 / 16 at 28^2: 157 us in the model, 139 alone).
constexpr int64_t kMinSubBandPixels = 64;

int64_t WindowRows(const ConvNest& cv, int64_t band_rows) { return (band_rows - 1) * cv.sh + cv.kh; }
int64_t WindowCols(const ConvNest& cv) { return (cv.wo - 1) * cv.sw + cv.kw; }

std::vector<int64_t> ChunkStarts(int64_t n) { return nest::ChunkStarts(n, kLanes); }
using nest::Fma;

class Kernel {
 public:
  explicit Kernel(const ConvNest& cv)
      : cv_(cv), rb_(GroupedBlockBandRows(cv)), wr_(WindowRows(cv, rb_)), wp_(WindowCols(cv)) {
    nb_ = cv.ho / rb_;
    // Sub-bands: the band's rows in pieces of at least 64 pixels (or the
    // band), each stored right after its tiles (see Output).
    sb_ = rb_;
    for (int64_t r = 1; r < rb_; ++r) {
      if (rb_ % r == 0 && r * cv.wo >= kMinSubBandPixels) {
        sb_ = r;
        break;
      }
    }
    bp_ = sb_ * cv.wo;
    // Column tiles: the row in equal pieces of at most kMaxTileColumns (56:
    // 4 x 14), the last moved back to end at Wo when they do not divide it;
    // then as many rows as keep kMaxTilePixels accumulators, and one tile of
    // the rows left.
    int64_t ncol = CeilDiv(cv.wo, kMaxTileColumns);
    cw_ = CeilDiv(cv.wo, ncol);
    ncol_ = CeilDiv(cv.wo, cw_);
    tr_ = std::max<int64_t>(1, std::min(sb_, kMaxTilePixels / cw_));
  }

  Stmt Build() {
    const int64_t groups = cv_.groups;
    Var t = MakeVar("gb_task");
    PrimExpr tv(t);
    n_ = cv_.n == 1 ? I64(0) : Div(tv, I64(groups * nb_));
    g_ = Mod(Div(tv, I64(nb_)), I64(groups));
    y0_ = Mod(tv, I64(nb_)) * I64(rb_);
    // The next task's image, group and first row, for PrefetchNext.
    PrimExpr next = tv + I64(1);
    next_n_ = cv_.n == 1 ? I64(0) : Min(Div(next, I64(groups * nb_)), I64(cv_.n - 1));
    next_g_ = Mod(Div(next, I64(nb_)), I64(groups));
    next_y0_ = Mod(next, I64(nb_)) * I64(rb_);
    xw_ = nest::Float32Buffer(cv_.data->name + "_gwin", {I64(cv_.ki * wr_ * wp_)}, "global");
    ws_ = nest::Float32Buffer(cv_.weight->name + "_gblock", {I64(cv_.ki * cv_.kh * cv_.kw * kLanes)}, "global");
    os_ = nest::Float32Buffer(cv_.out->name + "_cminor", {I64(bp_ * kLanes)}, "global");
    ot_ = nest::Float32Buffer(cv_.out->name + "_rows", {I64(kLanes * bp_)}, "global");
    std::vector<Stmt> steps = {Window(), Weights()};
    // Per sub-band: its full row tiles, the tile of the rows left, then its
    // output. `index` numbers the task's full tiles (PrefetchNext).
    const int64_t full = sb_ / tr_, rest = sb_ % tr_;
    Var sbv = MakeVar("gb_sub"), rt = MakeVar("gb_rows"), ct = MakeVar("gb_cols");
    PrimExpr s0 = PrimExpr(sbv) * I64(sb_);
    PrimExpr x0 = Min(PrimExpr(ct) * I64(cw_), I64(cv_.wo - cw_));
    PrimExpr index = (PrimExpr(sbv) * I64(full) + PrimExpr(rt)) * I64(ncol_) + PrimExpr(ct);
    std::vector<Stmt> sub;
    sub.push_back(MakeFor(rt, I64(full), ForKind::kSerial,
                          MakeFor(ct, I64(ncol_), ForKind::kSerial,
                                  Tile(s0, PrimExpr(rt) * I64(tr_), x0, tr_, index))));
    if (rest > 0) {
      Var ct2 = MakeVar("gb_cols_rest");
      PrimExpr x1 = Min(PrimExpr(ct2) * I64(cw_), I64(cv_.wo - cw_));
      sub.push_back(MakeFor(ct2, I64(ncol_), ForKind::kSerial, Tile(s0, I64(full * tr_), x1, rest)));
    }
    sub.push_back(Output(s0));
    steps.push_back(MakeFor(sbv, I64(rb_ / sb_), ForKind::kSerial, Seq(sub)));
    Stmt body = Seq(steps);
    for (const Buffer& b : {ot_, os_, ws_, xw_}) body = std::make_shared<AllocateNode>(b, body);
    return MakeFor(t, I64(cv_.n * groups * nb_), ForKind::kParallel, body);
  }

 private:
  // A vector loop of `lanes`: body(l), inside a one-trip unrolled loop (the
  // code generator's explicit vectors).
  template <typename F>
  Stmt Lanes(const std::string& tag, int64_t lanes, F body) {
    Var u = MakeVar("u" + tag), l = MakeVar("l" + tag);
    return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(l, I64(lanes), ForKind::kVectorized, body(PrimExpr(l))));
  }

  // xw[c][r][ix] = X[n, g * ki + c, y0 * sh - pt + r, ix - pl], zeros
  // outside the input. Row r is a static range of inside columns (one
  // vector copy) and zeros either side; rows outside the input are zeros.
  Stmt Window() {
    const int64_t k0 = std::min(wp_, std::max<int64_t>(0, cv_.pl));
    const int64_t k1 = std::max(k0, std::min(wp_, cv_.pl + cv_.w));
    Var c = MakeVar("gw_c"), r = MakeVar("gw_r");
    PrimExpr row0 = (PrimExpr(c) * I64(wr_) + PrimExpr(r)) * I64(wp_);
    PrimExpr iy = y0_ * I64(cv_.sh) + PrimExpr(r) - I64(cv_.pt);
    PrimExpr ch = g_ * I64(cv_.ki) + PrimExpr(c);
    auto zeros = [&](int64_t from, int64_t count) -> Stmt {
      if (count <= 0) return nullptr;
      return Lanes("_gz", count, [&](const PrimExpr& l) {
        return Store(xw_, FloatImm(DType::Float32(), 0), {row0 + I64(from) + l});
      });
    };
    std::vector<Stmt> inside;
    if (Stmt z = zeros(0, k0)) inside.push_back(z);
    if (k1 > k0) {
      inside.push_back(Lanes("_gc", k1 - k0, [&](const PrimExpr& l) {
        return Store(xw_, Load(cv_.data, {n_, ch, iy, I64(k0 - cv_.pl) + l}), {row0 + I64(k0) + l});
      }));
    }
    if (Stmt z = zeros(k1, wp_ - k1)) inside.push_back(z);
    PrimExpr in = MakeBinary(TirKind::kAnd, MakeBinary(TirKind::kGE, iy, I64(0)), MakeBinary(TirKind::kLT, iy, I64(cv_.h)));
    Stmt row = std::make_shared<IfThenElseNode>(in, Seq(inside), zeros(0, wp_));
    return MakeFor(c, I64(cv_.ki), ForKind::kSerial, MakeFor(r, I64(wr_), ForKind::kSerial, row));
  }

  // ws[((c * kh + ky) * kw + kx) * 16 + o] = W[g * 16 + o, c, ky, kx]: from
  // a packed weight [O / b, I, KH, KW, b] its 16 / b runs of b floats a
  // tap; from OIHW one float at a time.
  Stmt Weights() {
    const int64_t b = cv_.wblock;
    Var k = MakeVar("gw_tap");
    const int64_t taps = cv_.ki * cv_.kh * cv_.kw;
    PrimExpr kv(k);
    PrimExpr c = Div(kv, I64(cv_.kh * cv_.kw)), ky = Mod(Div(kv, I64(cv_.kw)), I64(cv_.kh)), kx = Mod(kv, I64(cv_.kw));
    Stmt body;
    if (b > 0) {
      Var blk = MakeVar("gw_blk");
      PrimExpr ob = g_ * I64(kLanes / b) + PrimExpr(blk);
      body = MakeFor(blk, I64(kLanes / b), ForKind::kUnrolled, Lanes("_gwb", b, [&](const PrimExpr& l) {
        return Store(ws_, Load(cv_.weight, {ob, c, ky, kx, l}), {kv * I64(kLanes) + PrimExpr(blk) * I64(b) + l});
      }));
    } else {
      Var o = MakeVar("gw_o");
      body = MakeFor(o, I64(kLanes), ForKind::kUnrolled,
                     Store(ws_, Load(cv_.weight, {g_ * I64(kLanes) + PrimExpr(o), c, ky, kx}),
                           {kv * I64(kLanes) + PrimExpr(o)}));
    }
    return MakeFor(k, I64(taps), ForKind::kSerial, body);
  }

  // The tile of `rows` band rows from r0 and cw_ columns from x0: an
  // accumulator of 16 channels a pixel, the input channels in a loop and
  // the kernel's taps unrolled; stored channel-minor into os.
  // Hints for window row `r` (clamped to the last) of the next task,
  // input channel `c`: one a cache line of the input row. The window copy
  // reads the input from L3 or memory (RegNetY's 64 channels at 112^2:
  // 3.2 MiB); its rows are fetched while this task's tiles compute.
  Stmt PrefetchNext(const PrimExpr& c, const PrimExpr& r) {
    PrimExpr iy = next_y0_ * I64(cv_.sh) - I64(cv_.pt) + Min(r, I64(wr_ - 1));
    iy = Max(Min(iy, I64(cv_.h - 1)), I64(0));
    PrimExpr ch = next_g_ * I64(cv_.ki) + c;
    std::vector<Stmt> hints;
    auto hint = [&](PrimExpr at) {
      hints.push_back(std::make_shared<EvaluateNode>(
          PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{std::move(at)}))));
    };
    for (int64_t f = 0; f < cv_.w; f += 16) hint(Load(cv_.data, {next_n_, ch, iy, I64(f)}));
    return Seq(hints);
  }

  // Hints for the next task's weights of input channel `c` (a packed
  // weight: 16 / b rows of kh * kw * b floats), in the task's first tile.
  // In a model the weights come from L3 or memory (the conv's own 184 KiB
  // at 320 channels: ConvKernel prefetches them too, kPrefetchAheadBytes);
  // without the hints RegNetY's 320 / 16 convs at 14^2 took 89 us in the
  // model against 77 alone.
  Stmt PrefetchNextWeights(const PrimExpr& c) {
    const int64_t b = cv_.wblock;
    if (b == 0) return nullptr;
    std::vector<Stmt> hints;
    const int64_t row = cv_.kh * cv_.kw * b;
    for (int64_t blk = 0; blk < kLanes / b; ++blk) {
      for (int64_t f = 0; f < row; f += 16) {
        PrimExpr at = Load(cv_.weight, {next_g_ * I64(kLanes / b) + I64(blk), c, I64(f / (cv_.kw * b)),
                                        I64(f / b % cv_.kw), I64(f % b)});
        hints.push_back(std::make_shared<EvaluateNode>(
            PrimExpr(std::make_shared<CallNode>(DType::Int32(), "prefetch", std::vector<PrimExpr>{at}))));
      }
    }
    return Seq(hints);
  }

  Stmt Tile(const PrimExpr& s0, const PrimExpr& r0, const PrimExpr& x0, int64_t rows,
             const PrimExpr& index = PrimExpr()) {
    DType f32 = DType::Float32();
    const int64_t pixels = rows * cw_;
    Buffer acc = nest::Float32Buffer("acc", {I64(pixels), I64(kLanes)}, "local");
    auto each = [&](const std::string& tag, const std::function<Stmt(int64_t, const PrimExpr&)>& body) {
      std::vector<Stmt> s;
      Var l = MakeVar("l" + tag);
      for (int64_t p = 0; p < pixels; ++p) s.push_back(body(p, PrimExpr(l)));
      Var u = MakeVar("u" + tag);
      return MakeFor(u, I64(1), ForKind::kUnrolled, MakeFor(l, I64(kLanes), ForKind::kVectorized, Seq(s)));
    };
    std::vector<Stmt> steps;
    steps.push_back(each("_gi", [&](int64_t p, const PrimExpr& l) { return Store(acc, FloatImm(f32, 0), {I64(p), l}); }));
    Var c = MakeVar("gt_c");
    std::vector<Stmt> taps;
    for (int64_t ky = 0; ky < cv_.kh; ++ky) {
      for (int64_t kx = 0; kx < cv_.kw; ++kx) {
        taps.push_back(each("_gt", [&](int64_t p, const PrimExpr& l) {
          const int64_t r = p / cw_, x = p % cw_;
          PrimExpr w = Load(ws_, {(PrimExpr(c) * I64(cv_.kh * cv_.kw) + I64(ky * cv_.kw + kx)) * I64(kLanes) + l});
          PrimExpr at = (PrimExpr(c) * I64(wr_) + (s0 + r0) * I64(cv_.sh) + I64(r * cv_.sh + ky)) * I64(wp_) +
                        x0 * I64(cv_.sw) + I64(x * cv_.sw + kx);
          return Store(acc, Fma(w, Load(xw_, {at}), Load(acc, {I64(p), l})), {I64(p), l});
        }));
      }
    }
    // Full tiles (`index` the tile's number in the task) prefetch one
    // window row of the next task each.
    if (index.get() != nullptr) {
      taps.insert(taps.begin(), PrefetchNext(PrimExpr(c), index));
      if (Stmt w = PrefetchNextWeights(PrimExpr(c))) {
        taps.insert(taps.begin(), std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, index, I64(0)), w, nullptr));
      }
    }
    steps.push_back(MakeFor(c, I64(cv_.ki), ForKind::kSerial, Seq(taps)));
    steps.push_back(each("_go", [&](int64_t p, const PrimExpr& l) {
      const int64_t r = p / cw_, x = p % cw_;
      PrimExpr at = ((r0 + I64(r)) * I64(cv_.wo) + x0 + I64(x)) * I64(kLanes) + l;
      return Store(os_, Load(acc, {I64(p), l}), {at});
    }));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // os transposed into one run of the band's pixels a channel (ot[o][p]),
  // then each channel's band rows stored into its NCHW plane as whole
  // vectors: rows of fewer than 16 pixels as the depthwise channel block
  // stores them (dw::OutputStores), wider ones a vector loop a row.
  Stmt Output(const PrimExpr& s0) {
    std::vector<Stmt> parts;
    for (int64_t p0 : ChunkStarts(bp_)) {
      std::vector<PrimExpr> args{Load(os_, {I64(p0 * kLanes)}), I64(kLanes), Load(ot_, {I64(0)})};
      for (int64_t r = 0; r < kLanes; ++r) args.push_back(I64(r * bp_ + p0));
      parts.push_back(std::make_shared<EvaluateNode>(
          PrimExpr(std::make_shared<CallNode>(DType::Int32(), "transpose16", std::move(args)))));
    }
    Var o = MakeVar("gb_o");
    PrimExpr oc = g_ * I64(kLanes) + PrimExpr(o);
    std::vector<Stmt> rows;
    if (cv_.wo < kLanes) {
      for (auto [y, lanes] : dw::OutputStores(sb_, cv_.wo)) {
        rows.push_back(Lanes("_gs", lanes, [&](const PrimExpr& x) {
          PrimExpr v = Load(ot_, {PrimExpr(o) * I64(bp_) + I64(y * cv_.wo) + x});
          return Store(cv_.out, v, {n_, oc, y0_ + s0 + I64(y), x});
        }));
      }
    } else {
      Var y = MakeVar("gb_y");
      rows.push_back(MakeFor(y, I64(sb_), ForKind::kSerial, Lanes("_gs", cv_.wo, [&](const PrimExpr& x) {
        PrimExpr v = Load(ot_, {PrimExpr(o) * I64(bp_) + PrimExpr(y) * I64(cv_.wo) + x});
        return Store(cv_.out, v, {n_, oc, y0_ + s0 + PrimExpr(y), x});
      })));
    }
    parts.push_back(MakeFor(o, I64(kLanes), ForKind::kSerial, Seq(rows)));
    return Seq(parts);
  }

  const ConvNest& cv_;
  int64_t rb_, wr_, wp_;  // band rows; the window's rows and columns
  int64_t nb_ = 0, sb_ = 0, bp_ = 0;  // bands; rows and pixels of a sub-band
  int64_t cw_ = 0, ncol_ = 0, tr_ = 0;  // tile columns, column tiles a row, tile rows
  PrimExpr n_, g_, y0_;
  PrimExpr next_n_, next_g_, next_y0_;
  Buffer xw_, ws_, os_, ot_;
};

}  // namespace

int64_t GroupedBlockBandRows(const ConvNest& cv) {
  for (int64_t rows = cv.ho; rows >= 1; --rows) {
    if (cv.ho % rows != 0 || rows * cv.wo < kLanes) continue;
    if (cv.ki * WindowRows(cv, rows) * WindowCols(cv) * 4 <= kMaxGroupedWindowBytes) return rows;
  }
  return 0;
}

bool GroupedBlockApplies(const ConvNest& cv) {
  const bool weights = cv.wblock == 0 || (cv.wblock <= kLanes && kLanes % cv.wblock == 0);
  return cv.groups > 1 && cv.opg == kLanes && cv.ki >= 1 && cv.dh == 1 && cv.dw == 1 && weights &&
         cv.ch == cv.groups * cv.ki && cv.o == cv.groups * kLanes && cv.ho > 0 && cv.wo > 0 && cv.pt >= 0 &&
         cv.pl >= 0 && cv.pl < WindowCols(cv) && Float32Plain(cv.data, 4) && Float32Plain(cv.out, 4) &&
         cv.weight->dtype == DType::Float32() && GroupedBlockBandRows(cv) > 0;
}

}  // namespace conv

namespace {

using namespace ir;  // NOLINT

class GroupedRewriter : public StmtExprMutator {
 public:
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      conv::ConvNest cv;
      if (conv::MatchConv(s, &cv) && conv::GroupedBlockApplies(cv)) {
        changed = true;
        return conv::Kernel(cv).Build();
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }
};

}  // namespace

PrimFunc ScheduleGroupedBlockConvs(const PrimFunc& func, const ScheduleKnobs& knobs) {
  if (knobs.Get("conv.grouped_block") == 1) return func;
  GroupedRewriter r;
  Stmt body = r.MutateStmt(func->body);
  if (!r.changed) return func;
  return nest::WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
