// ScheduleIm2colConvs (the conv.im2col knob): which nests it takes (static
// convolutions of one group, only with the knob set), the chunk it makes of
// small planes and long rows, and the numbers of the lowered kernels against
// the unscheduled function at odd channel counts and sizes, 1 x N and N x 1
// windows, a stride with asymmetric padding, a batch of two, a bias + ReLU
// epilogue and a 1-D convolution, over the chunk sizes and two tile heights.
#include "compiler/tir/conv_im2col_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/default_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;
using testing::SameNumbers;

struct Case {
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr;
  bool bias_relu = false;
  int64_t groups = 1;
  int64_t Ho() const { return (h + pt + pb - kh) / sh + 1; }
  int64_t Wo() const { return (w + pl + pr - kw) / sw + 1; }
  std::string Name() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " o" + std::to_string(o) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(sh) + "," + std::to_string(sw) + (bias_relu ? " bias+relu" : "");
  }
};

// Short names: the PrimFunc texts below are built from many of these.
const auto I = &testing::Int64Text;
const auto Shape = &testing::ShapeText;

// conv2d as legalization writes it, with a bias + ReLU stage when asked.
std::string Func(const Case& k) {
  int64_t cpg = k.c / k.groups;
  std::string out = Shape({k.n, k.o, k.Ho(), k.Wo()});
  std::string s = "@T.prim_func\ndef conv(data: T.Buffer(" + Shape({k.n, k.c, k.h, k.w}) +
                  ", \"float32\"), weight: T.Buffer(" + Shape({k.o, cpg, k.kh, k.kw}) +
                  ", \"float32\"), bias: T.Buffer(" + Shape({k.o, 1, 1}) + ", \"float32\"), out: T.Buffer(" + out +
                  ", \"float32\")):\n";
  std::string conv = k.bias_relu ? "conv" : "out";
  if (k.bias_relu) s += "    conv = T.alloc_buffer(" + out + ", \"float32\")\n";
  auto at = [](int64_t s, const std::string& v, const std::string& r, int64_t p) {
    return v + " * " + std::to_string(s) + " + " + r + " * 1 - " + std::to_string(p);
  };
  std::string iy = at(k.sh, "v_i2", "v_k1", k.pt), ix = at(k.sw, "v_i3", "v_k2", k.pl);
  s += "    for i0, i1, i2, i3, k0, k1, k2 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
       ", " + I(cpg) + ", " + I(k.kh) + ", " + I(k.kw) + "):\n";
  s += "        with T.block(\"conv2d\"):\n";
  s += "            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap(\"SSSSRRR\", [i0, i1, i2, i3, k0, k1, k2])\n";
  s += "            with T.init():\n                " + conv + "[v_i0, v_i1, v_i2, v_i3] = T.float32(0)\n";
  std::string ch = k.groups == 1 ? "v_k0" : "v_i1 // " + std::to_string(k.o / k.groups) + " * " + std::to_string(cpg) + " + v_k0";
  s += "            " + conv + "[v_i0, v_i1, v_i2, v_i3] = " + conv + "[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(" + iy +
       " >= 0 and " + iy + " < " + std::to_string(k.h) + " and " + ix + " >= 0 and " + ix + " < " +
       std::to_string(k.w) + ", data[v_i0, " + ch + ", " + iy + ", " + ix + "] * weight[v_i1, v_k0, v_k1, v_k2], T.float32(0))\n";
  if (!k.bias_relu) return s;
  s += "    for i0, i1, i2, i3 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) + "):\n";
  s += "        with T.block(\"bias_relu\"):\n";
  s += "            v0, v1, v2, v3 = T.axis.remap(\"SSSS\", [i0, i1, i2, i3])\n";
  s += "            out[v0, v1, v2, v3] = T.max(conv[v0, v1, v2, v3] + bias[v1, T.int64(0), T.int64(0)], T.float32(0))\n";
  return s;
}

// As tune/lower.h lowers with the default schedules (and knobs).
PrimFunc Lower(const PrimFunc& f, const ScheduleKnobs& knobs = {}) {
  PrimFunc scheduled = ApplyDefaultSchedule(InlineElementwise(LowerBlocks(f)), 1, knobs);
  return InlineElementwise(scheduled, /*after_schedule=*/true);
}

bool HasPanel(const PrimFunc& f) { return Print(f).find("_panel = T.decl_buffer") != std::string::npos; }

ScheduleKnobs Knobs(int64_t points, int64_t mr = 0) {
  ScheduleKnobs k;
  k.values["conv.im2col"] = points;
  if (mr) k.values["conv.mr"] = mr;
  return k;
}

TEST(ConvIm2colScheduleTest, OnlyWithTheKnobAndOneGroup) {
  Case k{1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "conv")));
  EXPECT_EQ(ScheduleIm2colConvs(f, 1, {}), f);
  EXPECT_EQ(ScheduleIm2colConvs(f, 1, Knobs(0)), f);
  EXPECT_TRUE(HasPanel(ScheduleIm2colConvs(f, 1, Knobs(16))));
  EXPECT_FALSE(HasPanel(Lower(ParseFunc(Func(k), "conv"))));
  // Grouped and depthwise convolutions are not its.
  for (int64_t groups : {2, 8}) {
    Case g = k;
    g.groups = groups;
    PrimFunc gf = InlineElementwise(LowerBlocks(ParseFunc(Func(g), "conv")));
    EXPECT_EQ(ScheduleIm2colConvs(gf, 1, Knobs(16)), gf) << groups;
  }
}

TEST(ConvIm2colScheduleTest, ChunksAreWholeVectorsOfPoints) {
  // A 4 x 4 plane is one chunk of 16 points (four whole rows); a row of 37
  // columns with 32 points a chunk takes two chunks a row, the second guarded.
  Case small{1, 8, 4, 4, 12, 3, 3, 1, 1, 1, 1, 1, 1};
  std::string text = Print(ScheduleIm2colConvs(InlineElementwise(LowerBlocks(ParseFunc(Func(small), "conv"))), 1,
                                               Knobs(16)));
  EXPECT_NE(text.find("data_panel = T.decl_buffer((1152,)"), std::string::npos) << text;  // 72 taps x 16
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text;  // the last 4 channels
  Case row{1, 3, 5, 37, 4, 1, 1, 1, 1, 0, 0, 0, 0};
  text = Print(ScheduleIm2colConvs(InlineElementwise(LowerBlocks(ParseFunc(Func(row), "conv"))), 1, Knobs(32, 3)));
  EXPECT_NE(text.find("in range(T.int64(10))"), std::string::npos) << text;  // 5 rows x 2 chunks
  EXPECT_NE(text.find("acc = T.decl_buffer((3, 32)"), std::string::npos) << text;
}

TEST(ConvIm2colScheduleTest, Numbers) {
  std::vector<Case> cases = {
      {1, 17, 9, 11, 23, 3, 3, 1, 1, 1, 1, 1, 1},        // odd channels and sizes
      {1, 8, 4, 4, 12, 3, 3, 1, 1, 1, 1, 1, 1},          // a 4 x 4 plane
      {2, 5, 7, 37, 6, 1, 7, 1, 1, 0, 3, 0, 3},          // a batch of two, 1 x 7, rows of 37
      {1, 6, 13, 5, 7, 7, 1, 1, 1, 3, 0, 3, 0},          // 7 x 1 on narrow rows
      {1, 3, 15, 17, 5, 3, 3, 2, 2, 0, 1, 1, 0},         // stride 2, asymmetric padding
      {1, 5, 6, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, true},    // bias + ReLU
      {1, 4, 3, 70, 3, 1, 1, 1, 1, 0, 0, 0, 0},          // pointwise, 70 columns
  };
  // Two points of the knobs per case (each compiled and run), rotating so
  // that every chunk size meets both tile heights.
  const int64_t sizes[] = {16, 32, 48, 64};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    PrimFunc f = ParseFunc(Func(k), "conv");
    for (auto [points, mr] : {std::pair<int64_t, int64_t>{sizes[i % 4], 0}, {sizes[(i + 2) % 4], 3}}) {
      PrimFunc lowered = Lower(f, Knobs(points, mr));
      ASSERT_TRUE(HasPanel(lowered)) << k.Name() << "\n" << Print(lowered);
      Status s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " points " << points << " mr " << mr << ": " << s.ToString() << "\n"
                          << Print(lowered);
    }
  }
}

// A 1-D convolution reaches it lifted to height 1 (the default schedule's path).
TEST(ConvIm2colScheduleTest, Conv1dNumbers) {
  const char* text = R"(@T.prim_func
def conv1d(data: T.Buffer((1, 7, 53), "float32"), weight: T.Buffer((9, 7, 5), "float32"), conv1d: T.Buffer((1, 9, 53), "float32")):
    for i0, i1, i2, k0, k1 in T.grid(T.int64(1), T.int64(9), T.int64(53), T.int64(7), T.int64(5)):
        with T.block("conv1d"):
            v_i0, v_i1, v_i2, v_k0, v_k1 = T.axis.remap("SSSRR", [i0, i1, i2, k0, k1])
            with T.init():
                conv1d[v_i0, v_i1, v_i2] = T.float32(0)
            conv1d[v_i0, v_i1, v_i2] = conv1d[v_i0, v_i1, v_i2] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 2 >= 0 and v_i2 * 1 + v_k1 * 1 - 2 < 53, data[v_i0, v_k0, v_i2 * 1 + v_k1 * 1 - 2] * weight[v_i1, v_k0, v_k1], T.float32(0))
)";
  PrimFunc f = ParseFunc(text, "conv1d");
  for (int64_t points : {16, 48}) {
    PrimFunc lowered = Lower(f, Knobs(points));
    ASSERT_TRUE(HasPanel(lowered)) << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << points << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
