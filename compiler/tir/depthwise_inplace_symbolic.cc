#include "compiler/tir/depthwise_inplace_symbolic.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace dw {

using namespace ir;  // NOLINT
using nest::ConstInt;
using nest::Fma;
using nest::I64;

namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kMaxWindow = 5;
// Output rows of a tile: 2 rows x 2 vectors, 4 chains of FMAs. Tiles of 4
// rows (and rest tiles of 3, 2, 1) ran ppocr_cls_v2 no faster (2x3x32x100,
// 5 rounds: 0.126 ms both) for twice the code per conv in the compile.
constexpr int64_t kRows = 2;
// The planes it is taken for: at most this many output rows, and rows of at
// most two tiles of two vectors.
constexpr int64_t kMaxRows = 8;
constexpr int64_t kMaxColumns = 4 * kLanes;

PrimExpr S(const PrimExpr& e) { return arith::Simplify(e); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b))); }
PrimExpr Mod(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kFloorMod, std::move(a), std::move(b))); }
PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Le(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLE, std::move(a), std::move(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr Eq(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kEQ, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAnd, std::move(a), std::move(b)); }

Stmt For(const Var& v, const PrimExpr& extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), S(extent), kind, std::move(body));
}

// wo - w, when a constant (column stride 1: pl + pr - kw + 1).
bool WidthDelta(const DepthwiseNest& d, int64_t* delta) {
  // ConstInt points into its argument: the simplified difference is named.
  const PrimExpr diff = S(d.loops[3]->extent - d.data->shape[3]);
  const int64_t* c = ConstInt(diff);
  if (c == nullptr) return false;
  *delta = *c;
  return true;
}

class Kernel {
 public:
  explicit Kernel(const DepthwiseNest& d) : d_(d) {
    ho_ = d.loops[2]->extent;
    wo_ = d.loops[3]->extent;
    h_ = d.data->shape[2];
    w_ = d.data->shape[3];
    WidthDelta(d, &delta_);
  }

  Stmt Build() {
    const auto& L = d_.loops;
    Var t = MakeVar("dwi_task");
    const TaskPoint p = TaskImageChannel(d_, t);
    n_ = p.n, ch_ = p.ch, xn_ = p.xn, xc_ = p.xc;
    // Tiles of kRows rows, then the last row when the count is odd.
    Var rt = MakeVar("dwi_rt");
    PrimExpr full = Div(ho_, I64(kRows));
    std::vector<Stmt> body = {For(rt, full, ForKind::kSerial, Columns(S(PrimExpr(rt) * I64(kRows)), kRows))};
    PrimExpr rest = Mod(ho_, I64(kRows)), y = S(full * I64(kRows));
    static_assert(kRows == 2, "the rest tile covers 1 row");
    body.push_back(std::make_shared<IfThenElseNode>(Eq(rest, I64(1)), Columns(S(ho_ - I64(1)), 1), nullptr));
    return For(t, S(L[0]->extent * I64(d_.o)), ForKind::kParallel, Seq(body));
  }

 private:
  PrimExpr X(const PrimExpr& iy, const PrimExpr& ix) const { return Load(d_.data, {xn_, xc_, iy, ix}); }
  PrimExpr W(int64_t ky, int64_t kx) const { return Load(d_.weight, {ch_, I64(0), I64(ky), I64(kx)}); }

  // Output rows [y0, y0 + rows): the left tile {0, 16}, then the right one
  // {wo - 32, wo - 16} (its stores last: the columns both compute keep its
  // values).
  Stmt Columns(const PrimExpr& y0, int64_t rows) {
    return Seq({Tile(y0, rows, {I64(0), I64(kLanes)}, true),
                Tile(y0, rows, {S(wo_ - I64(2 * kLanes)), S(wo_ - I64(kLanes))}, false)});
  }

  // Output rows [y0, y0 + rows) x the two vectors at `xs`; `left`: xs[0] is
  // column 0 (taps kx < pl shifted in), else xs[1] is wo - 16 (taps past
  // the right edge shifted in).
  Stmt Tile(const PrimExpr& y0, int64_t rows, const std::vector<PrimExpr>& xs, bool left) {
    DType f32 = DType::Float32();
    const int64_t cols = static_cast<int64_t>(xs.size());
    Buffer acc = nest::Float32Buffer("dwi_acc", {I64(rows), I64(cols * kLanes)}, "local");
    // The shift of tap column kx in the edge vector (0: none).
    const int64_t edge = left ? 0 : cols - 1;
    auto shift_of = [&](int64_t kx) -> int64_t {
      int64_t s = left ? d_.pl - kx : delta_ + kx - d_.pl;
      return s > 0 ? s : 0;
    };
    int64_t max_shift = 0;
    for (int64_t kx = 0; kx < d_.kw; ++kx) max_shift = std::max(max_shift, shift_of(kx));
    std::vector<Buffer> sacc(max_shift + 1);
    for (int64_t s = 1; s <= max_shift; ++s)
      sacc[s] = nest::Float32Buffer("dwi_shift" + std::to_string(s), {I64(rows), I64(kLanes)}, "local");
    auto vec = [](const std::function<Stmt(const PrimExpr&)>& f, int64_t lanes = kLanes) {
      Var jj = MakeVar("jj");
      return For(jj, I64(lanes), ForKind::kVectorized, f(PrimExpr(jj)));
    };
    std::vector<Stmt> steps;
    for (int64_t ii = 0; ii < rows; ++ii) {
      for (int64_t k = 0; k < cols; ++k)
        steps.push_back(vec([&](const PrimExpr& jj) { return Store(acc, FloatImm(f32, 0), {I64(ii), I64(k * kLanes) + jj}); }));
      for (int64_t s = 1; s <= max_shift; ++s)
        steps.push_back(vec([&](const PrimExpr& jj) { return Store(sacc[s], FloatImm(f32, 0), {I64(ii), jj}); }));
    }
    // By input row, then tap column: each load next to the FMAs of every
    // output row that reads it; the row's taps skipped outside the input.
    const PrimExpr edge_load = left ? I64(0) : S(w_ - I64(kLanes));
    for (int64_t r = 0; r < (rows - 1) * d_.sh + d_.kh; ++r) {
      PrimExpr iy = S(y0 * I64(d_.sh) + I64(r - d_.pt));
      std::vector<Stmt> group;
      for (int64_t kx = 0; kx < d_.kw; ++kx) {
        for (int64_t ii = 0; ii < rows; ++ii) {
          const int64_t ky = r - ii * d_.sh;
          if (ky < 0 || ky >= d_.kh) continue;
          for (int64_t k = 0; k < cols; ++k) {
            const int64_t s = k == edge ? shift_of(kx) : 0;
            group.push_back(vec([&](const PrimExpr& jj) {
              if (s > 0) {
                std::vector<PrimExpr> at = {I64(ii), jj};
                return Store(sacc[s], Fma(W(ky, kx), X(iy, S(edge_load + jj)), Load(sacc[s], at)), at);
              }
              std::vector<PrimExpr> at = {I64(ii), I64(k * kLanes) + jj};
              PrimExpr ix = S(xs[k] + I64(kx - d_.pl)) + jj;
              return Store(acc, Fma(W(ky, kx), X(iy, ix), Load(acc, at)), at);
            }));
          }
        }
      }
      if (group.empty()) continue;
      steps.push_back(std::make_shared<IfThenElseNode>(And(Ge(iy, I64(0)), Lt(iy, h_)), Seq(group), nullptr));
    }
    // The shifted taps into the edge vector: s lanes up (left: lane j took
    // input column j, output column j + s reads it) or down (right).
    for (int64_t ii = 0; ii < rows; ++ii) {
      for (int64_t s = 1; s <= max_shift; ++s) {
        steps.push_back(vec(
            [&](const PrimExpr& jj) {
              std::vector<PrimExpr> at = {I64(ii), I64(edge * kLanes + (left ? s : 0)) + jj};
              PrimExpr from = Load(sacc[s], {I64(ii), left ? jj : S(I64(s) + jj)});
              return Store(acc, Load(acc, at) + from, at);
            },
            kLanes - s));
      }
    }
    for (int64_t ii = 0; ii < rows; ++ii) {
      for (int64_t k = 0; k < cols; ++k) {
        steps.push_back(vec([&](const PrimExpr& jj) {
          PrimExpr value = Load(acc, {I64(ii), I64(k * kLanes) + jj});
          return StoresAt(d_, value, {n_, ch_, S(y0 + I64(ii)), S(xs[k] + jj)});
        }));
      }
    }
    // The tile's statements in one unrolled loop of one trip: inside an
    // unrolled loop the kernel emitter writes each 16-lane loop as explicit
    // vectors (kernel_emitter.cc). Left to LLVM as loops, a few hundred per
    // conv for its loop passes one by one, ppocr_cls_v2's compile took 3.7x
    // main's user CPU (one 32-channel 5x5 conv: 3.2 -> 15.4 s; in the loop
    // 3.25 s).
    Var once = MakeVar("dwi_once");
    Stmt body = std::make_shared<ForNode>(once, I64(0), I64(1), ForKind::kUnrolled, Seq(steps));
    Stmt out = std::make_shared<AllocateNode>(acc, body);
    for (int64_t s = 1; s <= max_shift; ++s) out = std::make_shared<AllocateNode>(sacc[s], out);
    return out;
  }

  const DepthwiseNest& d_;
  PrimExpr ho_, wo_, h_, w_, n_, ch_, xn_, xc_;
  int64_t delta_ = 0;
};

}  // namespace

bool InPlaceFits(const DepthwiseNest& d) {
  int64_t delta = 0;
  if (d.sw != 1 || d.kw > kMaxWindow || d.kh > kMaxWindow || d.pl >= kLanes || !WidthDelta(d, &delta)) return false;
  const int64_t pr = delta + d.kw - 1 - d.pl;
  return pr >= 0 && pr < kLanes;
}

PrimExpr TakesInPlace(const DepthwiseNest& d) {
  const PrimExpr& ho = d.loops[2]->extent;
  const PrimExpr& wo = d.loops[3]->extent;
  // Vector wo - 32 starts inside (its first tap column at or past 0), vector
  // 16's last tap column inside the input.
  PrimExpr columns = And(Ge(wo, I64(2 * kLanes + d.pl)), Le(wo, I64(kMaxColumns)));
  columns = And(columns, Ge(d.data->shape[3], I64(2 * kLanes + d.kw - 1 - d.pl)));
  return And(columns, And(Ge(ho, I64(1)), Le(ho, I64(kMaxRows))));
}

Stmt BuildSymbolicInPlace(const DepthwiseNest& d) { return Kernel(d).Build(); }

}  // namespace dw
}  // namespace tir
}  // namespace kiln
