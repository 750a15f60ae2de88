// The bundled model examples (examples/transformer_block.relax with a symbolic
// sequence length, examples/resnet_block.relax) compiled and run against plain
// C++ references written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/any.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

using Vec = std::vector<float>;

Vec Values(const Tensor& t) { return Vec(t.data<float>(), t.data<float>() + t.NumElements()); }

// Weights drawn small so activations stay in a well-conditioned range.
Tensor Weight(std::vector<int64_t> shape, uint64_t seed, float scale) {
  Tensor t = RandomTensor(shape, seed);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] *= scale;
  return t;
}

// ---------------------------------------------------------------- transformer

constexpr int kD = 64, kHeads = 4, kHd = 16, kFf = 256;

Vec LayerNorm(const Vec& x, int rows, const Vec& g, const Vec& b) {
  Vec y(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < kD; ++c) mean += x[r * kD + c];
    mean /= kD;
    for (int c = 0; c < kD; ++c) var += (x[r * kD + c] - mean) * (x[r * kD + c] - mean);
    var /= kD;
    for (int c = 0; c < kD; ++c) y[r * kD + c] = static_cast<float>((x[r * kD + c] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c]);
  }
  return y;
}

// (rows, k) @ (k, n) + bias
Vec MatMul(const Vec& a, int rows, int k, const Vec& w, int n, const Vec* bias = nullptr) {
  Vec y(static_cast<size_t>(rows) * n);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < n; ++j) {
      double s = bias ? (*bias)[j] : 0.0;
      for (int t = 0; t < k; ++t) s += static_cast<double>(a[r * k + t]) * w[t * n + j];
      y[r * n + j] = static_cast<float>(s);
    }
  return y;
}

Vec ReferenceTransformer(const std::vector<Vec>& in, int s) {
  const Vec& x = in[0];
  Vec h = LayerNorm(x, s, in[1], in[2]);
  Vec q = MatMul(h, s, kD, in[3], kD), k = MatMul(h, s, kD, in[4], kD), v = MatMul(h, s, kD, in[5], kD);
  Vec ctx(static_cast<size_t>(s) * kD);
  for (int hd = 0; hd < kHeads; ++hd)
    for (int i = 0; i < s; ++i) {
      std::vector<double> p(s);
      double m = -1e300;
      for (int j = 0; j < s; ++j) {
        double d = 0;
        for (int t = 0; t < kHd; ++t) d += q[i * kD + hd * kHd + t] * k[j * kD + hd * kHd + t];
        p[j] = d * 0.25;
        m = std::max(m, p[j]);
      }
      double sum = 0;
      for (int j = 0; j < s; ++j) sum += p[j] = std::exp(p[j] - m);
      for (int t = 0; t < kHd; ++t) {
        double acc = 0;
        for (int j = 0; j < s; ++j) acc += p[j] / sum * v[j * kD + hd * kHd + t];
        ctx[i * kD + hd * kHd + t] = static_cast<float>(acc);
      }
    }
  Vec attn = MatMul(ctx, s, kD, in[6], kD, &in[7]);
  Vec r1(x.size());
  for (size_t i = 0; i < x.size(); ++i) r1[i] = x[i] + attn[i];
  Vec h2 = LayerNorm(r1, s, in[8], in[9]);
  Vec f1 = MatMul(h2, s, kD, in[10], kFf, &in[11]);
  for (float& f : f1) f = static_cast<float>(0.5 * f * (1.0 + std::erf(f / std::sqrt(2.0))));
  Vec f2 = MatMul(f1, s, kFf, in[12], kD, &in[13]);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = r1[i] + f2[i];
  return y;
}

TEST(ModelExamples, TransformerBlockMatchesReferenceForSeveralSequenceLengths) {
  std::string src = ReadFile("examples/transformer_block.relax");
  ASSERT_FALSE(src.empty());
  auto module = CompileAndLoad(src, "examples/transformer_block.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  std::vector<std::vector<int64_t>> shapes = {{kD}, {kD}, {kD, kD}, {kD, kD}, {kD, kD}, {kD, kD}, {kD},
                                              {kD}, {kD}, {kD, kFf}, {kFf}, {kFf, kD}, {kD}};
  std::vector<Tensor> weights;
  for (size_t i = 0; i < shapes.size(); ++i) weights.push_back(Weight(shapes[i], 100 + i, 0.2f));
  for (int s : {1, 17, 128}) {
    Tensor x = RandomTensor({s, kD}, 7 + s);
    std::vector<Any> args{x};
    std::vector<Vec> ref_in{Values(x)};
    for (const Tensor& w : weights) {
      args.push_back(w);
      ref_in.push_back(Values(w));
    }
    Any result;
    Status st = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
    ASSERT_TRUE(st.ok()) << st.ToString();
    Tensor y = result.tensor();
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{s, kD}));
    Vec want = ReferenceTransformer(ref_in, s);
    float worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(y.data<float>()[i] - want[i]));
    EXPECT_LT(worst, 2e-4f) << "sequence length " << s;
  }
}

// ---------------------------------------------------------------- resnet

constexpr int kC = 64, kH = 56, kW = 56;

// 3x3 convolution, stride 1, padding 1, NCHW / OIHW, batch 1.
Vec Conv3x3(const Vec& x, const Vec& w) {
  Vec y(static_cast<size_t>(kC) * kH * kW, 0.0f);
  for (int o = 0; o < kC; ++o)
    for (int i = 0; i < kC; ++i)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
          float wv = w[((o * kC + i) * 3 + r) * 3 + c];
          for (int h = 0; h < kH; ++h) {
            int ih = h + r - 1;
            if (ih < 0 || ih >= kH) continue;
            for (int x0 = 0; x0 < kW; ++x0) {
              int iw = x0 + c - 1;
              if (iw < 0 || iw >= kW) continue;
              y[(o * kH + h) * kW + x0] += wv * x[(i * kH + ih) * kW + iw];
            }
          }
        }
  return y;
}

void BatchNormInPlace(Vec* x, const Vec& g, const Vec& b, const Vec& m, const Vec& v, bool relu) {
  for (int c = 0; c < kC; ++c) {
    float scale = g[c] / std::sqrt(v[c] + 1e-5f);
    for (int i = 0; i < kH * kW; ++i) {
      float& e = (*x)[c * kH * kW + i];
      e = (e - m[c]) * scale + b[c];
      if (relu) e = std::max(e, 0.0f);
    }
  }
}

// With `bind_weights`, the weights are bound at compile time (as --params
// does): batch norm folds into per-channel constants and the convolution
// weights are packed into blocks (pack-constant-weights); the call takes x.
void CheckResNetBlock(bool bind_weights) {
  std::string src = ReadFile("examples/resnet_block.relax");
  ASSERT_FALSE(src.empty());
  Tensor x = RandomTensor({1, kC, kH, kW}, 1);
  std::vector<Tensor> in{x};
  for (int conv = 0; conv < 2; ++conv) {
    in.push_back(Weight({kC, kC, 3, 3}, 10 + conv, 0.05f));
    in.push_back(Weight({kC}, 20 + conv, 0.5f));  // gamma
    in.push_back(Weight({kC}, 30 + conv, 0.1f));  // beta
    in.push_back(Weight({kC}, 40 + conv, 0.1f));  // mean
    Tensor var = RandomTensor({kC}, 50 + conv);   // variance > 0
    for (int i = 0; i < kC; ++i) var.data<float>()[i] = 0.5f + 0.25f * var.data<float>()[i];
    in.push_back(var);
  }
  driver::CompileOptions options;
  const char* names[] = {"w1", "g1", "be1", "m1", "v1", "w2", "g2", "be2", "m2", "v2"};
  if (bind_weights) {
    for (int i = 0; i < 10; ++i) options.params.push_back({names[i], in[i + 1]});
  }
  auto module = CompileAndLoad(src, "examples/resnet_block.relax", options);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  std::vector<Any> args(in.begin(), in.end());
  if (bind_weights) args.resize(1);
  Any result;
  Status st = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
  ASSERT_TRUE(st.ok()) << st.ToString();
  Tensor y = result.tensor();
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{1, kC, kH, kW}));

  Vec a = Conv3x3(Values(x), Values(in[1]));
  BatchNormInPlace(&a, Values(in[2]), Values(in[3]), Values(in[4]), Values(in[5]), /*relu=*/true);
  Vec b = Conv3x3(a, Values(in[6]));
  BatchNormInPlace(&b, Values(in[7]), Values(in[8]), Values(in[9]), Values(in[10]), /*relu=*/false);
  Vec xv = Values(x);
  float worst = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    float want = std::max(b[i] + xv[i], 0.0f);
    worst = std::max(worst, std::fabs(y.data<float>()[i] - want));
  }
  EXPECT_LT(worst, 1e-3f);
}

TEST(ModelExamples, ResNetBlockMatchesReference) { CheckResNetBlock(/*bind_weights=*/false); }

TEST(ModelExamples, ResNetBlockWithBoundWeightsMatchesReference) { CheckResNetBlock(/*bind_weights=*/true); }

}  // namespace
}  // namespace e2e
}  // namespace kiln
