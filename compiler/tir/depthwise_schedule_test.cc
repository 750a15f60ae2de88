// ScheduleStridedDepthwise: which nests it takes (static strided depthwise,
// and stride 1 with wide rows by a knob), what it makes of them (phase planes,
// register tiles or one flat run, the epilogue in the tile's stores after
// InlineElementwise), and the numbers of the lowered kernels against the
// unscheduled function for strides 1, 2 and 3, 3x3 and 5x5 windows, odd and
// asymmetric paddings, batches of one and two, every knob (tile, flat run,
// streamed copy), and SiLU / hard-swish / ReLU6 epilogues; the direct
// kernel of depthwise_direct.h (column stride 2, no band) and the
// channel-block kernel of depthwise_channel_block.h likewise.
#include "compiler/tir/depthwise_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/conv_block_test_util.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/depthwise_channel_block.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;
using testing::SameNumbers;

struct Case {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  std::string epilogue = "none";  // none | silu | hardswish | hardswish_onnx | relu6
  int64_t groups = -1;            // -1: depthwise (c groups)
  int64_t Ho() const { return (h + pt + pb - kh) / sh + 1; }
  int64_t Wo() const { return (w + pl + pr - kw) / sw + 1; }
  std::string Name() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" + std::to_string(sh) + "," +
           std::to_string(sw) + " p" + std::to_string(pt) + "," + std::to_string(pl) + "," + std::to_string(pb) + "," +
           std::to_string(pr) + " " + epilogue;
  }
};

// Short names: the PrimFunc texts below are built from many of these.
const auto I = &testing::Int64Text;
const auto Shape = &testing::ShapeText;

// The function legalization and fusion write for conv2d (groups = c) and
// its epilogue, in block form.
std::string Func(const Case& k) {
  int64_t groups = k.groups < 0 ? k.c : k.groups, cpg = k.c / groups, o = k.c;
  std::string out = Shape({k.n, o, k.Ho(), k.Wo()});
  bool epi = k.epilogue != "none";
  std::string s = "@T.prim_func\ndef dw(data: T.Buffer(" + Shape({k.n, k.c, k.h, k.w}) +
                  ", \"float32\"), weight: T.Buffer(" + Shape({o, cpg, k.kh, k.kw}) +
                  ", \"float32\"), bias: T.Buffer(" + Shape({o, 1, 1}) + ", \"float32\"), out: T.Buffer(" + out +
                  ", \"float32\")):\n";
  std::string conv = epi ? "conv" : "out";
  if (epi) s += "    conv = T.alloc_buffer(" + out + ", \"float32\")\n    biased = T.alloc_buffer(" + out + ", \"float32\")\n";
  auto lt = [](int64_t s, int64_t k, const std::string& v, const std::string& r, int64_t p) {
    return v + " * " + std::to_string(s) + " + " + r + " * 1 - " + std::to_string(p);
  };
  std::string iy = lt(k.sh, 0, "v_i2", "v_k1", k.pt), ix = lt(k.sw, 0, "v_i3", "v_k2", k.pl);
  s += "    for i0, i1, i2, i3, k0, k1, k2 in T.grid(" + I(k.n) + ", " + I(o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
       ", " + I(cpg) + ", " + I(k.kh) + ", " + I(k.kw) + "):\n";
  s += "        with T.block(\"conv2d\"):\n";
  s += "            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap(\"SSSSRRR\", [i0, i1, i2, i3, k0, k1, k2])\n";
  s += "            with T.init():\n                " + conv + "[v_i0, v_i1, v_i2, v_i3] = T.float32(0)\n";
  s += "            " + conv + "[v_i0, v_i1, v_i2, v_i3] = " + conv + "[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(" + iy +
       " >= 0 and " + iy + " < " + std::to_string(k.h) + " and " + ix + " >= 0 and " + ix + " < " +
       std::to_string(k.w) + ", data[v_i0, v_i1 // " + std::to_string(o / groups) + " * " + std::to_string(cpg) +
       " + v_k0, " + iy + ", " + ix + "] * weight[v_i1, v_k0, v_k1, v_k2], T.float32(0))\n";
  if (!epi) return s;
  std::string grid = "    for i0, i1, i2, i3 in T.grid(" + I(k.n) + ", " + I(o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
                     "):\n";
  std::string remap = "            v0, v1, v2, v3 = T.axis.remap(\"SSSS\", [i0, i1, i2, i3])\n";
  // As legalization writes broadcasting ops (a batch of one read at 0).
  std::string b0 = k.n == 1 ? "T.int64(0)" : "v0";
  s += grid + "        with T.block(\"add\"):\n" + remap + "            biased[v0, v1, v2, v3] = conv[" + b0 +
       ", v1, v2, v3] + bias[v1, T.int64(0), T.int64(0)]\n";
  std::string x = "biased[" + b0 + ", v1, v2, v3]";
  std::string value;
  if (k.epilogue == "silu") {
    // sigmoid and multiply, two operators as the importers write SiLU.
    s += "    sig = T.alloc_buffer(" + out + ", \"float32\")\n";
    s += grid + "        with T.block(\"sigmoid\"):\n" + remap +
         "            sig[v0, v1, v2, v3] = T.sigmoid(biased[v0, v1, v2, v3])\n";
    value = x + " * sig[" + b0 + ", v1, v2, v3]";
  }
  if (k.epilogue == "hardswish")
    value = x + " * T.min(T.max(" + x + " + T.float32(3), T.float32(0)), T.float32(6)) / T.float32(6)";
  // As the ONNX importer writes HardSwish (alpha 1/6, beta 1/2), legalized:
  // its input read at the loop variables, batch included.
  if (k.epilogue == "hardswish_onnx") {
    std::string a = "biased[v0, v1, v2, v3]";
    value = a + " * T.min(T.max(" + a + " * T.float32(0.16666666666666666) + T.float32(0.5), T.float32(0)), T.float32(1))";
  }
  if (k.epilogue == "relu6") value = "T.min(T.max(" + x + ", T.float32(0)), T.float32(6))";
  s += grid + "        with T.block(\"act\"):\n" + remap + "            out[v0, v1, v2, v3] = " + value + "\n";
  return s;
}

// As tune/lower.h lowers with the default schedules (and knobs).
using conv_block_test::Lower;

bool HasBuffer(const PrimFunc& f, const std::string& suffix) {
  std::string text = Print(f);
  return text.find(suffix + " = T.decl_buffer") != std::string::npos;
}

TEST(DepthwiseScheduleTest, TakesStaticStridedDepthwiseAndWideOnesByTheKnob) {
  ScheduleKnobs unit, never;
  unit.values["depthwise.unit_stride"] = 1;
  never.values["depthwise.unit_stride"] = 2;
  // Strided; stride 1 with rows of one vector (12 and 16 columns); stride 1
  // with 7-column rows, one flat run; stride 1 with rows of 17 (knob 1 only).
  Case strided{1, 8, 11, 13, 3, 3, 2, 2, 1, 1, 1, 1}, wide{1, 8, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1},
      vector{1, 8, 6, 16, 3, 3, 1, 1, 1, 1, 1, 1}, narrow{1, 8, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2},
      wider{1, 8, 11, 17, 3, 3, 1, 1, 1, 1, 1, 1};
  for (const Case& k : {strided, wide, vector, narrow, wider}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    PrimFunc s = ScheduleStridedDepthwise(f, unit);
    ASSERT_NE(s, f) << k.Name();
    EXPECT_TRUE(HasBuffer(s, "data_phases")) << Print(s);
    // By the rule, stride 1 up to rows of 16; with knob 2, strided only.
    EXPECT_EQ(ScheduleStridedDepthwise(f) != f, k.sh > 1 || k.Wo() <= 16) << k.Name();
    EXPECT_EQ(ScheduleStridedDepthwise(f, never) != f, k.sh > 1) << k.Name();
  }
  // Stride 1 with rows of 11 (too many for one flat run: 11 x 13 columns)
  // or with 4 channels (the conv schedule's tiles, its row bands) and a
  // strided conv with two input channels per group are not its, knob or not.
  for (const Case& k : {Case{1, 8, 11, 11, 3, 3, 1, 1, 1, 1, 1, 1}, Case{1, 4, 11, 13, 3, 3, 1, 1, 1, 1, 1, 1},
                        Case{1, 8, 11, 13, 3, 3, 2, 2, 1, 1, 1, 1, "none", 4}}) {
    PrimFunc g = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    EXPECT_EQ(ScheduleStridedDepthwise(g, unit), g) << k.Name();
    EXPECT_EQ(ScheduleStridedDepthwise(g), g) << k.Name();
  }
}

TEST(DepthwiseScheduleTest, KnobsSetTheTile) {
  Case k{1, 8, 20, 40, 3, 3, 2, 2, 1, 1, 1, 1};  // 10 x 20 outputs: two vectors a row
  PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
  EXPECT_NE(Print(ScheduleStridedDepthwise(f)).find("acc = T.decl_buffer((4, 32)"), std::string::npos);
  ScheduleKnobs knobs;
  knobs.values["depthwise.rows"] = 3;
  knobs.values["depthwise.cols"] = 1;
  std::string text = Print(ScheduleStridedDepthwise(f, knobs));
  EXPECT_NE(text.find("acc = T.decl_buffer((3, 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((1, 16)"), std::string::npos) << text;  // the 10th row
}

TEST(DepthwiseScheduleTest, NarrowStridedPlanesAreOneFlatRun) {
  // 14^2 -> 7^2, 5x5/2: band rows of 7 + 2 columns, 7 rows of them in 4
  // vectors (the rule), or 7 row tiles of one vector (depthwise.flat 1).
  Case k{1, 8, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2};
  PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
  std::string text = Print(ScheduleStridedDepthwise(f));
  EXPECT_NE(text.find("acc = T.decl_buffer((64,)"), std::string::npos) << text;
  ScheduleKnobs off;
  off.values["depthwise.flat"] = 1;
  text = Print(ScheduleStridedDepthwise(f, off));
  EXPECT_EQ(text.find("acc = T.decl_buffer((64,)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text;
  // Rows of 12 at stride 1 keep their row tiles unless the knob asks.
  Case wide{1, 8, 5, 12, 3, 3, 1, 1, 1, 1, 1, 1};
  PrimFunc g = InlineElementwise(LowerBlocks(ParseFunc(Func(wide), "dw")));
  EXPECT_NE(Print(ScheduleStridedDepthwise(g)).find("acc = T.decl_buffer((4, 16)"), std::string::npos);
  ScheduleKnobs on;
  on.values["depthwise.flat"] = 2;
  text = Print(ScheduleStridedDepthwise(g, on));
  EXPECT_NE(text.find("acc = T.decl_buffer((80,)"), std::string::npos) << text;  // 5 rows of 14 in 5 vectors
  // Stride 1, 7^2 5x5: the rule's flat run (7 rows of 11 in 5 vectors);
  // depthwise.flat 1 makes it row tiles.
  Case narrow{1, 8, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2};
  PrimFunc h = InlineElementwise(LowerBlocks(ParseFunc(Func(narrow), "dw")));
  text = Print(ScheduleStridedDepthwise(h));
  EXPECT_NE(text.find("acc = T.decl_buffer((80,)"), std::string::npos) << text;
  text = Print(ScheduleStridedDepthwise(h, off));
  EXPECT_NE(text.find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text;
}

TEST(DepthwiseScheduleTest, NarrowRowsAreCopiedAndStoredInWholeVectors) {
  // 28^2 -> 14^2 3x3/2: each phase's 13 or 14 inside columns of a band row
  // are one 16-column chunk (not a 13-lane loop), except in the band row
  // that reads the plane's last input row; the 14-column output rows are
  // stored as whole vectors, except the plane's last.
  Case k{1, 8, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1};
  PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
  std::string text = Print(ScheduleStridedDepthwise(f));
  ASSERT_TRUE(HasBuffer(ScheduleStridedDepthwise(f), "data_phases")) << text;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // The chunks: two phases x two row phases in the common rows' loop.
  EXPECT_GE(count("pj in T.vectorized(T.int64(16))"), 4u) << text;
  // Stores: whole vectors in the tiles, 14 columns in the last row's.
  EXPECT_GE(count("xx in T.vectorized(T.int64(16))"), 1u) << text;
  EXPECT_EQ(count("xx in T.vectorized(T.int64(14))"), 1u) << text;
}

TEST(DepthwiseScheduleTest, EpilogueIsStoredByTheTiles) {
  for (const char* epi : {"silu", "hardswish", "relu6"}) {
    Case k{1, 6, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, epi};
    PrimFunc f = ParseFunc(Func(k), "dw");
    PrimFunc lowered = Lower(f);
    // One loop at the top (the channels): no pass of its own for the
    // epilogue, no intermediate of the output's size.
    const Stmt* body = &lowered->body;
    while (const auto* a = As<AllocateNode>(*body)) body = &a->body;
    const auto* loop = As<ForNode>(*body);
    ASSERT_NE(loop, nullptr) << epi << "\n" << Print(lowered);
    EXPECT_EQ(loop->for_kind, ForKind::kParallel) << Print(lowered);
    EXPECT_EQ(Print(lowered).find("T.decl_buffer((1, 6, 7, 7)"), std::string::npos) << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

TEST(DepthwiseScheduleTest, EpilogueReadingItsInputTwiceIsStoredByWidePlanesToo) {
  // The direct kernel (56^2 -> 28^2) and the band kernel whose row vectors
  // spill into the next row (28^2 -> 14^2): the row schedule used to fuse
  // the bias add's loop with hard-swish's into one loop, the sum in a
  // one-element temporary that neither inlined into the tiles' stores nor
  // vectorized (a scalar pass over the output after the kernel).
  for (const char* epi : {"hardswish_onnx", "hardswish", "silu"}) {
    for (int64_t size : {56, 28}) {
      Case k{1, 16, size, size, 3, 3, 2, 2, 1, 1, 1, 1, epi};
      PrimFunc f = ParseFunc(Func(k), "dw");
      PrimFunc lowered = Lower(f);
      std::string text = Print(lowered);
      const Stmt* body = &lowered->body;
      while (const auto* a = As<AllocateNode>(*body)) body = &a->body;
      const auto* loop = As<ForNode>(*body);
      ASSERT_NE(loop, nullptr) << k.Name() << "\n" << text;
      EXPECT_EQ(loop->for_kind, ForKind::kParallel) << text;
      EXPECT_EQ(text.find("T.decl_buffer((1,), \"float32\")"), std::string::npos) << k.Name() << "\n" << text;
      Status s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << text;
    }
  }
}

TEST(DepthwiseScheduleTest, PlanesTooBigForL1TakeTheBandedKernelByTheKnob) {
  // Bands over 32 KiB: 100^2 at stride 1 (with depthwise.unit_stride 1),
  // 150 x 90 -> 75 x 45 at stride 2; odd channels, a batch of two, 5x5,
  // epilogues; the window schedule's without depthwise.banded (the 3x3/2
  // one with depthwise.direct 1: by the rule the direct kernel takes it).
  ScheduleKnobs banded, plain_knobs;
  banded.values["depthwise.banded"] = 1;
  banded.values["depthwise.unit_stride"] = 1;
  banded.values["depthwise.direct"] = 1;
  plain_knobs.values["depthwise.direct"] = 1;
  for (const Case& k : {Case{1, 3, 100, 100, 3, 3, 1, 1, 1, 1, 1, 1, "hardswish"},
                        Case{2, 3, 150, 90, 3, 3, 2, 2, 1, 1, 1, 1, "relu6"},
                        Case{1, 2, 150, 150, 5, 5, 2, 2, 2, 2, 2, 2, "silu"}}) {
    PrimFunc f = ParseFunc(Func(k), "dw");
    PrimFunc plain = InlineElementwise(LowerBlocks(f));
    EXPECT_EQ(ScheduleStridedDepthwise(plain, plain_knobs), plain) << k.Name();  // the window schedule's
    PrimFunc lowered = Lower(f, banded);
    ASSERT_TRUE(HasBuffer(lowered, "data_band")) << k.Name() << "\n" << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

// The direct kernel (depthwise_direct.h): column stride 2, 3x3 windows, at
// least 16 output columns whose taps are all inside; no band.
TEST(DepthwiseScheduleTest, DirectKernelTakesWideColumnStride2Planes) {
  ScheduleKnobs band;
  band.values["depthwise.direct"] = 1;
  // 56^2 -> 28^2 and 112^2 -> 56^2 3x3/2 (the latter too big for a band),
  // and 2 x 1 / 1 x 2 strides.
  for (const Case& k : {Case{1, 4, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1}, Case{1, 2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1},
                        Case{1, 2, 9, 70, 3, 3, 1, 2, 1, 1, 1, 1}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    PrimFunc s = ScheduleStridedDepthwise(f);
    ASSERT_NE(s, f) << k.Name();
    EXPECT_FALSE(HasBuffer(s, "data_phases")) << Print(s);
    // The first column (padding 1): in the first vector, its kx = 0 taps
    // shifted in from a second accumulator; no copy, no scalar column.
    EXPECT_TRUE(HasBuffer(s, "acc_shifted")) << Print(s);
    EXPECT_FALSE(HasBuffer(s, "data_left")) << Print(s);
    EXPECT_FALSE(HasBuffer(s, "edge_acc")) << Print(s);
    // The taps read the input with stride 2.
    EXPECT_NE(Print(s).find("jj * 2 + "), std::string::npos) << Print(s);
    // depthwise.direct 1: the band kernel (where its band fits) or none.
    PrimFunc b = ScheduleStridedDepthwise(f, band);
    EXPECT_EQ(b != f && HasBuffer(b, "data_phases"), k.h < 100) << k.Name();
  }
  // Not its: 5x5 windows, rows of 15 inside columns (28^2 -> 14^2), stride
  // 2 x 1, stride 3, stride 1.
  for (const Case& k : {Case{1, 4, 56, 56, 5, 5, 2, 2, 2, 2, 2, 2}, Case{1, 4, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1},
                        Case{1, 2, 16, 40, 3, 3, 2, 1, 1, 1, 1, 1}, Case{1, 4, 60, 60, 3, 3, 3, 3, 1, 1, 1, 1},
                        Case{1, 8, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    PrimFunc s = ScheduleStridedDepthwise(f);
    EXPECT_TRUE(s == f || HasBuffer(s, "data_phases")) << k.Name() << "\n" << Print(s);
  }
}

TEST(DepthwiseScheduleTest, DirectKernelNumbers) {
  std::vector<Case> cases = {
      {1, 3, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1},               // 28^2 out: vectors at 0 and 12
      {2, 3, 57, 45, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},       // odd sizes: a last row and column outside
      {1, 2, 40, 38, 3, 3, 2, 2, 0, 0, 0, 0, "hardswish"},  // no padding: no edge column
      {1, 2, 21, 37, 3, 3, 2, 2, 0, 1, 1, 0},               // asymmetric padding
      {1, 2, 30, 35, 3, 3, 2, 2, 2, 2, 2, 2, "relu6"},      // padding 2: two edge columns a side
      {1, 2, 9, 70, 3, 3, 1, 2, 1, 1, 1, 1},                // stride 1 x 2
      {1, 2, 30, 112, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},      // four vectors a row
      {1, 2, 4, 40, 3, 3, 2, 2, 1, 1, 1, 1},                // two rows: both outside the inside rows
      {2, 3, 13, 34, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},       // 17 columns: the fewest the kernel takes
      {1, 2, 15, 67, 3, 3, 2, 2, 2, 1, 2, 2, "hardswish"},  // 34 columns: the right edge scalar
      {1, 2, 12, 112, 3, 3, 2, 2, 2, 2, 2, 2, "silu"},      // padding 2, four vectors: the edge copy
  };
  // depthwise.rows, .cols.
  std::vector<std::vector<int64_t>> knobs = {{0, 0}, {1, 1}, {3, 2}, {8, 4}};
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "dw");
    for (const auto& kv : knobs) {
      ScheduleKnobs kn;
      if (kv[0]) kn.values["depthwise.rows"] = kv[0];
      if (kv[1]) kn.values["depthwise.cols"] = kv[1];
      PrimFunc lowered = Lower(f, kn);
      // The left edge column shifted into the first vector (3 columns,
      // stride 2, padding 1), else the left edge columns in the first
      // vector (its taps from the buffer data_left) where a row has more
      // than one tile of vectors, else scalar.
      int64_t xa = (k.pl + k.sw - 1) / k.sw, xb = std::min(k.Wo(), (k.w - k.kw + k.pl) / k.sw + 1);
      int64_t vectors = (xb - xa + 15) / 16, cols = std::min<int64_t>(vectors, kv[1] ? kv[1] : 2);
      bool shifted = k.pl == 1 && k.sw == 2 && k.kw == 3;
      bool left = !shifted && k.pl > 0 && vectors > cols;
      ASSERT_EQ(HasBuffer(lowered, "acc_shifted"), shifted) << k.Name() << "\n" << Print(lowered);
      ASSERT_EQ(HasBuffer(lowered, "data_left"), left) << k.Name() << "\n" << Print(lowered);
      ASSERT_TRUE(HasBuffer(lowered, "edge_acc") || left || shifted || k.pl == 0) << k.Name() << "\n"
                                                                                    << Print(lowered);
      ASSERT_FALSE(HasBuffer(lowered, "data_phases")) << k.Name() << "\n" << Print(lowered);
      Status s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " knobs " << kv[0] << " " << kv[1] << ": " << s.ToString() << "\n"
                          << Print(lowered);
    }
  }
}

TEST(DepthwiseScheduleTest, Numbers) {
  std::vector<Case> cases = {
      {1, 8, 11, 13, 3, 3, 2, 2, 1, 1, 1, 1},             // odd sizes
      {2, 5, 17, 9, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},      // a batch of two, odd channels
      {1, 4, 28, 28, 5, 5, 2, 2, 2, 2, 2, 2, "hardswish"},  // 5x5
      {1, 3, 20, 37, 3, 3, 2, 2, 0, 1, 1, 0},             // asymmetric padding
      {1, 3, 12, 12, 3, 3, 2, 2, 0, 0, 0, 0},             // no padding
      {1, 4, 19, 23, 3, 3, 3, 3, 1, 1, 1, 1, "relu6"},    // stride 3
      {1, 2, 16, 40, 3, 3, 2, 1, 1, 1, 1, 1},             // stride 2 x 1
      {1, 2, 9, 70, 5, 3, 1, 2, 2, 1, 2, 1},              // stride 1 x 2, a row of three vectors
      {1, 3, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1},               // one tile
      {1, 5, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2, "hardswish"},  // 7^2 out: one flat run by the rule
      {1, 3, 9, 11, 3, 3, 2, 2, 0, 1, 1, 1},              // 5 x 6 out, flat, asymmetric padding
      {1, 8, 13, 12, 3, 3, 1, 1, 1, 1, 1, 1, "silu"},     // stride 1, rows of 12
      {2, 4, 14, 15, 5, 5, 1, 1, 2, 2, 2, 2},             // stride 1, 5x5, a batch of two
      {1, 8, 7, 29, 3, 3, 1, 1, 0, 1, 2, 0},              // stride 1, asymmetric padding, 2 vectors a row
      {2, 5, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, "hardswish"},  // stride 1, 7^2, flat by the rule, odd channels
      {1, 9, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, "relu6"},      // stride 1, 6^2 3x3, flat
      {1, 8, 5, 9, 3, 3, 1, 1, 0, 0, 0, 0},               // stride 1, no padding, 3 x 7 flat
      {1, 11, 14, 14, 5, 5, 1, 1, 2, 2, 2, 2, "silu"},    // stride 1, 14^2 5x5: row tiles by the rule
      {1, 6, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1, "relu6"},    // 14^2 out: 16-column copies, whole-vector stores
      {2, 3, 30, 29, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},     // 15 x 15 out, odd width, a batch of two
      {1, 4, 12, 26, 3, 3, 2, 2, 1, 0, 0, 1},             // 6 x 13 out, asymmetric padding
      {1, 8, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, "hardswish"},  // stride 1, rows of 16
  };
  // depthwise.rows, .cols, .flat, .copy, .direct (1: the band even where
  // the direct kernel applies, so that these cases keep testing it; the
  // direct kernel's numbers are DirectKernelNumbers').
  std::vector<std::vector<int64_t>> knobs = {{0, 0, 0, 0, 1}, {1, 1, 0, 0, 1}, {3, 2, 0, 1, 1}, {8, 4, 0, 0, 1},
                                             {0, 0, 1, 0, 1}, {0, 0, 2, 0, 1}, {5, 1, 0, 1, 1}};
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "dw");
    for (const auto& kv : knobs) {
      ScheduleKnobs kn;
      kn.values["depthwise.unit_stride"] = 1;  // the stride-1 cases
      const char* names[] = {"depthwise.rows", "depthwise.cols", "depthwise.flat", "depthwise.copy",
                             "depthwise.direct"};
      std::string tag;
      for (int i = 0; i < 5; ++i) {
        if (kv[i]) kn.values[names[i]] = kv[i];
        tag += " " + std::to_string(kv[i]);
      }
      PrimFunc lowered = Lower(f, kn);
      ASSERT_TRUE(HasBuffer(lowered, "data_phases")) << k.Name() << "\n" << Print(lowered);
      Status s = SameNumbers(f, lowered);
      EXPECT_TRUE(s.ok()) << k.Name() << " knobs" << tag << ": " << s.ToString() << "\n" << Print(lowered);
    }
  }
}

// The channel-block kernel (depthwise_channel_block.h): 16 channels or more,
// output rows of at most 14, the transposed window in 32 KiB.
TEST(DepthwiseScheduleTest, ChannelBlockTakesSmallPlanesOfSixteenChannels) {
  ScheduleKnobs off, no_unit;
  off.values["depthwise.block"] = 1;
  no_unit.values["depthwise.unit_stride"] = 2;
  // 14^2 -> 7^2 5x5/2, 7^2 5x5 and 3x3, 14^2 3x3 (rows of 14), 10^2 3x3
  // (stride 1, no other kernel of this schedule takes it), a batch of two.
  for (const Case& k : {Case{1, 32, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2}, Case{1, 48, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2},
                        Case{1, 16, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1}, Case{1, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1},
                        Case{1, 16, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1}, Case{2, 16, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1},
                        Case{1, 40, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    PrimFunc s = ScheduleStridedDepthwise(f);
    ASSERT_TRUE(HasBuffer(s, "data_cmajor")) << k.Name() << "\n" << Print(s);
    EXPECT_NE(Print(s).find("\"transpose16\""), std::string::npos) << Print(s);
    EXPECT_NE(Print(s).find("dwc_task in T.parallel(" + I(k.n * ((k.c + 15) / 16)) + ")"), std::string::npos) << Print(s);
    EXPECT_FALSE(HasBuffer(ScheduleStridedDepthwise(f, off), "data_cmajor")) << k.Name();
    EXPECT_EQ(HasBuffer(ScheduleStridedDepthwise(f, no_unit), "data_cmajor"), k.sh > 1) << k.Name();
  }
  // Not its: 8 channels; 28^2 -> 14^2 3x3/2 (a 29^2 window: 54 KiB);
  // rows of 15; 3^2 planes (under 16 pixels); two channels a group.
  for (const Case& k : {Case{1, 8, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1}, Case{1, 16, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1},
                        Case{1, 16, 15, 15, 3, 3, 1, 1, 1, 1, 1, 1}, Case{1, 32, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1},
                        Case{1, 32, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, "none", 16}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")));
    EXPECT_FALSE(HasBuffer(ScheduleStridedDepthwise(f), "data_cmajor")) << k.Name();
  }
}

// Rows of at most 8 pixels share a 16-lane store; the rows a whole vector
// would carry past the plane's end are stored exactly, one by one.
TEST(DepthwiseScheduleTest, ChannelBlockOutputStores) {
  using Stores = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(dw::OutputStores(7, 7), (Stores{{0, 16}, {2, 16}, {4, 16}, {6, 7}}));
  EXPECT_EQ(dw::OutputStores(5, 5), (Stores{{0, 16}, {3, 5}, {4, 5}}));
  EXPECT_EQ(dw::OutputStores(8, 8), (Stores{{0, 16}, {2, 16}, {4, 16}, {6, 16}}));
  EXPECT_EQ(dw::OutputStores(4, 4), (Stores{{0, 16}}));
  EXPECT_EQ(dw::OutputStores(6, 3), (Stores{{0, 16}, {5, 3}}));
  // Rows of 9..16: one store a row, as before (the last row exact).
  EXPECT_EQ(dw::OutputStores(3, 14), (Stores{{0, 16}, {1, 16}, {2, 14}}));
  EXPECT_EQ(dw::OutputStores(2, 16), (Stores{{0, 16}, {1, 16}}));
  // In the kernel: 7^2 -> four vector stores into the output, not seven.
  Case k{1, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1};
  std::string text = Print(ScheduleStridedDepthwise(InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")))));
  size_t count = 0;
  for (size_t at = text.find("out[T.int64(0), "); at != std::string::npos; at = text.find("out[T.int64(0), ", at + 1))
    ++count;
  EXPECT_EQ(count, 4u) << text;
}

// A plane's last pixel, when it is alone past the whole chunks (7^2: 49 =
// 3 * 16 + 1), is moved without a transpose: three transposes in and
// three out (and two for the weights), not four each way. 14^2 (196 =
// 12 * 16 + 4) keeps the last chunk.
TEST(DepthwiseScheduleTest, ChannelBlockMovesALonePixelWithoutATranspose) {
  auto transposes = [](const Case& k) {
    std::string text = Print(ScheduleStridedDepthwise(InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")))));
    size_t count = 0;
    for (size_t at = text.find("\"transpose16\""); at != std::string::npos; at = text.find("\"transpose16\"", at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(transposes(Case{1, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1}), 3u + 2u + 3u);
  EXPECT_EQ(transposes(Case{1, 32, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1}), 13u + 2u + 3u);
  EXPECT_EQ(transposes(Case{1, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1}), 13u + 2u + 13u);
}

// A row's FMAs go by window pixel: each pixel of a tap row is loaded
// once, its FMAs (one per output pixel that reads it) next to each other.
// By tap, a pixel's loads were wo FMAs apart and LLVM chained each output
// pixel's FMAs, spilling the loads (5x5 windows).
TEST(DepthwiseScheduleTest, ChannelBlockRowGoesByWindowPixel) {
  for (const Case& k : {Case{1, 32, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2}, Case{1, 32, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1}}) {
    std::string text = Print(ScheduleStridedDepthwise(InlineElementwise(LowerBlocks(ParseFunc(Func(k), "dw")))));
    // The window loads of the row's products, in order.
    std::vector<std::string> loads;
    size_t fmas = 0;
    for (size_t at = text.find("acc["); at != std::string::npos; at = text.find("acc[", at + 1)) {
      size_t eol = text.find('\n', at), load = text.find("data_cmajor[", at);
      if (text.compare(at - 4, 4, "    ") != 0 || load == std::string::npos || load > eol) continue;
      size_t end = text.find('[', load), depth = 0;
      do {
        if (text[end] == '[') ++depth;
        if (text[end] == ']') --depth;
        ++end;
      } while (depth > 0 && end < eol);
      loads.push_back(text.substr(load, end - load));
      const std::string fma = "= T.call_intrin(\"float32\", \"fma\"";
      fmas += text.compare(text.find('=', at), fma.size(), fma) == 0 ? 1 : 0;
    }
    int64_t wp = (k.Wo() - 1) * k.sw + k.kw;
    ASSERT_EQ(static_cast<int64_t>(loads.size()), k.Wo() * k.kh * k.kw) << text;
    EXPECT_EQ(static_cast<int64_t>(fmas), k.Wo() * (k.kh * k.kw - 1)) << text;  // the first tap a product
    // Each window pixel's uses are one run, and there are kh * wp runs.
    std::vector<std::string> runs;
    for (const std::string& l : loads)
      if (runs.empty() || runs.back() != l) runs.push_back(l);
    std::vector<std::string> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << k.Name() << "\n" << text;
    EXPECT_EQ(static_cast<int64_t>(runs.size()), k.kh * wp) << k.Name();
  }
}

TEST(DepthwiseScheduleTest, ChannelBlockNumbers) {
  std::vector<Case> cases = {
      {1, 32, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2, "silu"},       // 14^2 -> 7^2 5x5/2: 25 taps, two weight chunks
      {1, 48, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, "hardswish"},    // 7^2 5x5: three blocks
      {1, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, "relu6"},        // 9 taps: the last block's weights read back
      {1, 16, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},                 // one block: weights element by element
      {2, 32, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},       // a batch of two
      {1, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, "hardswish"},  // rows of 14
      {1, 32, 16, 16, 3, 3, 2, 2, 0, 0, 0, 0},               // the last input row and column unread
      {1, 16, 16, 13, 3, 3, 2, 2, 0, 1, 1, 0},               // asymmetric padding, 8 x 7 out
      {1, 16, 9, 11, 3, 5, 1, 1, 1, 2, 1, 2, "relu6"},       // a 3x5 window, 9 x 11 out
      {1, 16, 12, 12, 3, 3, 3, 3, 1, 1, 1, 1},               // stride 3, 4^2 out (16 pixels)
      {1, 16, 10, 10, 3, 3, 1, 1, 0, 0, 0, 0, "silu"},       // no padding: 8^2 out, no zeros
      {1, 24, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, "hardswish"},    // 24 channels: the last block moved back to 8
      {2, 40, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2, "relu6"},      // 40 channels, a batch of two
      // Output rows sharing a store (OutputStores): 5^2 (rows 0-2 in one
      // vector, 3 and 4 exact), 6^2, 6 x 3 (five rows in one vector), odd
      // channels, bias and SiLU in the shared stores.
      {1, 24, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},
      {1, 17, 11, 11, 3, 3, 2, 2, 1, 1, 1, 1, "hardswish"},
      {1, 16, 12, 5, 3, 3, 2, 2, 1, 1, 1, 1, "silu"},
      // A last lone pixel (n % 16 == 1) moved without a transpose: 9^2 in
      // and out, 17^2 in (8^2 out).
      {1, 16, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, "relu6"},
      {1, 32, 17, 17, 3, 3, 2, 2, 0, 0, 0, 0, "silu"},
  };
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "dw");
    PrimFunc lowered = Lower(f);
    ASSERT_TRUE(HasBuffer(lowered, "data_cmajor")) << k.Name() << "\n" << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
