// Operator forms that published models use (tests/models), end to end against
// references written from ONNX's definitions: PRelu with a broadcast slope,
// GatherND (batch_dims, negative indices), Reshape's -1 on symbolic
// dimensions, Squeeze without axes of a symbolic dimension, SAME pooling of
// symbolic sizes, MaxPool of an input shorter than its window (sized as
// ONNX Runtime sizes it), and Slice ends of 10^9 on a symbolic axis.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxCorpusFormsE2E, PReluBroadcastsItsSlopeNchwAndNhwc) {
  B m(12);
  m.Input("x", TensorProto::FLOAT, {"n", 3, 2, 2});
  m.Input("xt", TensorProto::FLOAT, {"n", 2, 2, 3});
  m.Initializer("s", {3, 1, 1}, {0.5f, -2.0f, 0.0f});   // per channel, NCHW
  m.Initializer("st", {1, 1, 3}, {0.5f, -2.0f, 0.0f});  // keras: per channel, NHWC
  m.Node("PRelu", {"x", "s"}, {"y"});
  m.Node("PRelu", {"xt", "st"}, {"yt"});
  m.Output("y");
  m.Output("yt");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const float slope[3] = {0.5f, -2.0f, 0.0f};
  for (int64_t n : {1, 2}) {
    std::vector<float> xv = Ramp(n * 12, -1, 1, static_cast<uint64_t>(n));
    auto out = RunMain(*module, {F32({n, 3, 2, 2}, xv), F32({n, 2, 2, 3}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want(xv.size()), want_t(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      float sc = slope[(i / 4) % 3], st = slope[i % 3];
      want[i] = xv[i] >= 0 ? xv[i] : sc * xv[i];
      want_t[i] = xv[i] >= 0 ? xv[i] : st * xv[i];
    }
    EXPECT_EQ(Values((*out)[0]), want);
    EXPECT_EQ(Values((*out)[1]), want_t);
  }
}

TEST(OnnxCorpusFormsE2E, GatherNdWithAndWithoutBatchDims) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3, 4});
  m.Input("i", TensorProto::INT64, {"q", 2});  // (row, column) pairs: a (q, 4) result
  m.Input("ib", TensorProto::INT64, {2, "r", 1});  // per batch, rows of x[b]: (2, r, 4)
  m.Input("ia", TensorProto::INT64, {5, 3});  // whole index tuples: scalars, (5,)
  m.Node("GatherND", {"x", "i"}, {"y"});
  B::AttrInt(m.Node("GatherND", {"x", "ib"}, {"yb"}), "batch_dims", 1);
  m.Node("GatherND", {"x", "ia"}, {"ya"});
  m.Output("y");
  m.Output("yb");
  m.Output("ya");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<float> xv = Ramp(24, -3, 3, 7);
  auto at = [&](int64_t a, int64_t b, int64_t c) { return xv[static_cast<size_t>((a * 3 + b) * 4 + c)]; };
  std::vector<int64_t> i = {0, 1, -1, -3, 1, 2};  // negative entries count from the end of their axis
  std::vector<int64_t> ib = {2, 0, -1, 1};
  std::vector<int64_t> ia = {0, 0, 0, 1, 2, 3, -1, -1, -1, 0, 1, -2, 1, 0, 2};
  auto out = RunMain(*module, {F32({2, 3, 4}, xv), I64({3, 2}, i), I64({2, 2, 1}, ib), I64({5, 3}, ia)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto fix = [](int64_t v, int64_t d) { return v < 0 ? v + d : v; };
  std::vector<float> want, want_b, want_a;
  for (int q = 0; q < 3; ++q)
    for (int c = 0; c < 4; ++c) want.push_back(at(fix(i[2 * q], 2), fix(i[2 * q + 1], 3), c));
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c) want_b.push_back(at(b, fix(ib[b * 2 + r], 3), c));
  for (int q = 0; q < 5; ++q) want_a.push_back(at(fix(ia[3 * q], 2), fix(ia[3 * q + 1], 3), fix(ia[3 * q + 2], 4)));
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Values((*out)[0]), want);
  EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(Values((*out)[1]), want_b);
  EXPECT_EQ((*out)[2].shape(), (std::vector<int64_t>{5}));
  EXPECT_EQ(Values((*out)[2]), want_a);
}

// Reshape's -1 where the element count is a product of symbolic dimensions:
// (b * 6, 1, s) -> (b, 6, -1, s) cancels to 1 (a multi-head attention mask);
// (n, 3) -> (-1, 2) is (n * 3) // 2, exact for even n.
TEST(OnnxCorpusFormsE2E, ReshapeInfersMinusOneOnSymbolicDims) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"b", 6, "s"});
  m.Input("z", TensorProto::FLOAT, {"n", 3});
  m.Node("Shape", {"x"}, {"sh"});
  m.InitializerI64("i0", {1}, {0});
  m.InitializerI64("i2", {1}, {2});
  m.InitializerI64("six", {1}, {6});
  m.InitializerI64("one", {1}, {1});
  m.InitializerI64("minus1", {1}, {-1});
  m.Node("Gather", {"sh", "i0"}, {"b"});
  m.Node("Gather", {"sh", "i2"}, {"s"});
  m.Node("Mul", {"b", "six"}, {"b6"});
  B::AttrInt(m.Node("Concat", {"b6", "one", "s"}, {"t1"}), "axis", 0);
  m.Node("Reshape", {"x", "t1"}, {"x1"});  // (b * 6, 1, s)
  B::AttrInt(m.Node("Concat", {"b", "six", "minus1", "s"}, {"t2"}), "axis", 0);
  m.Node("Reshape", {"x1", "t2"}, {"y"});  // (b, 6, 1, s)
  m.InitializerI64("t3", {2}, {-1, 2});
  m.Node("Reshape", {"z", "t3"}, {"w"});
  m.Output("y");
  m.Output("w");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t k : {1, 2}) {
    int64_t b = k, s = 3 * k + 1, n = 2 * k;
    std::vector<float> xv = Ramp(b * 6 * s, -1, 1, 3), zv = Ramp(n * 3, -1, 1, 4);
    auto out = RunMain(*module, {F32({b, 6, s}, xv), F32({n, 3}, zv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{b, 6, 1, s}));
    EXPECT_EQ(Values((*out)[0]), xv);
    EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{n * 3 / 2, 2}));
    EXPECT_EQ(Values((*out)[1]), zv);
  }
}

// ONNX Runtime squeezes every axis that is 1 when it runs; Kiln takes a
// symbolic axis as one of them and checks it when the program runs.
TEST(OnnxCorpusFormsE2E, SqueezeWithoutAxesChecksSymbolicAxesAreOne) {
  B m(11);
  m.Input("x", TensorProto::FLOAT, {"batch", 1});
  m.Node("Squeeze", {"x"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({1, 1}, {0.25f})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{}));
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{0.25f}));
  auto bad = RunMain(*module, {F32({2, 1}, {1, 2})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "main: ONNX Squeeze node \"y\" has no axes, so it squeezes axis 0 of input 0 \"x\" (shape [batch, 1]), which "
            "the compiled model takes to be 1 (batch = 2); give the axes");
}

// Max pooling of a (1, 1, H, W) map: windows at i * stride - pad_lo, values
// outside the map ignored; `oh` x `ow` outputs.
std::vector<float> MaxPoolRef(const std::vector<float>& x, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad_h,
                              int64_t pad_w, int64_t oh, int64_t ow) {
  std::vector<float> out;
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t a = 0; a < k; ++a)
        for (int64_t c = 0; c < k; ++c) {
          int64_t r = i * s - pad_h + a, q = j * s - pad_w + c;
          if (r >= 0 && r < h && q >= 0 && q < w) m = std::max(m, x[static_cast<size_t>(r * w + q)]);
        }
      out.push_back(m);
    }
  return out;
}

TEST(OnnxCorpusFormsE2E, SamePoolingOfSymbolicSizes) {
  B m(12);
  m.Input("x", TensorProto::FLOAT, {1, 1, "h", "w"});
  auto* up = m.Node("MaxPool", {"x"}, {"y"});  // 2x2 stride 2: total padding 0 or 1, all at the end
  B::AttrInts(up, "kernel_shape", {2, 2});
  B::AttrInts(up, "strides", {2, 2});
  B::AttrString(up, "auto_pad", "SAME_UPPER");
  auto* lo = m.Node("MaxPool", {"x"}, {"z"});  // 3x3 stride 1: padding 1 on each side
  B::AttrInts(lo, "kernel_shape", {3, 3});
  B::AttrString(lo, "auto_pad", "SAME_LOWER");
  m.Output("y");
  m.Output("z");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (auto [h, w] : {std::pair<int64_t, int64_t>{5, 4}, {4, 7}, {1, 1}}) {
    std::vector<float> xv = Ramp(h * w, -1, 1, static_cast<uint64_t>(h * 10 + w));
    auto out = RunMain(*module, {F32({1, 1, h, w}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    int64_t oh = (h + 1) / 2, ow = (w + 1) / 2;
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, oh, ow}));
    EXPECT_EQ(Values((*out)[0]), MaxPoolRef(xv, h, w, 2, 2, 0, 0, oh, ow)) << h << "x" << w;
    EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{1, 1, h, w}));
    EXPECT_EQ(Values((*out)[1]), MaxPoolRef(xv, h, w, 3, 1, 1, 1, h, w)) << h << "x" << w;
  }
}

// ONNX Runtime sizes MaxPool as trunc((in + pads - k) / s) + 1: a height of 1
// under 2x2 windows of stride 2 still gives one row (PaddleOCR's classifier at
// height 32).
TEST(OnnxCorpusFormsE2E, MaxPoolOfASymbolicInputShorterThanItsWindow) {
  B m(11);
  m.Input("x", TensorProto::FLOAT, {1, 1, "h", 4});
  auto* p = m.Node("MaxPool", {"x"}, {"y"});
  B::AttrInts(p, "kernel_shape", {2, 2});
  B::AttrInts(p, "strides", {2, 2});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t h : {1, 3, 4}) {
    std::vector<float> xv = Ramp(h * 4, -1, 1, static_cast<uint64_t>(h));
    auto out = RunMain(*module, {F32({1, 1, h, 4}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    int64_t oh = (h - 2) / 2 + 1;  // C++ division truncates toward zero, as ONNX Runtime's cast does
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, oh, 2}));
    EXPECT_EQ(Values((*out)[0]), MaxPoolRef(xv, h, 4, 2, 2, 0, 0, oh, 2)) << h;
  }
}

// The same sizing where the height is static, written in the file or pinned
// as kiln-compile --dim pins it: a build with its dimensions pinned runs the
// shapes the symbolic build runs (it was "the window 2x2 does not fit").
TEST(OnnxCorpusFormsE2E, MaxPoolOfAStaticInputShorterThanItsWindow) {
  for (bool pinned : {false, true}) {
    B m(11);
    if (pinned) {
      m.Input("x", TensorProto::FLOAT, {1, 1, "h", 4});
    } else {
      m.Input("x", TensorProto::FLOAT, {1, 1, 1, 4});
    }
    auto* p = m.Node("MaxPool", {"x"}, {"y"});
    B::AttrInts(p, "kernel_shape", {2, 2});
    B::AttrInts(p, "strides", {2, 2});
    m.Output("y");
    ImportOptions import;
    if (pinned) import.fixed_dims["h"] = 1;
    auto module = CompileOnnx(m, import);
    ASSERT_TRUE(module.ok()) << (pinned ? "pinned: " : "static: ") << module.status().ToString();
    std::vector<float> xv = Ramp(4, -1, 1, 7);
    auto out = RunMain(*module, {F32({1, 1, 1, 4}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, 1, 2}));
    EXPECT_EQ(Values((*out)[0]), MaxPoolRef(xv, 1, 4, 2, 2, 0, 0, 1, 2)) << (pinned ? "pinned" : "static");
  }
}

// tf2onnx writes 10^9 for "to the end"; on a symbolic axis that must not
// become the dimension.
TEST(OnnxCorpusFormsE2E, SliceToABillionOnASymbolicAxisIsToTheEnd) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 3});
  m.InitializerI64("st", {1}, {1});
  m.InitializerI64("en", {1}, {1000000000});
  m.InitializerI64("ax", {1}, {0});
  m.Node("Slice", {"x", "st", "en", "ax"}, {"y"});
  m.Output("y");
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t n : {2, 5}) {
    std::vector<float> xv = Ramp(n * 3, -1, 1, static_cast<uint64_t>(n));
    auto out = RunMain(*module, {F32({n, 3}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{n - 1, 3}));
    EXPECT_EQ(Values((*out)[0]), std::vector<float>(xv.begin() + 3, xv.end()));
  }
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
