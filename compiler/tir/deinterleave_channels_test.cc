// DeinterleaveChannels (deinterleave_channels.h): an NHWC input of 2-3
// channels transposed into an own NCHW buffer over a symbolic plane becomes
// 16-pixel chunks over the flat plane; other nests stay. Numbers: an NHWC
// input transposed into a 3 x 3 conv (as mtcnn_pnet's first layer) through
// the driver and the VM, planes of 9 to 323 pixels, batches 1 and 2, 1 and
// 2 threads, against a double-precision reference.
#include "compiler/tir/deinterleave_channels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;

// As the default schedule leaves a fused transpose + conv's first stage
// (the conv replaced by a plain read of the transposed buffer).
const char* kTransposed = R"(
@T.prim_func
def f(a_handle: T.handle, o_handle: T.handle):
    n = T.int64()
    h = T.int64()
    w = T.int64()
    A = T.match_buffer(a_handle, (n, h, w, 3), "float32")
    O = T.match_buffer(o_handle, (n, 3, h, w), "float32")
    lv = T.decl_buffer((n, 3, h, w), "float32")
    for i0_i1 in T.parallel(n * T.int64(3)):
        for i2 in range(h):
            for i3 in T.vectorized(w):
                lv[i0_i1 // T.int64(3), i0_i1 % T.int64(3), i2, i3] = A[i0_i1 // T.int64(3), i2, i3, i0_i1 % T.int64(3)]
    for i0, i1, i2, i3 in T.grid(n, T.int64(3), h, w):
        O[i0, i1, i2, i3] = lv[i0, i1, i2, i3] * T.float32(2)
)";

TEST(DeinterleaveChannelsTest, TransposeOfASymbolicPlaneBecomesChunks) {
  PrimFunc f = ParseFunc(kTransposed, "f");
  PrimFunc out = DeinterleaveChannels(f);
  ASSERT_NE(out, f);
  std::string text = Print(out);
  EXPECT_NE(text.find("lv = T.decl_buffer((n, 3, h * w)"), std::string::npos) << text;
  EXPECT_NE(text.find("T.vectorized(T.int64(16))"), std::string::npos) << text;
  EXPECT_NE(text.find("s0 * 3 + j * 3 + 2]"), std::string::npos) << text;  // channel 2, stride 3
  EXPECT_NE(text.find("T.min(q * 16, h * w - 16)"), std::string::npos) << text;
  // The reader goes to the flat buffer.
  EXPECT_NE(text.find("* T.float32(2)"), std::string::npos) << text;
  EXPECT_EQ(text.find("lv[i0, i1, i2, i3]"), std::string::npos) << text;
  // Nothing left to do the second time.
  EXPECT_EQ(DeinterleaveChannels(out), out);
}

TEST(DeinterleaveChannelsTest, OtherNestsStay) {
  const std::pair<std::string, std::string> edits[] = {
      // Four channels.
      {"(n, h, w, 3)", "(n, h, w, 4)"},
      // Not a transpose of the last axis into the second.
      {"A[i0_i1 // T.int64(3), i2, i3, i0_i1 % T.int64(3)]", "A[i0_i1 // T.int64(3), i3, i2, i0_i1 % T.int64(3)]"},
      // A nest that writes part of the buffer (one row less).
      {"for i2 in range(h):", "for i2 in range(h - T.int64(1)):"},
  };
  // A static plane: LLVM vectorizes the row as it stands (pinned builds).
  std::string fixed = kTransposed;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"    h = T.int64()\n    w = T.int64()\n", ""}, {", h, w", ", T.int64(12), T.int64(12)"},
           {"range(h)", "range(T.int64(12))"}, {"T.vectorized(w)", "T.vectorized(T.int64(12))"}}) {
    ASSERT_NE(fixed.find(from), std::string::npos) << from;
    while (fixed.find(from) != std::string::npos) fixed.replace(fixed.find(from), from.size(), to);
  }
  PrimFunc st = ParseFunc(fixed, "f");
  EXPECT_EQ(DeinterleaveChannels(st), st) << fixed;
  for (const auto& [from, to] : edits) {
    std::string src = kTransposed;
    ASSERT_NE(src.find(from), std::string::npos) << from;
    while (src.find(from) != std::string::npos) src.replace(src.find(from), from.size(), to);
    if (to.find("(n, h, w, 4)") != std::string::npos) {
      // The buffers follow the channel count.
      for (const std::string& b : {std::string("(n, 3, h, w)")})
        while (src.find(b) != std::string::npos) src.replace(src.find(b), b.size(), "(n, 4, h, w)");
      for (const std::string& k : {std::string("T.int64(3)")})
        while (src.find(k) != std::string::npos) src.replace(src.find(k), k.size(), "T.int64(4)");
    }
    PrimFunc f = ParseFunc(src, "f");
    EXPECT_EQ(DeinterleaveChannels(f), f) << src;
  }
}

std::string Tensor4(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, h, w, C], b[4, 1, 1]) = conv2d(transpose(x), W) + b, W[4, C, 3, 3]
// a constant bound by name.
std::string Module(int64_t c) {
  const std::string cs = std::to_string(c);
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + Tensor4("\"n\", \"h\", \"w\", " + cs) +
         ", wt: " + Tensor4("4, " + cs + ", 3, 3") + ", b: " + Tensor4("4, 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            t = R.permute_dims(x, axes=[0, 3, 1, 2])\n"
         "            c = R.nn.conv2d(t, wt, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1])\n"
         "            gv = R.add(c, b)\n"
         "            R.output(gv)\n        return gv\n";
}

TEST(DeinterleaveChannelsTest, TransposedConvNumbers) {
  for (int64_t c : {3, 2}) {
    const std::vector<float> w = test_util::RandomFloats(4 * c * 9, 2, 0.5f), b = test_util::RandomFloats(4, 3);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("channels " + std::to_string(c) + " threads " + std::to_string(threads));
      driver::CompileOptions options = test_util::ThreadsOptions(threads, /*winograd=*/false);
      options.params = {{"wt", test_util::FloatTensor({4, c, 3, 3}, w)}};
      PrimFunc f = test_util::LowerPrimFunc(Module(c), options, "transpose");
      ASSERT_NE(f, nullptr);
      // Channel 1 of each 16-pixel chunk: every c-th float of the input.
      const std::string chunk = "s0 * " + std::to_string(c) + " + j * " + std::to_string(c) + " + 1]";
      EXPECT_NE(Print(f).find(chunk), std::string::npos) << "not deinterleaved\n" << Print(f);
      auto mod = test_util::CompileAndLoad(Module(c), options, threads);
      ASSERT_NE(mod, nullptr);
      // Planes of 9 and 15 (scalar), 16, 54 (an overlapping last chunk), 144
      // (mtcnn_pnet's), 323 pixels.
      for (int64_t n : {1, 2}) {
        for (const auto& [h, wd] : std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {3, 5}, {4, 4}, {18, 3}, {12, 12}, {17, 19}}) {
          SCOPED_TRACE("n " + std::to_string(n) + " h " + std::to_string(h) + " w " + std::to_string(wd));
          const int64_t ho = h - 2, wo = wd - 2;
          const std::vector<float> x = test_util::RandomFloats(n * h * wd * c, 1 + h * 100 + wd);
          Result<Tensor> out = test_util::InvokeMain(
              *mod, {test_util::FloatTensor({n, h, wd, c}, x), test_util::FloatTensor({4, 1, 1}, b)});
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, 4, ho, wo}));
          int bad = 0;
          for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < 4; ++o)
              for (int64_t y = 0; y < ho; ++y)
                for (int64_t xo = 0; xo < wo; ++xo) {
                  double acc = b[o];
                  for (int64_t ic = 0; ic < c; ++ic)
                    for (int64_t ky = 0; ky < 3; ++ky)
                      for (int64_t kx = 0; kx < 3; ++kx)
                        acc += double(x[((i * h + y + ky) * wd + xo + kx) * c + ic]) * w[((o * c + ic) * 3 + ky) * 3 + kx];
                  const float got = out->data<float>()[((i * 4 + o) * ho + y) * wo + xo];
                  if (!(std::fabs(got - acc) <= 1e-4) && bad++ < 5)
                    ADD_FAILURE() << "n " << i << " o " << o << " (" << y << ", " << xo << "): got " << got << ", want "
                                  << acc;
                }
          EXPECT_EQ(bad, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
