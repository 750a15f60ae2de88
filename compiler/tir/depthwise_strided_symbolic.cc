#include "compiler/tir/depthwise_strided_symbolic.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {
namespace dw {

using namespace ir;  // NOLINT
using conv::CeilDiv;
using nest::ConstInt;
using nest::Fma;
using nest::I64;

namespace {

constexpr int64_t kLanes = 16;
// As the static direct kernel's (depthwise_direct.cc): every tap column is a
// stride-2 load per input row, so wider windows lose to the band's plain loads.
constexpr int64_t kMaxWindow = 3;
// Output rows and 16-column vectors of a tile, as the static kernel's rule.
constexpr int64_t kRows = 4;
constexpr int64_t kCols = 2;

PrimExpr S(const PrimExpr& e) { return arith::Simplify(e); }
PrimExpr Div(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kFloorDiv, std::move(a), std::move(b))); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return S(MakeBinary(TirKind::kMin, std::move(a), std::move(b))); }
PrimExpr Ge(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGE, std::move(a), std::move(b)); }
PrimExpr Gt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kGT, std::move(a), std::move(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAnd, std::move(a), std::move(b)); }

Stmt For(const Var& v, const PrimExpr& extent, ForKind kind, Stmt body) {
  return std::make_shared<ForNode>(v, I64(0), S(extent), kind, std::move(body));
}

// 3-wide windows of column stride 2 and left padding 1: the first vector
// starts at column 0, its kx = 0 taps shifted in from kx = 2's loads.
bool Shifted(const DepthwiseNest& d) { return d.sw == 2 && d.kw == 3 && d.pl == 1; }

// The first output index past those whose taps are all inside `size`
// (stride s, window k, leading padding p), at most `out`.
PrimExpr InsideEnd(int64_t s, int64_t k, int64_t p, const PrimExpr& size, const PrimExpr& out) {
  return Min(out, Div(S(size - I64(k - p)), I64(s)) + I64(1));
}

class Kernel {
 public:
  explicit Kernel(const DepthwiseNest& d) : d_(d) {
    ho_ = d.loops[2]->extent;
    wo_ = d.loops[3]->extent;
    h_ = d.data->shape[2];
    w_ = d.data->shape[3];
    shift_ = Shifted(d);
    xa_ = CeilDiv(d.pl, d.sw);
    ya_ = CeilDiv(d.pt, d.sh);
    x0_ = shift_ ? 0 : xa_;
  }

  Stmt Build() {
    const auto& L = d_.loops;
    Var t = MakeVar("dwd_task");
    const TaskPoint p = TaskImageChannel(d_, t);
    n_ = p.n, ch_ = p.ch, xn_ = p.xn, xc_ = p.xc;
    Var xb = MakeVar("dwd_xb"), yb = MakeVar("dwd_yb");
    xb_ = PrimExpr(xb);
    PrimExpr yb_e(yb);

    std::vector<Stmt> body;
    // Rows above the inside ones (the top padding's), each tap row tested.
    for (int64_t y = 0; y < ya_; ++y) body.push_back(Columns(I64(y), 1, true));
    // The inside rows in tiles of kRows, the last moved back.
    Var rt = MakeVar("dwd_rt"), y0 = MakeVar("dwd_y0");
    PrimExpr inside = S(yb_e - I64(ya_));
    Stmt tile = std::make_shared<LetStmtNode>(
        y0, S(I64(ya_) + Min(PrimExpr(rt) * I64(kRows), inside - I64(kRows))), Columns(PrimExpr(y0), kRows, false));
    body.push_back(For(rt, Div(inside + I64(kRows - 1), I64(kRows)), ForKind::kSerial, tile));
    // Rows below (an odd height's last row): their taps past the input tested.
    Var yl = MakeVar("dwd_yl");
    body.push_back(For(yl, S(ho_ - yb_e), ForKind::kSerial, Columns(S(yb_e + PrimExpr(yl)), 1, true)));
    body.push_back(EdgeColumns());
    Stmt task = std::make_shared<LetStmtNode>(xb, InsideEnd(d_.sw, d_.kw, d_.pl, w_, wo_), Seq(body));
    task = std::make_shared<LetStmtNode>(yb, InsideEnd(d_.sh, d_.kh, d_.pt, h_, ho_), task);
    return For(t, S(L[0]->extent * I64(d_.o)), ForKind::kParallel, task);
  }

 private:
  PrimExpr InputRow(const PrimExpr& y, int64_t ky) const { return S(y * I64(d_.sh) + I64(ky - d_.pt)); }
  PrimExpr X(const PrimExpr& iy, const PrimExpr& ix) const { return Load(d_.data, {xn_, xc_, iy, ix}); }
  PrimExpr W(int64_t ky, int64_t kx) const { return Load(d_.weight, {ch_, I64(0), I64(ky), I64(kx)}); }
  PrimExpr RowInside(const PrimExpr& iy) const { return And(Ge(iy, I64(0)), Lt(iy, h_)); }

  // Output rows [y0, y0 + rows), the inside columns: the first tile (with
  // the shifted vector), tiles of kCols vectors from x0 + 32, the rest in
  // one tile moved back to end at xb (kCols vectors or one). Rows of 16 to
  // 31 inside columns: one tile, its second vector moved back to end at xb
  // (the run-time test keeps it at or past xa).
  Stmt Columns(const PrimExpr& y0, int64_t rows, bool tested) {
    const int64_t wide = kCols * kLanes;
    Stmt narrow = Tile(y0, rows, {I64(x0_), S(xb_ - I64(kLanes))}, tested, shift_);
    return std::make_shared<IfThenElseNode>(Ge(S(xb_ - I64(x0_)), I64(wide)), WideColumns(y0, rows, tested), narrow);
  }

  Stmt WideColumns(const PrimExpr& y0, int64_t rows, bool tested) {
    const int64_t wide = kCols * kLanes;
    std::vector<Stmt> parts;
    parts.push_back(Tile(y0, rows, {I64(x0_), I64(x0_ + kLanes)}, tested, shift_));
    PrimExpr base = I64(x0_ + wide);
    PrimExpr left = S(xb_ - base);
    PrimExpr full = Div(left, I64(wide));
    Var ct = MakeVar("dwd_ct");
    PrimExpr xc = S(base + PrimExpr(ct) * I64(wide));
    parts.push_back(For(ct, full, ForKind::kSerial, Tile(y0, rows, {xc, S(xc + I64(kLanes))}, tested, false)));
    PrimExpr rest = S(left - full * I64(wide));
    Stmt two = Tile(y0, rows, {S(xb_ - I64(wide)), S(xb_ - I64(kLanes))}, tested, false);
    Stmt one = Tile(y0, rows, {S(xb_ - I64(kLanes))}, tested, false);
    parts.push_back(std::make_shared<IfThenElseNode>(
        Gt(rest, I64(kLanes)), two, std::make_shared<IfThenElseNode>(Ge(rest, I64(1)), one, nullptr)));
    return Seq(parts);
  }

  // Output rows [y0, y0 + rows) x the vectors starting at `xs`: every tap's
  // FMA into acc, its input a stride-2 load of X; then the stores with the
  // epilogue. `tested`: one row, each tap row under its bounds test.
  // `shifted`: xs[0] == 0 takes the left edge column (Shifted).
  Stmt Tile(const PrimExpr& y0, int64_t rows, const std::vector<PrimExpr>& xs, bool tested, bool shifted) {
    DType f32 = DType::Float32();
    const int64_t cols = static_cast<int64_t>(xs.size());
    Buffer acc = nest::Float32Buffer("dwd_acc", {I64(rows), I64(cols * kLanes)}, "local");
    Buffer sacc;
    auto vec = [](const std::function<Stmt(const PrimExpr&)>& f, int64_t lanes = kLanes) {
      Var jj = MakeVar("jj");
      return For(jj, I64(lanes), ForKind::kVectorized, f(PrimExpr(jj)));
    };
    std::vector<Stmt> steps;
    for (int64_t ii = 0; ii < rows; ++ii)
      for (int64_t k = 0; k < cols; ++k)
        steps.push_back(vec([&](const PrimExpr& jj) { return Store(acc, FloatImm(f32, 0), {I64(ii), I64(k * kLanes) + jj}); }));
    if (shifted) {
      sacc = nest::Float32Buffer("dwd_shifted", {I64(rows), I64(kLanes)}, "local");
      for (int64_t ii = 0; ii < rows; ++ii)
        steps.push_back(vec([&](const PrimExpr& jj) { return Store(sacc, FloatImm(f32, 0), {I64(ii), jj}); }));
    }
    // By input row, then tap column: each stride-2 load next to the FMAs of
    // every output row that reads it (the same loads, merged by LLVM).
    for (int64_t r = 0; r < (rows - 1) * d_.sh + d_.kh; ++r) {
      std::vector<Stmt> group;
      for (int64_t kx = 0; kx < d_.kw; ++kx) {
        for (int64_t ii = 0; ii < rows; ++ii) {
          int64_t ky = r - ii * d_.sh;
          if (ky < 0 || ky >= d_.kh) continue;
          PrimExpr iy = InputRow(S(y0 + I64(ii)), ky);
          for (int64_t k = 0; k < cols; ++k) {
            bool to_shifted = shifted && k == 0 && kx == 0;
            int64_t col = to_shifted ? kx + d_.sw : kx;
            group.push_back(vec([&](const PrimExpr& jj) {
              PrimExpr ix = jj * I64(d_.sw) + S(xs[k] * I64(d_.sw) + I64(col - d_.pl));
              if (to_shifted) {
                std::vector<PrimExpr> at = {I64(ii), jj};
                return Store(sacc, Fma(W(ky, kx), X(iy, ix), Load(sacc, at)), at);
              }
              std::vector<PrimExpr> at = {I64(ii), I64(k * kLanes) + jj};
              return Store(acc, Fma(W(ky, kx), X(iy, ix), Load(acc, at)), at);
            }));
          }
        }
      }
      if (group.empty()) continue;
      Stmt g = Seq(group);
      // A tested tile has one row: input row r is its tap row r.
      if (tested) g = std::make_shared<IfThenElseNode>(RowInside(InputRow(y0, r)), g, nullptr);
      steps.push_back(g);
    }
    if (shifted) {
      for (int64_t ii = 0; ii < rows; ++ii) {
        steps.push_back(vec(
            [&](const PrimExpr& jj) {
              std::vector<PrimExpr> at = {I64(ii), I64(1) + jj};
              return Store(acc, Load(acc, at) + Load(sacc, {I64(ii), jj}), at);
            },
            kLanes - 1));
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
    Stmt out = std::make_shared<AllocateNode>(acc, Seq(steps));
    return shifted ? std::make_shared<AllocateNode>(sacc, out) : out;
  }

  // The columns outside [x0, xb) of every row, one by one, each tap under its
  // bounds test: the left edge's when not shifted in, the right edge's
  // (an odd width's last column for 3x3/2).
  Stmt EdgeColumns() {
    Var y = MakeVar("dwd_ey"), e = MakeVar("dwd_ex");
    std::vector<Stmt> cols;
    for (int64_t x = 0; x < x0_; ++x) cols.push_back(Edge(PrimExpr(y), I64(x)));
    cols.push_back(For(e, S(wo_ - xb_), ForKind::kSerial, Edge(PrimExpr(y), S(xb_ + PrimExpr(e)))));
    return For(y, ho_, ForKind::kSerial, Seq(cols));
  }

  Stmt Edge(const PrimExpr& y, const PrimExpr& x) {
    Buffer acc = nest::Float32Buffer("dwd_edge", {I64(1)}, "local");
    std::vector<Stmt> steps = {Store(acc, FloatImm(DType::Float32(), 0), {I64(0)})};
    for (int64_t ky = 0; ky < d_.kh; ++ky) {
      PrimExpr iy = InputRow(y, ky);
      for (int64_t kx = 0; kx < d_.kw; ++kx) {
        PrimExpr ix = S(x * I64(d_.sw) + I64(kx - d_.pl));
        PrimExpr inside = And(RowInside(iy), And(Ge(ix, I64(0)), Lt(ix, w_)));
        Stmt fma = Store(acc, Fma(W(ky, kx), X(iy, ix), Load(acc, {I64(0)})), {I64(0)});
        steps.push_back(std::make_shared<IfThenElseNode>(inside, fma, nullptr));
      }
    }
    steps.push_back(StoresAt(d_, Load(acc, {I64(0)}), {n_, ch_, y, x}));
    return std::make_shared<AllocateNode>(acc, Seq(steps));
  }

  const DepthwiseNest& d_;
  PrimExpr ho_, wo_, h_, w_, n_, ch_, xn_, xc_, xb_;
  bool shift_ = false;
  int64_t xa_ = 0, ya_ = 0, x0_ = 0;
};

}  // namespace

bool StridedDirectFits(const DepthwiseNest& d) { return d.sw == 2 && d.kw <= kMaxWindow && d.kh <= kMaxWindow; }

PrimExpr TakesStridedDirect(const DepthwiseNest& d) {
  const PrimExpr& ho = d.loops[2]->extent;
  const PrimExpr& wo = d.loops[3]->extent;
  const int64_t x0 = Shifted(d) ? 0 : CeilDiv(d.pl, d.sw), ya = CeilDiv(d.pt, d.sh);
  PrimExpr xb = InsideEnd(d.sw, d.kw, d.pl, d.data->shape[3], wo);
  PrimExpr yb = InsideEnd(d.sh, d.kh, d.pt, d.data->shape[2], ho);
  // At least one vector of inside columns, and the first tile's second
  // vector (moved back to end at xb) not before xa.
  PrimExpr columns = And(Ge(S(xb - I64(x0)), I64(kLanes)), Ge(xb, I64(CeilDiv(d.pl, d.sw) + kLanes)));
  return And(columns, Ge(S(yb - I64(ya)), I64(kRows)));
}

Stmt BuildSymbolicStridedDirect(const DepthwiseNest& d) { return Kernel(d).Build(); }

}  // namespace dw
}  // namespace tir
}  // namespace kiln
