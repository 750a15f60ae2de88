// The grouped-conv kernel of 16 output channels a group
// (conv_grouped_block.h): which convolutions it takes, its bands, and its
// numbers against the naive nest (stride, padding, packed weights, tile
// remainders, epilogues, batch).
#include "compiler/tir/conv_grouped_block.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/tir/conv_block_test_util.h"
#include "compiler/tir/conv_match.h"
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
  int64_t n, c, o, h, w, groups, k, s, pt, pl, pb, pr;
  std::string epilogue = "none";  // none | relu | residual (add another tensor, then ReLU)
  int64_t wblock = 0;             // weights packed [O / b, I, KH, KW, b]; 0: OIHW
  int64_t dil = 1;
  int64_t Ho() const { return (h + pt + pb - dil * (k - 1) - 1) / s + 1; }
  int64_t Wo() const { return (w + pl + pr - dil * (k - 1) - 1) / s + 1; }
  std::string Name() const {
    return "n" + std::to_string(n) + " " + std::to_string(c) + "->" + std::to_string(o) + " g" +
           std::to_string(groups) + " " + std::to_string(h) + "x" + std::to_string(w) + " k" + std::to_string(k) +
           " s" + std::to_string(s) + " p" + std::to_string(pt) + std::to_string(pl) + std::to_string(pb) +
           std::to_string(pr) + " " + epilogue + " b" + std::to_string(wblock);
  }
};

// Short names: the PrimFunc texts below are built from many of these.
const auto I = &testing::Int64Text;
const auto Shape = &testing::ShapeText;

// The function legalization and fusion write for a grouped conv2d and its
// epilogue, in block form (the weight as pack-constant-weights leaves it
// when wblock > 0).
std::string Func(const Case& k) {
  const int64_t cpg = k.c / k.groups, opg = k.o / k.groups;
  std::string out = Shape({k.n, k.o, k.Ho(), k.Wo()});
  std::string wshape = k.wblock > 0 ? Shape({k.o / k.wblock, cpg, k.k, k.k, k.wblock}) : Shape({k.o, cpg, k.k, k.k});
  bool epi = k.epilogue != "none";
  std::string s = "@T.prim_func\ndef gconv(data: T.Buffer(" + Shape({k.n, k.c, k.h, k.w}) +
                  ", \"float32\"), weight: T.Buffer(" + wshape + ", \"float32\"), bias: T.Buffer(" +
                  Shape({k.o, 1, 1}) + ", \"float32\"), other: T.Buffer(" + out +
                  ", \"float32\"), out: T.Buffer(" + out + ", \"float32\")):\n";
  std::string conv = epi ? "conv" : "out";
  if (epi) s += "    conv = T.alloc_buffer(" + out + ", \"float32\")\n    biased = T.alloc_buffer(" + out + ", \"float32\")\n";
  auto at = [&](const std::string& v, const std::string& r, int64_t p) {
    return v + " * " + std::to_string(k.s) + " + " + r + " * " + std::to_string(k.dil) + " - " + std::to_string(p);
  };
  std::string iy = at("v_i2", "v_k1", k.pt), ix = at("v_i3", "v_k2", k.pl);
  std::string wload = k.wblock > 0 ? "weight[v_i1 // " + std::to_string(k.wblock) + ", v_k0, v_k1, v_k2, v_i1 % " +
                                         std::to_string(k.wblock) + "]"
                                   : "weight[v_i1, v_k0, v_k1, v_k2]";
  s += "    for i0, i1, i2, i3, k0, k1, k2 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
       ", " + I(cpg) + ", " + I(k.k) + ", " + I(k.k) + "):\n";
  s += "        with T.block(\"conv2d\"):\n";
  s += "            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap(\"SSSSRRR\", [i0, i1, i2, i3, k0, k1, k2])\n";
  s += "            with T.init():\n                " + conv + "[v_i0, v_i1, v_i2, v_i3] = T.float32(0)\n";
  s += "            " + conv + "[v_i0, v_i1, v_i2, v_i3] = " + conv + "[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(" + iy +
       " >= 0 and " + iy + " < " + std::to_string(k.h) + " and " + ix + " >= 0 and " + ix + " < " +
       std::to_string(k.w) + ", data[v_i0, v_i1 // " + std::to_string(opg) + " * " + std::to_string(cpg) +
       " + v_k0, " + iy + ", " + ix + "] * " + wload + ", T.float32(0))\n";
  if (!epi) return s;
  std::string grid = "    for i0, i1, i2, i3 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
                     "):\n";
  std::string remap = "            v0, v1, v2, v3 = T.axis.remap(\"SSSS\", [i0, i1, i2, i3])\n";
  s += grid + "        with T.block(\"add\"):\n" + remap +
       "            biased[v0, v1, v2, v3] = conv[v0, v1, v2, v3] + bias[v1, T.int64(0), T.int64(0)]\n";
  std::string x = "biased[v0, v1, v2, v3]";
  if (k.epilogue == "residual") x = "(" + x + " + other[v0, v1, v2, v3])";
  s += grid + "        with T.block(\"act\"):\n" + remap + "            out[v0, v1, v2, v3] = T.max(" + x +
       ", T.float32(0))\n";
  return s;
}

// As tune/lower.h lowers with the default schedules (and knobs).
using conv_block_test::Lower;

bool Takes(const PrimFunc& f) { return Print(f).find("data_gwin = T.decl_buffer") != std::string::npos; }

TEST(GroupedBlockTest, TakesGroupsOfSixteenOutputChannels) {
  ScheduleKnobs off;
  off.values["conv.grouped_block"] = 1;
  // RegNetY-800MF's grouped layers (shrunk where only the plane matters),
  // OIHW and packed weights.
  for (const Case& k : {Case{1, 64, 64, 28, 28, 4, 3, 2, 1, 1, 1, 1}, Case{1, 48, 48, 14, 14, 3, 3, 1, 1, 1, 1, 1},
                        Case{1, 32, 32, 7, 7, 2, 3, 1, 1, 1, 1, 1, "relu", 8}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "gconv")));
    PrimFunc s = ScheduleGroupedBlockConvs(f);
    EXPECT_TRUE(Takes(s)) << k.Name() << "\n" << Print(s);
    EXPECT_NE(Print(s).find("\"transpose16\""), std::string::npos) << k.Name();
    EXPECT_FALSE(Takes(ScheduleGroupedBlockConvs(f, off))) << k.Name();
    // The knob reaches it through the default schedule too.
    EXPECT_TRUE(Takes(Lower(ParseFunc(Func(k), "gconv")))) << k.Name();
    EXPECT_FALSE(Takes(Lower(ParseFunc(Func(k), "gconv"), off))) << k.Name();
  }
  // Not its: 8 output channels a group; 32 a group; one group; depthwise;
  // dilation 2; a 2 x 2 plane (fewer than 16 output pixels).
  Case dilated{1, 32, 32, 14, 14, 2, 3, 1, 2, 2, 2, 2};
  dilated.dil = 2;
  for (const Case& k : {Case{1, 32, 32, 14, 14, 4, 3, 1, 1, 1, 1, 1}, Case{1, 64, 64, 14, 14, 2, 3, 1, 1, 1, 1, 1},
                        Case{1, 16, 16, 14, 14, 1, 3, 1, 1, 1, 1, 1}, Case{1, 16, 16, 14, 14, 16, 3, 1, 1, 1, 1, 1},
                        dilated, Case{1, 32, 32, 4, 4, 2, 3, 2, 1, 1, 1, 1}}) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "gconv")));
    EXPECT_FALSE(Takes(ScheduleGroupedBlockConvs(f))) << k.Name();
  }
}

// Bands: the most rows (a divisor of Ho) whose window fits, with at least
// 16 pixels.
TEST(GroupedBlockTest, BandRows) {
  auto rows = [](const Case& k) {
    PrimFunc f = InlineElementwise(LowerBlocks(ParseFunc(Func(k), "gconv")));
    conv::ConvNest cv;
    const auto* seq = As<SeqStmtNode>(f->body);
    Stmt nest = seq != nullptr ? seq->seq[0] : f->body;
    if (const auto* r = As<BlockRealizeNode>(nest)) nest = r->block.body;
    if (const auto* s2 = As<SeqStmtNode>(nest)) nest = s2->seq[0];
    EXPECT_TRUE(conv::MatchConv(nest, &cv)) << k.Name() << "\n" << Print(f);
    return conv::GroupedBlockBandRows(cv);
  };
  // 7^2, 14^2 and 28^2 -> 14^2: the whole plane.
  EXPECT_EQ(rows(Case{1, 32, 32, 7, 7, 2, 3, 1, 1, 1, 1, 1}), 7);
  EXPECT_EQ(rows(Case{1, 32, 32, 14, 14, 2, 3, 1, 1, 1, 1, 1}), 14);
  EXPECT_EQ(rows(Case{1, 32, 32, 28, 28, 2, 3, 2, 1, 1, 1, 1}), 14);
  // 112^2 -> 56^2 (16 channels of 113 columns, 7.1 KiB a window row): 8.
  EXPECT_EQ(rows(Case{1, 32, 32, 112, 112, 2, 3, 2, 1, 1, 1, 1}), 8);
  // 2 x 7 output pixels: none.
  EXPECT_EQ(rows(Case{1, 32, 32, 4, 14, 2, 3, 2, 1, 1, 1, 1}), 0);
}

TEST(GroupedBlockTest, Numbers) {
  std::vector<Case> cases = {
      {1, 32, 32, 14, 14, 2, 3, 1, 1, 1, 1, 1, "relu"},         // 14^2: one row a tile
      {1, 32, 32, 28, 28, 2, 3, 2, 1, 1, 1, 1, "relu", 8},      // 28^2 -> 14^2 3x3/2, packed weights
      {1, 48, 48, 7, 7, 3, 3, 1, 1, 1, 1, 1, "residual", 8},    // 7^2: 3 + 3 + 1 rows of tiles, residual add
      {1, 32, 32, 14, 14, 2, 3, 2, 1, 1, 1, 1, "relu", 16},     // 14^2 -> 7^2, weights in blocks of 16
      {2, 32, 32, 12, 12, 2, 3, 1, 1, 1, 1, 1, "residual"},     // a batch of two; rows of 12
      {1, 32, 32, 56, 56, 2, 3, 2, 1, 1, 1, 1, "relu", 8},      // 56^2 -> 28^2: two column tiles of 14
      {1, 32, 32, 20, 17, 2, 3, 1, 1, 1, 1, 1},                 // 17 columns: 9 + 9 (the last moved back)
      {1, 32, 32, 16, 13, 2, 3, 2, 0, 1, 1, 0, "relu"},         // asymmetric padding, 8 x 7 out
      {1, 64, 32, 10, 10, 2, 3, 1, 0, 0, 0, 0, "relu", 8},      // 32 input channels a group, no padding
      {1, 32, 32, 11, 11, 2, 5, 1, 2, 2, 2, 2, "relu"},         // 5x5
      {1, 32, 32, 9, 9, 2, 1, 1, 0, 0, 0, 0},                   // 1x1 grouped
      {1, 32, 32, 112, 112, 2, 3, 2, 1, 1, 1, 1, "relu", 8},    // 112^2 -> 56^2: bands of 8 rows, prefetches
  };
  for (const Case& k : cases) {
    PrimFunc f = ParseFunc(Func(k), "gconv");
    PrimFunc lowered = Lower(f);
    ASSERT_TRUE(Takes(lowered)) << k.Name() << "\n" << Print(lowered);
    Status s = SameNumbers(f, lowered);
    EXPECT_TRUE(s.ok()) << k.Name() << ": " << s.ToString() << "\n" << Print(lowered);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
