// SymConvKernel's padded copies of the input: whole, one channel, and split
// into column (and row) stride phases.
// (conv_symbolic_kernel.h declares the class; conv_symbolic_schedule.h says
// what the kernel computes.)
#include "compiler/tir/conv_symbolic_kernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/arith/simplify.h"

namespace kiln {
namespace tir {
namespace symconv {

Stmt SymConvKernel::Pack(const PrimExpr& ch, const PrimExpr& hp, const PrimExpr& wp) {
  Var c = MakeVar("pc");
  return MakeFor(c, ch, threads_ >= 2 ? ForKind::kParallel : ForKind::kSerial, PackChannel(PrimExpr(c), hp, wp));
}

Stmt SymConvKernel::PackChannel(const PrimExpr& c, const PrimExpr& hp, const PrimExpr& wp) {
  Var a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2");
  PrimExpr h = cv_.data->shape[2], w = cv_.data->shape[3];
  Stmt zero = MakeFor(b, wp, ForKind::kVectorized,
                      Store(q_, FloatImm(DType::Float32(), 0.0), {c, PrimExpr(a), PrimExpr(b)}));
  PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
  // Columns of the row inside X: [pl, pl + min(W, Wp - pl)).
  PrimExpr count = Min(w, wp - I64(cv_.pl));
  Stmt copy = MakeFor(b2, count, ForKind::kVectorized,
                      Store(q_, Load(cv_.data, {NImage(), c, iy, PrimExpr(b2)}),
                            {c, PrimExpr(a), PrimExpr(b2) + I64(cv_.pl)}));
  Stmt inside = std::make_shared<IfThenElseNode>(
      MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, h)), copy, Stmt());
  return MakeFor(a, hp, ForKind::kSerial, Seq({zero, inside}));
}

Stmt SymConvKernel::PackPhases(const PrimExpr& c, const PrimExpr& hp) {
  const int64_t sw = cv_.sw;
  Var a = MakeVar("pa"), b = MakeVar("pb"), b2 = MakeVar("pb2"), e = MakeVar("pe"), e2 = MakeVar("pe2");
  PrimExpr h = cv_.data->shape[2], w = cv_.data->shape[3];
  PrimExpr iy = PrimExpr(a) - I64(cv_.pt);
  Stmt zero;
  if (row_phases_) {
    Var zp = MakeVar("pzp");
    zero = MakeFor(zp, I64(sw), ForKind::kSerial,
                   MakeFor(b, wph_, ForKind::kVectorized,
                           Store(qs_, FloatImm(DType::Float32(), 0.0), PhaseAt(c, PrimExpr(a), PrimExpr(zp), PrimExpr(b)))));
  } else {
    zero = MakeFor(b, wph_ * I64(sw), ForKind::kVectorized,
                   Store(qs_, FloatImm(DType::Float32(), 0.0), PhaseIndex(c, PrimExpr(a), PrimExpr(b))));
  }
  // Phase column b holds X column b * sw + p - pl: inside X for every p
  // when b in [lo, hi).
  const int64_t lo = (cv_.pl + sw - 1) / sw;
  PrimExpr hi = arith::Simplify(MakeBinary(TirKind::kMax, I64(lo),
                                           Min(wph_, Div(w + I64(cv_.pl - sw), I64(sw)) + I64(1))));
  auto copy = [&](const PrimExpr& col, bool checked) {
    std::vector<Stmt> st;
    for (int64_t p = 0; p < sw; ++p) {
      PrimExpr ix = col * I64(sw) + I64(p - cv_.pl);
      std::vector<PrimExpr> at = PhaseAt(c, PrimExpr(a), I64(p), col);
      Stmt one = Store(qs_, Load(cv_.data, {NImage(), c, iy, ix}), at);
      if (checked) {
        one = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kAnd, Ge(ix, I64(0)), Lt(ix, w)), one,
                                               Store(qs_, FloatImm(DType::Float32(), 0.0), at));
      }
      st.push_back(one);
    }
    return Seq(st);
  };
  // The interior in chunks of kPhaseChunk columns, the last moved back to
  // end at hi: a vectorized loop of constant extent with loads two floats
  // apart is emitted as explicit vectors (a wide load and a shuffle,
  // codegen/vector_loop.h); of symbolic extent it was left to LLVM, which
  // built it lane by lane (the copy took 5x the tiles' time).
  PrimExpr count = arith::Simplify(hi - I64(lo));
  Var t = MakeVar("pt"), b0 = MakeVar("pb0");
  Stmt chunk = MakeFor(b2, I64(kPhaseChunk), ForKind::kVectorized, copy(PrimExpr(b0) + PrimExpr(b2), false));
  chunk = std::make_shared<LetStmtNode>(b0, I64(lo) + Min(PrimExpr(t) * I64(kPhaseChunk), count - I64(kPhaseChunk)),
                                        chunk);
  Stmt chunks = MakeFor(t, Div(count + I64(kPhaseChunk - 1), I64(kPhaseChunk)), ForKind::kSerial, chunk);
  Stmt narrow = MakeFor(b2, count, ForKind::kSerial, copy(PrimExpr(b2) + I64(lo), false));
  Stmt interior = std::make_shared<IfThenElseNode>(Ge(count, I64(kPhaseChunk)), chunks, narrow);
  Stmt left = MakeFor(e, I64(lo), ForKind::kSerial, copy(PrimExpr(e), true));
  Stmt right = MakeFor(e2, wph_ - hi, ForKind::kSerial, copy(PrimExpr(e2) + hi, true));
  // Each element written once: rows outside X zeroed, the others copied
  // with their edge columns' padding.
  Stmt row = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kAnd, Ge(iy, I64(0)), Lt(iy, h)),
                                              Seq({left, interior, right}), zero);
  return MakeFor(a, hp, ForKind::kSerial, row);
}

std::vector<PrimExpr> SymConvKernel::PhaseIndex(const PrimExpr& c, const PrimExpr& row, const PrimExpr& col) const {
  if (phases_by_channel_) return {c, row, col};
  return {row, col};
}

std::vector<PrimExpr> SymConvKernel::PhaseAt(const PrimExpr& c, const PrimExpr& row, const PrimExpr& p, const PrimExpr& b) const {
  if (!row_phases_) return PhaseIndex(c, row, p * wph_ + b);
  return {c, Mod(row, I64(cv_.sh)) * I64(cv_.sw) + p, Div(row, I64(cv_.sh)) * wph_ + b};
}

}  // namespace symconv
}  // namespace tir
}  // namespace kiln
