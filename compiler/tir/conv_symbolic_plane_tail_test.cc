// The remainder of a flat plane span (conv_symbolic_plane_tail.h): the
// planned tile widths for spans around every rule, the widened and the
// narrow tail tiles in the lowered kernel of a 1 x 3 convolution of
// symbolic height and width (PP-OCRv4 rec's mixing convolutions), and its
// numbers against a double-precision reference at height 1 and odd widths,
// symbolic and static, one and two threads (driver + VM).
#include "compiler/tir/conv_symbolic_plane_tail.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::CountTiles;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;

constexpr int64_t kWidths[] = {32, 16, 8};

std::vector<int64_t> Plan(int64_t span, int64_t nr, int64_t rows, int64_t max_vectors = 24) {
  return PlaneTailPlan(span, nr, rows, max_vectors, std::begin(kWidths), std::end(kWidths));
}

using Widths = std::vector<int64_t>;

TEST(ConvSymbolicPlaneTailTest, TailWidths) {
  EXPECT_EQ(PlaneTailWidths(32, std::begin(kWidths), std::end(kWidths)), (Widths{8, 16, 32}));
  EXPECT_EQ(PlaneTailWidths(16, std::begin(kWidths), std::end(kWidths)), (Widths{8, 16}));
  EXPECT_EQ(PlaneTailWidths(8, std::begin(kWidths), std::end(kWidths)), (Widths{8}));
  EXPECT_EQ(PlaneTailWidths(1, std::begin(kWidths), std::end(kWidths)), (Widths{}));
}

TEST(ConvSymbolicPlaneTailTest, PlansTheSpan) {
  // 40 columns (one row of 40: PP-OCRv4 rec at width 320) in one tile of
  // 40, where two tiles of 32 computed 64.
  EXPECT_EQ(Plan(40, 32, 6), (Widths{40}));
  EXPECT_EQ(Plan(33, 32, 6), (Widths{32, 8}));  // 40 would not fit the span
  EXPECT_EQ(Plan(36, 32, 8), (Widths{32, 8}));
  EXPECT_EQ(Plan(41, 32, 8), (Widths{32, 16}));
  EXPECT_EQ(Plan(47, 32, 6), (Widths{32, 16}));
  EXPECT_EQ(Plan(48, 32, 8), (Widths{48}));
  EXPECT_EQ(Plan(50, 32, 6), (Widths{32, 32}));  // a remainder of 18: a tile of 32 of its own
  EXPECT_EQ(Plan(63, 32, 6), (Widths{32, 32}));
  EXPECT_EQ(Plan(64, 32, 6), (Widths{32, 32}));
  EXPECT_EQ(Plan(72, 32, 6), (Widths{32, 40}));
  EXPECT_EQ(Plan(77, 32, 6), (Widths{32, 48}));
  EXPECT_EQ(Plan(117, 32, 4), (Widths{32, 32, 32, 32}));
  // Tiles of 16 (spans of 16 to 31), 8 and 1 column.
  EXPECT_EQ(Plan(20, 16, 8), (Widths{16, 8}));
  EXPECT_EQ(Plan(24, 16, 8), (Widths{24}));
  EXPECT_EQ(Plan(31, 16, 8), (Widths{16, 16}));
  EXPECT_EQ(Plan(32, 16, 8), (Widths{16, 16}));
  EXPECT_EQ(Plan(13, 8, 8), (Widths{8, 8}));
  EXPECT_EQ(Plan(5, 1, 8), (Widths{1, 1, 1, 1, 1}));
  // Accumulators past the registers: the remainder keeps a tile of its own.
  EXPECT_EQ(Plan(40, 32, 8, 16), (Widths{32, 8}));
  EXPECT_TRUE(PlaneTailWidens(32, 16, 8, 24));
  EXPECT_FALSE(PlaneTailWidens(32, 16, 8, 23));
}

TEST(ConvSymbolicPlaneTailTest, ComputesNoMoreColumnsThanBefore) {
  // Every span of 8 to 200 columns: the plan covers the span, each tile
  // inside it, and computes at most what ceil(span / nr) tiles of nr did.
  for (int64_t span = 8; span <= 200; ++span) {
    const int64_t nr = span >= 32 ? 32 : span >= 16 ? 16 : 8;
    for (int64_t rows : {1, 4, 6, 8}) {
      const Widths plan = Plan(span, nr, rows);
      int64_t cols = 0;
      for (int64_t w : plan) {
        EXPECT_LE(w, span);
        cols += w;
      }
      EXPECT_GE(cols, span) << span;
      EXPECT_LE(cols, (span + nr - 1) / nr * nr) << span;
    }
  }
}

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, C, h, w], w[O, C, 1, 3], s[O, 1, 1], t[O, 1, 1]) = swish(conv(x, w) * s + t),
// the 1 x 3 convolution padded by one column each side; w static when `width` > 0.
std::string Module(int64_t c, int64_t o, int64_t width) {
  auto s = [](int64_t v) { return std::to_string(v); };
  const std::string w = width > 0 ? s(width) : std::string("\"w\"");
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(c) + ", \"h\", " + w) +
         ", w: " + T(s(o) + ", " + s(c) + ", 1, 3") + ", s: " + T(s(o) + ", 1, 1") + ", t: " + T(s(o) + ", 1, 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n"
         "            c = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 1, 0, 1], dilation=[1, 1])\n"
         "            d = R.multiply(c, s)\n            e = R.add(d, t)\n            g = R.sigmoid(e)\n"
         "            gv = R.multiply(e, g)\n            R.output(gv)\n        return gv\n";
}

TEST(ConvSymbolicPlaneTailTest, KernelWidensTheLastTile) {
  // 60 output channels (tiles of 6) and 16 (tiles of 8): the flat plane
  // tiles of 32, 16 and 8 columns, the widened ones of 40 and 48 (32 + 8,
  // 32 + 16) and 24 (16 + 8).
  for (auto [c, o] : {std::pair<int64_t, int64_t>{48, 60}, {8, 16}}) {
    SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o));
    ir::PrimFunc f = LowerPrimFunc(Module(c, o, 0), test_util::ThreadsOptions(1), "conv2d");
    ASSERT_NE(f, nullptr);
    test_util::TileCensus census = CountTiles(f);
    EXPECT_EQ(census.global_updates, 0);
    for (int64_t w : {8, 16, 24, 32, 40, 48}) {
      EXPECT_NE(std::find(census.fma_widths.begin(), census.fma_widths.end(), w), census.fma_widths.end()) << w;
    }
  }
}

void CheckNumbers(int64_t c, int64_t o, int64_t width, int threads, const std::vector<std::pair<int64_t, int64_t>>& sizes,
                  int64_t n) {
  SCOPED_TRACE(std::to_string(c) + " -> " + std::to_string(o) + " width " + std::to_string(width) + " threads " +
               std::to_string(threads));
  auto mod = CompileAndLoad(Module(c, o, width), test_util::ThreadsOptions(threads), threads);
  ASSERT_NE(mod, nullptr);
  const std::vector<float> w = RandomFloats(o * c * 3, 2), s = RandomFloats(o, 3), t = RandomFloats(o, 4);
  for (const auto& [h, wd] : sizes) {
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    const std::vector<float> x = RandomFloats(n * c * h * wd, 1 + h * 100 + wd);
    Result<Tensor> out = InvokeMain(*mod, {FloatTensor({n, c, h, wd}, x), FloatTensor({o, c, 1, 3}, w),
                                           FloatTensor({o, 1, 1}, s), FloatTensor({o, 1, 1}, t)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, o, h, wd}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t oc = 0; oc < o; ++oc) {
        for (int64_t y = 0; y < h; ++y) {
          for (int64_t xo = 0; xo < wd; ++xo) {
            double acc = 0;
            for (int64_t ic = 0; ic < c; ++ic) {
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t ix = xo + kx - 1;
                if (ix < 0 || ix >= wd) continue;
                acc += double(x[((b * c + ic) * h + y) * wd + ix]) * w[(oc * c + ic) * 3 + kx];
              }
            }
            const double e = acc * s[oc] + t[oc];
            const double want = e / (1.0 + std::exp(-e));
            const double tol = 1e-5 * double(c * 3) + 1e-5;
            const int64_t at = ((b * o + oc) * h + y) * wd + xo;
            if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
              ADD_FAILURE() << "n " << b << " o " << oc << " y " << y << " x " << xo << ": got " << got[at]
                            << ", want " << want;
            }
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(ConvSymbolicPlaneTailTest, NumbersAtHeightOne) {
  // Height 1 (the span is the row): widths on both sides of 8, 16, 24, 32,
  // 40, 48 and 64 (the flat planes end at 64), and PP-OCRv4 rec's 40.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t wd : {1, 7, 8, 9, 15, 16, 17, 20, 23, 24, 25, 31, 32, 33, 36, 39, 40, 41, 47, 48, 49, 50, 63, 64, 65}) {
    sizes.push_back({1, wd});
  }
  CheckNumbers(24, 60, 0, 1, sizes, 1);
  CheckNumbers(9, 16, 0, 2, sizes, 2);
}

TEST(ConvSymbolicPlaneTailTest, NumbersOfTallerPlanes) {
  // Rows of 2 to 5 padded columns between them: spans (Ho - 1) * (Wo + 2) +
  // Wo around every rule; a static width keeps its row tiles.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{2, 9},  {2, 15}, {2, 19}, {3, 7},  {3, 11},
                                                          {3, 13}, {4, 10}, {5, 17}, {2, 40}, {6, 20}};
  CheckNumbers(12, 60, 0, 1, sizes, 1);
  CheckNumbers(12, 60, 0, 2, sizes, 2);
  CheckNumbers(12, 60, 40, 1, {{1, 40}, {2, 40}, {5, 40}}, 1);
  CheckNumbers(5, 16, 13, 2, {{1, 13}, {3, 13}}, 2);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
