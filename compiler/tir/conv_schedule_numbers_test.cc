// Compiled convolutions against a double-precision reference (driver + VM):
// padding, strides, dilation, groups, depthwise and fused epilogues.
#include "compiler/tir/conv_schedule.h"

#include <gtest/gtest.h>

#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

// ---------------------------------------------------------------- numbers

TEST(ConvScheduleNumbersTest, PaddedStridedDilated) {
  std::vector<ConvCase> cases;
  ConvCase a{1, 3, 20, 22, 16, 3, 3};  // padding 1: the ResNet 3x3 shape
  a.pt = a.pl = a.pb = a.pr = 1;
  cases.push_back(a);
  ConvCase b{1, 3, 31, 29, 10, 7, 7};  // the ResNet stem: 7x7 stride 2 padding 3, odd sizes
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 3;
  cases.push_back(b);
  ConvCase c{2, 6, 13, 17, 9, 3, 2};  // batch 2, asymmetric padding, different strides and dilations
  c.sh = 1, c.sw = 3, c.dh = 2, c.dw = 1;
  c.pt = 2, c.pl = 0, c.pb = 1, c.pr = 3;
  cases.push_back(c);
  ConvCase d{1, 8, 7, 7, 20, 1, 1};  // 1x1, no padding
  cases.push_back(d);
  ConvCase e{1, 4, 5, 5, 3, 5, 5};  // the kernel covers the whole (unpadded) input: 1x1 output
  cases.push_back(e);
  ConvCase f{1, 2, 12, 12, 4, 3, 3};  // stride 2 without padding: the last rows and columns are unused
  f.sh = f.sw = 2;
  cases.push_back(f);
  ConvCase g{1, 16, 40, 3, 8, 3, 3};  // output narrower than a vector, tall
  g.pt = g.pl = g.pb = g.pr = 1;
  cases.push_back(g);
  ConvCase h{1, 2, 2, 2, 3, 3, 3};  // input smaller than the kernel, padding 1
  h.pt = h.pl = h.pb = h.pr = 1;
  cases.push_back(h);
  ConvCase i{1, 2, 4, 5, 3, 3, 3};  // padding larger than the kernel: whole output rows of zeros
  i.pt = 4, i.pl = 5, i.pb = 4, i.pr = 3;
  i.sh = 3, i.sw = 2;
  cases.push_back(i);
  int variant = 0;
  for (const ConvCase& k : cases) CheckConv(k, (variant++ % 2) ? 2 : 1);
}

TEST(ConvScheduleNumbersTest, Groups) {
  ConvCase a{1, 8, 10, 10, 12, 3, 3};  // 2 groups of 4 -> 6
  a.groups = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  ConvCase b{1, 16, 11, 9, 16, 3, 3};  // depthwise
  b.groups = 16;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.sh = b.sw = 2;
  ConvCase c{1, 6, 8, 8, 12, 3, 3};  // depthwise with multiplier 2
  c.groups = 6;
  c.pt = c.pl = 1;
  c.pb = c.pr = 0;
  for (const ConvCase& k : {a, b, c}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, GroupedConvPacksEachGroupInItsBands) {
  // Grouped convolutions of several output channels per group (RegNet's
  // group width 16; groups of exactly 16 output channels take
  // conv_grouped_block.h, so these have 16 inputs and 24 outputs a group):
  // one band task per (image, group, rows), packing only
  // that group's input channels (GroupBands). Stride 1 and 2, odd sizes,
  // bands of equal rows and a shorter last one, groups of 12 output
  // channels (a row block of 8 and 4 single rows), epilogues, weights bound
  // (packed at compile time) and pre-packed; batch 2 with 12 channels per
  // group (numbers only).
  std::vector<ConvCase> cases;
  ConvCase a{1, 64, 30, 30, 96, 3, 3};  // 4 groups of 16 -> 24, stride 2
  a.groups = 4;
  a.sh = a.sw = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  a.weights = "constant";
  cases.push_back(a);
  ConvCase b{1, 48, 28, 28, 72, 3, 3};  // 3 groups of 16 -> 24, 28 rows: 2 bands of 14
  b.groups = 3;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  b.weights = "constant";
  cases.push_back(b);
  ConvCase c{2, 36, 13, 11, 36, 3, 3};  // batch 2, 3 groups of 12 in and out (numbers only)
  c.groups = 3;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  ConvCase d{1, 160, 7, 7, 240, 3, 3};  // 10 groups of 16 -> 24 at 7 x 7 (one band each)
  d.groups = 10;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.weights = "packed";
  cases.push_back(d);
  ConvCase e{1, 64, 23, 21, 96, 3, 3};  // 8 groups of 8 -> 12, stride 2, padding at the end
  e.groups = 8;
  e.sh = e.sw = 2;
  e.pb = e.pr = 1;
  e.epilogue = "bn_residual_relu";
  e.weights = "constant";
  cases.push_back(e);
  for (const ConvCase& k : cases) {
    params::ParamList bound = BoundWeights(k);
    Census census = Count(LowerConv(k, 2, bound));
    EXPECT_TRUE(Allocates(census, "_band")) << k.Name();
    EXPECT_FALSE(Allocates(census, "_padded")) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
  for (const std::string& weights : {"input", "constant"}) {
    c.weights = weights;
    CheckConv(c, 1);
    CheckConv(c, 2);
  }
  // Two groups of a 5 x 5 plane are too few band tasks: the whole input,
  // packed once.
  ConvCase f{1, 32, 5, 5, 48, 3, 3};
  f.groups = 2;
  f.pt = f.pl = f.pb = f.pr = 1;
  f.weights = "constant";
  Census census = Count(LowerConv(f, 2, BoundWeights(f)));
  EXPECT_TRUE(Allocates(census, "_padded"));
  EXPECT_FALSE(Allocates(census, "_band"));
  CheckConv(f, 1);
  CheckConv(f, 2);
}

TEST(ConvScheduleNumbersTest, Depthwise) {
  // MobileNetV2-like depthwise convolutions (one task per channel): odd
  // sizes, stride 1 and 2, symmetric and TF-style asymmetric padding, bias +
  // ReLU6, channel multiplier 2.
  std::vector<ConvCase> cases;
  ConvCase a{1, 24, 29, 31, 24, 3, 3};
  a.groups = 24;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bias_relu6";
  cases.push_back(a);
  ConvCase b{1, 16, 23, 21, 16, 3, 3};  // stride 2
  b.groups = 16;
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  cases.push_back(b);
  ConvCase c{1, 40, 7, 7, 40, 3, 3};  // the last stages' 7 x 7
  c.groups = 40;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  cases.push_back(c);
  ConvCase d{1, 12, 15, 15, 12, 3, 3};  // stride 2, padding only at the end
  d.groups = 12;
  d.sh = d.sw = 2;
  d.pb = d.pr = 1;
  d.epilogue = "bias_relu6";
  cases.push_back(d);
  // Stride 2 with rows of 13 and 27 interior columns: split into even and
  // odd columns (window_deinterleave.h), the halves explicit vectors.
  for (int64_t w : {28, 56}) {
    ConvCase g{1, 3, 9, w, 3, 3, 3};
    g.groups = 3;
    g.sh = g.sw = 2;
    g.pt = g.pl = g.pb = g.pr = 1;
    g.epilogue = "bias_relu6";
    cases.push_back(g);
  }
  ConvCase e{1, 8, 10, 12, 16, 3, 3};  // multiplier 2
  e.groups = 8;
  e.pt = e.pl = e.pb = e.pr = 1;
  cases.push_back(e);
  ConvCase f{2, 9, 6, 5, 9, 5, 5};  // batch 2, 5 x 5 taps wider than the input
  f.groups = 9;
  f.pt = f.pl = f.pb = f.pr = 2;
  cases.push_back(f);
  for (const ConvCase& k : cases) {
    Census census = Count(LowerConv(k, 2));
    // The phase planes of depthwise_schedule.h (every strided case, and
    // at stride 1 the 7 x 7 and 6 x 5 planes as one flat run), or its
    // direct kernel (depthwise_direct.h: 56 columns at stride 2, its edge
    // column's accumulator, or with padding 1 the first vector's shifted
    // one), or its channel-block kernel
    // (depthwise_channel_block.h: 16+ channels on small planes, the 7 x 7
    // one of 40), or the conv schedule's band, never two.
    bool dw = Allocates(census, "_phases") || Allocates(census, "edge_acc") || Allocates(census, "acc_shifted") ||
              Allocates(census, "_cmajor");
    EXPECT_NE(Allocates(census, "_band"), dw) << k.Name();
    if (StridedDepthwise(k) || k.Wo() < 8) EXPECT_TRUE(dw) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, DepthwiseBands) {
  // Depthwise with few channels: several bands per image and channel, the
  // last one shorter than the others.
  ConvCase a{1, 2, 41, 40, 2, 3, 3};  // 4 bands of 13 rows (the last 2)
  a.groups = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  ConvCase b{2, 3, 60, 60, 6, 3, 3};  // batch 2, multiplier 2: bands of 29, 29 and 2 rows
  b.groups = 3;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.epilogue = "bn_residual_relu";
  ConvCase c{1, 2, 121, 119, 2, 3, 3};  // stride 2: 7 bands of 9 rows (the last 7)
  c.groups = 2;
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  c.epilogue = "bias_relu6";
  // Rows stored whole (their last lanes spill into the next row, which is
  // stored next) except a band's last row, with a residual read at the
  // spilled columns too: rows of 14 in 16-column tiles, 4 bands.
  ConvCase d{1, 3, 100, 14, 3, 3, 3};
  d.groups = 3;
  d.pt = d.pl = d.pb = d.pr = 1;
  d.epilogue = "bn_residual_relu";
  // Two column tiles per row, the second holding 6 output columns.
  ConvCase e{1, 2, 30, 70, 2, 3, 3};
  e.groups = 2;
  e.pt = e.pl = e.pb = e.pr = 1;
  e.epilogue = "bn_residual_relu";
  // Rows of 15 in 32-column tiles: a row's spill covers the next row and
  // two columns of the one after. (Spilling into a later band's rows goes
  // unseen with one thread, which computes that band afterwards; this case
  // runs the path, the numbers check the rows it stores.)
  ConvCase f{1, 3, 100, 15, 3, 3, 3};
  f.groups = 3;
  f.pt = f.pl = f.pb = f.pr = 1;
  f.epilogue = "bias_relu6";
  for (const ConvCase& k : {a, b, c, d, e, f}) {
    Census census = Count(LowerConv(k, 2));
    EXPECT_EQ(Allocates(census, "_band"), !StridedDepthwise(k)) << k.Name();
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

TEST(ConvScheduleNumbersTest, FusedEpilogues) {
  ConvCase a{1, 16, 14, 14, 24, 3, 3};
  a.pt = a.pl = a.pb = a.pr = 1;
  a.epilogue = "bn_relu";
  ConvCase b = a;
  b.epilogue = "bn_residual_relu";
  b.o = 21;  // row blocks of 8 and single rows
  ConvCase c{2, 3, 23, 23, 8, 7, 7};
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 3;
  c.epilogue = "bn_residual_relu";
  for (const ConvCase& k : {a, b, c}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
