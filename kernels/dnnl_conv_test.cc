#include <gtest/gtest.h>

#include <vector>

#include "kernels/dnnl_kernels.h"
#include "kernels/kernel_test_util.h"

namespace kiln {
namespace kernels {
namespace {

using testing::Call;
using testing::MakeTensor;
using testing::MaxAbsDiff;
using testing::RandomTensor;
using testing::Zeros;

struct Case {
  int64_t n, c, h, w, o, kh, kw;
  DnnlConvAttrs a;
};

int64_t OutDim(int64_t in, int64_t k, int64_t pad0, int64_t pad1, int64_t dil, int64_t stride) {
  return (in + pad0 + pad1 - (dil * (k - 1) + 1)) / stride + 1;
}

Tensor AttrTensor(const DnnlConvAttrs& a) {
  const int64_t* p = &a.stride_h;
  return MakeTensor<int64_t>({kDnnlConvAttrCount}, std::vector<int64_t>(p, p + kDnnlConvAttrCount), DType::Int64());
}

// The definition, loop by loop.
Tensor NaiveConv(const Case& k, const Tensor& x, const Tensor& w) {
  const DnnlConvAttrs& a = k.a;
  int64_t oh = OutDim(k.h, k.kh, a.pad_top, a.pad_bottom, a.dilation_h, a.stride_h);
  int64_t ow = OutDim(k.w, k.kw, a.pad_left, a.pad_right, a.dilation_w, a.stride_w);
  Tensor out = Zeros({k.n, k.o, oh, ow});
  int64_t cg = k.c / a.groups, og = k.o / a.groups;
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* op = out.data<float>();
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double acc = 0;
          int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t iy = y * a.stride_h - a.pad_top + ky * a.dilation_h;
                int64_t ix = z * a.stride_w - a.pad_left + kx * a.dilation_w;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                acc += double(xp[((n * k.c + g * cg + ci) * k.h + iy) * k.w + ix]) *
                       wp[((o * cg + ci) * k.kh + ky) * k.kw + kx];
              }
          op[((n * k.o + o) * oh + y) * ow + z] = static_cast<float>(acc);
        }
  return out;
}

TEST(DnnlConv2d, MatchesTheDefinition) {
  const Case cases[] = {
      {1, 3, 17, 19, 8, 7, 7, {2, 2, 3, 3, 3, 3, 1, 1, 1}},      // a stem, odd sizes
      {2, 16, 9, 9, 16, 3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1}},      // batch 2
      {1, 32, 12, 12, 32, 3, 3, {2, 2, 1, 1, 1, 1, 1, 1, 32}},   // depthwise, stride 2
      {1, 8, 10, 10, 12, 3, 3, {1, 1, 0, 2, 1, 0, 2, 2, 4}},     // grouped, dilated, asymmetric pads
      {1, 24, 5, 5, 40, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1, 1}},      // pointwise
  };
  uint32_t seed = 3;
  for (const Case& k : cases) {
    Tensor x = RandomTensor({k.n, k.c, k.h, k.w}, seed++);
    Tensor w = RandomTensor({k.o, k.c / k.a.groups, k.kh, k.kw}, seed++);
    Tensor want = NaiveConv(k, x, w);
    std::vector<int64_t> shape(want.shape().begin(), want.shape().end());
    Tensor got = Zeros(shape);
    Status s = Call(DnnlConv2d, {x, w, AttrTensor(k.a), got});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_LE(MaxAbsDiff(want, got), 1e-4f) << "case with c=" << k.c << " groups=" << k.a.groups;
  }
  EXPECT_GE(DnnlConvCacheSize(), 1u);
}

TEST(DnnlConv2d, RejectsBadArguments) {
  DnnlConvAttrs a{1, 1, 0, 0, 0, 0, 1, 1, 1};
  Tensor x = Zeros({1, 4, 5, 5});
  Tensor w = Zeros({2, 4, 3, 3});
  Tensor out = Zeros({1, 2, 3, 3});
  auto msg = [](Status s) { return s.ToString(); };
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, out})).find("kiln.dnnl.conv2d: expected 4 arguments"), std::string::npos)
      << msg(Call(DnnlConv2d, {x, w, out}));
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, AttrTensor(a), Zeros({1, 2, 4, 4})})).find("Out"), std::string::npos);
  DnnlConvAttrs g = a;
  g.groups = 3;
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, AttrTensor(g), out})).find("does not fit groups=3"), std::string::npos);
  DnnlConvAttrs bad = a;
  bad.stride_h = 0;
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, AttrTensor(bad), out})).find("strides, dilations and groups >= 1"),
            std::string::npos);
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, Zeros({9}), out})).find("Attrs"), std::string::npos);
  DnnlConvAttrs big = a;
  big.dilation_h = 4;
  EXPECT_NE(msg(Call(DnnlConv2d, {x, w, AttrTensor(big), out})).find("larger than the padded input"),
            std::string::npos);
  EXPECT_NE(msg(Call(DnnlConv2d, {Zeros({4, 5, 5}), w, AttrTensor(a), out})).find("X must have rank 4"),
            std::string::npos);
}

}  // namespace
}  // namespace kernels
}  // namespace kiln
