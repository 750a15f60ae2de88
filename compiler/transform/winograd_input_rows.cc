#include "compiler/transform/winograd_input_rows.h"

#include <functional>
#include <memory>
#include <utility>

#include "compiler/arith/simplify.h"
#include "compiler/ir/op_pattern.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"
#include "compiler/transform/winograd_ir_util.h"

namespace kiln {
namespace transform {
namespace {

using ir::PrimExpr;
using ir::TirKind;

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers

PrimExpr Min(PrimExpr a, PrimExpr b) { return Bin(TirKind::kMin, std::move(a), std::move(b)); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return Bin(TirKind::kMax, std::move(a), std::move(b)); }
PrimExpr Div(PrimExpr a, int64_t b) { return Bin(TirKind::kFloorDiv, std::move(a), I64(b)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return Bin(TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr Le(PrimExpr a, PrimExpr b) { return Bin(TirKind::kLE, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return Bin(TirKind::kAnd, std::move(a), std::move(b)); }

// Let bindings in order, wrapped around a body.
class Lets {
 public:
  PrimExpr Bind(const std::string& name, const PrimExpr& e) {
    PrimExpr s = arith::Simplify(e);
    if (s.as<ir::IntImmNode>() || s.as<ir::VarNode>()) return s;
    ir::Var v = LoopVar(name);
    binds_.emplace_back(v, s);
    return PrimExpr(v);
  }
  ir::Stmt Wrap(ir::Stmt body) const {
    for (auto it = binds_.rbegin(); it != binds_.rend(); ++it) body = Let(it->first, it->second, std::move(body));
    return body;
  }

 private:
  std::vector<std::pair<ir::Var, PrimExpr>> binds_;
};

}  // namespace

Result<RowBlockInputKernel> BuildRowBlockInputTransform(const std::string& name, const RowBlockInputSpec& s) {
  const int m = s.m, al = s.alpha;
  if (m <= 0 || m % 2 != 0 || al != m + 2 || static_cast<int>(s.bt.size()) != al || s.pad_top < 0 || s.pad_left < 0)
    return InvalidArgument("row-block Winograd input transform: needs m even, alpha = m + 2, B^T alpha x alpha, pads >= 0");
  te::FuncBuilder fb(name);
  te::Tensor x = fb.Input("X", {s.n, I64(s.c), s.h, s.w}, DType::Float32());
  Lets lets;
  const PrimExpr N = fb.Local(s.n), H = lets.Bind("h", fb.Local(s.h)), W = lets.Bind("w", fb.Local(s.w)),
                 TH = lets.Bind("th", fb.Local(s.th)), TW = lets.Bind("tw", fb.Local(s.tw));
  const PrimExpr T = arith::Simplify(s.n * s.th * s.tw);
  te::Tensor v = fb.Custom("V", {I64(int64_t{al} * al), I64(s.c), T}, DType::Float32(), [&](const ir::Buffer& out) {
    const int64_t pt = s.pad_top, pl = s.pad_left;
    // The block's row in 2 phases (even and odd columns), so that the
    // columns' loads step by m / 2: 2 in F(4x4), 1 in F(2x2). (F(2x2)'s
    // row in one phase, loads 2 apart, made its fill loops single stores,
    // which the window schedules take for a padded copy and leave scalar.)
    const int64_t phases = 2;
    // Tile rows lo <= ty < hi read input rows m ty - pt .. m ty - pt + alpha
    // - 1 inside [0, H) only.
    const int64_t lo = (pt + m - 1) / m;
    const PrimExpr hi = lets.Bind("rows_in", Min(TH, Max(Div(H + I64(pt - al), m) + I64(1), I64(0))));
    // Blocks of 16 tiles a row; the tiles of V (a block passing them
    // copies its lanes).
    const PrimExpr nb = lets.Bind("nb", Div(TW + I64(15), 16));
    const PrimExpr TALL = lets.Bind("t_all", N * TH * TW);
    ir::Var c = LoopVar("c");
    // One nest over images, tile rows and blocks, each block doing the
    // alpha passes (rows i of B^T) in turn, so that a block's tests and
    // addresses are made once, not alpha times. (A nest per pass:
    // YOLOv8n at 320^2, sums of kernel minima at 1 thread, F(2x2) 718 ->
    // 652 us, F(4x4) 598 -> 551.)
    ir::Var n = LoopVar("n"), ty = LoopVar("ty"), k16 = LoopVar("xb");
    const PrimExpr t0 = (PrimExpr(n) * TH + PrimExpr(ty)) * TW;
    const PrimExpr rows_ok = And(Le(I64(lo), PrimExpr(ty)), Lt(PrimExpr(ty), hi));
    // The block of `lanes_static` tile columns from x0, `lanes` of them
    // this row's.
    // The length of a block's phase rows.
    // F(2x2)'s narrow blocks (8 or 4 lanes) fill each phase with one loop
    // of twice the lanes instead of two overlapping ones: the column pass's
    // loads from 0 and from 1 lie inside that one vector store (32 or 64
    // bytes), and store forwarding took both from it here (Zen 5). Half the
    // fill's loads, selects and stores; the columns past the block's 2
    // lanes + 1 are computed and not read. YOLOv8n-like layers alone,
    // symbolic n / h / w, 2 x 160^2 input, trace medians of 3 alternating
    // rounds, 1 thread: 64 -> 64 at 10^2 11.1-11.6 -> 8.5-9.0 us, 128 ->
    // 128 at 10^2 22.4-24.9 -> 17.1-17.9 (pinned, pad + transform, 7.9 and
    // 15.3), 256 -> 256 at 5^2 25.5-26.0 -> 19.2-20.2 (pinned 13.6). Blocks
    // of 16 (64 bytes a phase from 0 and from 1, two stores of one loop of
    // 32) measured within noise at 20^2 and keep the overlapping loops.
    auto one_loop = [&](int64_t lanes_static) { return m == phases && lanes_static <= kNarrowBlockTiles; };
    auto phase_len = [&](int64_t lanes_static) {
      return one_loop(lanes_static) ? 2 * lanes_static : (m * lanes_static + 2 + phases - 1) / phases;
    };
    auto block = [&](int64_t lanes_static, const PrimExpr& x0, const PrimExpr& lanes, const ir::Buffer& colf) {
      const int64_t width = m * lanes_static + 2, len = phase_len(lanes_static);
      // ph[i][p][k] = pass i's row at column phases * k + p. Every pass's
      // row is filled by one loop, so that the block's input columns are
      // loaded (and split into phases) once for the alpha passes, not once
      // a pass. (A fill loop per pass, each loading the input rows 2 apart
      // again: MTCNN PNet at 240 x 320, see the header.)
      ir::Buffer ph = MakeBuffer("row_ph", {I64(al), I64(phases), I64(len)}, "local");
      ir::Var c0 = LoopVar("c0");  // the input column of the block's column 0
      auto input = [&](int a, const PrimExpr& col) {
        return ir::Load(x.buffer(), {PrimExpr(n), PrimExpr(c), PrimExpr(ty) * I64(m) + I64(a - pt), col});
      };
      auto row_sum = [&](int i, const PrimExpr& col) {
        std::vector<std::pair<double, PrimExpr>> terms;
        for (int a = 0; a < al; ++a)
          if (s.bt[i][a] != 0) terms.emplace_back(s.bt[i][a], input(a, col));
        return LinearSum(terms);
      };
      // Passes [i0, i1)'s phases, len columns each, from `value(i, p, k)`,
      // one static vector loop. Where the column pass loads each phase's
      // columns 1 apart (F(2x2): ph[i][p][l] and ph[i][p][l + 1], 16 lanes
      // of 17 columns), as two overlapping loops of len - 1, so that each
      // of its loads reads what one store wrote. (One loop of 17 stored 16
      // columns and 1, and the loads from column 1 waited for both stores:
      // store forwarding takes a load from one store only.)
      auto phase_loop = [&](int i0, int i1,
                            const std::function<PrimExpr(int i, int64_t p, const PrimExpr& k, const PrimExpr& q, int64_t from)>&
                                value) {
        auto loop = [&](int64_t from, int64_t extent) {
          ir::Var k = LoopVar("q");
          std::vector<ir::Stmt> st;
          for (int i = i0; i < i1; ++i)
            for (int64_t p = 0; p < phases; ++p)
              st.push_back(ir::Store(ph, value(i, p, PrimExpr(k) + I64(from), PrimExpr(k), from),
                                     {I64(i), I64(p), PrimExpr(k) + I64(from)}));
          return Loop(k, extent, ir::ForKind::kVectorized, ir::Seq(st));
        };
        if (m != phases || one_loop(lanes_static)) return loop(0, len);
        return ir::Seq({loop(0, len - 1), loop(1, len - 1)});
      };
      // 1. The rows of B^T applied down the block's columns, straight into
      // the phases where the block lies inside X (loads `phases` apart).
      ir::Stmt inside = phase_loop(
          0, al, [&](int i, int64_t p, const PrimExpr& k, const PrimExpr&, int64_t) { return row_sum(i, PrimExpr(c0) + k * I64(phases) + I64(p)); });
      // Otherwise in a plain row, pass by pass: zeros, the columns inside X
      // ([qlo, qhi) of the row; input rows outside X left out of the sum,
      // each row added under a test of its own), then split into the
      // phases.
      ir::Buffer row = MakeBuffer("row", {I64(phases * len)}, "local");
      ir::Var qlo = LoopVar("qlo"), qhi = LoopVar("qhi");
      std::vector<ir::Stmt> edge;
      for (int i = 0; i < al; ++i) {
        ir::Var z = LoopVar("q");
        edge.push_back(Loop(z, phases * len, ir::ForKind::kVectorized, ir::Store(row, F32(0), {PrimExpr(z)})));
        ir::Var e = LoopVar("q");
        const PrimExpr at = PrimExpr(qlo) + PrimExpr(e);
        ir::Stmt whole_rows = Loop(e, PrimExpr(qhi) - PrimExpr(qlo), ir::ForKind::kVectorized,
                                   ir::Store(row, row_sum(i, PrimExpr(c0) + at), {at}));
        std::vector<ir::Stmt> each;
        for (int a = 0; a < al; ++a) {
          if (s.bt[i][a] == 0) continue;
          ir::Var ea = LoopVar("q");
          const PrimExpr ata = PrimExpr(qlo) + PrimExpr(ea);
          const PrimExpr r = PrimExpr(ty) * I64(m) + I64(a - pt);
          ir::Stmt add = ir::Store(
              row, LinearSum({{1.0, ir::Load(row, {ata})}, {s.bt[i][a], input(a, PrimExpr(c0) + ata)}}), {ata});
          each.push_back(If(And(Le(I64(0), r), Lt(r, H)),
                            Loop(ea, PrimExpr(qhi) - PrimExpr(qlo), ir::ForKind::kVectorized, add)));
        }
        edge.push_back(If(rows_ok, whole_rows, ir::Seq(each)));
        edge.push_back(phase_loop(
            i, i + 1, [&](int, int64_t p, const PrimExpr& k, const PrimExpr&, int64_t) { return ir::Load(row, {k * I64(phases) + I64(p)}); }));
      }
      ir::Stmt edge_rows = Let(qlo, Max(I64(0), I64(0) - PrimExpr(c0)),
                               Let(qhi, Min(I64(width), W - PrimExpr(c0)), Alloc(row, ir::Seq(edge))));
      // Else, where every column the block's loops read lies inside X's
      // memory (reading past a row's ends reads the rows beside it): the
      // same static loop, each column outside [0, W) made zero by a
      // select, and at the first and last tile rows each input row
      // outside [0, H) by a select of a load from a clamped row. This
      // takes the first and last blocks of a row (all of them when a row
      // has 16 tiles or fewer), which before went through the plain row.
      // (Zeros stored over those columns after an unselected loop
      // instead: F(4x4)'s transforms in YOLOv8n at 320^2 took 753 us in
      // all against 615 with the selects.)
      const PrimExpr r0 = PrimExpr(ty) * I64(m) - I64(pt);
      auto clamp_row = [&](const PrimExpr& r) { return Max(I64(0), Min(r, H - I64(1))); };
      const PrimExpr plane = (PrimExpr(n) * I64(s.c) + PrimExpr(c)) * H;
      const PrimExpr first = (plane + clamp_row(r0)) * W + PrimExpr(c0);
      const PrimExpr past = (plane + clamp_row(r0 + I64(al - 1))) * W + PrimExpr(c0) + I64(phases * len);
      const PrimExpr in_memory = And(Le(I64(0), first), Le(past, N * I64(s.c) * H * W));
      // The column test compares floats: colf[from][p][q] = phases (q +
      // from) + p, the block's column as a float for the phase loop that
      // starts at `from` (filled once a channel, below), against
      // -c0 and W - c0 (free of the loop variable: splats). An integer test
      // of the loop variable does not qualify for the code generator's
      // explicit vectors (codegen/vector_loop.h): LLVM then unrolled the
      // loop and built each stride-2 load lane by lane (vinsertps).
      const PrimExpr col_lo(std::make_shared<ir::CastNode>(DType::Float32(), I64(0) - PrimExpr(c0)));
      const PrimExpr col_hi(std::make_shared<ir::CastNode>(DType::Float32(), W - PrimExpr(c0)));
      auto masked = [&](bool rows_tested) {
        return phase_loop(0, al, [&](int i, int64_t p, const PrimExpr& k, const PrimExpr& q, int64_t from) {
          const PrimExpr col = PrimExpr(c0) + k * I64(phases) + I64(p);
          const PrimExpr cf = ir::Load(colf, {I64(from), I64(p), q});
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int a = 0; a < al; ++a) {
            if (s.bt[i][a] == 0) continue;
            const PrimExpr r = r0 + I64(a);
            if (!rows_tested) {
              terms.emplace_back(s.bt[i][a], ir::Load(x.buffer(), {PrimExpr(n), PrimExpr(c), r, col}));
              continue;
            }
            terms.emplace_back(s.bt[i][a],
                               PrimExpr(std::make_shared<ir::SelectNode>(
                                   And(Le(I64(0), r), Lt(r, H)),
                                   ir::Load(x.buffer(), {PrimExpr(n), PrimExpr(c), clamp_row(r), col}), F32(0))));
          }
          return PrimExpr(std::make_shared<ir::SelectNode>(And(Le(col_lo, cf), Lt(cf, col_hi)), LinearSum(terms), F32(0)));
        });
      };
      // (Every column the fill loads, phases * len of them, inside the row:
      // more than the block's width with one_loop.)
      ir::Stmt fill = If(And(rows_ok, And(Le(I64(0), PrimExpr(c0)), Le(PrimExpr(c0) + I64(std::max(width, phases * len)), W))), inside,
                         If(in_memory, If(rows_ok, masked(false), masked(true)), edge_rows));
      // 2. The columns, pass by pass: B^T along pass i's row, tile l's
      // column b being ph[i][b % phases][(m / phases) l + b / phases]
      // (loads 2 apart: the code generator's explicit vectors).
      auto column = [&](const PrimExpr& i, int j, const ir::Var& l) {
        std::vector<std::pair<double, PrimExpr>> ts;
        for (int b = 0; b < al; ++b)
          if (s.bt[j][b] != 0)
            ts.emplace_back(s.bt[j][b],
                            ir::Load(ph, {i, I64(b % phases), PrimExpr(l) * I64(m / phases) + I64(b / phases)}));
        return LinearSum(ts);
      };
      // 3. Stored straight to V when all 16 lanes lie inside V: lanes
      // past the row's end land on the next rows' first tiles, which
      // this pass stores again later (rows go in order). The block
      // that reaches V's end goes through a tile buffer, `lanes` of it
      // copied to V.
      // The passes are one unrolled loop (B^T's rows j are the same in
      // every pass), so that the vectorized loop inside is emitted as
      // explicit vectors (codegen/vector_loop.h): F(2x2)'s loads are 1
      // apart, and as a plain vectorized loop of 4 or 8 lanes LLVM unrolled
      // it and stored every lane on its own (vmovss).
      std::vector<ir::Stmt> direct, via_tile;
      ir::Buffer vt = MakeBuffer("vt", {I64(int64_t{al} * al), I64(lanes_static)}, "local");
      {
        ir::Var i = LoopVar("i"), it = LoopVar("i"), l = LoopVar("l"), lt = LoopVar("l");
        std::vector<ir::Stmt> cols, tcols;
        for (int j = 0; j < al; ++j) {
          cols.push_back(ir::Store(out, column(PrimExpr(i), j, l),
                                   {PrimExpr(i) * I64(al) + I64(j), PrimExpr(c), t0 + x0 + PrimExpr(l)}));
          tcols.push_back(ir::Store(vt, column(PrimExpr(it), j, lt), {PrimExpr(it) * I64(al) + I64(j), PrimExpr(lt)}));
        }
        direct.push_back(
            Loop(i, al, ir::ForKind::kUnrolled, Loop(l, lanes_static, ir::ForKind::kVectorized, ir::Seq(cols))));
        via_tile.push_back(
            Loop(it, al, ir::ForKind::kUnrolled, Loop(lt, lanes_static, ir::ForKind::kVectorized, ir::Seq(tcols))));
      }
      for (int64_t j = 0; j < int64_t{al} * al; ++j) {
        ir::Var k = LoopVar("l");
        via_tile.push_back(Loop(k, lanes, ir::ForKind::kVectorized,
                                ir::Store(out, ir::Load(vt, {I64(j), PrimExpr(k)}), {I64(j), PrimExpr(c), t0 + x0 + PrimExpr(k)})));
      }
      ir::Stmt store =
          If(Le(t0 + x0 + I64(lanes_static), TALL), ir::Seq(direct), Alloc(vt, ir::Seq(via_tile)));
      return Let(c0, x0 * I64(m) - I64(pl), Alloc(ph, ir::Seq({fill, store})));
    };
    // colf for blocks of `lanes_static` tiles around the channel's blocks
    // `nest(colf)`: filled once a channel, not once a block (its scalar
    // stores then fed the block's vector loads, a store-forwarding stall
    // each), a row per phase loop's start, so that each of those loads
    // reads one row whole (one [p][k] row loaded from 0 and from 1: a
    // stall per channel; 128 -> 128 at 5^2, trace medians, 2 rounds:
    // 13.9-14.6 -> 13.2-13.4 us).
    auto with_colf = [&](int64_t lanes_static, const std::function<ir::Stmt(const ir::Buffer&)>& nest) {
      const int64_t len = phase_len(lanes_static);
      ir::Buffer colf = MakeBuffer("colf", {I64(2), I64(phases), I64(len)}, "local");
      ir::Var f = LoopVar("f"), p = LoopVar("p"), k = LoopVar("k");
      const PrimExpr col(std::make_shared<ir::CastNode>(DType::Float32(), (PrimExpr(k) + PrimExpr(f)) * I64(phases) + PrimExpr(p)));
      ir::Stmt fill = Loop(f, 2, ir::ForKind::kSerial, Loop(p, phases, ir::ForKind::kSerial,
                           Loop(k, len, ir::ForKind::kSerial, ir::Store(colf, col, {PrimExpr(f), PrimExpr(p), PrimExpr(k)}))));
      return Alloc(colf, ir::Seq({fill, nest(colf)}));
    };
    ir::Stmt wide = with_colf(16, [&](const ir::Buffer& colf) {
      ir::Stmt body = block(16, PrimExpr(k16) * I64(16), Min(I64(16), TW - PrimExpr(k16) * I64(16)), colf);
      return Loop(n, N, ir::ForKind::kSerial, Loop(ty, TH, ir::ForKind::kSerial, Loop(k16, nb, ir::ForKind::kSerial, body)));
    });
    // Short rows: one block a row of 4 lanes (tw <= 4) or of
    // kNarrowBlockTiles (tw <= 8), not 16: a block's fill loops cover
    // m lanes + 2 columns, so fewer lanes fill fewer of them, and its
    // stores are as many vectors either way (winograd_input_rows.h).
    auto narrow = [&](int64_t lanes) {
      return with_colf(lanes, [&](const ir::Buffer& colf) {
        return Loop(n, N, ir::ForKind::kSerial, Loop(ty, TH, ir::ForKind::kSerial, block(lanes, I64(0), TW, colf)));
      });
    };
    return lets.Wrap(Loop(c, s.c, ir::ForKind::kSerial,
                          If(Le(TW, I64(kNarrowestBlockTiles)), narrow(kNarrowestBlockTiles), If(Le(TW, I64(kNarrowBlockTiles)), narrow(kNarrowBlockTiles), wide))));
  });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({v}));
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  // Opaque, as the static input transform: a kernel of its own.
  nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
  nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(ir::OpPattern::kOpaque);
  RowBlockInputKernel k{ir::PrimFunc(nf), {}};
  for (const ir::Var& param : f->params)
    if (!f->BufferOf(param)) k.tir_vars.push_back(fb.Caller(PrimExpr(param)));
  return k;
}

}  // namespace transform
}  // namespace kiln
