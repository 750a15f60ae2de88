// Neural-network ONNX operators end to end against plain C++ loops: Conv
// (padding, stride, groups, dilation, SAME), BatchNormalization, pooling,
// Gemm/MatMul, Softmax forms, LayerNormalization, InstanceNormalization,
// ConvTranspose, Einsum, Resize, Pad.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

struct T4 {
  int64_t n, c, h, w;
  std::vector<float> v;
  float at(int64_t a, int64_t b, int64_t y, int64_t x) const { return v[((a * c + b) * h + y) * w + x]; }
};

// conv2d NCHW / OIHW with groups.
T4 RefConv(const T4& x, const T4& wt, const std::vector<float>& bias, int64_t stride, int64_t pad_t, int64_t pad_l,
           int64_t pad_b, int64_t pad_r, int64_t dil, int64_t group) {
  T4 o;
  o.n = x.n;
  o.c = wt.n;
  o.h = (x.h + pad_t + pad_b - dil * (wt.h - 1) - 1) / stride + 1;
  o.w = (x.w + pad_l + pad_r - dil * (wt.w - 1) - 1) / stride + 1;
  o.v.assign(o.n * o.c * o.h * o.w, 0);
  int64_t cin_g = x.c / group, cout_g = o.c / group;
  for (int64_t b = 0; b < o.n; ++b)
    for (int64_t oc = 0; oc < o.c; ++oc)
      for (int64_t y = 0; y < o.h; ++y)
        for (int64_t xx = 0; xx < o.w; ++xx) {
          double acc = bias.empty() ? 0 : bias[oc];
          int64_t g = oc / cout_g;
          for (int64_t ic = 0; ic < cin_g; ++ic)
            for (int64_t ky = 0; ky < wt.h; ++ky)
              for (int64_t kx = 0; kx < wt.w; ++kx) {
                int64_t iy = y * stride - pad_t + ky * dil, ix = xx * stride - pad_l + kx * dil;
                if (iy < 0 || iy >= x.h || ix < 0 || ix >= x.w) continue;
                acc += x.at(b, g * cin_g + ic, iy, ix) * wt.at(oc, ic, ky, kx);
              }
          o.v[((b * o.c + oc) * o.h + y) * o.w + xx] = static_cast<float>(acc);
        }
  return o;
}

void ExpectNear(const Tensor& got, const std::vector<float>& want, float tol, const std::string& what) {
  std::vector<float> g = Values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " element " << i;
}

TEST(OnnxNnE2E, ConvolutionsNormalizationAndPooling) {
  B m(13);
  T4 x{1, 4, 6, 6, Ramp(144, -1, 1, 1)};
  T4 w1{3, 4, 3, 3, Ramp(108, -0.5f, 0.5f, 2)};
  std::vector<float> b1 = {0.1f, -0.2f, 0.3f};
  T4 w2{4, 2, 2, 2, Ramp(32, -0.5f, 0.5f, 3)};  // group 2, stride 2
  m.Input("x", TensorProto::FLOAT, {1, 4, 6, 6});
  m.Initializer("w1", {3, 4, 3, 3}, w1.v);
  m.Initializer("b1", {3}, b1);
  m.Initializer(B::TensorRaw("w2", {4, 2, 2, 2}, w2.v));
  auto* c1 = m.Node("Conv", {"x", "w1", "b1"}, {"c1"});
  B::AttrInts(c1, "pads", {1, 1, 1, 1});
  m.Output("c1");
  auto* c2 = m.Node("Conv", {"x", "w2"}, {"c2"});
  B::AttrInt(c2, "group", 2);
  B::AttrInts(c2, "strides", {2, 2});
  m.Output("c2");
  auto* c3 = m.Node("Conv", {"x", "w1"}, {"c3"});  // SAME_UPPER, dilation 2
  B::AttrString(c3, "auto_pad", "SAME_UPPER");
  B::AttrInts(c3, "dilations", {2, 2});
  m.Output("c3");
  // BatchNormalization(c1) -> Relu -> MaxPool 2x2 s2, AveragePool 3x3 pads 1, global pools.
  std::vector<float> scale = {1.5f, 0.5f, 1.0f}, shift = {0.1f, 0.2f, -0.3f}, mean = {0.05f, -0.1f, 0.2f}, var = {0.5f, 1.5f, 2.0f};
  m.Initializer("scale", {3}, scale);
  m.Initializer("shift", {3}, shift);
  m.Initializer("mean", {3}, mean);
  m.Initializer("var", {3}, var);
  auto* bn = m.Node("BatchNormalization", {"c1", "scale", "shift", "mean", "var"}, {"bn"});
  B::AttrFloat(bn, "epsilon", 1e-3f);
  m.Node("Relu", {"bn"}, {"r"});
  m.Output("r");
  auto* mp = m.Node("MaxPool", {"r"}, {"mp"});
  B::AttrInts(mp, "kernel_shape", {2, 2});
  B::AttrInts(mp, "strides", {2, 2});
  m.Output("mp");
  auto* ap = m.Node("AveragePool", {"c1"}, {"ap"});
  B::AttrInts(ap, "kernel_shape", {3, 3});
  B::AttrInts(ap, "pads", {1, 1, 1, 1});
  m.Output("ap");
  m.Node("GlobalAveragePool", {"c1"}, {"gap"});
  m.Output("gap");
  m.Node("GlobalMaxPool", {"c1"}, {"gmp"});
  m.Output("gmp");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({1, 4, 6, 6}, x.v)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();

  T4 r1 = RefConv(x, w1, b1, 1, 1, 1, 1, 1, 1, 1);
  ExpectNear((*out)[0], r1.v, 1e-4f, "conv pads 1");
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 3, 6, 6}));
  T4 r2 = RefConv(x, w2, {}, 2, 0, 0, 0, 0, 1, 2);
  ExpectNear((*out)[1], r2.v, 1e-4f, "conv group 2 stride 2");
  // SAME_UPPER with an effective kernel of 5: total pad 4, 2 each side.
  T4 r3 = RefConv(x, w1, {}, 1, 2, 2, 2, 2, 2, 1);
  ExpectNear((*out)[2], r3.v, 1e-4f, "conv SAME_UPPER dilation 2");
  std::vector<float> relu(r1.v.size());
  for (size_t i = 0; i < relu.size(); ++i) {
    size_t c = (i / 36) % 3;
    float v = (r1.v[i] - mean[c]) / std::sqrt(var[c] + 1e-3f) * scale[c] + shift[c];
    relu[i] = std::max(v, 0.f);
  }
  ExpectNear((*out)[3], relu, 1e-4f, "batchnorm + relu");
  std::vector<float> mpv, apv, gap(3, 0), gmp(3, -1e30f);
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t xx = 0; xx < 3; ++xx) {
        float best = -1e30f;
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx) best = std::max(best, relu[c * 36 + (2 * y + dy) * 6 + 2 * xx + dx]);
        mpv.push_back(best);
      }
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t xx = 0; xx < 6; ++xx) {
        double s = 0;
        int cnt = 0;
        for (int64_t dy = -1; dy <= 1; ++dy)
          for (int64_t dx = -1; dx <= 1; ++dx) {
            int64_t iy = y + dy, ix = xx + dx;
            if (iy < 0 || iy >= 6 || ix < 0 || ix >= 6) continue;
            s += r1.v[c * 36 + iy * 6 + ix];
            ++cnt;
          }
        apv.push_back(static_cast<float>(s / cnt));  // count_include_pad = 0
      }
    for (int64_t i = 0; i < 36; ++i) {
      gap[c] += r1.v[c * 36 + i] / 36;
      gmp[c] = std::max(gmp[c], r1.v[c * 36 + i]);
    }
  }
  ExpectNear((*out)[4], mpv, 1e-5f, "maxpool");
  ExpectNear((*out)[5], apv, 1e-4f, "avgpool");
  ExpectNear((*out)[6], gap, 1e-4f, "global average pool");
  EXPECT_EQ((*out)[6].shape(), (std::vector<int64_t>{1, 3, 1, 1}));
  ExpectNear((*out)[7], gmp, 1e-5f, "global max pool");
}

TEST(OnnxNnE2E, GemmMatMulSoftmaxAndLayerNorm) {
  B m(11);  // opset 11: Softmax flattens to 2-D at `axis`
  m.Input("a", TensorProto::FLOAT, {2, 3});
  std::vector<float> bw = Ramp(12, -1, 1, 5), cv = {0.5f, -0.5f, 1.0f, 2.0f};
  m.Initializer("bt", {4, 3}, bw);  // B transposed: (N, K)
  m.Initializer("c", {4}, cv);
  auto* g = m.Node("Gemm", {"a", "bt", "c"}, {"gemm"});
  B::AttrInt(g, "transB", 1);
  B::AttrFloat(g, "alpha", 0.5f);
  B::AttrFloat(g, "beta", 2.0f);
  m.Output("gemm");
  auto* g2 = m.Node("Gemm", {"a", "a"}, {"gemm_ta"});  // Aᵀ A: (3, 3)
  B::AttrInt(g2, "transA", 1);
  m.Output("gemm_ta");
  m.Input("x", TensorProto::FLOAT, {2, 2, 3});
  auto* sm = m.Node("Softmax", {"x"}, {"sm"});
  B::AttrInt(sm, "axis", 1);  // over the last 6 values of each batch
  m.Output("sm");
  auto* lsm = m.Node("LogSoftmax", {"x"}, {"lsm"});
  B::AttrInt(lsm, "axis", 2);
  m.Output("lsm");
  m.Node("MatMul", {"x", "bt_t"}, {"mm"});
  m.Initializer("bt_t", {3, 4}, bw);
  m.Output("mm");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> av = Ramp(6, -1, 1, 7), xv = Ramp(12, -2, 2, 8);
  auto out = RunMain(*module, {F32({2, 3}, av), F32({2, 2, 3}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> gemm, gta, smv, lsmv, mmv;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += av[i * 3 + k] * bw[j * 3 + k];
      gemm.push_back(0.5f * s + 2.0f * cv[j]);
    }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) gta.push_back(av[i] * av[j] + av[3 + i] * av[3 + j]);
  for (int b = 0; b < 2; ++b) {
    float mx = -1e30f, s = 0;
    for (int i = 0; i < 6; ++i) mx = std::max(mx, xv[b * 6 + i]);
    for (int i = 0; i < 6; ++i) s += std::exp(xv[b * 6 + i] - mx);
    for (int i = 0; i < 6; ++i) smv.push_back(std::exp(xv[b * 6 + i] - mx) / s);
  }
  for (int r = 0; r < 4; ++r) {
    float mx = -1e30f, s = 0;
    for (int i = 0; i < 3; ++i) mx = std::max(mx, xv[r * 3 + i]);
    for (int i = 0; i < 3; ++i) s += std::exp(xv[r * 3 + i] - mx);
    for (int i = 0; i < 3; ++i) lsmv.push_back(xv[r * 3 + i] - mx - std::log(s));
    for (int j = 0; j < 4; ++j) {
      float acc = 0;
      for (int k = 0; k < 3; ++k) acc += xv[r * 3 + k] * bw[k * 4 + j];
      mmv.push_back(acc);
    }
  }
  ExpectNear((*out)[0], gemm, 1e-5f, "gemm transB alpha beta");
  ExpectNear((*out)[1], gta, 1e-5f, "gemm transA");
  ExpectNear((*out)[2], smv, 1e-5f, "softmax opset 11 axis 1");
  ExpectNear((*out)[3], lsmv, 1e-5f, "logsoftmax");
  ExpectNear((*out)[4], mmv, 1e-5f, "matmul batched");
}

TEST(OnnxNnE2E, LayerInstanceNormConvTransposeEinsumResizePad) {
  B m(17);
  m.Input("x", TensorProto::FLOAT, {1, 2, 3, 4});
  std::vector<float> xv = Ramp(24, -1, 1, 11);
  std::vector<float> gamma = {1.5f, 0.5f, 1.0f, 2.0f}, beta = {0.0f, 0.1f, -0.1f, 0.2f};
  m.Initializer("gamma", {4}, gamma);
  m.Initializer("beta", {4}, beta);
  m.Node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"});
  m.Output("ln");
  m.Initializer("in_s", {2}, {1.0f, 2.0f});
  m.Initializer("in_b", {2}, {0.5f, -0.5f});
  m.Node("InstanceNormalization", {"x", "in_s", "in_b"}, {"inorm"});
  m.Output("inorm");
  // ConvTranspose: (1, 2, 3, 4) with weight (2, 1, 2, 2), stride 2 -> (1, 1, 6, 8).
  std::vector<float> wt = Ramp(8, -1, 1, 12);
  m.Initializer("wt", {2, 1, 2, 2}, wt);
  auto* ct = m.Node("ConvTranspose", {"x", "wt"}, {"ct"});
  B::AttrInts(ct, "strides", {2, 2});
  m.Output("ct");
  // Einsum "bhij,bhjk->bhik" of x with itself transposed: x (1,2,3,4) @ xᵀ (1,2,4,3).
  auto* tr = m.Node("Transpose", {"x"}, {"xt"});
  B::AttrInts(tr, "perm", {0, 1, 3, 2});
  auto* es = m.Node("Einsum", {"x", "xt"}, {"es"});
  B::AttrString(es, "equation", "bhij,bhjk->bhik");
  m.Output("es");
  // Resize nearest x2 (scales) and Pad reflect.
  m.Initializer("scales", {4}, {1, 1, 2, 2});
  auto* rs = m.Node("Resize", {"x", "", "scales"}, {"rs"});
  B::AttrString(rs, "mode", "nearest");
  B::AttrString(rs, "coordinate_transformation_mode", "asymmetric");
  B::AttrString(rs, "nearest_mode", "floor");
  m.Output("rs");
  m.InitializerI64("pads", {8}, {0, 0, 1, 0, 0, 0, 0, 2});
  m.Initializer("pv", {}, {9.0f});
  m.Node("Pad", {"x", "pads", "pv"}, {"pad"});
  m.Output("pad");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({1, 2, 3, 4}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> ln, inorm, ctv(48, 0), esv, rsv, padv;
  for (int r = 0; r < 6; ++r) {
    float mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += xv[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) var += (xv[r * 4 + i] - mean) * (xv[r * 4 + i] - mean) / 4;
    for (int i = 0; i < 4; ++i) ln.push_back((xv[r * 4 + i] - mean) / std::sqrt(var + 1e-5f) * gamma[i] + beta[i]);
  }
  for (int c = 0; c < 2; ++c) {
    float mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += xv[c * 12 + i] / 12;
    for (int i = 0; i < 12; ++i) var += (xv[c * 12 + i] - mean) * (xv[c * 12 + i] - mean) / 12;
    for (int i = 0; i < 12; ++i) inorm.push_back((xv[c * 12 + i] - mean) / std::sqrt(var + 1e-5f) * (c ? 2.f : 1.f) + (c ? -0.5f : 0.5f));
  }
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x)
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx) ctv[(2 * y + ky) * 8 + 2 * x + kx] += xv[c * 12 + y * 4 + x] * wt[c * 4 + ky * 2 + kx];
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) {
        float s = 0;
        for (int j = 0; j < 4; ++j) s += xv[h * 12 + i * 4 + j] * xv[h * 12 + k * 4 + j];
        esv.push_back(s);
      }
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) rsv.push_back(xv[c * 12 + (y / 2) * 4 + x / 2]);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 6; ++x) padv.push_back(y < 1 || x >= 4 ? 9.0f : xv[c * 12 + (y - 1) * 4 + x]);
  ExpectNear((*out)[0], ln, 1e-4f, "layernorm");
  ExpectNear((*out)[1], inorm, 1e-4f, "instancenorm");
  ExpectNear((*out)[2], ctv, 1e-5f, "convtranspose stride 2");
  ExpectNear((*out)[3], esv, 1e-5f, "einsum");
  ExpectNear((*out)[4], rsv, 0, "resize nearest");
  ExpectNear((*out)[5], padv, 0, "pad constant");
  EXPECT_EQ((*out)[5].shape(), (std::vector<int64_t>{1, 2, 4, 6}));
}

// Two-operand einsum by letters, in doubles: `out` letters index the result,
// the others are summed (each letter's size from the operand that has it).
std::vector<float> RefEinsum2(const std::string& ta, const std::vector<int64_t>& sa, const std::vector<float>& a,
                              const std::string& tb, const std::vector<int64_t>& sb, const std::vector<float>& b,
                              const std::string& out) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ta.size(); ++i) size[ta[i]] = sa[i];
  for (size_t i = 0; i < tb.size(); ++i) size[tb[i]] = sb[i];
  std::string letters = out;
  for (const auto& kv : size)
    if (out.find(kv.first) == std::string::npos) letters += kv.first;
  int64_t n_out = 1, total = 1;
  for (char c : out) n_out *= size[c];
  for (char c : letters) total *= size[c];
  std::vector<double> acc(static_cast<size_t>(n_out), 0.0);
  std::map<char, int64_t> at;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (size_t i = letters.size(); i-- > 0;) {
      at[letters[i]] = rest % size[letters[i]];
      rest /= size[letters[i]];
    }
    auto offset = [&](const std::string& t) {
      int64_t o = 0;
      for (char c : t) o = o * size[c] + at[c];
      return o;
    };
    acc[static_cast<size_t>(offset(out))] += static_cast<double>(a[offset(ta)]) * b[offset(tb)];
  }
  return std::vector<float>(acc.begin(), acc.end());
}

TEST(OnnxNnE2E, EinsumAsMatmulAndOtherwise) {
  // Two-operand float einsums that are one batched product become
  // permute_dims + matmul (+ permute_dims of the result): attention's scores
  // (B's contracted axis innermost), its values, a product whose result is
  // permuted; odd sizes. One that sums over an operand alone keeps the
  // einsum kernel. Each against a reference.
  struct Case {
    std::string eq;
    std::vector<int64_t> sa, sb;
    bool matmul;
  };
  const std::vector<Case> cases = {
      {"bhqd,bhkd->bhqk", {2, 3, 5, 4}, {2, 3, 7, 4}, true},
      {"bhqk,bhkd->bhqd", {2, 3, 5, 7}, {2, 3, 7, 4}, true},
      {"bqd,bkd->kbq", {3, 5, 9}, {3, 6, 9}, true},
      {"ij,kj->ki", {5, 17}, {3, 17}, true},
      {"bhqd,bhkd->bhd", {2, 3, 5, 4}, {2, 3, 7, 4}, false},
  };
  for (const Case& c : cases) {
    B m(17);
    m.Input("a", TensorProto::FLOAT, std::vector<OnnxDim>(c.sa.begin(), c.sa.end()));
    m.Input("b", TensorProto::FLOAT, std::vector<OnnxDim>(c.sb.begin(), c.sb.end()));
    auto* e = m.Node("Einsum", {"a", "b"}, {"y"});
    B::AttrString(e, "equation", c.eq);
    m.Output("y");
    std::string text = ImportText(m);
    EXPECT_EQ(text.find("R.matmul(") != std::string::npos, c.matmul) << c.eq << "\n" << text;
    EXPECT_EQ(text.find("R.einsum(") != std::string::npos, !c.matmul) << c.eq << "\n" << text;
    int64_t na = 1, nb = 1;
    for (int64_t d : c.sa) na *= d;
    for (int64_t d : c.sb) nb *= d;
    std::vector<float> av = Ramp(na, -1, 1, 31), bv = Ramp(nb, -1, 1, 32);
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << c.eq << ": " << module.status().ToString();
    auto out = RunMain(*module, {F32(c.sa, av), F32(c.sb, bv)});
    ASSERT_TRUE(out.ok()) << c.eq << ": " << out.status().ToString();
    size_t arrow = c.eq.find("->"), comma = c.eq.find(',');
    ExpectNear((*out)[0],
               RefEinsum2(c.eq.substr(0, comma), c.sa, av, c.eq.substr(comma + 1, arrow - comma - 1), c.sb, bv,
                          c.eq.substr(arrow + 2)),
               1e-5f, c.eq);
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// Forms the node tests exercise: optional outputs, reversed scans, last
// occurrences, output_shape, implicit einsum, float64, constant exponents.
TEST(OnnxNnE2E, OptionalOutputsAndLessCommonForms) {
  B m(17);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Initializer("g", {3}, {1, 1, 1});
  auto* ln = m.Node("LayerNormalization", {"x", "g"}, {"ln", "ln_mean", "ln_inv"});
  (void)ln;
  m.Output("ln_mean");
  m.Output("ln_inv");
  m.Node("Dropout", {"x"}, {"dr", "dr_mask"});
  m.Output("dr_mask", TensorProto::BOOL);
  auto* am = m.Node("ArgMax", {"x"}, {"am"});
  B::AttrInt(am, "axis", 1);
  B::AttrInt(am, "select_last_index", 1);
  m.Output("am", TensorProto::INT64);
  m.InitializerI64("ax", {}, {1});
  auto* cs = m.Node("CumSum", {"x", "ax"}, {"cs"});
  B::AttrInt(cs, "reverse", 1);
  m.Output("cs");
  auto* es = m.Node("Einsum", {"x", "x"}, {"es"});  // "ij,ij" -> sum of squares (scalar)
  B::AttrString(es, "equation", "ij,ij");
  m.Output("es");
  m.Initializer("two", {}, {2.0f});
  m.Node("Pow", {"x", "two"}, {"sq"});
  m.Output("sq");
  m.Input("d", TensorProto::DOUBLE, {2});
  m.Node("Max", {"d", "d"}, {"dmax"});
  m.Output("dmax", TensorProto::DOUBLE);
  // ConvTranspose (1, 1, 3) -> output_shape 8 with stride 3 (one more column than the default 7).
  m.Input("ct_x", TensorProto::FLOAT, {1, 1, 3});
  m.Initializer("ct_w", {1, 1, 1}, {2.0f});
  auto* ct = m.Node("ConvTranspose", {"ct_x", "ct_w"}, {"ct"});
  B::AttrInts(ct, "strides", {3});
  B::AttrInts(ct, "output_shape", {8});
  m.Output("ct");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = {1, 3, 3, -1, 0, -2};
  Tensor d = Tensor::Empty(std::vector<int64_t>{2}, DType::Float64()).value();
  d.data<double>()[0] = 1.5;
  d.data<double>()[1] = -2.5;
  auto out = RunMain(*module, {F32({2, 3}, xv), d, F32({1, 1, 3}, {1, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> mean = Values((*out)[0]), inv = Values((*out)[1]);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_NEAR(mean[0], 7.f / 3, 1e-5f);
  EXPECT_NEAR(mean[1], -1.f, 1e-5f);
  EXPECT_NEAR(inv[1], 1 / std::sqrt(2.f / 3 + 1e-5f), 1e-4f);
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<float>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(Values((*out)[3]), (std::vector<float>{2, 1}));
  EXPECT_EQ(Values((*out)[4]), (std::vector<float>{7, 6, 3, -3, -2, -2}));
  EXPECT_EQ(Values((*out)[5]), (std::vector<float>{24}));
  EXPECT_EQ(Values((*out)[6]), (std::vector<float>{1, 9, 9, 1, 0, 4}));
  EXPECT_EQ((*out)[7].dtype(), DType::Float64());
  EXPECT_EQ((*out)[7].data<double>()[1], -2.5);
  EXPECT_EQ(Values((*out)[8]), (std::vector<float>{2, 0, 0, 4, 0, 0, 6, 0}));
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// Resize forms lowered through interpolation matrices: fractional scales
// (ONNX maps coordinates with the scale: the node tests' own values), cubic.
TEST(OnnxNnE2E, ResizeThroughInterpolationMatrices) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 1, 2, 4});
  m.Initializer("scales", {4}, {1, 1, 0.6f, 0.6f});
  auto* a = m.Node("Resize", {"x", "", "scales"}, {"lin"});
  B::AttrString(a, "mode", "linear");
  m.Output("lin");
  auto* b = m.Node("Resize", {"x", "", "scales"}, {"lin_ac"});
  B::AttrString(b, "mode", "linear");
  B::AttrString(b, "coordinate_transformation_mode", "align_corners");
  m.Output("lin_ac");
  m.InitializerI64("sizes", {4}, {1, 1, 2, 8});
  auto* c = m.Node("Resize", {"x", "", "", "sizes"}, {"cubic"});
  B::AttrString(c, "mode", "cubic");
  B::AttrString(c, "coordinate_transformation_mode", "align_corners");
  B::AttrFloat(c, "cubic_coeff_a", -0.5f);  // Keys' cubic: exact on linear data
  m.Output("cubic");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear((*out)[0], {2.6666665f, 4.3333331f}, 1e-5f, "linear, scale 0.6");
  ExpectNear((*out)[1], {1.0f, 3.1428571f}, 1e-5f, "linear align_corners, scale 0.6");
  // Keys' cubic (a = -0.5) reproduces a linear ramp where all four taps lie
  // inside the input: row 0 is 1 + 3i/7.
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 8; ++i) want.push_back(1 + 4 * r + 3.0f * i / 7);
  std::vector<float> got = Values((*out)[2]);
  ASSERT_EQ(got.size(), 16u);
  // The ends use edge padding, which bends the ramp; compare the inner samples.
  for (int r = 0; r < 2; ++r)
    for (int i = 3; i < 5; ++i) EXPECT_NEAR(got[r * 8 + i], want[r * 8 + i], 1e-5f) << r << "," << i;
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[7], 4.0f);
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// 3-D pooling (two 2-D poolings) against a direct 3-D window loop, with
// padding excluded from the average and strides.
TEST(OnnxNnE2E, Pool3dMatchesADirectWindowLoop) {
  const int D = 3, H = 4, W = 5;
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, 2, D, H, W});
  auto* a = m.Node("AveragePool", {"x"}, {"avg"});
  B::AttrInts(a, "kernel_shape", {2, 3, 2});
  B::AttrInts(a, "pads", {1, 1, 0, 0, 1, 1});
  B::AttrInts(a, "strides", {1, 2, 2});
  m.Output("avg");
  auto* mx = m.Node("MaxPool", {"x"}, {"max"});
  B::AttrInts(mx, "kernel_shape", {2, 2, 3});
  B::AttrInts(mx, "strides", {1, 1, 2});
  m.Output("max");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Ramp(2 * D * H * W, -1, 1, 21);
  auto out = RunMain(*module, {F32({1, 2, D, H, W}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto at = [&](int c, int d, int h, int w) { return xv[(((c * D) + d) * H + h) * W + w]; };
  // avg: out dims (3 + 1 - 2) / 1 + 1 = 3, (4 + 2 - 3) / 2 + 1 = 2, (5 + 1 - 2) / 2 + 1 = 3.
  std::vector<float> avg, mxv;
  for (int c = 0; c < 2; ++c) {
    for (int od = 0; od < 3; ++od)
      for (int oh = 0; oh < 2; ++oh)
        for (int ow = 0; ow < 3; ++ow) {
          double s = 0;
          int n = 0;
          for (int kd = 0; kd < 2; ++kd)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 2; ++kw) {
                int d = od - 1 + kd, h = oh * 2 - 1 + kh, w = ow * 2 + kw;
                if (d < 0 || d >= D || h < 0 || h >= H || w < 0 || w >= W) continue;
                s += at(c, d, h, w);
                ++n;
              }
          avg.push_back(static_cast<float>(s / n));
        }
    for (int od = 0; od < 2; ++od)
      for (int oh = 0; oh < 3; ++oh)
        for (int ow = 0; ow < 2; ++ow) {
          float best = -1e30f;
          for (int kd = 0; kd < 2; ++kd)
            for (int kh = 0; kh < 2; ++kh)
              for (int kw = 0; kw < 3; ++kw) best = std::max(best, at(c, od + kd, oh + kh, ow * 2 + kw));
          mxv.push_back(best);
        }
  }
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 3, 2, 3}));
  ExpectNear((*out)[0], avg, 1e-5f, "avg pool 3-D");
  EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{1, 2, 2, 3, 2}));
  ExpectNear((*out)[1], mxv, 0, "max pool 3-D");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// MaxPool's Indices output in both storage orders, with padding, stride 2
// and ceil_mode, against a direct loop (first maximum of each window).
TEST(OnnxNnE2E, MaxPoolIndicesMatchADirectLoop) {
  const int N = 2, C = 2, H = 5, W = 4;
  B m(12);
  m.Input("x", TensorProto::FLOAT, {N, C, H, W});
  for (int storage = 0; storage < 2; ++storage) {
    std::string s = std::to_string(storage);
    auto* p = m.Node("MaxPool", {"x"}, {"v" + s, "i" + s});
    B::AttrInts(p, "kernel_shape", {3, 2});
    B::AttrInts(p, "strides", {2, 2});
    B::AttrInts(p, "pads", {1, 0, 0, 0});
    B::AttrInt(p, "ceil_mode", 1);
    B::AttrInt(p, "storage_order", storage);
    m.Output("v" + s);
    m.Output("i" + s, TensorProto::INT64);
  }
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Ramp(N * C * H * W, -1, 1, 31);
  xv[3] = xv[2];  // a tie: the first (row-major) maximum wins
  auto out = RunMain(*module, {F32({N, C, H, W}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Output: H: ceil((5 + 1 - 3) / 2) + 1 = 3 (the last window passes the end), W: (4 - 2) / 2 + 1 = 2.
  ASSERT_EQ((*out)[1].shape(), (std::vector<int64_t>{N, C, 3, 2}));
  for (int storage = 0; storage < 2; ++storage) {
    std::vector<float> vals, idx;
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int oh = 0; oh < 3; ++oh)
          for (int ow = 0; ow < 2; ++ow) {
            float best = -1e30f;
            int64_t at = -1;
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 2; ++kw) {
                int h = oh * 2 - 1 + kh, w = ow * 2 + kw;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                float v = xv[((n * C + c) * H + h) * W + w];
                if (v > best) {
                  best = v;
                  at = (n * C + c) * H * W + (storage ? w * H + h : h * W + w);
                }
              }
            vals.push_back(best);
            idx.push_back(static_cast<float>(at));
          }
    ExpectNear((*out)[2 * storage], vals, 0, "values");
    EXPECT_EQ(Values((*out)[2 * storage + 1]), idx) << "storage_order " << storage;
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// 3-D ConvTranspose (2-D ones per depth tap) against the scatter definition:
// stride 2 in depth, padding, output padding, dilation, groups and a bias.
TEST(OnnxNnE2E, ConvTranspose3dMatchesTheScatterDefinition) {
  const int N = 1, C = 2, D = 3, H = 2, W = 3, G = 2, OG = 2, KD = 2, KH = 2, KW = 1;
  const int sd = 2, sh = 1, sw = 2, dd = 2, pd0 = 1, pd1 = 0, oph = 0, opd = 1;
  B m(13);
  m.Input("x", TensorProto::FLOAT, {N, C, D, H, W});
  std::vector<float> wv = Ramp(C * OG * KD * KH * KW, -1, 1, 41), bias = {0.5f, -0.5f, 1.0f, 2.0f};
  m.Initializer("w", {C, OG, KD, KH, KW}, wv);
  m.Initializer("b", {G * OG}, bias);
  auto* n = m.Node("ConvTranspose", {"x", "w", "b"}, {"y"});
  B::AttrInts(n, "strides", {sd, sh, sw});
  B::AttrInts(n, "dilations", {dd, 1, 1});
  B::AttrInts(n, "pads", {pd0, 0, 0, pd1, 0, 0});
  B::AttrInts(n, "output_padding", {opd, oph, 0});
  B::AttrInt(n, "group", G);
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Ramp(N * C * D * H * W, -1, 1, 42);
  auto out = RunMain(*module, {F32({N, C, D, H, W}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const int FD = (D - 1) * sd + (KD - 1) * dd + 1 + opd, OD = FD - pd0 - pd1;
  const int OH = (H - 1) * sh + KH + oph, OW = (W - 1) * sw + KW;
  const int O = G * OG;
  std::vector<double> full(static_cast<size_t>(O * FD * OH * OW), 0.0);
  for (int c = 0; c < C; ++c)
    for (int og = 0; og < OG; ++og)
      for (int d = 0; d < D; ++d)
        for (int h = 0; h < H; ++h)
          for (int x = 0; x < W; ++x)
            for (int kd = 0; kd < KD; ++kd)
              for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw) {
                  int o = (c / (C / G)) * OG + og;
                  int fd = d * sd + kd * dd, fh = h * sh + kh, fw = x * sw + kw;
                  full[((o * FD + fd) * OH + fh) * OW + fw] +=
                      xv[((c * D + d) * H + h) * W + x] * wv[(((c * OG + og) * KD + kd) * KH + kh) * KW + kw];
                }
  std::vector<float> want;
  for (int o = 0; o < O; ++o)
    for (int d = 0; d < OD; ++d)
      for (int i = 0; i < OH * OW; ++i) want.push_back(static_cast<float>(full[(o * FD + d + pd0) * OH * OW + i] + bias[o]));
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{N, O, OD, OH, OW}));
  ExpectNear((*out)[0], want, 1e-5f, "convtranspose 3-D");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln

namespace kiln {
namespace onnx {
namespace testing {
namespace {

// 3-D Conv (2-D ones per depth tap) against a direct loop: depth stride and
// padding, dilation, groups, bias.
TEST(OnnxNnE2E, Conv3dMatchesADirectLoop) {
  const int C = 4, D = 5, H = 4, W = 3, O = 2, G = 2, KD = 2, KH = 3, KW = 2;
  const int sd = 2, dd = 2, pd0 = 1, pd1 = 2, ph = 1;
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, C, D, H, W});
  std::vector<float> wv = Ramp(O * (C / G) * KD * KH * KW, -1, 1, 51), bias = {0.25f, -1.0f};
  m.Initializer("w", {O, C / G, KD, KH, KW}, wv);
  m.Initializer("b", {O}, bias);
  auto* n = m.Node("Conv", {"x", "w", "b"}, {"y"});
  B::AttrInts(n, "strides", {sd, 1, 1});
  B::AttrInts(n, "dilations", {dd, 1, 1});
  B::AttrInts(n, "pads", {pd0, ph, 0, pd1, ph, 0});
  B::AttrInt(n, "group", G);
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Ramp(C * D * H * W, -1, 1, 52);
  auto out = RunMain(*module, {F32({1, C, D, H, W}, xv)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const int OD = (D + pd0 + pd1 - dd * (KD - 1) - 1) / sd + 1, OH = H + 2 * ph - KH + 1, OW = W - KW + 1;
  std::vector<float> want;
  for (int o = 0; o < O; ++o)
    for (int d = 0; d < OD; ++d)
      for (int h = 0; h < OH; ++h)
        for (int x = 0; x < OW; ++x) {
          double acc = bias[o];
          int g = o / (O / G);
          for (int ci = 0; ci < C / G; ++ci)
            for (int kd = 0; kd < KD; ++kd)
              for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw) {
                  int id = d * sd - pd0 + kd * dd, ih = h - ph + kh, iw = x + kw;
                  if (id < 0 || id >= D || ih < 0 || ih >= H) continue;
                  acc += xv[(((g * (C / G) + ci) * D + id) * H + ih) * W + iw] *
                         wv[(((o * (C / G) + ci) * KD + kd) * KH + kh) * KW + kw];
                }
          want.push_back(static_cast<float>(acc));
        }
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, O, OD, OH, OW}));
  ExpectNear((*out)[0], want, 1e-5f, "conv 3-D");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
