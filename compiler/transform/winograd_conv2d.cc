#include "compiler/transform/winograd_conv2d.h"

#include <array>
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

// F(2x2, 3x3): B^T (4x4), G (4x3), A^T (2x4).
constexpr int kBT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr int kAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

PrimExpr I64(int64_t v) { return ir::IntImm(DType::Int64(), v); }
ir::Var LoopVar(const std::string& name) { return ir::MakeVar(name, DType::Int64()); }

ir::Stmt Loop(const ir::Var& v, int64_t extent, ir::ForKind kind, ir::Stmt body) {
  return std::make_shared<ir::ForNode>(v, I64(0), I64(extent), kind, std::move(body));
}

// sum of sign * term over the nonzero signs (+1 / -1).
PrimExpr SignedSum(const std::vector<std::pair<int, PrimExpr>>& terms) {
  PrimExpr acc;
  for (const auto& [sign, t] : terms) {
    if (sign == 0) continue;
    if (!acc.defined()) {
      acc = sign > 0 ? t : ir::MakeBinary(ir::TirKind::kSub, ir::FloatImm(DType::Float32(), 0), t);
    } else {
      acc = ir::MakeBinary(sign > 0 ? ir::TirKind::kAdd : ir::TirKind::kSub, acc, t);
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
  int64_t n, c, o, hp, wp;  // padded input (hp, wp)
  int64_t ho, wo, th, tw;   // output and its 2x2 tiles
  int64_t T() const { return n * th * tw; }
};

// V[4i + j, c, t] = sum_ab B^T[i][a] Xp[n, c, 2ty + a, 2tx + b] B^T[j][b],
// the column-tile loop vectorized (its loads step by 2: wide loads and
// shuffles).
Result<ir::PrimFunc> InputTransform(const std::string& name, const Geometry& g) {
  te::FuncBuilder fb(name);
  te::Tensor x = fb.Input("X", Dims({g.n, g.c, g.hp, g.wp}), DType::Float32());
  te::Tensor v = fb.Custom("V", Dims({16, g.c, g.T()}), DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var c = LoopVar("c");
    // Per channel, one pass per row i of B^T storing V[4i + j] for the 4 j:
    // 4 output streams at a time. (All 16 in one loop stored 16 streams
    // C * T * 4 bytes apart, a multiple of 4 KiB at 64 x 56^2, which
    // aliased in the L1 cache: the transform took half the matmul's time.)
    std::vector<ir::Stmt> passes;
    for (int i = 0; i < 4; ++i) {
      ir::Var n = LoopVar("n"), ty = LoopVar("ty"), tx = LoopVar("tx");
      auto d = [&](int a, int b) {
        return x({PrimExpr(n), PrimExpr(c), PrimExpr(ty) * I64(2) + I64(a), PrimExpr(tx) * I64(2) + I64(b)});
      };
      PrimExpr t = (PrimExpr(n) * I64(g.th) + PrimExpr(ty)) * I64(g.tw) + PrimExpr(tx);
      // Rows first: r[b] = sum_a B^T[i][a] d[a][b].
      std::array<PrimExpr, 4> r;
      for (int b = 0; b < 4; ++b) {
        std::vector<std::pair<int, PrimExpr>> terms;
        for (int a = 0; a < 4; ++a) terms.emplace_back(kBT[i][a], d(a, b));
        r[b] = SignedSum(terms);
      }
      std::vector<ir::Stmt> stores;
      for (int j = 0; j < 4; ++j) {
        std::vector<std::pair<int, PrimExpr>> terms;
        for (int b = 0; b < 4; ++b) terms.emplace_back(kBT[j][b], r[b]);
        stores.push_back(ir::Store(out, SignedSum(terms), {I64(4 * i + j), PrimExpr(c), t}));
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

// Y[n, o, 2ty + i, 2tx + j] = sum_ab A^T[i][a] M[4a + b, o, t] A^T[j][b]; the
// last row and column of tiles of an odd output keep i = 0 / j = 0 only.
Result<ir::PrimFunc> OutputTransform(const std::string& name, const Geometry& g) {
  te::FuncBuilder fb(name);
  te::Tensor m = fb.Input("M", Dims({16, g.o, g.T()}), DType::Float32());
  te::Tensor y = fb.Custom("Y", Dims({g.n, g.o, g.ho, g.wo}), DType::Float32(), [&](const ir::Buffer& out) {
    ir::Var o = LoopVar("o"), n = LoopVar("n"), ty = LoopVar("ty");
    // The stores of rows `rows` (i) and columns `cols` (j) of tile column tx.
    auto tile = [&](const PrimExpr& tx, int rows, int cols) {
      PrimExpr t = (PrimExpr(n) * I64(g.th) + PrimExpr(ty)) * I64(g.tw) + tx;
      std::vector<ir::Stmt> stores;
      for (int i = 0; i < rows; ++i) {
        std::array<PrimExpr, 4> r;  // r[b] = sum_a A^T[i][a] M[4a + b]
        for (int b = 0; b < 4; ++b) {
          std::vector<std::pair<int, PrimExpr>> terms;
          for (int a = 0; a < 4; ++a) terms.emplace_back(kAT[i][a], m({I64(4 * a + b), PrimExpr(o), t}));
          r[b] = SignedSum(terms);
        }
        for (int j = 0; j < cols; ++j) {
          std::vector<std::pair<int, PrimExpr>> terms;
          for (int b = 0; b < 4; ++b) terms.emplace_back(kAT[j][b], r[b]);
          stores.push_back(ir::Store(out, SignedSum(terms),
                                     {PrimExpr(n), PrimExpr(o), PrimExpr(ty) * I64(2) + I64(i), tx * I64(2) + I64(j)}));
        }
      }
      return ir::Seq(stores);
    };
    auto row = [&](int rows) {
      ir::Var tx = LoopVar("tx");
      std::vector<ir::Stmt> parts;
      if (g.wo / 2 > 0) parts.push_back(Loop(tx, g.wo / 2, ir::ForKind::kVectorized, tile(PrimExpr(tx), rows, 2)));
      if (g.wo % 2 == 1) parts.push_back(tile(I64(g.tw - 1), rows, 1));
      return ir::Seq(parts);
    };
    ir::Stmt body = row(2);
    if (g.ho % 2 == 1) {
      body = std::make_shared<ir::IfThenElseNode>(ir::MakeBinary(ir::TirKind::kLT, PrimExpr(ty), I64(g.ho / 2)),
                                                  body, row(1));
    }
    return Loop(o, g.o, ir::ForKind::kSerial, Loop(n, g.n, ir::ForKind::kSerial, Loop(ty, g.th, ir::ForKind::kSerial, body)));
  });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({y}));
  return WithPattern(f, ir::OpPattern::kInjective);
}

// U[4i + j, o, c] = sum_ab G[i][a] W[o, c, a, b] G[j][b], in double.
Result<Tensor> TransformWeight(const Tensor& w, int64_t o_count, int64_t c_count) {
  const int64_t shape[3] = {16, o_count, c_count};
  KILN_ASSIGN_OR_RETURN(Tensor u, Tensor::Empty(Span<const int64_t>(shape, 3), DType::Float32()));
  const float* src = w.data<float>();
  float* dst = u.data<float>();
  for (int64_t o = 0; o < o_count; ++o) {
    for (int64_t c = 0; c < c_count; ++c) {
      const float* k = src + (o * c_count + c) * 9;
      for (int i = 0; i < 4; ++i) {
        double row[3];  // (G W)[i][b]
        for (int b = 0; b < 3; ++b) row[b] = kG[i][0] * k[b] + kG[i][1] * k[3 + b] + kG[i][2] * k[6 + b];
        for (int j = 0; j < 4; ++j) {
          double v = row[0] * kG[j][0] + row[1] * kG[j][1] + row[2] * kG[j][2];
          dst[((4 * i + j) * o_count + o) * c_count + c] = static_cast<float>(v);
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
    g.th = (g.ho + 1) / 2, g.tw = (g.wo + 1) / 2;
    if (g.c < kMinWinogradInputChannels || g.o < kMinWinogradOutputChannels || g.T() < kMinWinogradTiles) return false;
    // The last tile of an odd output reads one row / column past the
    // convolution's padding: pad it too (zeros, never stored).
    int64_t pb = pad[2] + g.ho % 2, pr = pad[3] + g.wo % 2;
    g.hp = xs[2] + pad[0] + pb, g.wp = xs[3] + pad[1] + pr;

    Result<Tensor> u = TransformWeight(wk->data, g.o, g.c);
    if (!u.ok()) {
      status = u.status();
      return false;
    }
    auto emit = [&](const std::string& base, ir::Expr value) {
      ir::RVar v = ir::MakeRVar(FreshName(base), nullptr, dataflow);
      out->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    auto call_tir = [&](const std::string& kernel, const ir::Expr& arg, const std::vector<int64_t>& shape) {
      ir::Expr callee = std::make_shared<ir::GlobalVarExpr>(kernel);
      callee->struct_info = std::make_shared<ir::ObjectSInfo>();
      auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{arg});
      args->struct_info = std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{arg->struct_info});
      return ir::MakeOpCall("relax.call_tir", {callee, args}, {},
                            {ir::MakeTensorSInfo(Dims(shape), DType::Float32())});
    };
    Result<std::string> in_kernel = Kernel("winograd_input_f2x3", g, true);
    Result<std::string> out_kernel = Kernel("winograd_output_f2x3", g, false);
    if (!in_kernel.ok() || !out_kernel.ok()) {
      status = in_kernel.ok() ? out_kernel.status() : in_kernel.status();
      return false;
    }

    ir::Expr x = call.args[0];
    if (pad[0] || pad[1] || pb || pr) {
      ir::AttrValue width;
      width.kind = ir::AttrValue::Kind::kIntList;
      width.ints = {0, 0, 0, 0, pad[0], pb, pad[1], pr};
      x = emit("padded", ir::MakeOpCall("relax.nn.pad", {x}, {{"pad_width", width}}));
      x->struct_info = ir::MakeTensorSInfo(Dims({g.n, g.c, g.hp, g.wp}), DType::Float32());
    }
    ir::Expr v = emit("wino_in", call_tir(*in_kernel, x, {16, g.c, g.T()}));
    v->struct_info = ir::MakeTensorSInfo(Dims({16, g.c, g.T()}), DType::Float32());
    auto uk = std::make_shared<ir::ConstantExpr>(*u, wk->name.empty() ? "" : wk->name + "_winograd");
    uk->struct_info = ir::MakeTensorSInfo(Dims({16, g.o, g.c}), DType::Float32());
    ir::Expr ue = emit("wino_w", ir::Expr(uk));
    ir::Expr m = emit("wino_mm", ir::MakeOpCall("relax.matmul", {ue, v}));
    out->push_back(ir::Binding{b.var, call_tir(*out_kernel, m, {g.n, g.o, g.ho, g.wo}), nullptr, b.span});
    return true;
  }

  // The transform kernel for this geometry (one per geometry and kind).
  Result<std::string> Kernel(const std::string& base, const Geometry& g, bool input) {
    std::vector<int64_t> key = {input ? 1 : 0, g.n, g.c, g.o, g.hp, g.wp, g.ho, g.wo};
    std::string& name = kernels_[key];
    if (!name.empty()) return name;
    name = mod_->UniqueName(base);
    Result<ir::PrimFunc> f = input ? InputTransform(name, g) : OutputTransform(name, g);
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
