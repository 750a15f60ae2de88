#include "compiler/transform/winograd_output_tile_major.h"

#include <utility>

#include "compiler/transform/winograd_ir_util.h"

namespace kiln {
namespace transform {

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers
using ir::PrimExpr;

// Rows of whole 16-float vectors: each output plane of the buffer starts
// aligned.
int64_t TileMajorOutputStride(int64_t tiles) { return (tiles + 15) / 16 * 16; }

ir::Stmt TileMajorOutputChannel(const ir::Buffer& y, const ir::Var& o, const TileMajorOutputSpec& s) {
  const int m = s.m, al = s.alpha;
  const int64_t tiles = s.n * s.th * s.tw, stride = TileMajorOutputStride(tiles);
  ir::Buffer buf = MakeBuffer("y_planes", {I64(int64_t{m} * m * stride)}, "local");
  // Step 1: every tile's m x m outputs, the sums in the row layout's order
  // (rows first: r[b] = sum_a A^T[i][a] M[alpha a + b]).
  ir::Var t = LoopVar("t");
  std::vector<ir::Stmt> stores;
  for (int i = 0; i < m; ++i) {
    std::vector<PrimExpr> r(al);
    for (int b = 0; b < al; ++b) {
      std::vector<std::pair<double, PrimExpr>> terms;
      for (int a = 0; a < al; ++a)
        if (s.at[i][a] != 0) terms.emplace_back(s.at[i][a], s.load(al * a + b, PrimExpr(t)));
      r[b] = LinearSum(terms);
    }
    for (int j = 0; j < m; ++j) {
      std::vector<std::pair<double, PrimExpr>> terms;
      for (int b = 0; b < al; ++b) terms.emplace_back(s.at[j][b], r[b]);
      stores.push_back(ir::Store(buf, LinearSum(terms), {I64((int64_t{i} * m + j) * stride) + PrimExpr(t)}));
    }
  }
  ir::Stmt compute = Loop(t, tiles, ir::ForKind::kVectorized, ir::Seq(stores));
  // Step 2: output row m ty + i of image n, one vectorized loop over its
  // whole tiles storing their m columns (stores m apart: LLVM loads the m
  // phase rows of the buffer contiguously and interleaves them), then the
  // partial last tile's columns. Read as one loop over the columns
  // (y[(m i + col % m) S + .. + col / m]), LLVM gathered every element with
  // scalar inserts (SqueezeNet's 64 x 55^2: 105 vinsertps in the kernel).
  ir::Var n = LoopVar("n"), ty = LoopVar("ty");
  const int64_t whole = s.wo / m, rest = s.wo % m;
  auto rows = [&](int count) {
    std::vector<ir::Stmt> loops;
    for (int i = 0; i < count; ++i) {
      PrimExpr row = (PrimExpr(n) * I64(s.th) + PrimExpr(ty)) * I64(s.tw);
      auto copy = [&](const PrimExpr& tx, const PrimExpr& col, int j) {
        return ir::Store(y, ir::Load(buf, {I64((int64_t{i} * m + j) * stride) + row + tx}),
                         {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(m) + I64(i), col});
      };
      if (whole > 0) {
        ir::Var tx = LoopVar("tx");
        std::vector<ir::Stmt> phases;
        for (int j = 0; j < m; ++j) phases.push_back(copy(PrimExpr(tx), PrimExpr(tx) * I64(m) + I64(j), j));
        loops.push_back(Loop(tx, whole, ir::ForKind::kVectorized, ir::Seq(phases)));
      }
      for (int j = 0; j < rest; ++j) loops.push_back(copy(I64(whole), I64(whole * m + j), j));
    }
    return ir::Seq(loops);
  };
  ir::Stmt body = rows(m);
  if (s.ho % m != 0)
    body = If(ir::MakeBinary(ir::TirKind::kLT, PrimExpr(ty), I64(s.ho / m)), body, rows(static_cast<int>(s.ho % m)));
  ir::Stmt copy = Loop(n, s.n, ir::ForKind::kSerial, Loop(ty, s.th, ir::ForKind::kSerial, body));
  return Alloc(buf, ir::Seq({compute, copy}));
}

}  // namespace transform
}  // namespace kiln
