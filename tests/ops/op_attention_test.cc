// relax.nn.attention against a plain C++ reference: default and explicit
// scale, causal masks (TopLeft, BottomRight), broadcast bias, symbolic
// sequence length, float16; and every error message of op_attention.cc.
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

struct Attn {
  int64_t B, S, T, H, D, Dv;
};

// q (B,S,H,D), k (B,T,H,D), v (B,T,H,Dv) -> (B,S,H,Dv); bias (bs) broadcast
// to (B,H,S,T); mask: "", "TopLeft", "BottomRight".
std::vector<double> RefAttention(const Attn& a, const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v, const Shape* bs, const std::vector<double>* bias,
                                 double scale, const std::string& mask) {
  std::vector<double> out(a.B * a.S * a.H * a.Dv, 0.0);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t h = 0; h < a.H; ++h)
      for (int64_t s = 0; s < a.S; ++s) {
        std::vector<double> sc(a.T);
        for (int64_t t = 0; t < a.T; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < a.D; ++d) dot += q[((b * a.S + s) * a.H + h) * a.D + d] * k[((b * a.T + t) * a.H + h) * a.D + d];
          sc[t] = dot * scale;
          if (bias) sc[t] += (*bias)[BroadcastOffset(*bs, {b, h, s, t})];
          bool masked = (mask == "TopLeft" && t > s) || (mask == "BottomRight" && t > s + (a.T - a.S));
          if (masked) sc[t] = -3.4028234663852886e38;
        }
        double mx = -INFINITY, sum = 0;
        for (double x : sc) mx = std::max(mx, x);
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < a.Dv; ++e) {
          double acc = 0;
          for (int64_t t = 0; t < a.T; ++t) acc += sc[t] / sum * v[((b * a.T + t) * a.H + h) * a.Dv + e];
          out[((b * a.S + s) * a.H + h) * a.Dv + e] = acc;
        }
      }
  return out;
}

void Check(const Attn& a, const std::string& attrs, const std::string& mask, double scale, const Shape* bias_shape,
           const std::string& dtype = "float32", double tol = 1e-5) {
  DType dt = dtype == "float16" ? DType::Float16() : DType::Float32();
  Shape qs{a.B, a.S, a.H, a.D}, ks{a.B, a.T, a.H, a.D}, vs{a.B, a.T, a.H, a.Dv};
  Tensor q = RandomTensor(qs, dt, 200), k = RandomTensor(ks, dt, 201), v = RandomTensor(vs, dt, 202);
  std::vector<std::string> params{"q: " + TensorType(qs, dtype), "k: " + TensorType(ks, dtype), "v: " + TensorType(vs, dtype)};
  std::vector<Tensor> inputs{q, k, v};
  std::vector<double> bias;
  if (bias_shape) {
    Tensor b = RandomTensor(*bias_shape, dt, 203);
    bias = ToDoubles(b);
    inputs.push_back(b);
    params.push_back("b: " + TensorType(*bias_shape, dtype));
  }
  std::string expr = std::string("R.nn.attention(q, k, v") + (bias_shape ? ", b" : "") + attrs + ")";
  std::vector<double> want =
      RefAttention(a, ToDoubles(q), ToDoubles(k), ToDoubles(v), bias_shape, bias_shape ? &bias : nullptr, scale, mask);
  auto r = RunMain(OneOpModule(params, expr), inputs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, {a.B, a.S, a.H, a.Dv}, tol, tol)) << expr;
}

TEST(OpAttention, DefaultScaleAndExplicitScale) {
  Check({2, 3, 3, 2, 4, 4}, "", "", 0.5, nullptr);
  Check({1, 2, 5, 3, 2, 3}, ", scale=0.3", "", 0.3, nullptr);
}

TEST(OpAttention, CausalMasks) {
  Check({1, 4, 4, 2, 4, 4}, ", causal_mask=\"TopLeft\"", "TopLeft", 0.5, nullptr);
  Check({2, 2, 5, 1, 4, 2}, ", causal_mask=\"BottomRight\"", "BottomRight", 0.5, nullptr);
  // More queries than keys: BottomRight masks whole rows, which become uniform.
  Check({1, 4, 2, 1, 4, 2}, ", causal_mask=\"BottomRight\"", "BottomRight", 0.5, nullptr);
}

TEST(OpAttention, BroadcastBias) {
  Shape full{2, 2, 3, 5}, bcast{1, 2, 1, 5};
  Check({2, 3, 5, 2, 4, 4}, "", "", 0.5, &full);
  Check({2, 3, 5, 2, 4, 4}, ", causal_mask=\"TopLeft\"", "TopLeft", 0.5, &bcast);
}

TEST(OpAttention, Float16) { Check({1, 3, 3, 2, 4, 4}, "", "", 0.5, nullptr, "float16", 5e-3); }

TEST(OpAttention, SymbolicSequenceLength) {
  std::string t = "R.Tensor((1, \"n\", 2, 4), \"float32\")";
  std::string src = OneOpModule({"q: " + t, "k: " + t, "v: " + t}, "R.nn.attention(q, k, v, causal_mask=\"TopLeft\")");
  for (int64_t n : {1, 17}) {
    Attn a{1, n, n, 2, 4, 4};
    Shape s{1, n, 2, 4};
    Tensor q = RandomTensor(s, DType::Float32(), 210 + n), k = RandomTensor(s, DType::Float32(), 211),
           v = RandomTensor(s, DType::Float32(), 212);
    std::vector<double> want = RefAttention(a, ToDoubles(q), ToDoubles(k), ToDoubles(v), nullptr, nullptr, 0.5, "TopLeft");
    auto r = RunMain(src, {q, k, v});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, s, 1e-5, 1e-5)) << "n=" << n;
  }
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpAttentionError, EveryMessageFires) {
  const std::string q = "q: " + TensorType({1, 3, 2, 4}), k = "k: " + TensorType({1, 5, 2, 4}),
                    v = "v: " + TensorType({1, 5, 2, 6});
  ExpectOpError({q, k}, "R.nn.attention(q, k)", StatusCode::kInvalidArgument,
                "R.nn.attention: takes 3 or 4 arguments (query, key, value, bias), got 2");
  ExpectOpError({q, k, v}, "R.nn.attention(q, k, v, causal_mask=\"Diagonal\")", StatusCode::kInvalidArgument,
                "R.nn.attention: causal_mask \"Diagonal\" is not supported (expected one of \"TopLeft\", \"BottomRight\")");
  ExpectOpError({q, k, v}, "R.nn.attention(q, k, v, window_size=4)", StatusCode::kUnimplemented,
                "R.nn.attention: window_size is not supported");
  ExpectOpError({q, k, "w: " + TensorType({1, 5, 2})}, "R.nn.attention(q, k, w)", StatusCode::kInvalidArgument,
                "R.nn.attention: value must have rank 4 (batch, seq, heads, head_dim), got rank 3");
  ExpectOpError({q, k, "w: " + TensorType({1, 5, 2, 6}, "float16")}, "R.nn.attention(q, k, w)",
                StatusCode::kInvalidArgument, "R.nn.attention: value has dtype float16 but query has float32");
  ExpectOpError({q, "j: " + TensorType({1, 5, 3, 4}), v}, "R.nn.attention(q, j, v)", StatusCode::kInvalidArgument,
                "R.nn.attention: heads differs: query (1, 3, 2, 4) has 2 but key (1, 5, 3, 4) has 3");
  ExpectOpError({q, "j: " + TensorType({1, 5, 2, 8}), v}, "R.nn.attention(q, j, v)", StatusCode::kInvalidArgument,
                "R.nn.attention: head_dim differs: query (1, 3, 2, 4) has 4 but key (1, 5, 2, 8) has 8");
  ExpectOpError({q, k, "w: " + TensorType({1, 4, 2, 6})}, "R.nn.attention(q, k, w)", StatusCode::kInvalidArgument,
                "R.nn.attention: sequence length differs: key (1, 5, 2, 4) has 5 but value (1, 4, 2, 6) has 4");
  ExpectOpError({q, k, v, "b: " + TensorType({1, 2, 3, 4})}, "R.nn.attention(q, k, v, b)", StatusCode::kInvalidArgument,
                "R.nn.attention: bias (1, 2, 3, 4) does not broadcast to the scores (batch, heads, seq, kv_seq) (1, 2, 3, 5)");
  ExpectOpError({q, k, v, "b: " + TensorType({1, 1, 1, 1, 5})}, "R.nn.attention(q, k, v, b)",
                StatusCode::kInvalidArgument, "R.nn.attention: bias must have rank <= 4, got rank 5");
  ExpectOpError({"i: " + TensorType({1, 3, 2, 4}, "int32"), "j: " + TensorType({1, 3, 2, 4}, "int32"),
                 "l: " + TensorType({1, 3, 2, 4}, "int32")},
                "R.nn.attention(i, j, l)", StatusCode::kInvalidArgument, "R.nn.attention: expects float tensors, got int32");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
