#include "compiler/tir/conv_border_split_schedule.h"

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
using conv::Max;
using conv::Min;
using conv::Mod;

constexpr int64_t kLanes = 16;
// Accumulator vectors of a tile by the rule (of AVX-512's 32 registers, the
// rest for the input vectors and broadcast weights), as the direct kernel.
constexpr int64_t kAccumulators = 24;
// The widest tile: explicit vectors go up to 64 lanes (vector_loop.h).
constexpr int64_t kMaxColumns = 64;
// A border tile's copy (input channels x kernel rows x its columns) at most.
constexpr int64_t kMaxCopyBytes = 1 << 20;
// Kernel columns up to this many are unrolled one by one (each skipped when
// it reads only padding in a border tile); wider kernels keep a loop.
constexpr int64_t kMaxUnrolledTaps = 16;

// The output lines and the taps across and along them.
struct Lines {
  int64_t count = 1, len = 1;             // lines per image, points per line
  int64_t kh = 1, dh = 1, pt = 0, h = 1;  // across lines: kernel rows, dilation, padding, input rows
  int64_t kw = 1, dw = 1, pl = 0, w = 1;  // along a line, in input elements
  bool flat = false;                      // the plane as one line
};

// A K x 1 kernel without column padding reads rows as wide as the output's,
// so the plane is one line whose taps are W apart (a 7 x 1 conv over 24
// columns: tiles of 48 points instead of a 24-point part vector per row).
Lines LinesOf(const ConvNest& cv) {
  Lines l;
  if (cv.kw == 1 && cv.pl == 0 && cv.wo == cv.w && cv.kh > 1 && cv.ho > 1) {
    l.len = cv.ho * cv.wo;
    l.kw = cv.kh;
    l.dw = cv.dh * cv.w;
    l.pl = cv.pt * cv.w;
    l.w = cv.h * cv.w;
    l.flat = true;
    return l;
  }
  l.count = cv.ho;
  l.len = cv.wo;
  l.kh = cv.kh;
  l.dh = cv.dh;
  l.pt = cv.pt;
  l.h = cv.h;
  l.kw = cv.kw;
  l.dw = cv.dw;
  l.pl = cv.pl;
  l.w = cv.w;
  return l;
}

int64_t TileRows(const ConvNest& cv, const ScheduleKnobs& knobs) {
  if (cv.wblock > 0) return cv.wblock;  // one block of the packed weight
  int64_t mr = knobs.Get("conv.mr");
  return std::min<int64_t>(cv.o, mr > 0 ? std::min<int64_t>(mr, 8) : 8);
}

int64_t TileColumns(const ConvNest& cv, const Lines& l, const ScheduleKnobs& knobs) {
  int64_t nr = knobs.Get("conv.nr");
  if (nr > 0) {
    nr = std::min(kMaxColumns, std::max(kLanes, nr / kLanes * kLanes));
  } else {
    nr = std::min(kMaxColumns, kLanes * std::max<int64_t>(1, kAccumulators / TileRows(cv, knobs)));
  }
  return std::min(nr, l.len);
}

class Kernel {
 public:
  Kernel(const ConvNest& cv, int threads, const ScheduleKnobs& knobs)
      : cv_(cv), l_(LinesOf(cv)), threads_(threads), mr_(TileRows(cv, knobs)), nr_(TileColumns(cv, l_, knobs)) {
    ew_ = nr_ + (l_.kw - 1) * l_.dw;
  }

  static bool Fits(const ConvNest& cv, const ScheduleKnobs& knobs) {
    Lines l = LinesOf(cv);
    int64_t ew = TileColumns(cv, l, knobs) + (l.kw - 1) * l.dw;
    return l.len >= kLanes && cv.ki * l.kh * ew * 4 <= kMaxCopyBytes;
  }

  Stmt Build() {
    Var t = MakeVar("line_task");
    // With two threads or more and fewer than two lines a thread (a 1-D
    // conv, a flat plane), each line's output-channel blocks are cut into
    // parts, one task each (each copies the line's border rows again).
    int64_t lines = cv_.n * l_.count, full = cv_.o / mr_;
    parts_ = threads_ >= 2 && lines < 2 * threads_ ? std::max<int64_t>(1, std::min<int64_t>(full, 2 * threads_)) : 1;
    int64_t tasks = lines * parts_;
    PrimExpr line = parts_ == 1 ? PrimExpr(t) : Div(PrimExpr(t), I64(parts_));
    part_ = parts_ == 1 ? I64(0) : Mod(PrimExpr(t), I64(parts_));
    n_ = cv_.n == 1 ? I64(0) : Div(line, I64(l_.count));
    y_ = l_.count == 1 ? I64(0) : cv_.n == 1 ? line : Mod(line, I64(l_.count));
    KernelRows();
    copy_ = nest::Float32Buffer(cv_.data->name + "_border", {I64(cv_.ki * l_.kh * ew_)}, "global");
    // Column tiles of nr_ points, the last one narrower; runs of interior
    // tiles of full width are one loop.
    std::vector<Stmt> body;
    bool any_border = false;
    int64_t tiles = CeilDiv(l_.len, nr_);
    for (int64_t i = 0; i < tiles;) {
      int64_t xs = i * nr_, wd = std::min(nr_, l_.len - xs);
      if (Border(xs, wd) || wd != nr_) {
        any_border = any_border || Border(xs, wd);
        body.push_back(TileAt(I64(xs), xs, wd, Border(xs, wd)));
        ++i;
        continue;
      }
      int64_t j = i;
      while (j < tiles && (j + 1) * nr_ <= l_.len && !Border(j * nr_, nr_)) ++j;
      if (j - i == 1) {
        body.push_back(TileAt(I64(xs), xs, nr_, false));
      } else {
        Var ti = MakeVar("tile");
        body.push_back(MakeFor(ti, I64(j - i), ForKind::kSerial, TileAt(I64(xs) + PrimExpr(ti) * I64(nr_), -1, nr_, false)));
      }
      i = j;
    }
    Stmt task = Seq(body);
    if (any_border) task = std::make_shared<AllocateNode>(copy_, task);
    return MakeFor(t, I64(tasks), threads_ >= 2 && tasks >= 2 ? ForKind::kParallel : ForKind::kSerial, task);
  }

 private:
  // Whether some tap of some lane of the tile [xs, xs + wd) reads outside
  // the line's input.
  bool Border(int64_t xs, int64_t wd) const {
    return xs - l_.pl < 0 || xs + wd - 1 + (l_.kw - 1) * l_.dw - l_.pl >= l_.w;
  }

  // Lanes [lo, hi) of a tile at xs whose kernel column kx reads inside.
  void ValidLanes(int64_t xs, int64_t wd, int64_t kx, int64_t* lo, int64_t* hi) const {
    int64_t off = xs + kx * l_.dw - l_.pl;
    *lo = std::max<int64_t>(0, -off);
    *hi = std::min<int64_t>(wd, l_.w - off);
  }

  // The kernel rows whose input row exists on line y_: [ky0_, ky1_), static
  // where no line has padding rows on that side.
  void KernelRows() {
    int64_t last = (l_.count - 1) + (l_.kh - 1) * l_.dh - l_.pt;  // input row of the last line's last tap
    if (l_.count == 1) {
      int64_t lo = std::max<int64_t>(0, CeilDiv(l_.pt, l_.dh));
      int64_t hi = std::min<int64_t>(l_.kh, (l_.h - 1 + l_.pt) >= 0 ? (l_.h - 1 + l_.pt) / l_.dh + 1 : 0);
      ky0_ = I64(lo);
      rows_ = I64(std::max<int64_t>(0, hi - lo));
      return;
    }
    ky0_ = l_.pt > 0 ? Max(I64(0), Div(I64(l_.pt + l_.dh - 1) - y_, I64(l_.dh))) : I64(0);
    PrimExpr ky1 = last <= l_.h - 1 ? I64(l_.kh) : Min(I64(l_.kh), Div(I64(l_.h - 1 + l_.pt) - y_, I64(l_.dh)) + I64(1));
    rows_ = l_.pt > 0 ? ky1 - ky0_ : ky1;
  }

  std::vector<PrimExpr> DataAt(const PrimExpr& c, const PrimExpr& ky, const PrimExpr& ix) const {
    if (l_.flat) return {n_, c, I64(0), ix};
    return {n_, c, y_ + ky * I64(l_.dh) - I64(l_.pt), ix};
  }
  std::vector<PrimExpr> WeightAt(const PrimExpr& ob, const PrimExpr& o, const PrimExpr& ii, const PrimExpr& c,
                                 const PrimExpr& ky, const PrimExpr& kx) const {
    PrimExpr r = l_.flat ? kx : ky, s = l_.flat ? I64(0) : kx;
    if (cv_.wblock > 0) return {ob, c, r, s, ii};
    return {o, c, r, s};
  }
  std::vector<PrimExpr> OutAt(const PrimExpr& o, const PrimExpr& x) const {
    if (l_.flat) return {n_, o, I64(0), x};
    return {n_, o, y_, x};
  }
  PrimExpr CopyAt(const PrimExpr& c, const PrimExpr& ky, const PrimExpr& e) const {
    return (c * I64(l_.kh) + ky) * I64(ew_) + e;
  }

  // The input a border tile at xs reads, kernel rows [ky0_, ky0_ + rows_)
  // of each channel: copy_[c, ky, e] = X[.., xs + e - pl] inside the row,
  // 0 outside (three static ranges).
  Stmt Copy(int64_t xs, int64_t wd) {
    DType f32 = DType::Float32();
    int64_t ew = wd + (l_.kw - 1) * l_.dw;
    int64_t a = std::min(ew, std::max<int64_t>(0, l_.pl - xs));
    int64_t b = std::max(a, std::min(ew, l_.w + l_.pl - xs));
    Var c = MakeVar("bc"), kyv = MakeVar("bky");
    PrimExpr ky = ky0_ + PrimExpr(kyv);
    std::vector<Stmt> parts;
    auto range = [&](const std::string& name, int64_t from, int64_t to, bool data) {
      if (to <= from) return;
      Var e = MakeVar(name);
      PrimExpr at = I64(from) + PrimExpr(e);
      PrimExpr v = data ? Load(cv_.data, DataAt(PrimExpr(c), ky, I64(xs - l_.pl) + at)) : FloatImm(f32, 0);
      parts.push_back(MakeFor(e, I64(to - from), ForKind::kVectorized, Store(copy_, v, {CopyAt(PrimExpr(c), ky, at)})));
    };
    range("be0", 0, a, false);
    range("be", a, b, true);
    range("be1", b, ew, false);
    return MakeFor(c, I64(cv_.ki), ForKind::kSerial, MakeFor(kyv, rows_, ForKind::kSerial, Seq(parts)));
  }

  // Output channels [o0, o0 + rows) (block ob of a packed weight) at
  // columns [xs, xs + wd) of line y_; xs_static < 0 for an interior tile of
  // a loop (its columns are all inside).
  Stmt Compute(const PrimExpr& ob, const PrimExpr& o0, int64_t rows, const PrimExpr& xs, int64_t xs_static, int64_t wd,
               bool border) {
    DType f32 = DType::Float32();
    Buffer acc = nest::Float32Buffer("acc", {I64(rows), I64(wd)}, "local");
    auto grid = [&](const std::string& tag, const std::function<Stmt(const PrimExpr&, const PrimExpr&)>& body) {
      Var ii = MakeVar("ii" + tag), jj = MakeVar("jj" + tag);
      return MakeFor(ii, I64(rows), ForKind::kUnrolled,
                     MakeFor(jj, I64(wd), ForKind::kVectorized, body(PrimExpr(ii), PrimExpr(jj))));
    };
    std::vector<Stmt> steps;
    steps.push_back(grid("_init", [&](const PrimExpr& ii, const PrimExpr& jj) {
      return Store(acc, FloatImm(f32, 0), {ii, jj});
    }));
    Var c = MakeVar("c"), kyv = MakeVar("ky");
    PrimExpr ky = ky0_ + PrimExpr(kyv);
    auto tap = [&](const PrimExpr& kx) {
      return grid("", [&](const PrimExpr& ii, const PrimExpr& jj) {
        PrimExpr w = Load(cv_.weight, WeightAt(ob, o0 + ii, ii, PrimExpr(c), ky, kx));
        PrimExpr x = border ? Load(copy_, {CopyAt(PrimExpr(c), ky, jj + kx * I64(l_.dw))})
                            : Load(cv_.data, DataAt(PrimExpr(c), ky, xs + jj + kx * I64(l_.dw) - I64(l_.pl)));
        PrimExpr call(std::make_shared<CallNode>(f32, "fma", std::vector<PrimExpr>{w, x, Load(acc, {ii, jj})}));
        return Store(acc, call, {ii, jj});
      });
    };
    Stmt taps;
    if (l_.kw <= kMaxUnrolledTaps) {
      // Each kernel column on its own; in a border tile only those that
      // some lane reads inside the row.
      std::vector<Stmt> cols;
      for (int64_t kx = 0; kx < l_.kw; ++kx) {
        if (border) {
          int64_t lo = 0, hi = 0;
          ValidLanes(xs_static, wd, kx, &lo, &hi);
          if (hi <= lo) continue;
        }
        cols.push_back(tap(I64(kx)));
      }
      if (cols.empty()) {
        taps = Stmt();
      } else {
        taps = Seq(cols);
      }
    } else {
      Var kx = MakeVar("kx");
      taps = MakeFor(kx, I64(l_.kw), ForKind::kSerial, tap(PrimExpr(kx)));
    }
    if (taps) {
      Stmt rows_loop = MakeFor(kyv, rows_, ForKind::kSerial, taps);
      steps.push_back(MakeFor(c, I64(cv_.ki), ForKind::kSerial, rows_loop));
    }
    steps.push_back(grid("_out", [&](const PrimExpr& ii, const PrimExpr& jj) {
      return Store(cv_.out, Load(acc, {ii, jj}), OutAt(o0 + ii, xs + jj));
    }));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  // Every output-channel block at the tile [xs, xs + wd), after the copy of
  // its input when it is a border tile.
  Stmt TileAt(const PrimExpr& xs, int64_t xs_static, int64_t wd, bool border) {
    std::vector<Stmt> steps;
    if (border) steps.push_back(Copy(xs_static, wd));
    int64_t full = cv_.o / mr_, rest = cv_.o % mr_;
    if (full > 0) {
      // Blocks [b0, b1) of this task's part.
      Var ot = MakeVar("ot");
      PrimExpr b0 = parts_ == 1 ? I64(0) : Div(part_ * I64(full), I64(parts_));
      PrimExpr b1 = parts_ == 1 ? I64(full) : Div((part_ + I64(1)) * I64(full), I64(parts_));
      PrimExpr ob = parts_ == 1 ? PrimExpr(ot) : b0 + PrimExpr(ot);
      steps.push_back(MakeFor(ot, parts_ == 1 ? b1 : b1 - b0, ForKind::kSerial,
                              Compute(ob, ob * I64(mr_), mr_, xs, xs_static, wd, border)));
    }
    if (rest > 0) {
      Stmt last = Compute(I64(full), I64(full * mr_), rest, xs, xs_static, wd, border);
      if (parts_ > 1) last = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, part_, I64(parts_ - 1)), last, nullptr);
      steps.push_back(last);
    }
    return Seq(steps);
  }

  const ConvNest& cv_;
  Lines l_;
  int threads_ = 1;
  int64_t mr_ = 8, nr_ = 48, ew_ = 48, parts_ = 1;
  PrimExpr n_, y_, part_, ky0_, rows_;
  Buffer copy_;
};

// The rule (conv.border_split 0): kernels whose taps all lie along the
// line (1-D convs, 1 x N, and K x 1 as one flat line) over lines of four
// vectors or more. There the tiles are full 16-lane vectors but for one
// tail, and leaving out the direct kernel's packed copy of the input (a
// halo copy, or shift planes) pays: 1.09-1.14x on a 1-D conv of 500
// points, 1 x 7 over 96 columns and 7 x 1 over 24. Not 2-D kernels over
// short rows (3 x 3 over 28 columns: tiles of 16 + 12 lanes, each row's
// taps re-read from three rows in place, 0.92x), nor 1 x 1 convs (no
// packing to leave out), nor weights beyond a quarter of a core's L2: each
// column tile runs every output-channel block, so the whole weight is read
// again per tile (a 5 x 1 conv of 256 -> 512 channels, 2.5 MiB of weights,
// 0.96x), where the direct kernel keeps one block's weights across tiles.
constexpr int64_t kRuleMaxWeightBytes = 256 << 10;

bool RuleTakes(const ConvNest& cv) {
  Lines l = LinesOf(cv);
  return l.kh == 1 && l.kw > 1 && l.len >= 4 * kLanes && cv.o * cv.ki * cv.kh * cv.kw * 4 <= kRuleMaxWeightBytes;
}

bool Handles(const ConvNest& cv, const ScheduleKnobs& knobs) {
  const int64_t mode = knobs.Get("conv.border_split");
  if (mode == 2 || (mode == 0 && !RuleTakes(cv))) return false;
  return cv.groups == 1 && cv.sh == 1 && cv.sw == 1 && cv.ch == cv.ki && cv.n > 0 && cv.o > 0 && cv.ho > 0 &&
         cv.wo > 0 && cv.ki > 0 && (cv.wblock == 0 || (cv.wblock <= 8 && cv.o % cv.wblock == 0)) &&
         conv::Float32Plain(cv.data, 4) && conv::Dim(cv.data, 0) == cv.n && Kernel::Fits(cv, knobs);
}

class Rewriter : public StmtExprMutator {
 public:
  Rewriter(int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {}
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (As<ForNode>(s) != nullptr) {
      ConvNest cv;
      if (MatchConv(s, &cv) && Handles(cv, knobs_)) {
        changed = true;
        return Kernel(cv, threads_, knobs_).Build();
      }
    }
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  int threads_;
  ScheduleKnobs knobs_;
};

}  // namespace

PrimFunc ScheduleBorderSplitConvs(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  const int64_t mode = knobs.Get("conv.border_split");
  if (mode != 0 && mode != 1) return func;  // 2: never
  // The rule gives way to a kernel asked for by its own knob (im2col panels
  // run after this schedule and would find no conv nest left).
  if (mode == 0 && knobs.Get("conv.im2col") > 0) return func;
  Rewriter r(num_threads_hint, knobs);
  Stmt body = r.MutateStmt(func->body);
  if (!r.changed) return func;
  return WithBody(func, body);
}

}  // namespace tir
}  // namespace kiln
