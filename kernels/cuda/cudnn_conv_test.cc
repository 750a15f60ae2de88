// kiln.cudnn.conv2d*. Without a GPU: the argument checks (each message
// fired), cuDNN's loading and its errors, the registrations. With a GPU
// (skipped otherwise; KILN_REQUIRE_GPU=1 makes that a failure): every
// variant through CudaGpuLinker::ResolvePacked against a float64
// convolution on the host, over strides, paddings, dilations and groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/cudnn_api.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/kernel_test_util.h"
#include "runtime/cuda/device_functions.h"
#include "runtime/cuda/gpu_linker.h"

namespace kiln {
namespace kernels {
namespace cuda {
namespace {

using testing::MakeTensor;
using testing::Zeros;

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// strides h/w, paddings top/left/bottom/right, dilations h/w, groups.
Tensor Attrs(std::vector<int64_t> a) { return MakeTensor<int64_t>({9}, a, DType::Int64()); }
const std::vector<int64_t> kPlain = {1, 1, 0, 0, 0, 0, 1, 1, 1};

Status Check(CudnnConvEpilogue e, std::vector<Any> args) {
  Tensor x, w, bias, out;
  return CheckCudnnConvArgs(e, Span<const Any>(args.data(), args.size()), &x, &w, &bias, &out).status();
}

void ExpectError(const Status& s, const std::string& message) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

TEST(CudnnConvArgs, TheProblem) {
  std::vector<Any> args = {Zeros({2, 8, 10, 12}), Zeros({6, 4, 3, 3}), Zeros({1, 6, 1, 1}),
                           Attrs({2, 1, 1, 2, 1, 2, 1, 2, 2}), Zeros({2, 6, 5, 12})};
  Tensor x, w, bias, out;
  Result<CudnnConvProblem> p =
      CheckCudnnConvArgs(CudnnConvEpilogue::kBiasRelu, Span<const Any>(args.data(), args.size()), &x, &w, &bias, &out);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->groups, 2);
  EXPECT_EQ(p->pad_h, 1);
  EXPECT_EQ(p->pad_w, 2);
  EXPECT_EQ(p->dilation_w, 2);
  EXPECT_EQ(p->oh, 5);   // (10 + 2 - 3) / 2 + 1
  EXPECT_EQ(p->ow, 12);  // (12 + 4 - 5) / 1 + 1
}

TEST(CudnnConvArgs, EveryMistakeIsNamed) {
  const CudnnConvEpilogue kNone = CudnnConvEpilogue::kNone, kBias = CudnnConvEpilogue::kBias;
  Tensor x = Zeros({1, 4, 8, 8}), w = Zeros({2, 4, 3, 3}), out = Zeros({1, 2, 6, 6});
  ExpectError(Check(kNone, {x, w, Attrs(kPlain)}), "kiln.cudnn.conv2d: expected 4 arguments (X, W, Attrs, Out), got 3");
  ExpectError(Check(kBias, {x, w, Attrs(kPlain), out}),
              "kiln.cudnn.conv2d_bias: expected 5 arguments (X, W, Bias, Attrs, Out), got 4");
  ExpectError(Check(kNone, {Zeros({1, 4, 8, 8}, DType::Int32()), w, Attrs(kPlain), out}),
              "kiln.cudnn.conv2d: X has dtype int32, expected float32");
  ExpectError(Check(kNone, {Zeros({4, 8, 8}), w, Attrs(kPlain), out}),
              "kiln.cudnn.conv2d: X must have rank 4, got shape [4, 8, 8]");
  ExpectError(Check(kNone, {x, w, Zeros({9}), out}), "kiln.cudnn.conv2d: Attrs has dtype float32, expected int64");
  ExpectError(Check(kNone, {x, w, Attrs({1, 1, 0, 0, 0, 0, 0, 1, 1}), out}),
              "kiln.cudnn.conv2d: Attrs must have strides, dilations and groups >= 1 and paddings >= 0");
  ExpectError(Check(kNone, {x, w, Attrs({1, 1, 1, 0, 2, 0, 1, 1, 1}), Zeros({1, 2, 9, 6})}),
              "kiln.cudnn.conv2d: cuDNN pads symmetrically; got paddings top 1, bottom 2, left 0, right 0");
  ExpectError(Check(kNone, {x, w, Attrs({1, 1, 0, 0, 0, 0, 1, 1, 3}), out}),
              "kiln.cudnn.conv2d: X has 4 channels and W shape [2, 4, 3, 3], which does not fit groups=3");
  ExpectError(Check(kNone, {Zeros({1, 0, 8, 8}), Zeros({2, 0, 3, 3}), Attrs(kPlain), out}),
              "kiln.cudnn.conv2d: an empty window or no input channels (C=0, KH=3, KW=3) is not supported");
  ExpectError(Check(kNone, {Zeros({1, 4, 2, 2}), w, Attrs(kPlain), Zeros({1, 2, 1, 1})}),
              "kiln.cudnn.conv2d: the window (3x3, dilation 1x1) is larger than the padded input");
  ExpectError(Check(kNone, {x, w, Attrs(kPlain), Zeros({1, 2, 7, 7})}),
              "kiln.cudnn.conv2d: Out has shape [1, 2, 7, 7], expected [1, 2, 6, 6]");
  ExpectError(Check(kBias, {x, w, Zeros({1, 2}), Attrs(kPlain), out}),
              "kiln.cudnn.conv2d_bias: Bias must hold the 2 output channels ([O], [O, 1, 1] or [1, O, 1, 1]), got "
              "shape [1, 2]");
  EXPECT_TRUE(Check(kBias, {x, w, Zeros({2}), Attrs(kPlain), out}).ok());
  EXPECT_TRUE(Check(kBias, {x, w, Zeros({2, 1, 1}), Attrs(kPlain), out}).ok());
}

TEST(CudnnConv, EveryVariantIsADeviceFunction) {
  std::vector<std::string> names = ::kiln::cuda::ListDeviceFunctions();
  for (CudnnConvEpilogue e : {CudnnConvEpilogue::kNone, CudnnConvEpilogue::kBias, CudnnConvEpilogue::kBiasRelu}) {
    EXPECT_NE(std::find(names.begin(), names.end(), CudnnConvName(e)), names.end()) << CudnnConvName(e);
  }
}

TEST(CudnnLoad, MissingOrWrongLibraries) {
  Result<std::unique_ptr<CudnnApi>> missing = OpenCudnn({"libkiln-no-such-cudnn.so.9"});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(StartsWith(missing.status().message(), "cuDNN not found: libkiln-no-such-cudnn.so.9: "))
      << missing.status().message();
  Result<std::unique_ptr<CudnnApi>> libm = OpenCudnn({"libm.so.6"});
  ASSERT_FALSE(libm.ok());
  EXPECT_EQ(libm.status().message(), "cuDNN not found: libm.so.6 is not cuDNN (no cudnnGetVersion in it)");
}

TEST(CudnnLoad, TheRealLibraryResolvesEveryEntryPoint) {
  // Needs no GPU: cuDNN's dispatch library loads without a driver.
  Result<std::unique_ptr<CudnnApi>> r = OpenCudnn({"libcudnn.so.9", "libcudnn.so"});
  if (!r.ok()) GTEST_SKIP() << r.status().ToString();
  EXPECT_EQ((*r)->version / 10000, 9u);
  EXPECT_EQ(CudnnCheck(**r, CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionForward").message().rfind(
                "cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM", 0),
            0u);
  std::printf("%s: cuDNN %zu\n", (*r)->library.c_str(), (*r)->version);
}

TEST(NoCudnn, TheProcessTableReportsTheMissingLibrary) {
  const char* env = std::getenv("KILN_CUDNN");
  if (env == nullptr || *env == '\0') GTEST_SKIP() << "set KILN_CUDNN to a missing library (ctest does)";
  Result<const CudnnApi*> api = Cudnn();
  if (api.ok()) GTEST_SKIP() << "KILN_CUDNN names a cuDNN that loads: " << env;
  EXPECT_TRUE(StartsWith(api.status().message(), "cuDNN not found: " + std::string(env) + ": ")) << api.status().message();
}

// ---- on a GPU ----

bool RequireGpu() {
  const char* env = std::getenv("KILN_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

// A device copy of `host` (what the VM passes: Attrs too, a device constant).
Tensor OnDevice(::kiln::cuda::CudaGpuLinker& linker, const Tensor& host) {
  Result<Tensor> t = linker.ToDevice(host);
  KILN_CHECK(t.ok(), "copying to the device: %s", t.status().ToString().c_str());
  return std::move(t).value();
}

struct Case {
  std::vector<int64_t> x, w, attrs;
};

TEST(CudnnConvOnGpu, EveryVariantMatchesTheHost) {
  auto linker_result = ::kiln::cuda::CudaGpuLinker::Create(0);
  if (!linker_result.ok()) {
    if (RequireGpu()) FAIL() << "KILN_REQUIRE_GPU=1 but " << linker_result.status().ToString();
    GTEST_SKIP() << "no GPU here: " << linker_result.status().ToString();
  }
  std::shared_ptr<::kiln::cuda::CudaGpuLinker> linker = std::move(linker_result).value();
  const Case cases[] = {
      {{1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}},   // ResNet's 3x3
      {{2, 16, 17, 19}, {32, 16, 1, 1}, {2, 2, 0, 0, 0, 0, 1, 1, 1}},   // strided 1x1
      {{1, 32, 20, 20}, {32, 1, 3, 3}, {1, 1, 2, 2, 2, 2, 2, 2, 32}},   // depthwise, dilated
      {{3, 8, 11, 9}, {12, 4, 5, 3}, {1, 2, 2, 1, 2, 1, 1, 1, 2}},      // grouped, uneven
  };
  uint32_t seed = 7;
  for (CudnnConvEpilogue e : {CudnnConvEpilogue::kNone, CudnnConvEpilogue::kBias, CudnnConvEpilogue::kBiasRelu}) {
    Result<PackedFunc> fn = linker->ResolvePacked(CudnnConvName(e));
    ASSERT_TRUE(fn.ok()) << fn.status().ToString();
    for (const Case& c : cases) {
      Tensor x = testing::RandomTensor(c.x, seed++), w = testing::RandomTensor(c.w, seed++);
      Tensor bias = testing::RandomTensor({c.w[0]}, seed++);
      const std::vector<int64_t>& a = c.attrs;
      const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], wd = c.x[3], o = c.w[0], kh = c.w[2], kw = c.w[3];
      const int64_t oh = (h + a[2] + a[4] - (a[6] * (kh - 1) + 1)) / a[0] + 1;
      const int64_t ow = (wd + a[3] + a[5] - (a[7] * (kw - 1) + 1)) / a[1] + 1;
      const int64_t cg = ch / a[8], og = o / a[8];
      std::vector<Any> args = {OnDevice(*linker, x), OnDevice(*linker, w)};
      if (e != CudnnConvEpilogue::kNone) args.push_back(OnDevice(*linker, bias));
      args.push_back(OnDevice(*linker, Attrs(a)));
      Tensor out = OnDevice(*linker, Zeros({n, o, oh, ow}));
      args.push_back(out);
      Any ret;
      Status s = (*fn)(Span<const Any>(args.data(), args.size()), &ret);
      ASSERT_TRUE(s.ok()) << CudnnConvName(e) << ": " << s.ToString();
      ASSERT_TRUE(linker->Synchronize().ok());
      Result<Tensor> out_host = linker->ToHost(out);
      ASSERT_TRUE(out_host.ok()) << out_host.status().ToString();
      double worst = 0;
      const float* X = x.data<float>();
      const float* W = w.data<float>();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t oc = 0; oc < o; ++oc)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t z = 0; z < ow; ++z) {
              double sum = 0;
              const int64_t g = oc / og;
              for (int64_t ic = 0; ic < cg; ++ic)
                for (int64_t p = 0; p < kh; ++p)
                  for (int64_t q = 0; q < kw; ++q) {
                    const int64_t iy = y * a[0] - a[2] + p * a[6], ix = z * a[1] - a[3] + q * a[7];
                    if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                    sum += double(X[((b * ch + g * cg + ic) * h + iy) * wd + ix]) * W[((oc * cg + ic) * kh + p) * kw + q];
                  }
              if (e != CudnnConvEpilogue::kNone) sum += bias.data<float>()[oc];
              if (e == CudnnConvEpilogue::kBiasRelu) sum = std::max(sum, 0.0);
              const double got = out_host->data<float>()[((b * o + oc) * oh + y) * ow + z];
              worst = std::max(worst, std::fabs(got - sum) / (1e-4 + 1e-4 * std::fabs(sum)));
            }
      EXPECT_LE(worst, 1.0) << CudnnConvName(e) << " X " << ShapeToString(c.x) << " W " << ShapeToString(c.w)
                            << " (|d| / (1e-4 + 1e-4 |want|))";
    }
  }
}

}  // namespace
}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
