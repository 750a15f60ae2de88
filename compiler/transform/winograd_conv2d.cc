#include "compiler/transform/winograd_conv2d.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/expr_map.h"
#include "compiler/arith/simplify.h"
#include "compiler/ir/op_pattern.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"
#include "compiler/transform/conv_rewrite_util.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/winograd_banded.h"
#include "compiler/transform/winograd_choice.h"
#include "compiler/transform/winograd_input_rows.h"
#include "compiler/transform/winograd_input_tile_major.h"
#include "compiler/transform/winograd_output_tile_major.h"
#include "compiler/transform/winograd_ir_util.h"

namespace kiln {
namespace transform {
namespace {

using ir::PrimExpr;

// The transform matrices of F(m x m, 3x3), alpha = m + 2 (Lavin & Gray,
// 2015). F(2x2): interpolation points 0, 1, -1 and infinity; F(4x4): 0, 1,
// -1, 2, -2 and infinity. B^T (alpha x alpha) and A^T (m x alpha) have small
// integer entries, exact in float32; G (alpha x 3) is applied to the weights
// here, in double.
struct Spec {
  int m, alpha;
  std::vector<std::vector<double>> bt, g, at;
  const char* tag;  // kernel name suffix
};

const Spec& F2() {
  static const Spec s{2,
                      4,
                      {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                      {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                      {{1, 1, 1, 0}, {0, 1, -1, -1}},
                      "f2x3"};
  return s;
}

const Spec& F4() {
  static const Spec s{4,
                      6,
                      {{4, 0, -5, 0, 1, 0},
                       {0, -4, -4, 1, 1, 0},
                       {0, 4, -4, -1, 1, 0},
                       {0, -2, -1, 2, 1, 0},
                       {0, 2, -1, -2, 1, 0},
                       {0, 4, 0, -5, 0, 1}},
                      {{1.0 / 4, 0, 0},
                       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                       {1.0 / 24, 1.0 / 12, 1.0 / 6},
                       {1.0 / 24, -1.0 / 12, 1.0 / 6},
                       {0, 0, 1}},
                      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
                      "f4x3"};
  return s;
}

using namespace winograd_ir;  // NOLINT: the shared TIR-building helpers

PrimExpr Lt(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kLT, std::move(a), std::move(b)); }
PrimExpr Le(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kLE, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return ir::MakeBinary(ir::TirKind::kAnd, std::move(a), std::move(b)); }
PrimExpr FloorDiv(PrimExpr a, int64_t b) { return arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, std::move(a), I64(b))); }

// Symbolic extents bound once at the top of a kernel body: tile counts of
// a deep layer are nested divisions of the model's input size
// ((((h + 1) // 2 + 1) // 2 ...), and the transforms' unrolled loads each
// index with them (NudeNet's kernels: 6x the compiler's memory).
class Lets {
 public:
  PrimExpr Bind(const std::string& name, const PrimExpr& e) {
    if (e.as<ir::IntImmNode>() || e.as<ir::VarNode>()) return e;
    ir::Var v = ir::MakeVar(name, DType::Int64());
    binds_.emplace_back(v, e);
    return PrimExpr(v);
  }
  ir::Stmt Wrap(ir::Stmt body) const {
    for (auto it = binds_.rbegin(); it != binds_.rend(); ++it)
      body = std::make_shared<ir::LetStmtNode>(it->first, it->second, std::move(body));
    return body;
  }

 private:
  std::vector<std::pair<ir::Var, PrimExpr>> binds_;
};

std::vector<PrimExpr> Dims(const std::vector<int64_t>& v) {
  std::vector<PrimExpr> out;
  for (int64_t d : v) out.push_back(PrimExpr(d));
  return out;
}

ir::PrimFunc WithPattern(const ir::PrimFunc& f, ir::OpPattern pattern) {
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
  nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(pattern);
  return ir::PrimFunc(nf);
}

// A transform kernel and the symbolic values its call passes (tir_vars).
struct Built {
  ir::PrimFunc f;
  std::vector<PrimExpr> tir_vars;
};

// Dimensions are the caller's (Relax) expressions: constants, or symbolic
// when the batch or the image size is (a model compiled once for every
// size). `spatial` says whether the image size is static; then the padded
// input covers every tile's reads and the partial last tiles have static
// sizes. With a symbolic size the pad adds the convolution's own padding
// only: the last tile row and column read their out-of-range rows and
// columns as zeros (clamped, selected loads), and the output transform
// tests its partial tiles' stores against Ho and Wo.
struct Geometry {
  const Spec* spec;
  int64_t c, o;
  PrimExpr n, hp, wp;       // padded input (hp, wp)
  PrimExpr ho, wo, th, tw;  // output and its m x m tiles
  bool spatial = true;
  // Static sizes and F(4x4): the input transform reads the unpadded input
  // (h, w) and makes the padding (pt rows on top, pl columns on the left,
  // the rest up to hp, wp below and to the right) itself; no pad kernel.
  // Symbolic sizes (F(4x4) and F(2x2)): the same, the input (ih, iw) read
  // by blocks of tile columns (winograd_input_rows.h).
  bool unpadded = false;
  int64_t h = 0, w = 0, pt = 0, pl = 0;
  PrimExpr ih, iw;
  // The matmul's product is (alpha^2, T, O) instead of (alpha^2, O, T): see
  // TileMajorMatmul. Its weight rows are `ou` floats long (O, or O plus
  // padding).
  bool tile_major = false;
  int64_t ou = 0;
  PrimExpr T() const { return arith::Simplify(n * th * tw); }
  int64_t A2() const { return int64_t{spec->alpha} * spec->alpha; }
  static int64_t Int(const PrimExpr& e) { return *relax::ConstDim(e); }
};

// The FuncBuilder's scalar parameters (symbolic values no buffer dimension
// binds) as the caller's expressions, in parameter order.
Result<Built> Finish(te::FuncBuilder& fb, const std::vector<te::Tensor>& outs, ir::OpPattern pattern) {
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build(outs));
  Built b{WithPattern(f, pattern), {}};
  for (const ir::Var& p : f->params)
    if (!f->BufferOf(p)) b.tir_vars.push_back(fb.Caller(PrimExpr(p)));
  return b;
}

// V[alpha i + j, c, t] = sum_ab B^T[i][a] Xp[n, c, m ty + a, m tx + b] B^T[j][b],
// the column-tile loop vectorized (its loads step by m: wide loads and
// shuffles).
Result<Built> InputTransform(const std::string& name, const Geometry& g) {
  const Spec& sp = *g.spec;
  if (!g.spatial) {
    RowBlockInputSpec rs;
    rs.m = sp.m, rs.alpha = sp.alpha, rs.bt = sp.bt, rs.c = g.c;
    rs.n = g.n, rs.h = g.ih, rs.w = g.iw, rs.th = g.th, rs.tw = g.tw;
    rs.pad_top = g.pt, rs.pad_left = g.pl;
    KILN_ASSIGN_OR_RETURN(RowBlockInputKernel k, BuildRowBlockInputTransform(name, rs));
    return Built{k.f, k.tir_vars};
  }
  const int al = sp.alpha;
  te::FuncBuilder fb(name);
  te::Tensor x = g.unpadded ? fb.Input("X", {g.n, PrimExpr(g.c), I64(g.h), I64(g.w)}, DType::Float32())
                           : fb.Input("X", {g.n, PrimExpr(g.c), g.hp, g.wp}, DType::Float32());
  Lets lets;
  const PrimExpr N = fb.Local(g.n), TH = lets.Bind("th", fb.Local(g.th)), TW = lets.Bind("tw", fb.Local(g.tw));
  te::Tensor v = fb.Custom("V", {I64(g.A2()), PrimExpr(g.c), g.T()}, DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var c = LoopVar("c");
    // Per channel, one pass per row i of B^T storing V[alpha i + j] for the
    // alpha j: alpha output streams at a time. (F(2x2)'s 16 in one loop
    // stored 16 streams C * T * 4 bytes apart, a multiple of 4 KiB at
    // 64 x 56^2, which aliased in the L1 cache: the transform took half the
    // matmul's time.)
    std::vector<ir::Stmt> passes;
    for (int i = 0; i < al; ++i) {
      ir::Var n = LoopVar("n"), ty = LoopVar("ty");
      // The stores of tile column tx (static sizes: the padded input
      // covers every tile's reads).
      auto tile = [&](const PrimExpr& tx) {
        auto d = [&](int a, int b) {
          return x({PrimExpr(n), PrimExpr(c), PrimExpr(ty) * I64(sp.m) + I64(a), tx * I64(sp.m) + I64(b)});
        };
        PrimExpr t = (PrimExpr(n) * TH + PrimExpr(ty)) * TW + tx;
        // Rows first: r[b] = sum_a B^T[i][a] d[a][b].
        std::vector<PrimExpr> r(al);
        for (int b = 0; b < al; ++b) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int a = 0; a < al; ++a)
            if (sp.bt[i][a] != 0) terms.emplace_back(sp.bt[i][a], d(a, b));
          r[b] = LinearSum(terms);
        }
        std::vector<ir::Stmt> stores;
        for (int j = 0; j < al; ++j) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int b = 0; b < al; ++b) terms.emplace_back(sp.bt[j][b], r[b]);
          stores.push_back(ir::Store(out, LinearSum(terms), {I64(al * i + j), PrimExpr(c), t}));
        }
        return ir::Seq(stores);
      };
      ir::Var tx = LoopVar("tx");
      ir::Stmt body;
      if (g.spatial && !g.unpadded) {
        // F(2x2): the loads step by 2, and the rows-first scheme below was
        // slower (DenseNet-121's 128-channel layers at 14^2 and 7^2, kernel
        // minima at 1 thread: 24 -> 50 and 6 -> 22 us).
        body = Loop(tx, TW, ir::ForKind::kVectorized, tile(PrimExpr(tx)));
      } else {
        // Rows first over the whole padded row, from contiguous loads into
        // a local row, then the columns from it (loads m apart, in L1). In
        // one step every (a, b) load of the tile stepped by m: 3-4 strided
        // loads for each of the alpha columns, each made of wide loads and
        // permutes; now one per column. The row is where the padding is
        // made: zeros in its first pl and last columns, and input rows
        // outside [0, h) left out of the sum (the first and last tile rows
        // only), so the input needs no pad kernel (DenseNet-121: 58 of
        // them, 1.1 ms of 44 at 1 thread). DenseNet-121's 128 -> 32 at 56^2,
        // 1 thread, kernel minima over 300 calls (loaded machine): pad 96 +
        // transform 467 us -> transform 334 us; at 28^2 18 + 140 -> 100 us.
        // (Splitting the column loop into power-of-two vectors instead, 14
        // = 8 + 4 + 2 lanes, was slower: 467 -> 663 us.)
        const int64_t wp = Geometry::Int(g.wp);
        ir::Buffer row = MakeBuffer("row", {I64(wp)}, "local");
        ir::Var col = LoopVar("col");
        // Input row ty m + a - pt, under a test of its range when `guarded`
        // (a select of a clamped load: the load stays inside the input).
        auto row_sum = [&](bool guarded) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int a = 0; a < al; ++a) {
            if (sp.bt[i][a] == 0) continue;
            PrimExpr r = PrimExpr(ty) * I64(sp.m) + I64(a - g.pt);
            if (!guarded) {
              terms.emplace_back(sp.bt[i][a], x({PrimExpr(n), PrimExpr(c), r, PrimExpr(col)}));
              continue;
            }
            PrimExpr in = And(Lt(I64(-1), r), Lt(r, I64(g.h)));
            PrimExpr rc = ir::MakeBinary(ir::TirKind::kMax, ir::MakeBinary(ir::TirKind::kMin, r, I64(g.h - 1)), I64(0));
            terms.emplace_back(sp.bt[i][a], PrimExpr(std::make_shared<ir::SelectNode>(
                                                in, x({PrimExpr(n), PrimExpr(c), rc, PrimExpr(col)}), F32(0))));
          }
          return Loop(col, g.w, ir::ForKind::kVectorized,
                      ir::Store(row, LinearSum(terms), {PrimExpr(col) + I64(g.pl)}));
        };
        std::vector<ir::Stmt> fill;
        if (g.pl > 0) {
          ir::Var z = LoopVar("z");
          fill.push_back(Loop(z, g.pl, ir::ForKind::kSerial, ir::Store(row, F32(0), {PrimExpr(z)})));
        }
        if (wp > g.pl + g.w) {
          ir::Var z = LoopVar("z");
          fill.push_back(Loop(z, wp - g.pl - g.w, ir::ForKind::kSerial,
                              ir::Store(row, F32(0), {PrimExpr(z) + I64(g.pl + g.w)})));
        }
        // Tile rows whose alpha input rows all lie inside [0, h).
        const int64_t th = Geometry::Int(g.th);
        const int64_t lo = (g.pt + sp.m - 1) / sp.m, hi = g.h + g.pt < al ? 0 : std::min(th, (g.h + g.pt - al) / sp.m + 1);
        ir::Stmt sums = lo >= hi ? row_sum(true)
                                 : ir::Stmt(If(And(Lt(I64(lo - 1), PrimExpr(ty)), Lt(PrimExpr(ty), I64(hi))),
                                               row_sum(false), row_sum(true)));
        fill.push_back(sums);
        ir::Stmt rows = ir::Seq(fill);
        // With a symbolic batch the alpha streams are a symbolic C * T
        // apart, and LLVM's vectorizer, unable to prove them independent,
        // left the loop storing them all scalar: one loop per stream then.
        // MTCNN ONet at 17 x 48 x 48, 1 thread, the 32 -> 64 layer's input
        // transform's perf samples over an unchanged kernel's in the same
        // run (loaded machine): 0.98-1.01 -> 0.66-0.69, the static batch's
        // 0.64; whole model CPU time per call 6.4-6.6 -> 5.7-6.2 ms.
        const bool per_stream = !relax::ConstDim(g.T()).has_value();
        if (!per_stream && TileMajorInputFits(Geometry::Int(g.T()), al)) {
          // Tile-major (winograd_input_tile_major.h): the row's phases into
          // a buffer of all the channel's tiles, then one loop over them.
          ir::Stmt pass = TileMajorInputPass(out, row, rows, c, n, ty, N, TH, TW, Geometry::Int(g.T()), sp.m, i, sp.bt);
          passes.push_back(pass);
          continue;
        }
        // A symbolic batch: tile-major in groups of whole images.
        const int64_t group = per_stream ? TileMajorInputGroup(Geometry::Int(g.th) * Geometry::Int(g.tw), al) : 0;
        if (group >= 1) {
          passes.push_back(TileMajorInputPassGrouped(out, row, rows, c, n, ty, N, Geometry::Int(g.th),
                                                     Geometry::Int(g.tw), group, sp.m, i, sp.bt));
          continue;
        }
        std::vector<ir::Stmt> stores, loops;
        for (int j = 0; j < al; ++j) {
          ir::Var lx = per_stream ? LoopVar("tx") : tx;
          PrimExpr t = (PrimExpr(n) * TH + PrimExpr(ty)) * TW + PrimExpr(lx);
          std::vector<std::pair<double, PrimExpr>> cols;
          for (int b = 0; b < al; ++b)
            cols.emplace_back(sp.bt[j][b], ir::Load(row, {PrimExpr(lx) * I64(sp.m) + I64(b)}));
          ir::Stmt st = ir::Store(out, LinearSum(cols), {I64(al * i + j), PrimExpr(c), t});
          if (per_stream)
            loops.push_back(Loop(lx, TW, ir::ForKind::kVectorized, st));
          else
            stores.push_back(st);
        }
        if (!per_stream) loops.push_back(Loop(tx, TW, ir::ForKind::kVectorized, ir::Seq(stores)));
        loops.insert(loops.begin(), rows);
        body = Alloc(row, ir::Seq(loops));
      }
      passes.push_back(Loop(n, N, ir::ForKind::kSerial, Loop(ty, TH, ir::ForKind::kSerial, body)));
    }
    return lets.Wrap(Loop(c, g.c, ir::ForKind::kSerial, ir::Seq(passes)));
  });
  // Opaque: a kernel of its own. As an injective prologue fusion pulled it,
  // the pad and the previous layer's output transform into the matmul's
  // kernel, which then took 1.7x the time of the three kernels apart.
  return Finish(fb, {v}, ir::OpPattern::kOpaque);
}

// Y[n, o, m ty + i, m tx + j] = sum_ab A^T[i][a] M[alpha a + b, o, t] A^T[j][b];
// the last row and column of tiles of an output that m does not divide keep
// their first Ho % m rows / Wo % m columns only.
Result<Built> OutputTransform(const std::string& name, const Geometry& g) {
  const Spec& sp = *g.spec;
  const int al = sp.alpha;
  te::FuncBuilder fb(name);
  te::Tensor m = fb.Input("M",
                          g.tile_major ? std::vector<PrimExpr>{I64(g.A2()), g.T(), I64(g.o)}
                                       : std::vector<PrimExpr>{I64(g.A2()), I64(g.o), g.T()},
                          DType::Float32());
  Lets lets;
  const PrimExpr N = fb.Local(g.n), HO = lets.Bind("ho", fb.Local(g.ho)), WO = lets.Bind("wo", fb.Local(g.wo)),
                 TH = lets.Bind("th", fb.Local(g.th)), TW = lets.Bind("tw", fb.Local(g.tw));
  te::Tensor y = fb.Custom("Y", {g.n, I64(g.o), g.ho, g.wo}, DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var n = LoopVar("n"), ty = LoopVar("ty");
    // Whether output (m ty + i, m tx + j) exists (partial tiles of symbolic
    // sizes: their stores are guarded).
    auto inside = [&](const PrimExpr& tx, const PrimExpr& i, const PrimExpr& j) {
      return And(Lt(PrimExpr(ty) * I64(sp.m) + i, HO), Lt(tx * I64(sp.m) + j, WO));
    };
    // The stores of rows `rows` (i) and columns `cols` (j) of tile column tx
    // for output channel o.
    using StoreFn = std::function<ir::Stmt(int i, int j, PrimExpr value)>;
    // `only` >= 0: row `only` alone.
    auto tile = [&](const PrimExpr& o, const PrimExpr& tx, int rows, int cols, const StoreFn& store, int only = -1) {
      PrimExpr t = (PrimExpr(n) * TH + PrimExpr(ty)) * TW + tx;
      auto mk = [&](int k) { return g.tile_major ? m({I64(k), t, o}) : m({I64(k), o, t}); };
      std::vector<ir::Stmt> stores;
      for (int i = 0; i < rows; ++i) {
        if (only >= 0 && i != only) continue;
        std::vector<PrimExpr> r(al);  // r[b] = sum_a A^T[i][a] M[alpha a + b]
        for (int b = 0; b < al; ++b) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int a = 0; a < al; ++a)
            if (sp.at[i][a] != 0) terms.emplace_back(sp.at[i][a], mk(al * a + b));
          r[b] = LinearSum(terms);
        }
        for (int j = 0; j < cols; ++j) {
          std::vector<std::pair<double, PrimExpr>> terms;
          for (int b = 0; b < al; ++b) terms.emplace_back(sp.at[j][b], r[b]);
          stores.push_back(store(i, j, LinearSum(terms)));
        }
      }
      return ir::Seq(stores);
    };
    // Tile row ty: its whole tiles in a loop over tx (of kind tx_kind), then
    // the partial last tile column; the last tile row of an output m does
    // not divide keeps Ho % m rows. With a symbolic size, rows = cols = -1
    // asks for a whole tile whose stores are guarded.
    using TileFn = std::function<ir::Stmt(const PrimExpr& tx, int rows, int cols, int only)>;
    // A block of kWinogradWideLanes tiles from tile column `first` whose
    // output rows [0, rows) and columns [col_begin, col_end) (of the
    // block's m * lanes) are stored (symbolic widths, channel-major).
    using WideFn = std::function<ir::Stmt(const PrimExpr& first, const PrimExpr& col_begin, const PrimExpr& col_end,
                                          const PrimExpr& rows)>;
    auto tile_row = [&](const TileFn& at, ir::ForKind tx_kind, bool n_loop, const WideFn& wide_block = nullptr) {
      ir::Stmt body;
      if (g.spatial) {
        const int64_t ho = Geometry::Int(g.ho), wo = Geometry::Int(g.wo), tw = Geometry::Int(g.tw);
        auto row = [&](int rows) {
          ir::Var tx = LoopVar("tx");
          std::vector<ir::Stmt> parts;
          if (wo / sp.m > 0) parts.push_back(Loop(tx, wo / sp.m, tx_kind, at(PrimExpr(tx), rows, sp.m, -1)));
          if (wo % sp.m != 0) parts.push_back(at(I64(tw - 1), rows, static_cast<int>(wo % sp.m), -1));
          return ir::Seq(parts);
        };
        body = row(sp.m);
        if (ho % sp.m != 0) body = If(Lt(PrimExpr(ty), I64(ho / sp.m)), body, row(static_cast<int>(ho % sp.m)));
      } else {
        // Whole tiles in static blocks of kWinogradInputLanes vector lanes
        // (as the input transform), the rest one at a time with guarded
        // stores (one guarded copy of the tile's code, as there).
        ir::Var xo = LoopVar("txo"), xi = LoopVar("txi"), xr = LoopVar("tx"), lx = LoopVar("tx");
        ir::Var xw = LoopVar("txw"), xv = LoopVar("txv");
        PrimExpr whole_cols = FloorDiv(WO, sp.m);
        // Vectorized over tiles (channel-major): blocks of kWinogradWideLanes
        // first, as the input transform, and each block one output row at a
        // time (see kWinogradRowPasses).
        const bool by_rows = tx_kind == ir::ForKind::kVectorized;
        PrimExpr wide = by_rows ? FloorDiv(whole_cols, kWinogradWideLanes) * I64(kWinogradWideLanes) : I64(0);
        PrimExpr blocks = FloorDiv(whole_cols - wide, kWinogradInputLanes),
                 blocked = wide + blocks * I64(kWinogradInputLanes);
        auto block = [&](const ir::Var& lane, int64_t lanes, const PrimExpr& first) {
          if (!by_rows) return Loop(lane, lanes, tx_kind, at(first + PrimExpr(lane), sp.m, sp.m, -1));
          std::vector<ir::Stmt> rows;
          for (int i = 0; i < sp.m; ++i) {
            ir::Var l = LoopVar(lane->name);
            rows.push_back(Loop(l, lanes, tx_kind, at(first + PrimExpr(l), sp.m, sp.m, i)));
          }
          return ir::Seq(rows);
        };
        std::vector<ir::Stmt> parts;
        if (by_rows)
          parts.push_back(Loop(xw, FloorDiv(whole_cols, kWinogradWideLanes), ir::ForKind::kSerial,
                               block(xv, kWinogradWideLanes, PrimExpr(xw) * I64(kWinogradWideLanes))));
        parts.push_back(Loop(xo, blocks, ir::ForKind::kSerial,
                             block(xi, kWinogradInputLanes, wide + PrimExpr(xo) * I64(kWinogradInputLanes))));
        if (by_rows) {
          parts.push_back(Loop(xr, TW - blocked, ir::ForKind::kSerial, at(blocked + PrimExpr(xr), -1, -1, -1)));
        } else {
          // Channels in the lanes: the whole tiles past the blocks unguarded
          // too, only a partial last tile column under the tests (each of
          // its m^2 x lanes stores a test of its own).
          ir::Var xp = LoopVar("tx");
          parts.push_back(Loop(xr, whole_cols - blocked, ir::ForKind::kSerial, at(blocked + PrimExpr(xr), sp.m, sp.m, -1)));
          parts.push_back(Loop(xp, TW - whole_cols, ir::ForKind::kSerial, at(whole_cols + PrimExpr(xp), -1, -1, -1)));
        }
        ir::Stmt whole = ir::Seq(parts);
        ir::Stmt last = Loop(lx, TW, ir::ForKind::kSerial, at(PrimExpr(lx), -1, -1, -1));
        body = If(Lt(PrimExpr(ty), FloorDiv(HO, sp.m)), whole, last);
        if (wide_block) {
          // Rows of kWinogradWideLanes tiles or more: whole blocks of
          // whole tiles, then one block ending at the row's last tile
          // (overlapping the blocks before; it stores the columns they did
          // not), every output row of the tile row in each block, the last
          // tile row's Ho - m ty rows only. No tile goes one at a time.
          const int64_t lanes = kWinogradWideLanes;
          ir::Var xb = LoopVar("txw");
          auto blocks_of = [&](const PrimExpr& rows) {
            const PrimExpr nb = FloorDiv(whole_cols, lanes), done = nb * I64(lanes), start = TW - I64(lanes);
            ir::Stmt full = Loop(xb, nb, ir::ForKind::kSerial,
                                 wide_block(PrimExpr(xb) * I64(lanes), I64(0), I64(sp.m * lanes), rows));
            ir::Stmt rest = If(Lt(done, TW), wide_block(start, (done - start) * I64(sp.m), WO - start * I64(sp.m), rows));
            return ir::Seq({full, rest});
          };
          ir::Stmt wide_rows = If(Lt(PrimExpr(ty), FloorDiv(HO, sp.m)), blocks_of(I64(sp.m)),
                                  blocks_of(HO - PrimExpr(ty) * I64(sp.m)));
          body = If(Le(I64(lanes), TW), wide_rows, body);
        }
      }
      ir::Stmt rows = Loop(ty, TH, ir::ForKind::kSerial, body);
      return n_loop ? Loop(n, N, ir::ForKind::kSerial, rows) : rows;
    };
    if (g.tile_major) {
      // Channels in the vector lanes: a tile's outputs for kTileMajorLanes
      // channels are computed into a local (m^2, lanes) buffer from
      // contiguous loads of M, then copied out channel by channel. (Stored
      // straight to Y, Ho * Wo apart, LLVM left the lane loop scalar.)
      ir::Var ob = LoopVar("ob");
      ir::Buffer yt = MakeBuffer("y_tile", {I64(int64_t{sp.m} * sp.m), I64(kTileMajorLanes)}, "local");
      auto tile_at = [&](const PrimExpr& txe, int rows, int cols, int /*only*/) {
        const bool guarded = rows < 0;
        ir::Var ol = LoopVar("ol");
        PrimExpr o = PrimExpr(ob) * I64(kTileMajorLanes) + PrimExpr(ol);
        ir::Stmt compute = tile(o, txe, guarded ? sp.m : rows, guarded ? sp.m : cols, [&](int i, int j, PrimExpr value) {
          return ir::Store(yt, std::move(value), {I64(int64_t{i} * sp.m + j), PrimExpr(ol)});
        });
        ir::Var cl = LoopVar("ol"), ci = LoopVar("i"), cj = LoopVar("j");
        PrimExpr co = PrimExpr(ob) * I64(kTileMajorLanes) + PrimExpr(cl);
        ir::Stmt copy = ir::Store(out, ir::Load(yt, {PrimExpr(ci) * I64(sp.m) + PrimExpr(cj), PrimExpr(cl)}),
                                  {PrimExpr(n), co, PrimExpr(ty) * I64(sp.m) + PrimExpr(ci), txe * I64(sp.m) + PrimExpr(cj)});
        // A tile that may cross the output's edge copies only its rows and
        // columns inside it: run-time extents min(m, Ho - m ty) and
        // min(m, Wo - m tx) rather than a test per element (m^2 x lanes of
        // them). MTCNN PNet's 16 -> 32 at 2 x 44 x 26 (a partial last tile
        // column in each of its 44 tile rows), 1 thread, kernel medians of
        // 100 traced calls: 24.1 -> 22.1 us (pinned 20.3).
        PrimExpr row_count = guarded ? Bin(ir::TirKind::kMin, I64(sp.m), HO - PrimExpr(ty) * I64(sp.m)) : I64(rows);
        PrimExpr col_count = guarded ? Bin(ir::TirKind::kMin, I64(sp.m), WO - txe * I64(sp.m)) : I64(cols);
        copy = Loop(cl, kTileMajorLanes, ir::ForKind::kSerial,
                    Loop(ci, row_count, ir::ForKind::kSerial, Loop(cj, col_count, ir::ForKind::kSerial, copy)));
        return Alloc(yt, ir::Seq({Loop(ol, kTileMajorLanes, ir::ForKind::kVectorized, compute), copy}));
      };
      // One parallel loop over (image, block of channels). The stores'
      // channel ob * lanes + ol does not show the default schedule that
      // iterations of ob write apart, so it left the transform serial (the
      // fused output transforms of MTCNN ONet: no gain from a second thread).
      const int64_t blocks = g.o / kTileMajorLanes;
      ir::Var p = LoopVar("n_ob");
      ir::Stmt image_block =
          ir::Stmt(std::make_shared<ir::LetStmtNode>(
              n, FloorDiv(PrimExpr(p), blocks),
              std::make_shared<ir::LetStmtNode>(
                  ob, arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorMod, PrimExpr(p), I64(blocks))),
                  tile_row(tile_at, ir::ForKind::kSerial, false))));
      return lets.Wrap(Loop(p, arith::Simplify(N * I64(blocks)), ir::ForKind::kParallel, image_block));
    }
    // Tiles in the vector lanes: stores m columns apart.
    ir::Var o = LoopVar("o");
    if (g.spatial && sp.m == 4 && relax::ConstDim(g.T()) && TileMajorOutputFits(Geometry::Int(g.T()), sp.m)) {
      // Static F(4x4): all of a channel's tiles in one loop, then the rows
      // (winograd_output_tile_major.h).
      TileMajorOutputSpec ts{sp.m, al, sp.at, Geometry::Int(g.n), Geometry::Int(g.ho), Geometry::Int(g.wo),
                             Geometry::Int(g.th), Geometry::Int(g.tw),
                             [&](int k, const PrimExpr& t) { return m({I64(k), PrimExpr(o), t}); }};
      return lets.Wrap(Loop(o, g.o, ir::ForKind::kSerial, TileMajorOutputChannel(out, o, ts)));
    }
    auto tile_at = [&](const PrimExpr& txe, int rows, int cols, int only) {
      const bool guarded = rows < 0;
      return tile(
          PrimExpr(o), txe, guarded ? sp.m : rows, guarded ? sp.m : cols,
          [&](int i, int j, PrimExpr value) {
            ir::Stmt st = ir::Store(out, std::move(value), {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(sp.m) + I64(i),
                                                             txe * I64(sp.m) + I64(j)});
            return guarded ? If(inside(txe, I64(i), I64(j)), st) : st;
          },
          only);
    };
    // Symbolic widths: a block's m x m outputs of its kWinogradWideLanes
    // tiles go to a stack buffer of m rows (stores m apart, which LLVM
    // interleaves), then each output row is copied out in contiguous
    // vectors. Stored straight to Y, rows a symbolic Wo apart, LLVM could
    // not prove the rows independent and left the loop scalar; one pass per
    // output row instead loaded and summed M once per row (4x in F(4x4)).
    WideFn wide_block = nullptr;
    if (!g.spatial) {
      wide_block = [&](const PrimExpr& first, const PrimExpr& col_begin, const PrimExpr& col_end,
                       const PrimExpr& rows) {
        const int64_t lanes = kWinogradWideLanes, row_len = sp.m * lanes;
        ir::Buffer yr = MakeBuffer("y_rows", {I64(sp.m * row_len)}, "local");
        ir::Var l = LoopVar("txv");
        ir::Stmt compute = Loop(l, lanes, ir::ForKind::kVectorized,
                                tile(PrimExpr(o), first + PrimExpr(l), sp.m, sp.m, [&](int i, int j, PrimExpr value) {
                                  return ir::Store(yr, std::move(value), {PrimExpr(l) * I64(sp.m) + I64(i * row_len + j)});
                                }));
        ir::Var ri = LoopVar("i"), q = LoopVar("q");
        ir::Stmt copy = Loop(q, arith::Simplify(col_end - col_begin), ir::ForKind::kVectorized,
                             ir::Store(out, ir::Load(yr, {PrimExpr(ri) * I64(row_len) + col_begin + PrimExpr(q)}),
                                       {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(sp.m) + PrimExpr(ri),
                                        first * I64(sp.m) + col_begin + PrimExpr(q)}));
        const bool static_rows = relax::ConstDim(rows).has_value();
        copy = Loop(ri, rows, static_rows ? ir::ForKind::kUnrolled : ir::ForKind::kSerial, copy);
        return Alloc(yr, ir::Seq({compute, copy}));
      };
    }
    return lets.Wrap(
        Loop(o, g.o, ir::ForKind::kSerial, tile_row(tile_at, ir::ForKind::kVectorized, true, wide_block)));
  });
  return Finish(fb, {y}, ir::OpPattern::kInjective);
}

// The tile-major product M[k, t, o] = sum_c V[k, c, t] U[k, c, o]: the
// matmul kernel broadcasts V (its rows are the tiles) and vectorizes over
// the output channels.
Result<Built> TileMajorMatmul(const std::string& name, const Geometry& g) {
  te::FuncBuilder fb(name);
  te::Tensor v = fb.Input("V", {I64(g.A2()), I64(g.c), g.T()}, DType::Float32());
  te::Tensor u = fb.Input("U", Dims({g.A2(), g.c, g.ou}), DType::Float32());
  te::Tensor mm = fb.Reduce(
      "M", {I64(g.A2()), g.T(), I64(g.o)}, DType::Float32(), te::ReduceKind::kSum, {PrimExpr(g.c)},
      [&](const te::Indices& i, const te::Indices& k) { return v({i[0], k[0], i[1]}) * u({i[0], k[0], i[2]}); },
      ir::FloatImm(DType::Float32(), 0));
  return Finish(fb, {mm}, ir::OpPattern::kOutEWiseFusable);
}

// U[alpha i + j, o, c] = sum_ab G[i][a] W[o, c, a, b] G[j][b], in double.
// Tile-major (ou > 0): U[alpha i + j, c, o], rows of ou floats (zeros past O).
Result<Tensor> TransformWeight(const Spec& sp, const Tensor& w, int64_t o_count, int64_t c_count, int64_t ou) {
  const int al = sp.alpha;
  const bool tile_major = ou > 0;
  const int64_t shape[3] = {int64_t{al} * al, tile_major ? c_count : o_count, tile_major ? ou : c_count};
  KILN_ASSIGN_OR_RETURN(Tensor u, Tensor::Empty(Span<const int64_t>(shape, 3), DType::Float32()));
  const float* src = w.data<float>();
  float* dst = u.data<float>();
  std::fill(dst, dst + u.NumElements(), 0.0f);
  for (int64_t o = 0; o < o_count; ++o) {
    for (int64_t c = 0; c < c_count; ++c) {
      const float* k = src + (o * c_count + c) * 9;
      for (int i = 0; i < al; ++i) {
        double row[3];  // (G W)[i][b]
        for (int b = 0; b < 3; ++b) row[b] = sp.g[i][0] * k[b] + sp.g[i][1] * k[3 + b] + sp.g[i][2] * k[6 + b];
        for (int j = 0; j < al; ++j) {
          double v = row[0] * sp.g[j][0] + row[1] * sp.g[j][1] + row[2] * sp.g[j][2];
          int64_t at = tile_major ? ((al * i + j) * c_count + c) * ou + o : ((al * i + j) * o_count + o) * c_count + c;
          dst[at] = static_cast<float>(v);
        }
      }
    }
  }
  return u;
}

class Rewriter : public ConvBindingRewriter {
 public:
  explicit Rewriter(ir::IRModule* mod) : mod_(mod) {}
  Rewriter(ir::IRModule* mod, const std::map<std::string, int64_t>& upper_bounds)
      : mod_(mod), upper_bounds_(upper_bounds) {}

 private:
  bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool dataflow,
                   std::vector<ir::Binding>* out) override {
    const ir::Expr& w = call.args[1];
    const ir::ConstantExpr* wk = ConstantOf(w);
    std::vector<int64_t> ws;
    if (wk == nullptr || !StaticF32(w, &ws) || ws.size() != 4 || ws[2] != 3 || ws[3] != 3) return false;
    // The input: static channels; batch, height and width may be symbolic.
    const auto* xi = ir::SInfoAs<ir::TensorSInfo>(call.args[0]->struct_info);
    const auto* yi = ir::SInfoAs<ir::TensorSInfo>(b.var->struct_info);
    if (!xi || !xi->has_shape || !xi->has_dtype || xi->dtype != DType::Float32() || xi->shape.size() != 4) return false;
    if (!yi || !yi->has_shape || yi->shape.size() != 4) return false;
    const std::vector<PrimExpr>& xs = xi->shape;
    std::optional<int64_t> xc = relax::ConstDim(xs[1]);
    if (!xc || *xc != ws[1]) return false;
    if (wk->data.dtype() != DType::Float32() || wk->data.NumElements() != ws[0] * ws[1] * 9) return false;
    if (!DefaultConvLayoutsF32(call.attrs)) return false;
    std::vector<int64_t> strides, dilation, pad, groups;
    if (!IntsAttr(call.attrs, "strides", 2, 1, &strides) || !IntsAttr(call.attrs, "dilation", 2, 1, &dilation) ||
        !IntsAttr(call.attrs, "padding", 4, 0, &pad) || !IntsAttr(call.attrs, "groups", 1, 1, &groups)) {
      return false;
    }
    if (strides != std::vector<int64_t>{1, 1} || dilation != std::vector<int64_t>{1, 1} || groups[0] != 1) return false;
    for (int64_t p : pad)
      if (p < 0) return false;
    Geometry g;
    g.c = ws[1], g.o = ws[0];
    g.n = xs[0];
    g.spatial = relax::ConstDim(xs[2]).has_value() && relax::ConstDim(xs[3]).has_value();
    g.ho = arith::Simplify(xs[2] + I64(pad[0] + pad[2] - 2));
    g.wo = arith::Simplify(xs[3] + I64(pad[1] + pad[3] - 2));
    // The cost rule decides at a nominal shape when some dimension is
    // symbolic: batch 1 (the fewest tiles a batch can have), and image
    // sizes at kWinogradNominalImage (the convolution's own size, derived
    // from it through the strides and pads before it).
    std::map<const ir::VarNode*, PrimExpr> nominal;
    CollectVars(xs[2], I64(kWinogradNominalImage), &nominal);
    CollectVars(xs[3], I64(kWinogradNominalImage), &nominal);
    CollectVars(xs[0], I64(1), &nominal);
    auto at_nominal = [&](const PrimExpr& e) { return relax::ConstDim(arith::Simplify(arith::Substitute(e, nominal))); };
    std::optional<int64_t> n0 = at_nominal(g.n), ho0 = at_nominal(g.ho), wo0 = at_nominal(g.wo);
    if (!n0 || !ho0 || !wo0 || *n0 <= 0 || *ho0 <= 0 || *wo0 <= 0) return false;
    if (g.c < kMinWinogradInputChannels || g.o < kMinWinogradOutputChannels) return false;
    auto tiles = [&](int m) { return *n0 * ((*ho0 + m - 1) / m) * ((*wo0 + m - 1) / m); };
    // A symbolic batch is decided at batch 1, where F(4x4) has the fewest
    // tiles; with a small transformed weight (kSymbolicBatchF4MaxWeightBytes)
    // F(4x4) anyway, as the pinned builds of larger batches take it.
    const bool small_f4_batch = g.spatial && !relax::ConstDim(g.n) &&
                                int64_t{36} * g.c * g.o * static_cast<int64_t>(sizeof(float)) <= kSymbolicBatchF4MaxWeightBytes;
    if (tiles(4) >= kMinWinogradF4Tiles ||
        (small_f4_batch && tiles(2) >= kMinWinogradTiles && g.c >= kMinWinogradF2InputChannels)) {
      g.spec = &F4();
    } else if (tiles(2) >= kMinWinogradTiles && g.c >= kMinWinogradF2InputChannels) {
      g.spec = &F2();
    } else {
      return false;
    }
    const int64_t tm = g.spec->m;
    g.th = FloorDiv(g.ho + I64(tm - 1), tm), g.tw = FloorDiv(g.wo + I64(tm - 1), tm);
    // The last tiles of an output that m does not divide read past the
    // convolution's padding: pad it too (zeros, never stored). Tiles read
    // m * t + 2 rows / columns. (Symbolic sizes: the input transform reads
    // zeros there instead.)
    int64_t pb = 0, pr = 0;
    if (g.spatial) {
      pb = tm * Geometry::Int(g.th) + 2 - Geometry::Int(xs[2]) - pad[0];
      pr = tm * Geometry::Int(g.tw) + 2 - Geometry::Int(xs[3]) - pad[1];
    }
    g.hp = arith::Simplify(xs[2] + I64(pad[0] + (g.spatial ? pb : pad[2])));
    g.wp = arith::Simplify(xs[3] + I64(pad[1] + (g.spatial ? pr : pad[3])));
    const int64_t pad_bottom = g.spatial ? pb : pad[2], pad_right = g.spatial ? pr : pad[3];
    g.unpadded = tm == 4 || !g.spatial;
    if (g.unpadded) g.pt = pad[0], g.pl = pad[1], g.ih = xs[2], g.iw = xs[3];
    if (g.unpadded && g.spatial) g.h = Geometry::Int(xs[2]), g.w = Geometry::Int(xs[3]);

    // Tile-major needs the row's tile count (static widths only).
    // With a symbolic size or batch, tile-major whenever the channels allow
    // (the channel-major product is a relax.matmul over a symbolic number of
    // tile columns). 64 -> 64 at 40^2 with SiLU (1 thread, CPU time per call
    // of the whole module): symbolic height and width 0.64 ms tile-major,
    // 0.93 channel-major, 1.34 the direct convolution; symbolic batch 0.57
    // tile-major, 0.78 channel-major; all static (channel-major) 0.55-0.60.
    // Symbolic shapes with a channel-major product (O not a multiple of 16)
    // stay direct: PP-OCRv4's detector (96 -> 24 convolutions, 256 x 320,
    // CPU time per call, whole model) took 18.6-18.9 ms with them as
    // Winograd against 15.4-16.4 direct. Tile-major with the product's
    // columns padded from 24 to 32 lost too (1 x 640 x 640, 1 thread, CPU
    // time, alternating runs on a loaded machine: 110 / 103 ms against 84 /
    // 86 direct; per 160^2 convolution the tile-major matmul (36 x 1600 x
    // 96 x 32) and the input transform (22 MB of transformed tiles) each
    // took about as long as the direct convolution).
    const bool symbolic = !g.spatial || !relax::ConstDim(g.n);
    if (symbolic && g.o % kTileMajorLanes != 0) return false;
    // A symbolic height or width with fewer than 2 * kTileMajorLanes input
    // channels stays direct (conv_symbolic_schedule.h): the padded input,
    // its transform and the tile-major output transform cost more than a
    // 16-deep product saves. YOLOv8n's 16 -> 16 at 80^2 (+ SiLU, 1 thread,
    // CPU time per call, loaded machine): 0.51-0.54 ms Winograd against
    // 0.38-0.40 direct; at 32 channels they were even (32 -> 32 at 40^2
    // 0.34 / 0.32, 32 -> 64 at 40^2 0.51 / 0.53) and from 64 Winograd won.
    // MTCNN's PNet (16 -> 32 at 1 x 240 x 320), whole model: 4.45 -> 2.74 ms.
    // Re-measured on the Zen 5 machine with the stack-buffer output
    // transform (2026-11-29, 1 thread, load 13-24), it still holds, and no
    // rule on the (symbolic) plane could lift it: the three kernels win only
    // while their intermediates stay in cache. 16 -> 32 + ReLU alone, minima
    // (ms, direct / Winograd): 80^2 0.27 / 0.32, 117 x 157 0.66-0.72 /
    // 0.53-0.55, 160^2 0.92-0.97 / 0.86-1.05, 240 x 320 3.63-3.78 /
    // 4.21-4.29; 16 -> 16: 80^2 0.142 / 0.141-0.144, 160^2 0.49-0.52 /
    // 0.55-0.60. PNet, CPU ms per call, 3 alternating rounds: at 240 x 320
    // 1.39-1.41 direct / 1.64-1.68 Winograd (kernel minima of the layer 640
    // / 585 us), at 480 x 640 6.9-7.0 / 10.6-11.1; NudeNet 320n's two
    // 16 -> 16 layers at 80^2, kernel minima 161 + 164 direct / 199 + 219 us.
    // Those measurements were of the channel-major form (the nominal
    // shape's long rows); with short rows the tile-major form wins where
    // the static rule takes Winograd: both forms and a branch at run time
    // (kRunTimeWinogradMaxTileCols), 16 output channels included.
    const bool choose = !g.spatial && g.c < 2 * kTileMajorLanes;
    // Upper bounds (--bound) under which the run-time test on T can never
    // pass: the direct convolution, decided here.
    if (choose) {
      // T = N th tw, each factor bounded on its own (T itself simplifies to
      // a sum with differences).
      std::optional<int64_t> t_max = 1;
      for (const PrimExpr& f : {g.n, g.th, g.tw}) {
        const std::optional<int64_t> b = UpperBound(f);
        t_max = b && t_max ? std::optional<int64_t>(*t_max * *b) : std::nullopt;
      }
      if (t_max && *t_max < kMinWinogradF4Tiles) return false;
    }
    // Static shapes too, in F(4x4) with fewer than 2 * kTileMajorLanes output
    // channels (a channel-major product of that few rows): 96 -> 24 (PP-OCRv4
    // det compiled for 1 x 640 x 640), layer alone, 1 thread, CPU time per
    // call, alternating runs on a loaded machine: at 160^2 13.7-20.9 ms
    // against 11.6-16.3 direct, at 80^2 3.55-3.92 against 2.54-2.66. (F(2x2),
    // for few tiles, was not measured there and is kept.)
    if (g.spec == &F4() && g.o % kTileMajorLanes != 0 && g.o < 2 * kTileMajorLanes) return false;
    // A symbolic shape whose transformed tiles of one image (at the nominal
    // shape) exceed kMaxSymbolicWinogradBytes stays direct: the tile-major
    // product and transforms then stream their intermediates through memory.
    // DNSMOS's 64-channel convolutions over 900 x 161 maps (85 MB), 1 thread,
    // whole model, alternating runs: 504-545 ms with tile-major Winograd
    // (peak RSS 439 MB) against 421-429 ms with this limit (193 MB).
    const int64_t tile_bytes = tiles(static_cast<int>(g.spec->m)) * (g.spec->m + 2) * (g.spec->m + 2) *
                               std::max(g.c, g.o) * static_cast<int64_t>(sizeof(float));
    // Above that, static or symbolic, one banded kernel when the width is
    // static (winograd_banded.h); otherwise the direct convolution.
    const bool banded = tile_bytes > kMaxSymbolicWinogradBytes;
    if (banded && (g.o % kTileMajorLanes != 0 || !relax::ConstDim(xs[3]))) return false;
    if (banded && choose) return false;
    g.tile_major = g.o % kTileMajorLanes == 0 && (banded || symbolic || Geometry::Int(g.tw) < kTileMajorMaxTileCols);
    // Symbolic height or width with long tile rows at the nominal shape: the
    // channel-major product after all (kWinogradWideTileCols).
    // (Not for a run-time choice: it takes Winograd on short rows only.)
    if (!g.spatial && !banded && !choose) {
      std::optional<int64_t> tw0 = at_nominal(g.tw);
      if (tw0 && *tw0 >= kWinogradWideTileCols) g.tile_major = false;
    }
    // Weight rows a multiple of 1 KiB apart share a few L1 sets, and the
    // matmul kernel reads 64 or more of them per panel: pad them. (64 -> 256
    // at 13^2 in F(4x4) inside SqueezeNet, kernel profile: 342 -> 267 us a
    // call; in F(2x2) alone, 240-257 against 247-278 us.)
    g.ou = !g.tile_major ? 0 : (g.o * 4) % 1024 == 0 ? g.o + kTileMajorLanes : g.o;
    Result<Tensor> u = TransformWeight(*g.spec, wk->data, g.o, g.c, g.ou);
    if (!u.ok()) {
      status = u.status();
      return false;
    }
    // A run-time choice: the Winograd bindings go to the If's first branch.
    std::vector<ir::Binding> wino;
    std::vector<ir::Binding>* dst = choose ? &wino : out;
    auto emit = [&](const std::string& base, ir::Expr value) {
      ir::RVar v = ir::MakeRVar(FreshName(base), nullptr, dataflow || choose);
      dst->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    auto call_tir = [&](const Built& kernel, const std::vector<ir::Expr>& in, const std::vector<PrimExpr>& shape) {
      ir::Expr callee = std::make_shared<ir::GlobalVarExpr>(kernel.f->name);
      callee->struct_info = std::make_shared<ir::ObjectSInfo>();
      auto args = std::make_shared<ir::TupleExpr>(in);
      std::vector<ir::StructInfo> infos;
      for (const ir::Expr& e : in) infos.push_back(e->struct_info);
      args->struct_info = std::make_shared<ir::TupleSInfo>(infos);
      std::vector<ir::Expr> call_args{callee, args};
      if (!kernel.tir_vars.empty()) {
        auto sh = std::make_shared<ir::ShapeExpr>(kernel.tir_vars);
        sh->struct_info =
            std::make_shared<ir::ShapeSInfo>(true, kernel.tir_vars, static_cast<int>(kernel.tir_vars.size()));
        call_args.push_back(sh);
      }
      return ir::Expr(std::make_shared<ir::CallExpr>(std::make_shared<ir::OpExpr>("relax.call_tir"),
                                                     std::move(call_args), ir::AttrMap{},
                                                     std::vector<ir::StructInfo>{
                                                         ir::MakeTensorSInfo(shape, DType::Float32())}));
    };
    if (banded) return EmitBanded(call, b, g, pad, *u, wk->name, emit, call_tir, out);
    Result<const Built*> in_kernel = Kernel(std::string("winograd_input_") + g.spec->tag, g, Part::kInput);
    Result<const Built*> out_kernel = Kernel(std::string("winograd_output_") + g.spec->tag, g, Part::kOutput);
    Result<const Built*> mm_kernel =
        g.tile_major ? Kernel("winograd_matmul", g, Part::kMatmul) : Result<const Built*>(nullptr);
    for (const Result<const Built*>* k : {&in_kernel, &out_kernel, &mm_kernel}) {
      if (!k->ok()) {
        status = k->status();
        return false;
      }
    }

    ir::Expr x = call.args[0];
    if (!g.unpadded && (pad[0] || pad[1] || pad_bottom || pad_right)) {
      ir::AttrValue width;
      width.kind = ir::AttrValue::Kind::kIntList;
      width.ints = {0, 0, 0, 0, pad[0], pad_bottom, pad[1], pad_right};
      x = emit("padded", ir::MakeOpCall("relax.nn.pad", {x}, {{"pad_width", width}}));
      x->struct_info = ir::MakeTensorSInfo({g.n, I64(g.c), g.hp, g.wp}, DType::Float32());
    }
    const std::vector<PrimExpr> v_shape{I64(g.A2()), I64(g.c), g.T()};
    ir::Expr v = emit("wino_in", call_tir(**in_kernel, {x}, v_shape));
    v->struct_info = ir::MakeTensorSInfo(v_shape, DType::Float32());
    auto uk = std::make_shared<ir::ConstantExpr>(*u, wk->name.empty() ? "" : wk->name + "_winograd");
    uk->struct_info = ir::MakeTensorSInfo(g.tile_major ? Dims({g.A2(), g.c, g.ou}) : Dims({g.A2(), g.o, g.c}),
                                          DType::Float32());
    ir::Expr ue = emit("wino_w", ir::Expr(uk));
    ir::Expr m;
    if (g.tile_major) {
      const std::vector<PrimExpr> m_shape{I64(g.A2()), g.T(), I64(g.o)};
      m = emit("wino_mm", call_tir(**mm_kernel, {v, ue}, m_shape));
      m->struct_info = ir::MakeTensorSInfo(m_shape, DType::Float32());
    } else {
      m = emit("wino_mm", ir::MakeOpCall("relax.matmul", {ue, v}));
    }
    ir::Expr y = call_tir(**out_kernel, {m}, {g.n, I64(g.o), g.ho, g.wo});
    if (!choose) {
      out->push_back(ir::Binding{b.var, y, nullptr, b.span});
      return true;
    }
    // Winograd where the static rule takes it (kMinWinogradF4Tiles tiles
    // or more, evaluated on the run-time T), on rows of fewer than
    // kRunTimeWinogradMaxTileCols tiles (or longer ones, see below) and
    // while the product fits the cache; else the direct convolution.
    auto result = [&](const char* suffix) {
      auto v = std::make_shared<ir::VarExpr>(FreshName(b.var->name + suffix), b.var->annotation, false);
      v->struct_info = b.var->struct_info;
      return ir::RVar(v);
    };
    ir::RVar yw = result("_winograd"), yd = result("_direct");
    wino.push_back(ir::Binding{yw, y, nullptr, b.span});
    const int64_t max_tiles = kRunTimeWinogradMaxBytes / (g.A2() * g.o * static_cast<int64_t>(sizeof(float)));
    // Longer rows too with two or more channel blocks of output while the
    // product stays in a core's L2 (kRunTimeWinogradLongRowMaxBytes); with
    // one (16 output channels) the transforms, paid per input and output
    // channel, are not amortized: the direct convolution.
    const int64_t long_row_max_tiles =
        g.o >= 2 * kTileMajorLanes
            ? kRunTimeWinogradLongRowMaxBytes / (g.A2() * g.o * static_cast<int64_t>(sizeof(float)))
            : 0;
    const PrimExpr t = g.T();
    const PrimExpr cond = arith::Simplify(ir::MakeBinary(
        ir::TirKind::kAnd,
        ir::MakeBinary(ir::TirKind::kAnd, ir::MakeBinary(ir::TirKind::kGE, t, I64(kMinWinogradF4Tiles)),
                       ir::MakeBinary(ir::TirKind::kLE, t, I64(max_tiles))),
        ir::MakeBinary(ir::TirKind::kOr, ir::MakeBinary(ir::TirKind::kLT, g.tw, I64(kRunTimeWinogradMaxTileCols)),
                       ir::MakeBinary(ir::TirKind::kLE, t, I64(long_row_max_tiles)))));
    out->push_back(ir::Binding{b.var, MakeShapeChoice(cond, std::move(wino), yw, {ir::Binding{yd, b.value, nullptr, b.span}}, yd),
                               nullptr, b.span});
    choices_.insert(b.var.get());
    return true;
  }

 public:
  // The epilogues after the run-time choices go into their branches.
  ir::Function VisitFunction(const ir::Function& f) override {
    choices_.clear();
    ir::Function g = ConvBindingRewriter::VisitFunction(f);
    return SinkEpilogueIntoChoices(g, choices_, [this](const std::string& base) { return FreshName(base); });
  }

 private:

  // y = call_tir(winograd_banded_f{m}x3, (x, U)) (winograd_banded.h).
  template <typename Emit, typename CallTir>
  bool EmitBanded(const ir::CallExpr& call, const ir::Binding& b, const Geometry& g, const std::vector<int64_t>& pad,
                  const Tensor& u, const std::string& wname, Emit& emit, CallTir& call_tir,
                  std::vector<ir::Binding>* out) {
    const auto* xi = ir::SInfoAs<ir::TensorSInfo>(call.args[0]->struct_info);
    BandedWinogradSpec s;
    s.m = g.spec->m, s.alpha = g.spec->alpha, s.bt = g.spec->bt, s.at = g.spec->at;
    s.c = g.c, s.o = g.o, s.ou = g.ou;
    s.n = xi->shape[0], s.h = xi->shape[2], s.w = xi->shape[3], s.ho = g.ho, s.wo = g.wo;
    s.pad_top = pad[0], s.pad_left = pad[1];
    std::string key = std::string("banded/") + std::to_string(s.m) + "/" + std::to_string(s.c) + "/" +
                      std::to_string(s.o) + "/" + std::to_string(s.ou) + "/" + std::to_string(s.pad_top) + "/" +
                      std::to_string(s.pad_left);
    for (const PrimExpr& e : {s.n, s.h, s.w, s.ho, s.wo}) key += "/" + arith::ToDebugString(e);
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
      std::string name = mod_->UniqueName(std::string("winograd_banded_") + g.spec->tag);
      Result<BandedWinogradKernel> k = BuildBandedWinograd(name, s);
      if (!k.ok()) {
        status = k.status();
        return false;
      }
      mod_->Add(name, k->f);
      it = kernels_.emplace(key, Built{k->f, k->tir_vars}).first;
    }
    auto uk = std::make_shared<ir::ConstantExpr>(u, wname.empty() ? "" : wname + "_winograd");
    uk->struct_info = ir::MakeTensorSInfo(Dims({g.A2(), g.c, g.ou}), DType::Float32());
    ir::Expr ue = emit("wino_w", ir::Expr(uk));
    out->push_back(ir::Binding{b.var, call_tir(it->second, {call.args[0], ue}, {g.n, I64(g.o), g.ho, g.wo}), nullptr, b.span});
    return true;
  }

  // The caller's Vars of `e`, each mapped to `value` (first mapping wins).
  static void CollectVars(const PrimExpr& e, const PrimExpr& value, std::map<const ir::VarNode*, PrimExpr>* out) {
    if (!e.defined()) return;
    if (const auto* v = e.as<ir::VarNode>()) {
      out->emplace(v, value);
      return;
    }
    if (ir::IsBinary(e->kind())) {
      const auto* bin = static_cast<const ir::BinaryNode*>(e.get());
      CollectVars(bin->a, value, out);
      CollectVars(bin->b, value, out);
    }
  }

  // The transform kernel for this geometry (one per geometry and kind).
  enum class Part { kInput, kMatmul, kOutput };
  Result<const Built*> Kernel(const std::string& base, const Geometry& g, Part part) {
    std::string key = std::to_string(static_cast<int>(part)) + "/" + std::to_string(g.spec->m) + "/" +
                      std::to_string(g.tile_major) + "/" + std::to_string(g.ou) + "/" + std::to_string(g.c) + "/" +
                      std::to_string(g.o) + "/" + std::to_string(g.pt) + "/" + std::to_string(g.pl);
    for (const PrimExpr& e : {g.n, g.hp, g.wp, g.ho, g.wo}) key += "/" + arith::ToDebugString(e);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) return &it->second;
    std::string name = mod_->UniqueName(base);
    Result<Built> f = part == Part::kInput    ? InputTransform(name, g)
                      : part == Part::kMatmul ? TileMajorMatmul(name, g)
                                              : OutputTransform(name, g);
    if (!f.ok()) return f.status();
    mod_->Add(name, f->f);
    return &kernels_.emplace(key, *f).first->second;
  }

  // The largest value of the shape expression `e` with each symbolic
  // variable at most its upper bound; nullopt when some variable has none
  // or `e` might shrink as one grows. Shape values are never negative, so
  // sums, products (by no negative constant), floor divisions by positive
  // constants, subtractions of constants, min and max of such expressions
  // grow with their variables.
  std::optional<int64_t> UpperBound(const PrimExpr& e) const {
    std::map<const ir::VarNode*, PrimExpr> at_bound;
    bool ok = true;
    std::function<void(const PrimExpr&)> visit = [&](const PrimExpr& x) {
      if (!ok) return;
      if (x.as<ir::IntImmNode>()) return;
      if (const auto* v = x.as<ir::VarNode>()) {
        auto it = upper_bounds_.find(v->name);
        if (it == upper_bounds_.end()) {
          ok = false;
        } else {
          at_bound.emplace(v, I64(it->second));
        }
        return;
      }
      const ir::TirKind k = x->kind();
      if (!ir::IsBinary(k)) {
        ok = false;
        return;
      }
      const auto* bin = static_cast<const ir::BinaryNode*>(x.get());
      const auto* rhs = bin->b.as<ir::IntImmNode>();
      const auto* lhs = bin->a.as<ir::IntImmNode>();
      if (k == ir::TirKind::kMul && ((lhs && lhs->value < 0) || (rhs && rhs->value < 0))) {
        ok = false;
        return;
      }
      if (k == ir::TirKind::kFloorDiv ? !(rhs && rhs->value > 0)
          : k == ir::TirKind::kSub    ? rhs == nullptr
                                      : k != ir::TirKind::kAdd && k != ir::TirKind::kMul &&
                                            k != ir::TirKind::kMin && k != ir::TirKind::kMax) {
        ok = false;
        return;
      }
      visit(bin->a);
      visit(bin->b);
    };
    visit(e);
    if (!ok) return std::nullopt;
    return relax::ConstDim(arith::Simplify(arith::Substitute(e, at_bound)));
  }

  ir::IRModule* mod_;
  std::map<std::string, int64_t> upper_bounds_;
  std::map<std::string, Built> kernels_;
  std::set<const ir::VarExpr*> choices_;  // the Ifs of run-time choices
};

}  // namespace

Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod) { return RewriteRelaxFunctions<Rewriter>(mod); }

Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod, const std::map<std::string, int64_t>& upper_bounds) {
  return RewriteRelaxFunctions<Rewriter>(mod, upper_bounds);
}

}  // namespace transform
}  // namespace kiln
