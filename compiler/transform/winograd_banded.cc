#include "compiler/transform/winograd_banded.h"

#include <algorithm>
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

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers

// Register tile of the product: mr output channels x nr tiles (vectors of
// 16 floats), at most 24 accumulator vectors (of AVX-512's 32: the rest hold
// V's row and the broadcasts). twp is a multiple of 16; o of 16.
void ProductTile(int64_t o, int64_t twp, int64_t* mr, int64_t* nr) {
  *nr = twp % 48 == 0 ? 48 : twp % 32 == 0 ? 32 : 16;
  *mr = *nr == 16 ? 16 : 8;
  (void)o;
}

}  // namespace

Result<BandedWinogradKernel> BuildBandedWinograd(const std::string& name, const BandedWinogradSpec& s) {
  const int m = s.m, al = s.alpha;
  const int64_t a2 = int64_t{al} * al;
  const std::optional<int64_t> w_static = relax::ConstDim(s.w), wo_static = relax::ConstDim(s.wo);
  if (!w_static || !wo_static || s.o % 16 != 0 || m <= 0)
    return InvalidArgument("banded Winograd: needs a static width and output channels a multiple of 16");
  const int64_t w = *w_static, wo = *wo_static;
  const int64_t tw = (wo + m - 1) / m;
  // The input transform's tile loop runs over whole vectors (a vectorized
  // loop of 41 left 9 tiles to scalar code): twp tiles, the ones past tw
  // computed from zeros and never used.
  constexpr int64_t kVec = 16;
  const int64_t twp = (tw + kVec - 1) / kVec * kVec;
  // The band's padded width: every tile's reads (m twp + 2 columns), in
  // whole groups of m (the row pass reads them as m phases).
  const int64_t wq = twp + (2 + m - 1) / m;
  const int64_t wb = m * wq;
  const int64_t rb = m + 2;       // and rows
  if (s.pad_left + w > wb) return InvalidArgument("banded Winograd: padding wider than the tiles read");
  int64_t mr = 0, nr = 0;
  ProductTile(s.o, twp, &mr, &nr);

  te::FuncBuilder fb(name);
  te::Tensor x = fb.Input("X", {s.n, I64(s.c), s.h, s.w}, DType::Float32());
  te::Tensor u = fb.Input("U", {I64(a2), I64(s.c), I64(s.ou)}, DType::Float32());
  const PrimExpr N = fb.Local(s.n), H = fb.Local(s.h), HO = fb.Local(s.ho);
  te::Tensor y = fb.Custom("Y", {s.n, I64(s.o), s.ho, s.wo}, DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var th = LoopVar("th"), p = LoopVar("band"), n = LoopVar("n"), ty = LoopVar("ty");
    ir::Buffer xb = MakeBuffer("band_in", {I64(s.c), I64(rb), I64(wb)}, "global");
    ir::Buffer v = MakeBuffer("band_v", {I64(a2), I64(s.c), I64(twp)}, "global");
    ir::Buffer prod = MakeBuffer("band_m", {I64(a2), I64(s.o), I64(twp)}, "global");

    // 1. The band's input rows m ty - pt .. m ty - pt + m + 1, zeros past X.
    ir::Stmt fill;
    {
      ir::Var c = LoopVar("c"), r = LoopVar("r"), col = LoopVar("col"), z = LoopVar("col"), zl = LoopVar("col"),
              zr = LoopVar("col");
      PrimExpr iy = PrimExpr(ty) * I64(m) + PrimExpr(r) - I64(s.pad_top);
      PrimExpr inside = Bin(ir::TirKind::kAnd, Bin(ir::TirKind::kGE, iy, I64(0)), Bin(ir::TirKind::kLT, iy, H));
      std::vector<ir::Stmt> row;
      if (s.pad_left > 0)
        row.push_back(Loop(zl, s.pad_left, ir::ForKind::kVectorized, ir::Store(xb, F32(0), {PrimExpr(c), PrimExpr(r), PrimExpr(zl)})));
      row.push_back(Loop(col, w, ir::ForKind::kVectorized,
                         ir::Store(xb, x({PrimExpr(n), PrimExpr(c), iy, PrimExpr(col)}),
                                   {PrimExpr(c), PrimExpr(r), PrimExpr(col) + I64(s.pad_left)})));
      if (wb - s.pad_left - w > 0)
        row.push_back(Loop(zr, wb - s.pad_left - w, ir::ForKind::kVectorized,
                           ir::Store(xb, F32(0), {PrimExpr(c), PrimExpr(r), PrimExpr(zr) + I64(s.pad_left + w)})));
      ir::Stmt zeros = Loop(z, wb, ir::ForKind::kVectorized, ir::Store(xb, F32(0), {PrimExpr(c), PrimExpr(r), PrimExpr(z)}));
      fill = Loop(c, s.c, ir::ForKind::kSerial, Loop(r, rb, ir::ForKind::kSerial, If(inside, ir::Seq(row), zeros)));
    }

    // 2. V[alpha i + j, c, tx] = sum_ab B^T[i][a] xb[c, a, m tx + b] B^T[j][b]:
    // first the rows, t1[i, p, q] = sum_a B^T[i][a] xb[c, a, m q + p] for
    // the m phases p of the columns (their loads m apart deinterleave once
    // here), then per row i the columns of each tile from contiguous loads
    // (column m tx + b is t1[i, b % m, tx + b / m]). (Loaded m apart in the
    // column pass instead, six loads a tile and row, it took ~45 % of the
    // kernel.)
    ir::Stmt in_tf;
    {
      ir::Var c = LoopVar("c"), q = LoopVar("q");
      ir::Buffer t1 = MakeBuffer("rows_t", {I64(al), I64(m), I64(wq)}, "local");
      std::vector<ir::Stmt> rows, cols;
      for (int i = 0; i < al; ++i) {
        for (int ph = 0; ph < m; ++ph) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int a = 0; a < al; ++a)
            if (s.bt[i][a] != 0)
              terms.emplace_back(s.bt[i][a], ir::Load(xb, {PrimExpr(c), I64(a), PrimExpr(q) * I64(m) + I64(ph)}));
          rows.push_back(ir::Store(t1, LinearSum(terms), {I64(i), I64(ph), PrimExpr(q)}));
        }
      }
      for (int i = 0; i < al; ++i) {
        ir::Var tx = LoopVar("tx");
        std::vector<ir::Stmt> stores;
        for (int j = 0; j < al; ++j) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int b = 0; b < al; ++b)
            if (s.bt[j][b] != 0)
              terms.emplace_back(s.bt[j][b], ir::Load(t1, {I64(i), I64(b % m), PrimExpr(tx) + I64(b / m)}));
          stores.push_back(ir::Store(v, LinearSum(terms), {I64(int64_t{al} * i + j), PrimExpr(c), PrimExpr(tx)}));
        }
        cols.push_back(Loop(tx, twp, ir::ForKind::kVectorized, ir::Seq(stores)));
      }
      in_tf = Loop(c, s.c, ir::ForKind::kSerial,
                   Alloc(t1, ir::Seq({Loop(q, wq, ir::ForKind::kVectorized, ir::Seq(rows)), ir::Seq(cols)})));
    }

    // 3. P[k, o, t] = sum_c U[k, c, o] V[k, c, t] in register tiles of mr
    // channels x nr tiles (U broadcast, V's row vectorized).
    ir::Stmt product;
    {
      ir::Var k = LoopVar("k"), tb = LoopVar("tb"), ob = LoopVar("ob"), c = LoopVar("c");
      ir::Buffer acc = MakeBuffer("acc", {I64(mr), I64(nr)}, "local");
      auto grid = [&](const std::string& tag, const std::function<ir::Stmt(const ir::Var&, const ir::Var&)>& body) {
        ir::Var ii = LoopVar("ii" + tag), jj = LoopVar("jj" + tag);
        return Loop(ii, mr, ir::ForKind::kUnrolled, Loop(jj, nr, ir::ForKind::kVectorized, body(ii, jj)));
      };
      PrimExpr o0 = PrimExpr(ob) * I64(mr), t0 = PrimExpr(tb) * I64(nr);
      ir::Stmt zero = grid("_init", [&](const ir::Var& ii, const ir::Var& jj) {
        return ir::Store(acc, F32(0), {PrimExpr(ii), PrimExpr(jj)});
      });
      ir::Stmt update = grid("", [&](const ir::Var& ii, const ir::Var& jj) {
        PrimExpr a = u({PrimExpr(k), PrimExpr(c), o0 + PrimExpr(ii)});
        PrimExpr b = ir::Load(v, {PrimExpr(k), PrimExpr(c), t0 + PrimExpr(jj)});
        PrimExpr cur = ir::Load(acc, {PrimExpr(ii), PrimExpr(jj)});
        return ir::Store(acc, PrimExpr(std::make_shared<ir::CallNode>(DType::Float32(), "fma", std::vector<PrimExpr>{a, b, cur})),
                         {PrimExpr(ii), PrimExpr(jj)});
      });
      ir::Stmt store = grid("_out", [&](const ir::Var& ii, const ir::Var& jj) {
        return ir::Store(prod, ir::Load(acc, {PrimExpr(ii), PrimExpr(jj)}), {PrimExpr(k), o0 + PrimExpr(ii), t0 + PrimExpr(jj)});
      });
      ir::Stmt tile = Alloc(acc, ir::Seq({zero, Loop(c, s.c, ir::ForKind::kSerial, update), store}));
      product = Loop(k, a2, ir::ForKind::kSerial,
                     Loop(tb, twp / nr, ir::ForKind::kSerial, Loop(ob, s.o / mr, ir::ForKind::kSerial, tile)));
    }

    // 4. Y[n, o, m ty + i, m tx + j] = sum_ab A^T[i][a] P[alpha a + b, o, tx] A^T[j][b],
    // the tiles in the vector lanes (blocks of 16, then 8: their stores m
    // columns apart interleave into whole rows); the tiles after them, and
    // every tile of a band with rows past Ho, one at a time with each store
    // tested against Ho and Wo.
    ir::Stmt out_tf;
    {
      ir::Var o = LoopVar("o");
      // The stores of tile tx's m x m outputs: to Y (guarded or not), or,
      // with `to` given, to to[i, lane * m + j] (a tile of a vector block).
      auto tile = [&](const PrimExpr& tx, bool guarded, const ir::Buffer* to = nullptr, const PrimExpr& lane = PrimExpr()) {
        std::vector<ir::Stmt> stores;
        for (int i = 0; i < m; ++i) {
          std::vector<PrimExpr> r(al);  // r[b] = sum_a A^T[i][a] P[alpha a + b]
          for (int b = 0; b < al; ++b) {
            std::vector<std::pair<double, PrimExpr>> terms;
            for (int a = 0; a < al; ++a)
              if (s.at[i][a] != 0) terms.emplace_back(s.at[i][a], ir::Load(prod, {I64(int64_t{al} * a + b), PrimExpr(o), tx}));
            r[b] = LinearSum(terms);
          }
          for (int j = 0; j < m; ++j) {
            std::vector<std::pair<double, PrimExpr>> terms;
            for (int b = 0; b < al; ++b) terms.emplace_back(s.at[j][b], r[b]);
            PrimExpr yy = PrimExpr(ty) * I64(m) + I64(i), xx = tx * I64(m) + I64(j);
            ir::Stmt st = to ? ir::Store(*to, LinearSum(terms), {I64(i), lane * I64(m) + I64(j)})
                             : ir::Store(out, LinearSum(terms), {PrimExpr(n), PrimExpr(o), yy, xx});
            if (guarded) st = If(Bin(ir::TirKind::kAnd, Bin(ir::TirKind::kLT, yy, HO), Bin(ir::TirKind::kLT, xx, I64(wo))), st);
            stores.push_back(st);
          }
        }
        return ir::Seq(stores);
      };
      std::vector<ir::Stmt> full;
      int64_t done = 0;
      for (int64_t lanes : {int64_t{16}, int64_t{8}}) {
        const int64_t blocks = (wo / m - done) / lanes;
        if (blocks == 0) continue;
        // Through a stack buffer of the block's m output rows: its stores
        // m apart interleave (stored straight to Y, LLVM left the loop
        // scalar), then whole rows go to Y.
        ir::Var bo = LoopVar("txo"), bi = LoopVar("txi"), col = LoopVar("col"), i = LoopVar("i");
        ir::Buffer rows = MakeBuffer("y_rows", {I64(m), I64(lanes * m)}, "local");
        PrimExpr tx0 = I64(done) + PrimExpr(bo) * I64(lanes);
        ir::Stmt compute = Loop(bi, lanes, ir::ForKind::kVectorized, tile(tx0 + PrimExpr(bi), false, &rows, PrimExpr(bi)));
        ir::Stmt copy = Loop(i, m, ir::ForKind::kSerial,
                             Loop(col, lanes * m, ir::ForKind::kVectorized,
                                  ir::Store(out, ir::Load(rows, {PrimExpr(i), PrimExpr(col)}),
                                            {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(m) + PrimExpr(i),
                                             tx0 * I64(m) + PrimExpr(col)})));
        full.push_back(Loop(bo, blocks, ir::ForKind::kSerial, Alloc(rows, ir::Seq({compute, copy}))));
        done += blocks * lanes;
      }
      ir::Var rest = LoopVar("tx"), any = LoopVar("tx");
      if (done < tw) full.push_back(Loop(rest, tw - done, ir::ForKind::kSerial, tile(I64(done) + PrimExpr(rest), true)));
      ir::Stmt partial = Loop(any, tw, ir::ForKind::kSerial, tile(PrimExpr(any), true));
      PrimExpr rows_in = Bin(ir::TirKind::kLE, PrimExpr(ty) * I64(m) + I64(m), HO);
      out_tf = Loop(o, s.o, ir::ForKind::kSerial, If(rows_in, ir::Seq(full), partial));
    }

    // One band per iteration: image n = band / th, tile row ty = band % th.
    ir::Stmt band = Alloc(xb, Alloc(v, Alloc(prod, ir::Seq({fill, in_tf, product, out_tf}))));
    band = Let(n, Bin(ir::TirKind::kFloorDiv, PrimExpr(p), PrimExpr(th)),
               Let(ty, Bin(ir::TirKind::kFloorMod, PrimExpr(p), PrimExpr(th)), band));
    PrimExpr th_value = arith::Simplify(Bin(ir::TirKind::kFloorDiv, HO + I64(m - 1), I64(m)));
    return Let(th, th_value, Loop(p, arith::Simplify(N * PrimExpr(th)), ir::ForKind::kParallel, band));
  });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({y}));
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  // Out-ewise-fusable: the bias and activation after it fuse into its stores.
  nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
  nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(ir::OpPattern::kOutEWiseFusable);
  BandedWinogradKernel k{ir::PrimFunc(nf), {}};
  for (const ir::Var& param : f->params)
    if (!f->BufferOf(param)) k.tir_vars.push_back(fb.Caller(PrimExpr(param)));
  return k;
}

}  // namespace transform
}  // namespace kiln
