#include "compiler/transform/winograd_input_tile_major.h"

#include <utility>

#include "compiler/transform/winograd_ir_util.h"

namespace kiln {
namespace transform {

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers
using ir::PrimExpr;

ir::Stmt TileMajorInputPass(const ir::Buffer& v, const ir::Buffer& row, const ir::Stmt& fill_row, const ir::Var& c,
                            const ir::Var& n, const ir::Var& ty, const PrimExpr& N, const PrimExpr& TH,
                            const PrimExpr& TW, int64_t tiles, int m, int i,
                            const std::vector<std::vector<double>>& bt) {
  const int al = static_cast<int>(bt.size());
  ir::Buffer ph = MakeBuffer("ph", {I64(al * tiles)}, "local");
  // The phases of the tile row: alpha stores of the row's stride-m
  // columns, each at its tiles' places.
  ir::Var tx = LoopVar("tx");
  const PrimExpr t_row = (PrimExpr(n) * TH + PrimExpr(ty)) * TW + PrimExpr(tx);
  std::vector<ir::Stmt> phases;
  for (int b = 0; b < al; ++b)
    phases.push_back(ir::Store(ph, ir::Load(row, {PrimExpr(tx) * I64(m) + I64(b)}), {I64(b * tiles) + t_row}));
  ir::Stmt per_row = Alloc(row, ir::Seq({fill_row, Loop(tx, TW, ir::ForKind::kVectorized, ir::Seq(phases))}));
  ir::Stmt rows = Loop(n, N, ir::ForKind::kSerial, Loop(ty, TH, ir::ForKind::kSerial, per_row));
  // The channel's outputs, all tiles at once.
  ir::Var t = LoopVar("t");
  std::vector<ir::Stmt> stores;
  for (int j = 0; j < al; ++j) {
    std::vector<std::pair<double, PrimExpr>> terms;
    for (int b = 0; b < al; ++b) terms.emplace_back(bt[j][b], ir::Load(ph, {I64(b * tiles) + PrimExpr(t)}));
    stores.push_back(ir::Store(v, LinearSum(terms), {I64(al * i + j), PrimExpr(c), PrimExpr(t)}));
  }
  ir::Stmt out = Loop(t, tiles, ir::ForKind::kVectorized, ir::Seq(stores));
  return Alloc(ph, ir::Seq({rows, out}));
}

}  // namespace transform
}  // namespace kiln
