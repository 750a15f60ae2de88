// The copy-free column-stride-1 depthwise kernel of short planes
// (depthwise_inplace_symbolic.h) that ScheduleSymbolicConvs runs at run time:
// which nests take it, its run-time test beside the banded kernel, and
// numbers through the driver and the VM against a double-precision reference
// at run-time sizes on both sides of that test (widths around its vector
// boundaries, heights of 1 to 9 output rows: odd and even counts),
// 3x3 and 5x5, paddings 1 and 2 (left and right edges shifted in by one or
// two lanes, and a right padding other than the left), strides (1, 1) and
// (2, 1); no epilogue, scale + shift + ReLU and hard-swish; batches 1 to 3;
// one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/depthwise_reference_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using namespace test_util;  // NOLINT

struct DwCase {
  int64_t c, k, sh, sw, pad;
  std::string epilogue = "none";  // none | bn_relu | hardswish
  int64_t Ho(int64_t h) const { return (h + 2 * pad - k) / sh + 1; }
  int64_t Wo(int64_t w) const { return (w + 2 * pad - k) / sw + 1; }
  std::string Name() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "c%ld k%ld s%ld,%ld p%ld %s", long(c), long(k), long(sh), long(sw), long(pad),
                  epilogue.c_str());
    return buf;
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, c, h, w], w, scale, shift): a depthwise conv2d (groups = c) and
// its epilogue; n, h and w symbolic.
std::string DwModule(const DwCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string p = s(k.pad);
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(k.c) +
                    ", \"h\", \"w\"") + ", w: " + T(s(k.c) + ", 1, " + s(k.k) + ", " + s(k.k)) + ", scale: " +
                    T(s(k.c) + ", 1, 1") + ", shift: " + T(s(k.c) + ", 1, 1") +
                    ") -> R.Tensor(dtype=\"float32\", ndim=4):\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.sh) + ", " + s(k.sw) + "], padding=[" + p + ", " + p + ", " +
         p + ", " + p + "], groups=" + s(k.c) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "hardswish") {
    src += "            e = R.add(c, shift)\n            gv = R.nn.hardswish(e)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n            gv = R.nn.relu(e)\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

driver::CompileOptions Options(int threads) { return ThreadsOptions(threads, /*winograd=*/false); }

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Whether the kernel declares an accumulator of `rows` x `lanes` (the
// printer numbers buffers of the same name: dwd_acc_1, ...).
bool HasTile(const std::string& text, int rows, int lanes) {
  std::regex re("dwi_acc(_[0-9]+)? = T\\.decl_buffer\\(\\(" + std::to_string(rows) + ", " + std::to_string(lanes) + "\\)");
  return std::regex_search(text, re);
}

TEST(DepthwiseInPlaceSymbolicTest, TakesColumnStrideOne) {
  for (const DwCase& k : {DwCase{8, 3, 2, 1, 1, "hardswish"}, DwCase{8, 3, 1, 1, 1, "bn_relu"}, DwCase{8, 5, 2, 1, 2},
                          DwCase{8, 5, 1, 1, 1}, DwCase{8, 3, 1, 1, 2}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(2), "conv2d");
    ASSERT_NE(f, nullptr);
    std::string text = testing::Print(f);
    // Tiles of 2 rows x 2 vectors, and of the last row; none taller (the
    // code each conv adds to the compile).
    EXPECT_TRUE(HasTile(text, 2, 32)) << text;
    EXPECT_TRUE(HasTile(text, 1, 32)) << text;
    EXPECT_FALSE(HasTile(text, 3, 32)) << text;
    EXPECT_FALSE(HasTile(text, 4, 32)) << text;
    // Edge taps shifted in: one lane for padding 1, two for padding 2.
    EXPECT_TRUE(Has(text, "dwi_shift1")) << text;
    EXPECT_EQ(Has(text, "dwi_shift2"), k.pad == 2 || k.k - 1 - k.pad == 2) << text;
    // Each tile's vector loops inside an unrolled loop (explicit vectors,
    // not a loop each for LLVM's loop passes: the compile time).
    EXPECT_TRUE(Has(text, "for dwi_once in T.unroll(")) << text;
    // The banded kernel stays below the run-time test.
    EXPECT_TRUE(Has(text, "_band = T.decl_buffer")) << text;
  }
  // Column stride 2: not its.
  for (const DwCase& k : {DwCase{8, 3, 2, 2, 1}, DwCase{8, 3, 1, 2, 1}}) {
    SCOPED_TRACE(k.Name());
    PrimFunc f = LowerPrimFunc(DwModule(k), Options(1), "conv2d");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(Has(testing::Print(f), "dwi_acc")) << testing::Print(f);
  }
}

void CheckNumbers(const DwCase& k, int threads, const std::vector<std::pair<int64_t, int64_t>>& sizes, int64_t n) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + " n " + std::to_string(n));
  auto mod = CompileAndLoad(DwModule(k), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(k.c * k.k * k.k, 2), scale = RandomFloats(k.c, 3), shift = RandomFloats(k.c, 4);
  for (const auto& hw : sizes) {
    int64_t h = hw.first, wd = hw.second, ho = k.Ho(h), wo = k.Wo(wd);
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    std::vector<float> x = RandomFloats(n * k.c * h * wd, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, k.c, h, wd}, x), FloatTensor({k.c, 1, k.k, k.k}, w),
                             FloatTensor({k.c, 1, 1}, scale), FloatTensor({k.c, 1, 1}, shift)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.c, ho, wo}));
    dw_test::ExpectDepthwise({k.c, k.k, k.sh, k.sw, k.pad, k.epilogue}, out->data<float>(), x, w, scale, shift, n, h, wd);
  }
}

// (h, w) with output widths under the run-time test (31, 32, 33 with
// padding 2), at its ends (34, 64) and between (40, 47, 48, 49, 50, 63),
// past it (65, 100), and output heights 1 to 9 at either row stride.
const std::vector<std::pair<int64_t, int64_t>> kSizes = {
    {1, 33}, {2, 34}, {3, 40}, {4, 50}, {5, 47}, {6, 48}, {7, 49}, {8, 63},  {9, 64},  {16, 50},
    {17, 64}, {18, 63}, {12, 49}, {2, 31}, {3, 32}, {4, 65}, {4, 100}, {10, 34}, {20, 50}};

TEST(DepthwiseInPlaceSymbolicTest, Numbers) {
  CheckNumbers(DwCase{5, 3, 1, 1, 1}, 1, kSizes, 1);
  CheckNumbers(DwCase{4, 3, 2, 1, 1, "hardswish"}, 2, kSizes, 2);
  CheckNumbers(DwCase{3, 5, 2, 1, 2, "hardswish"}, 1, kSizes, 3);
  CheckNumbers(DwCase{3, 5, 1, 1, 2, "bn_relu"}, 2, kSizes, 1);
  // Padding 1 at 5x5 (right padding 1, output 4 columns narrower): heights of 3 and more.
  std::vector<std::pair<int64_t, int64_t>> tall;
  for (const auto& hw : kSizes)
    if (hw.first >= 3) tall.push_back(hw);
  CheckNumbers(DwCase{3, 5, 1, 1, 1}, 1, tall, 2);
  CheckNumbers(DwCase{3, 3, 2, 1, 2, "bn_relu"}, 1, kSizes, 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
