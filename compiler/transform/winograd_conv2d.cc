#include "compiler/transform/winograd_conv2d.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_pattern.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"
#include "compiler/transform/conv_rewrite_util.h"
#include "compiler/transform/expr_mutator.h"

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

PrimExpr I64(int64_t v) { return ir::IntImm(DType::Int64(), v); }
ir::Var LoopVar(const std::string& name) { return ir::MakeVar(name, DType::Int64()); }

ir::Stmt Loop(const ir::Var& v, int64_t extent, ir::ForKind kind, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, I64(0), I64(extent), kind, std::move(body));
}

// sum of coef * term over the nonzero coefficients; +1 and -1 add and
// subtract, others multiply (the integer entries of B^T and A^T).
PrimExpr LinearSum(const std::vector<std::pair<double, PrimExpr>>& terms) {
  PrimExpr acc;
  for (const auto& [coef, t] : terms) {
    if (coef == 0) continue;
    double mag = coef < 0 ? -coef : coef;
    PrimExpr term = mag == 1 ? t : ir::MakeBinary(ir::TirKind::kMul, ir::FloatImm(DType::Float32(), mag), t);
    if (!acc.defined()) {
      acc = coef > 0 ? term : ir::MakeBinary(ir::TirKind::kSub, ir::FloatImm(DType::Float32(), 0), term);
    } else {
      acc = ir::MakeBinary(coef > 0 ? ir::TirKind::kAdd : ir::TirKind::kSub, acc, term);
    }
  }
  return acc;
}

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

struct Geometry {
  const Spec* spec;
  int64_t n, c, o, hp, wp;  // padded input (hp, wp)
  int64_t ho, wo, th, tw;   // output and its m x m tiles
  // The matmul's product is (alpha^2, T, O) instead of (alpha^2, O, T): see
  // TileMajorMatmul. Its weight rows are `ou` floats long (O, or O plus
  // padding).
  bool tile_major = false;
  int64_t ou = 0;
  int64_t T() const { return n * th * tw; }
  int64_t A2() const { return int64_t{spec->alpha} * spec->alpha; }
};

// V[alpha i + j, c, t] = sum_ab B^T[i][a] Xp[n, c, m ty + a, m tx + b] B^T[j][b],
// the column-tile loop vectorized (its loads step by m: wide loads and
// shuffles).
Result<ir::PrimFunc> InputTransform(const std::string& name, const Geometry& g) {
  const Spec& sp = *g.spec;
  const int al = sp.alpha;
  te::FuncBuilder fb(name);
  te::Tensor x = fb.Input("X", Dims({g.n, g.c, g.hp, g.wp}), DType::Float32());
  te::Tensor v = fb.Custom("V", Dims({g.A2(), g.c, g.T()}), DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var c = LoopVar("c");
    // Per channel, one pass per row i of B^T storing V[alpha i + j] for the
    // alpha j: alpha output streams at a time. (F(2x2)'s 16 in one loop
    // stored 16 streams C * T * 4 bytes apart, a multiple of 4 KiB at
    // 64 x 56^2, which aliased in the L1 cache: the transform took half the
    // matmul's time.)
    std::vector<ir::Stmt> passes;
    for (int i = 0; i < al; ++i) {
      ir::Var n = LoopVar("n"), ty = LoopVar("ty"), tx = LoopVar("tx");
      auto d = [&](int a, int b) {
        return x({PrimExpr(n), PrimExpr(c), PrimExpr(ty) * I64(sp.m) + I64(a), PrimExpr(tx) * I64(sp.m) + I64(b)});
      };
      PrimExpr t = (PrimExpr(n) * I64(g.th) + PrimExpr(ty)) * I64(g.tw) + PrimExpr(tx);
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
      ir::Stmt body = Loop(tx, g.tw, ir::ForKind::kVectorized, ir::Seq(stores));
      passes.push_back(Loop(n, g.n, ir::ForKind::kSerial, Loop(ty, g.th, ir::ForKind::kSerial, body)));
    }
    return Loop(c, g.c, ir::ForKind::kSerial, ir::Seq(passes));
  });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({v}));
  // Opaque: a kernel of its own. As an injective prologue fusion pulled it,
  // the pad and the previous layer's output transform into the matmul's
  // kernel, which then took 1.7x the time of the three kernels apart.
  return WithPattern(f, ir::OpPattern::kOpaque);
}

// Y[n, o, m ty + i, m tx + j] = sum_ab A^T[i][a] M[alpha a + b, o, t] A^T[j][b];
// the last row and column of tiles of an output that m does not divide keep
// their first Ho % m rows / Wo % m columns only.
Result<ir::PrimFunc> OutputTransform(const std::string& name, const Geometry& g) {
  const Spec& sp = *g.spec;
  const int al = sp.alpha;
  te::FuncBuilder fb(name);
  te::Tensor m = fb.Input("M", g.tile_major ? Dims({g.A2(), g.T(), g.o}) : Dims({g.A2(), g.o, g.T()}),
                          DType::Float32());
  te::Tensor y = fb.Custom("Y", Dims({g.n, g.o, g.ho, g.wo}), DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var n = LoopVar("n"), ty = LoopVar("ty");
    // The stores of rows `rows` (i) and columns `cols` (j) of tile column tx
    // for output channel o.
    using StoreFn = std::function<ir::Stmt(int i, int j, PrimExpr value)>;
    auto tile = [&](const PrimExpr& o, const PrimExpr& tx, int rows, int cols, const StoreFn& store) {
      PrimExpr t = (PrimExpr(n) * I64(g.th) + PrimExpr(ty)) * I64(g.tw) + tx;
      auto mk = [&](int k) { return g.tile_major ? m({I64(k), t, o}) : m({I64(k), o, t}); };
      std::vector<ir::Stmt> stores;
      for (int i = 0; i < rows; ++i) {
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
    // not divide keeps Ho % m rows.
    using TileFn = std::function<ir::Stmt(const PrimExpr& tx, int rows, int cols)>;
    auto tile_row = [&](const TileFn& at, ir::ForKind tx_kind) {
      auto row = [&](int rows) {
        ir::Var tx = LoopVar("tx");
        std::vector<ir::Stmt> parts;
        if (g.wo / sp.m > 0) parts.push_back(Loop(tx, g.wo / sp.m, tx_kind, at(PrimExpr(tx), rows, sp.m)));
        if (g.wo % sp.m != 0) parts.push_back(at(I64(g.tw - 1), rows, static_cast<int>(g.wo % sp.m)));
        return ir::Seq(parts);
      };
      ir::Stmt body = row(sp.m);
      if (g.ho % sp.m != 0) {
        body = std::make_shared<ir::IfThenElseNode>(ir::MakeBinary(ir::TirKind::kLT, PrimExpr(ty), I64(g.ho / sp.m)),
                                                    body, row(static_cast<int>(g.ho % sp.m)));
      }
      return Loop(n, g.n, ir::ForKind::kSerial, Loop(ty, g.th, ir::ForKind::kSerial, body));
    };
    if (g.tile_major) {
      // Channels in the vector lanes: a tile's outputs for kTileMajorLanes
      // channels are computed into a local (m^2, lanes) buffer from
      // contiguous loads of M, then copied out channel by channel. (Stored
      // straight to Y, Ho * Wo apart, LLVM left the lane loop scalar.)
      ir::Var ob = LoopVar("ob");
      auto buf = std::make_shared<ir::BufferNode>();
      buf->name = "y_tile";
      buf->data = ir::MakeVar("y_tile_data", ir::HandleType());
      buf->dtype = DType::Float32();
      buf->shape = {I64(int64_t{sp.m} * sp.m), I64(kTileMajorLanes)};
      buf->scope = "local";
      ir::Buffer yt = buf;
      auto tile_at = [&](const PrimExpr& txe, int rows, int cols) {
        ir::Var ol = LoopVar("ol");
        PrimExpr o = PrimExpr(ob) * I64(kTileMajorLanes) + PrimExpr(ol);
        ir::Stmt compute = tile(o, txe, rows, cols, [&](int i, int j, PrimExpr value) {
          return ir::Store(yt, std::move(value), {I64(int64_t{i} * sp.m + j), PrimExpr(ol)});
        });
        ir::Var cl = LoopVar("ol"), ci = LoopVar("i"), cj = LoopVar("j");
        PrimExpr co = PrimExpr(ob) * I64(kTileMajorLanes) + PrimExpr(cl);
        ir::Stmt copy = ir::Store(out, ir::Load(yt, {PrimExpr(ci) * I64(sp.m) + PrimExpr(cj), PrimExpr(cl)}),
                                  {PrimExpr(n), co, PrimExpr(ty) * I64(sp.m) + PrimExpr(ci), txe * I64(sp.m) + PrimExpr(cj)});
        copy = Loop(cl, kTileMajorLanes, ir::ForKind::kSerial,
                    Loop(ci, rows, ir::ForKind::kSerial, Loop(cj, cols, ir::ForKind::kSerial, copy)));
        return ir::Stmt(std::make_shared<ir::AllocateNode>(
            yt, ir::Seq({Loop(ol, kTileMajorLanes, ir::ForKind::kVectorized, compute), copy})));
      };
      return Loop(ob, g.o / kTileMajorLanes, ir::ForKind::kSerial, tile_row(tile_at, ir::ForKind::kSerial));
    }
    // Tiles in the vector lanes: stores m columns apart.
    ir::Var o = LoopVar("o");
    auto tile_at = [&](const PrimExpr& txe, int rows, int cols) {
      return tile(PrimExpr(o), txe, rows, cols, [&](int i, int j, PrimExpr value) {
        return ir::Store(out, std::move(value),
                         {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(sp.m) + I64(i), txe * I64(sp.m) + I64(j)});
      });
    };
    return Loop(o, g.o, ir::ForKind::kSerial, tile_row(tile_at, ir::ForKind::kVectorized));
  });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({y}));
  return WithPattern(f, ir::OpPattern::kInjective);
}

// The tile-major product M[k, t, o] = sum_c V[k, c, t] U[k, c, o]: the
// matmul kernel broadcasts V (its rows are the tiles) and vectorizes over
// the output channels.
Result<ir::PrimFunc> TileMajorMatmul(const std::string& name, const Geometry& g) {
  te::FuncBuilder fb(name);
  te::Tensor v = fb.Input("V", Dims({g.A2(), g.c, g.T()}), DType::Float32());
  te::Tensor u = fb.Input("U", Dims({g.A2(), g.c, g.ou}), DType::Float32());
  te::Tensor mm = fb.Reduce(
      "M", Dims({g.A2(), g.T(), g.o}), DType::Float32(), te::ReduceKind::kSum, {PrimExpr(g.c)},
      [&](const te::Indices& i, const te::Indices& k) { return v({i[0], k[0], i[1]}) * u({i[0], k[0], i[2]}); },
      ir::FloatImm(DType::Float32(), 0));
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({mm}));
  return WithPattern(f, ir::OpPattern::kOutEWiseFusable);
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

 private:
  bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool dataflow,
                   std::vector<ir::Binding>* out) override {
    const ir::Expr& w = call.args[1];
    const ir::ConstantExpr* wk = ConstantOf(w);
    std::vector<int64_t> ws, xs;
    if (wk == nullptr || !StaticF32(w, &ws) || ws.size() != 4 || ws[2] != 3 || ws[3] != 3) return false;
    if (!StaticF32(call.args[0], &xs) || xs.size() != 4 || xs[1] != ws[1]) return false;
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
    g.n = xs[0], g.c = xs[1], g.o = ws[0];
    g.ho = xs[2] + pad[0] + pad[2] - 2;
    g.wo = xs[3] + pad[1] + pad[3] - 2;
    if (g.ho <= 0 || g.wo <= 0) return false;
    if (g.c < kMinWinogradInputChannels || g.o < kMinWinogradOutputChannels) return false;
    auto tiles = [&](int m) { return g.n * ((g.ho + m - 1) / m) * ((g.wo + m - 1) / m); };
    if (tiles(4) >= kMinWinogradF4Tiles) {
      g.spec = &F4();
    } else if (tiles(2) >= kMinWinogradTiles && g.c >= kMinWinogradF2InputChannels) {
      g.spec = &F2();
    } else {
      return false;
    }
    const int64_t tm = g.spec->m;
    g.th = (g.ho + tm - 1) / tm, g.tw = (g.wo + tm - 1) / tm;
    // The last tiles of an output that m does not divide read past the
    // convolution's padding: pad it too (zeros, never stored). Tiles read
    // m * t + 2 rows / columns.
    int64_t pb = tm * g.th + 2 - xs[2] - pad[0], pr = tm * g.tw + 2 - xs[3] - pad[1];
    g.hp = xs[2] + pad[0] + pb, g.wp = xs[3] + pad[1] + pr;

    g.tile_major = g.o % kTileMajorLanes == 0 && g.tw < kTileMajorMaxTileCols;
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
    auto emit = [&](const std::string& base, ir::Expr value) {
      ir::RVar v = ir::MakeRVar(FreshName(base), nullptr, dataflow);
      out->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    auto call_tir = [&](const std::string& kernel, const std::vector<ir::Expr>& in, const std::vector<int64_t>& shape) {
      ir::Expr callee = std::make_shared<ir::GlobalVarExpr>(kernel);
      callee->struct_info = std::make_shared<ir::ObjectSInfo>();
      auto args = std::make_shared<ir::TupleExpr>(in);
      std::vector<ir::StructInfo> infos;
      for (const ir::Expr& e : in) infos.push_back(e->struct_info);
      args->struct_info = std::make_shared<ir::TupleSInfo>(infos);
      return ir::MakeOpCall("relax.call_tir", {callee, args}, {},
                            {ir::MakeTensorSInfo(Dims(shape), DType::Float32())});
    };
    Result<std::string> in_kernel = Kernel(std::string("winograd_input_") + g.spec->tag, g, Part::kInput);
    Result<std::string> out_kernel = Kernel(std::string("winograd_output_") + g.spec->tag, g, Part::kOutput);
    Result<std::string> mm_kernel = g.tile_major ? Kernel("winograd_matmul", g, Part::kMatmul) : Result<std::string>("");
    for (const Result<std::string>* k : {&in_kernel, &out_kernel, &mm_kernel}) {
      if (!k->ok()) {
        status = k->status();
        return false;
      }
    }

    ir::Expr x = call.args[0];
    if (pad[0] || pad[1] || pb || pr) {
      ir::AttrValue width;
      width.kind = ir::AttrValue::Kind::kIntList;
      width.ints = {0, 0, 0, 0, pad[0], pb, pad[1], pr};
      x = emit("padded", ir::MakeOpCall("relax.nn.pad", {x}, {{"pad_width", width}}));
      x->struct_info = ir::MakeTensorSInfo(Dims({g.n, g.c, g.hp, g.wp}), DType::Float32());
    }
    ir::Expr v = emit("wino_in", call_tir(*in_kernel, {x}, {g.A2(), g.c, g.T()}));
    v->struct_info = ir::MakeTensorSInfo(Dims({g.A2(), g.c, g.T()}), DType::Float32());
    auto uk = std::make_shared<ir::ConstantExpr>(*u, wk->name.empty() ? "" : wk->name + "_winograd");
    uk->struct_info = ir::MakeTensorSInfo(g.tile_major ? Dims({g.A2(), g.c, g.ou}) : Dims({g.A2(), g.o, g.c}),
                                          DType::Float32());
    ir::Expr ue = emit("wino_w", ir::Expr(uk));
    ir::Expr m;
    if (g.tile_major) {
      m = emit("wino_mm", call_tir(*mm_kernel, {v, ue}, {g.A2(), g.T(), g.o}));
      m->struct_info = ir::MakeTensorSInfo(Dims({g.A2(), g.T(), g.o}), DType::Float32());
    } else {
      m = emit("wino_mm", ir::MakeOpCall("relax.matmul", {ue, v}));
    }
    out->push_back(ir::Binding{b.var, call_tir(*out_kernel, {m}, {g.n, g.o, g.ho, g.wo}), nullptr, b.span});
    return true;
  }

  // The transform kernel for this geometry (one per geometry and kind).
  enum class Part { kInput, kMatmul, kOutput };
  Result<std::string> Kernel(const std::string& base, const Geometry& g, Part part) {
    std::vector<int64_t> key = {static_cast<int64_t>(part), g.spec->m, g.tile_major, g.ou, g.n, g.c, g.o, g.hp, g.wp, g.ho, g.wo};
    std::string& name = kernels_[key];
    if (!name.empty()) return name;
    name = mod_->UniqueName(base);
    Result<ir::PrimFunc> f = part == Part::kInput    ? InputTransform(name, g)
                             : part == Part::kMatmul ? TileMajorMatmul(name, g)
                                                     : OutputTransform(name, g);
    if (!f.ok()) return f.status();
    mod_->Add(name, *f);
    return name;
  }

  ir::IRModule* mod_;
  std::map<std::vector<int64_t>, std::string> kernels_;
};

}  // namespace

Result<ir::IRModule> WinogradConv2d(const ir::IRModule& mod) { return RewriteRelaxFunctions<Rewriter>(mod); }

}  // namespace transform
}  // namespace kiln
