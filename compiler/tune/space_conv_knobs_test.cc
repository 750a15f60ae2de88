// Decisions of the direct conv schedule that the knob space (space_default.cc)
// reaches beyond the default rule's own range (benchmarks/tuning/worst_shapes.py,
// issue 21 §5):
//  - conv.shift_planes with packed weights (kernel_layout OIHW8o, what a
//    model's constant weights become) on a 2-D plane of one tile: the rule
//    takes shift planes there (a 3x3 conv over a 4x4 plane: 16 columns, not
//    32 halo columns, for 16 outputs), conv.shift_planes 1 the halo tile;
//  - conv.row_tiles 2 beyond kMaxRowTileTaps: a 1x7 conv of 32 input channels
//    (224 taps) in row tiles of whole 48-column vectors instead of flat tiles
//    over rows 102 apart.
//  - conv.border_split 1 / 2: interior / border tiles (conv_border_split_
//    schedule.h) or the direct kernel against the rule, offered where they
//    apply (stride 1, one group, lines of 16 points or more: not the 4x4 plane).
//  - conv.channel_lanes 0 / 1 / 2 and conv.lane_blocks: the channel-lane
//    kernel (conv_channel_lanes.h) by the rule, wherever it can, or never, and
//    its channel blocks a tile, offered on a plane of at most 64 points (a
//    3x3 128 -> 128 conv over 4x4), not on bigger planes or grouped convs.
// For each: the space offers the decision (its samples stay in range and
// replay to the same function), the point lowers to the other kernel and
// computes the same numbers, and kiln-compile --tuning-db applies a record of
// it (the lowered TIR shows it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/database.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/space.h"
#include "compiler/tune/trace_json.h"

namespace kiln {
namespace tune {
namespace {

using tir::testing::ParseFunc;
using tir::testing::Print;
using tir::testing::SameNumbers;

struct ConvShape {
  int64_t c, h, w, o, kh, kw, pt, pl, pb, pr;
  int64_t block;  // packed weights [o / block, c / groups, kh, kw, block]; 0: OIHW
  int64_t groups = 1;
};

// A 2-D convolution as legalization writes it (batch 1, stride 1).
std::string ConvText(const char* name, const ConvShape& s) {
  auto n = [](int64_t v) { return "T.int64(" + std::to_string(v) + ")"; };
  int64_t ho = s.h + s.pt + s.pb - s.kh + 1, wo = s.w + s.pl + s.pr - s.kw + 1;
  int64_t cpg = s.c / s.groups;  // input channels a group
  std::string wshape = s.block ? std::to_string(s.o / s.block) + ", " + std::to_string(cpg) + ", " +
                                     std::to_string(s.kh) + ", " + std::to_string(s.kw) + ", " +
                                     std::to_string(s.block)
                               : std::to_string(s.o) + ", " + std::to_string(cpg) + ", " + std::to_string(s.kh) +
                                     ", " + std::to_string(s.kw);
  std::string ch = s.groups == 1 ? "v_k0" : "v_i1 // " + n(s.o / s.groups) + " * " + n(cpg) + " + v_k0";
  std::string wload = s.block ? "weight[v_i1 // " + n(s.block) + ", v_k0, v_k1, v_k2, v_i1 % " + n(s.block) + "]"
                              : "weight[v_i1, v_k0, v_k1, v_k2]";
  std::string y = "v_i2 + v_k1 - " + n(s.pt), x = "v_i3 + v_k2 - " + n(s.pl);
  return std::string("@T.prim_func\ndef ") + name + "(data: T.Buffer((1, " + std::to_string(s.c) + ", " +
         std::to_string(s.h) + ", " + std::to_string(s.w) + "), \"float32\"), weight: T.Buffer((" + wshape +
         "), \"float32\"), conv2d: T.Buffer((1, " + std::to_string(s.o) + ", " + std::to_string(ho) + ", " +
         std::to_string(wo) + "), \"float32\")):\n" +
         "    T.func_attr({\"op_pattern\": 4, \"tir.noalias\": True})\n"
         "    for i0, i1, i2, i3, k0, k1, k2 in T.grid(" + n(1) + ", " + n(s.o) + ", " + n(ho) + ", " + n(wo) + ", " +
         n(cpg) + ", " + n(s.kh) + ", " + n(s.kw) + "):\n" +
         "        with T.block(\"conv2d\"):\n"
         "            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap(\"SSSSRRR\", [i0, i1, i2, i3, k0, k1, k2])\n"
         "            with T.init():\n"
         "                conv2d[v_i0, v_i1, v_i2, v_i3] = T.float32(0)\n"
         "            conv2d[v_i0, v_i1, v_i2, v_i3] = conv2d[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(" + y +
         " >= " + n(0) + " and " + y + " < " + n(s.h) + " and " + x + " >= " + n(0) + " and " + x + " < " + n(s.w) +
         ", data[v_i0, " + ch + ", " + y + ", " + x + "] * " + wload + ", T.float32(0))\n";
}

// 8 -> 16 channels, 3x3 over 4x4, padding 1, weights in blocks of 8.
const ConvShape kPacked4x4 = {8, 4, 4, 16, 3, 3, 1, 1, 1, 1, 8};
// 32 -> 8 channels, 1x7 over 12 x 96 (more columns than one-thread shift
// planes take), padding 3 left and right: 224 taps.
const ConvShape kConv1x7 = {32, 12, 96, 8, 1, 7, 0, 3, 0, 3, 0};

// The sample_categorical before the annotation of `knob` in `t`, or -1.
int KnobAt(const tir::Trace& t, const std::string& knob) {
  for (size_t i = 0; i + 1 < t.instructions().size(); ++i) {
    const auto& next = t.instructions()[i + 1];
    if (next.name == "annotate" && next.inputs[0].s == "kiln.knob." + knob) return static_cast<int>(i);
  }
  return -1;
}

// The default point of `f`'s knob space at one thread with each knob of
// `values` set to its value.
tir::Trace PointWith(const ir::PrimFunc& f, const std::vector<std::pair<std::string, int64_t>>& values) {
  Result<tir::Schedule> s = tir::Schedule::Create(f, 1);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(ApplyDefaultSpace(&*s, DefaultSpaceKnobs(f, 1), 1).ok());
  Result<tir::Trace> t = DefaultPoint(s->trace());
  EXPECT_TRUE(t.ok());
  for (const auto& [knob, value] : values) {
    int at = KnobAt(*t, knob);
    EXPECT_GE(at, 0) << knob << " is not a decision of the space:\n" << t->ToString();
    if (at < 0) continue;
    const std::vector<int64_t>& c = t->instructions()[at].inputs[0].ints;
    bool found = false;
    for (size_t k = 0; k < c.size(); ++k)
      if (c[k] == value) {
        t->SetDecision(at, {static_cast<int64_t>(k)});
        found = true;
      }
    EXPECT_TRUE(found) << knob << " has no candidate " << value;
  }
  return *t;
}
tir::Trace PointWith(const ir::PrimFunc& f, const std::string& knob, int64_t value) {
  return PointWith(f, {{knob, value}});
}

// The space of `f` offers `knob` with `candidates`; every sampled decision is
// one of them, and replaying a sample (through JSON) gives the same function.
void ExpectOfferedInRangeAndDeterministic(const ir::PrimFunc& f, const std::string& knob,
                                          const std::vector<int64_t>& candidates) {
  bool offered = false;
  for (const Knob& k : DefaultSpaceKnobs(f, 1))
    if (k.name == knob) {
      offered = true;
      EXPECT_EQ(k.candidates, candidates) << knob;
    }
  ASSERT_TRUE(offered) << knob;
  std::vector<bool> seen(candidates.size(), false);
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Result<tir::Schedule> s = tir::Schedule::Create(f, seed);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(ApplyDefaultSpace(&*s, DefaultSpaceKnobs(f, 1), 1).ok());
    int at = KnobAt(s->trace(), knob);
    ASSERT_GE(at, 0) << knob;
    const auto& inst = s->trace().instructions()[at];
    ASSERT_EQ(inst.inputs[0].ints, candidates);
    ASSERT_EQ(inst.decision.size(), 1u);
    int64_t d = inst.decision[0];
    ASSERT_GE(d, 0);
    ASSERT_LT(d, static_cast<int64_t>(candidates.size()));
    seen[d] = true;
    Result<Json> j = TraceToJson(s->trace());
    ASSERT_TRUE(j.ok());
    Result<tir::Trace> back = TraceFromJson(*j);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    Result<tir::Schedule> again = tir::Schedule::Replay(f, *back);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    std::string why;
    EXPECT_TRUE(ir::StructuralEqual(LowerScheduled(again->func()), LowerScheduled(s->func()), &why))
        << knob << " seed " << seed << ": " << why;
  }
  for (size_t k = 0; k < candidates.size(); ++k) EXPECT_TRUE(seen[k]) << knob << " never sampled " << candidates[k];
}

TEST(ConvKnobSpaceTest, ShiftPlanesWithPackedWeightsOnA2dPlane) {
  ir::PrimFunc f = ParseFunc(ConvText("conv2d", kPacked4x4).c_str(), "conv2d");
  ir::PrimFunc def = LowerWithDefaultSchedule(f, 1);
  std::string def_text = Print(def);
  // The rule: three shift planes (one per kernel column) and one 16-column
  // tile of the whole plane over both weight blocks.
  EXPECT_NE(def_text.find("data_padded = T.decl_buffer((1, 8, 3,"), std::string::npos) << def_text;
  EXPECT_NE(def_text.find("acc = T.decl_buffer((16, 16)"), std::string::npos) << def_text;
  ExpectOfferedInRangeAndDeterministic(f, "conv.shift_planes", {0, 1, 2});
  // Knob 1: the halo layout (one packed copy, rows 6 apart, 32-column tiles).
  Result<tir::Schedule> s = tir::Schedule::Replay(f, PointWith(f, "conv.shift_planes", 1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ir::PrimFunc lowered = LowerScheduled(s->func());
  std::string text = Print(lowered);
  EXPECT_NE(text.find("data_padded = T.decl_buffer((1, 8, 1,"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 32)"), std::string::npos) << text;
  Status same = SameNumbers(f, lowered);
  EXPECT_TRUE(same.ok()) << same.ToString();
  // Knob 2 (shift planes) is the rule's own choice here.
  Result<tir::Schedule> planes = tir::Schedule::Replay(f, PointWith(f, "conv.shift_planes", 2));
  ASSERT_TRUE(planes.ok());
  EXPECT_TRUE(ir::StructuralEqual(LowerScheduled(planes->func()), def));
}

TEST(ConvKnobSpaceTest, ShiftPlanesWithPackedWeightsKeepTheNumbersOnOtherPlanes) {
  // Planes of 2 and 3 vectors (5 x 6, 6 x 7), blocks of 4 (tiles of 4 rows),
  // and a plane whose tile rows would not be one block (7 x 7: 6 rows a
  // tile, blocks of 8), where shift planes stay illegal and the space does
  // not offer the knob (no value changes the kernel); and a one-row plane
  // of 12 columns (the rule keeps one-row planes of 17 to 48 columns).
  const ConvShape shapes[] = {{5, 5, 6, 16, 3, 3, 1, 1, 1, 1, 8},
                              {3, 6, 7, 8, 3, 3, 1, 1, 1, 1, 8},
                              {4, 4, 4, 16, 3, 3, 1, 1, 1, 1, 4},
                              {4, 7, 7, 8, 3, 3, 1, 1, 1, 1, 8},
                              {8, 1, 12, 16, 1, 3, 0, 1, 0, 1, 8}};
  const bool planes[] = {true, true, true, false, true};
  for (size_t i = 0; i < 5; ++i) {
    ir::PrimFunc f = ParseFunc(ConvText("conv2d", shapes[i]).c_str(), "conv2d");
    if (!planes[i]) {
      for (const Knob& k : DefaultSpaceKnobs(f, 1)) EXPECT_NE(k.name, "conv.shift_planes") << i;
      continue;
    }
    Result<tir::Schedule> s = tir::Schedule::Replay(f, PointWith(f, "conv.shift_planes", 2));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ir::PrimFunc lowered = LowerScheduled(s->func());
    std::string text = Print(lowered);
    EXPECT_NE(text.find("data_padded = T.decl_buffer((1, " + std::to_string(shapes[i].c) + ", 3,"), std::string::npos)
        << i << "\n" << text;
    Status same = SameNumbers(f, lowered);
    EXPECT_TRUE(same.ok()) << i << ": " << same.ToString();
  }
}

// conv.plane_rows: the rows of the one-tile shift-plane tile. With packed
// weights the rule takes the whole blocks that fit (here both); 8 takes one
// block (8 rows, 8 accumulators); 16 takes both blocks of the 16 channels in one tile
// (weights read as W[o / 8, c, ky, kx, o % 8]). With OIHW weights on a
// one-tile plane the rule's shift planes take 24 rows (here all 16
// channels); 8 splits them in two tiles.
TEST(ConvKnobSpaceTest, PlaneRowsOfTheOneTileShiftPlanes) {
  ir::PrimFunc f = ParseFunc(ConvText("conv2d", kPacked4x4).c_str(), "conv2d");
  ExpectOfferedInRangeAndDeterministic(f, "conv.plane_rows", {0, 8, 16, 24});
  for (int64_t rows : {8, 16, 24}) {
    Result<tir::Schedule> s =
        tir::Schedule::Replay(f, PointWith(f, {{"conv.shift_planes", 2}, {"conv.plane_rows", rows}}));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ir::PrimFunc lowered = LowerScheduled(s->func());
    std::string text = Print(lowered);
    std::string acc = rows == 8 ? "acc = T.decl_buffer((8, 16)" : "acc = T.decl_buffer((16, 16)";
    EXPECT_NE(text.find(acc), std::string::npos) << rows << "\n" << text;
    EXPECT_EQ(text.find("o % T.int64(8)") != std::string::npos || text.find("% 8]") != std::string::npos, rows > 8)
        << rows << "\n" << text;
    Status same = SameNumbers(f, lowered);
    EXPECT_TRUE(same.ok()) << rows << ": " << same.ToString();
  }
  ConvShape plain = kPacked4x4;
  plain.block = 0;
  ir::PrimFunc g = ParseFunc(ConvText("conv2d", plain).c_str(), "conv2d");
  std::string def_text = Print(LowerWithDefaultSchedule(g, 1));
  EXPECT_NE(def_text.find("acc = T.decl_buffer((16, 16)"), std::string::npos) << def_text;
  ExpectOfferedInRangeAndDeterministic(g, "conv.plane_rows", {0, 8, 16, 24});
  Result<tir::Schedule> s = tir::Schedule::Replay(g, PointWith(g, "conv.plane_rows", 8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ir::PrimFunc lowered = LowerScheduled(s->func());
  std::string text = Print(lowered);
  EXPECT_NE(text.find("acc = T.decl_buffer((8, 16)"), std::string::npos) << text;
  EXPECT_EQ(text.find("acc = T.decl_buffer((16, 16)"), std::string::npos) << text;
  Status same = SameNumbers(g, lowered);
  EXPECT_TRUE(same.ok()) << same.ToString();
}

TEST(ConvKnobSpaceTest, RowTilesBeyondTheTapLimit) {
  ir::PrimFunc f = ParseFunc(ConvText("conv2d", kConv1x7).c_str(), "conv2d");
  // The direct kernel (the rule takes interior / border tiles here).
  Result<tir::Schedule> d = tir::Schedule::Replay(f, PointWith(f, "conv.border_split", 2));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ir::PrimFunc def = LowerScheduled(d->func());
  std::string def_text = Print(def);
  // Its rule: flat tiles across the rows (their write-back splits each
  // tile into row segments).
  EXPECT_NE(def_text.find("y0: T.int64 = col0 // 102"), std::string::npos) << def_text;
  ExpectOfferedInRangeAndDeterministic(f, "conv.row_tiles", {0, 1, 2});
  Result<tir::Schedule> s =
      tir::Schedule::Replay(f, PointWith(f, {{"conv.row_tiles", 2}, {"conv.border_split", 2}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ir::PrimFunc lowered = LowerScheduled(s->func());
  std::string text = Print(lowered);
  EXPECT_EQ(text.find("y0: T.int64 = col0 // 102"), std::string::npos) << text;
  EXPECT_NE(text.find("col0: T.int64 = y * 102 + x0"), std::string::npos) << text;  // a row's tiles
  EXPECT_FALSE(ir::StructuralEqual(lowered, def));
  Status same = SameNumbers(f, lowered);
  EXPECT_TRUE(same.ok()) << same.ToString();
}

TEST(ConvKnobSpaceTest, BorderSplitTiles) {
  ir::PrimFunc f = ParseFunc(ConvText("conv2d", kConv1x7).c_str(), "conv2d");
  // The rule takes them (a 1 x 7 kernel over rows of 96); 2 leaves the
  // direct kernel, which the tuner is still offered.
  EXPECT_NE(Print(LowerWithDefaultSchedule(f, 1)).find("line_task"), std::string::npos);
  Result<tir::Schedule> d = tir::Schedule::Replay(f, PointWith(f, "conv.border_split", 2));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ir::PrimFunc def = LowerScheduled(d->func());
  EXPECT_EQ(Print(def).find("line_task"), std::string::npos);
  ExpectOfferedInRangeAndDeterministic(f, "conv.border_split", {0, 1, 2});
  for (int64_t nr : {0, 32}) {
    Result<tir::Schedule> s = tir::Schedule::Replay(f, PointWith(f, {{"conv.border_split", 1}, {"conv.nr", nr}}));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ir::PrimFunc lowered = LowerScheduled(s->func());
    std::string text = Print(lowered);
    EXPECT_NE(text.find("line_task"), std::string::npos) << text;
    // nr 32: the middle tile of each 96-column row reads the input in place.
    if (nr == 32) {
      EXPECT_NE(text.find("data[T.int64(0), c, "), std::string::npos) << text;
    }
    Status same = SameNumbers(def, lowered);
    EXPECT_TRUE(same.ok()) << nr << ": " << same.ToString();
  }
  // Rows of 4 points: not offered.
  ir::PrimFunc small = ParseFunc(ConvText("conv2d", kPacked4x4).c_str(), "conv2d");
  for (const Knob& k : DefaultSpaceKnobs(small, 1)) EXPECT_NE(k.name, "conv.border_split");
}

// The channel-lane kernel (conv_channel_lanes.h) as decisions of the space:
// conv.channel_lanes (0 the rule, 1 every conv the kernel takes, 2 never)
// and conv.lane_blocks (channel blocks a tile), offered where a value changes
// the kernel and nowhere else. The kernel's mark in the lowered TIR: its
// accumulator acc_cl.
bool ChannelLanes(const ir::PrimFunc& lowered) { return Print(lowered).find("acc_cl") != std::string::npos; }

ir::PrimFunc LowerPoint(const ir::PrimFunc& f, const std::vector<std::pair<std::string, int64_t>>& values) {
  Result<tir::Schedule> s = tir::Schedule::Replay(f, PointWith(f, values));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? LowerScheduled(s->func()) : ir::PrimFunc();
}

bool Offers(const ir::PrimFunc& f, const std::string& knob) {
  for (const Knob& k : DefaultSpaceKnobs(f, 1))
    if (k.name == knob) return true;
  return false;
}

// 128 -> 128 channels, 3x3 over 4x4, padding 1, weights packed by 16 (what
// the packing pass makes of them where the rule takes the conv).
const ConvShape kLanes4x4 = {128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 16};

TEST(ConvKnobSpaceTest, ChannelLanesOnASmallPlane) {
  ir::PrimFunc f = ParseFunc(ConvText("conv2d", kLanes4x4).c_str(), "conv2d");
  // The rule takes it.
  EXPECT_TRUE(ChannelLanes(LowerWithDefaultSchedule(f, 1)));
  ExpectOfferedInRangeAndDeterministic(f, "conv.channel_lanes", {0, 1, 2});
  ExpectOfferedInRangeAndDeterministic(f, "conv.lane_blocks", {0, 1, 2, 4});
  // 2: the old kernel; 0 (the rule) and 1: the channel-lane kernel.
  ir::PrimFunc never = LowerPoint(f, {{"conv.channel_lanes", 2}});
  ASSERT_TRUE(never);
  EXPECT_FALSE(ChannelLanes(never)) << Print(never);
  for (int64_t mode : {0, 1}) {
    ir::PrimFunc lowered = LowerPoint(f, {{"conv.channel_lanes", mode}});
    ASSERT_TRUE(lowered);
    EXPECT_TRUE(ChannelLanes(lowered)) << mode << "\n" << Print(lowered);
  }
  // The rule tiles the 16 points by one block of 16 channels;
  // conv.lane_blocks 2 takes two blocks a tile (32 lanes a point), another
  // kernel with the same numbers as the old one.
  ir::PrimFunc def = LowerPoint(f, {});
  ir::PrimFunc two = LowerPoint(f, {{"conv.lane_blocks", 2}});
  ASSERT_TRUE(def && two);
  EXPECT_NE(Print(def).find("acc_cl = T.decl_buffer((16, 16)"), std::string::npos) << Print(def);
  EXPECT_NE(Print(two).find("acc_cl = T.decl_buffer((16, 32)"), std::string::npos) << Print(two);
  EXPECT_FALSE(ir::StructuralEqual(two, def));
  Status same = SameNumbers(never, two);
  EXPECT_TRUE(same.ok()) << same.ToString();
  // Weights as given (OIHW): the rule leaves the old kernel, the knob (1)
  // still takes the conv, so the space offers it there too.
  ConvShape plain = kLanes4x4;
  plain.block = 0;
  ir::PrimFunc g = ParseFunc(ConvText("conv2d", plain).c_str(), "conv2d");
  EXPECT_FALSE(ChannelLanes(LowerWithDefaultSchedule(g, 1)));
  EXPECT_TRUE(Offers(g, "conv.channel_lanes"));
  ir::PrimFunc on = LowerPoint(g, {{"conv.channel_lanes", 1}});
  ASSERT_TRUE(on);
  EXPECT_TRUE(ChannelLanes(on)) << Print(on);
}

TEST(ConvKnobSpaceTest, ChannelLanesNotOfferedWhereTheKernelCannotTakeTheConv) {
  // Planes beyond 64 points (9 x 9 and 56 x 56) and a grouped conv: no value
  // of either knob changes the kernel, so neither is a decision.
  const ConvShape shapes[] = {{32, 9, 9, 32, 3, 3, 1, 1, 1, 1, 16},
                              {32, 56, 56, 32, 3, 3, 1, 1, 1, 1, 16},
                              {32, 4, 4, 32, 3, 3, 1, 1, 1, 1, 0, 2}};
  for (size_t i = 0; i < 3; ++i) {
    ir::PrimFunc f = ParseFunc(ConvText("conv2d", shapes[i]).c_str(), "conv2d");
    std::vector<Knob> knobs = DefaultSpaceKnobs(f, 1);
    EXPECT_FALSE(knobs.empty()) << i;  // a conv the space has knobs for
    for (const Knob& k : knobs) {
      EXPECT_NE(k.name, "conv.channel_lanes") << i;
      EXPECT_NE(k.name, "conv.lane_blocks") << i;
    }
  }
}

std::string TempDir() {
  const char* base = getenv("TMPDIR");
  std::string path = std::string(base && *base ? base : "/tmp") + "/kiln-conv-knobs-XXXXXX";
  KILN_CHECK(mkdtemp(path.data()) != nullptr, "mkdtemp");
  return path;
}

// kiln-compile --tuning-db: a record of the knob point, better than the
// default, makes the compiled kernel that point's.
void ExpectTuningDbApplies(const ConvShape& shape, const std::vector<std::pair<std::string, int64_t>>& values,
                           const std::string& shows, const std::string& default_shows) {
  std::string prim = ConvText("conv", shape);
  std::string indented;
  for (size_t at = 0; at < prim.size();) {
    size_t end = prim.find('\n', at);
    indented += "    " + prim.substr(at, end - at + 1);
    at = end + 1;
  }
  int64_t ho = shape.h + shape.pt + shape.pb - shape.kh + 1, wo = shape.w + shape.pl + shape.pr - shape.kw + 1;
  auto t = [](const std::vector<int64_t>& d) {
    std::string s = "R.Tensor((";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "), dtype=\"float32\")";
  };
  std::vector<int64_t> wshape = shape.block ? std::vector<int64_t>{shape.o / shape.block, shape.c, shape.kh, shape.kw,
                                                                   shape.block}
                                            : std::vector<int64_t>{shape.o, shape.c, shape.kh, shape.kw};
  std::string out = t({1, shape.o, ho, wo});
  std::string module = "@I.ir_module\nclass Module:\n" + indented + "\n    @R.function\n    def main(x: " +
                       t({1, shape.c, shape.h, shape.w}) + ", w: " + t(wshape) + ") -> " + out + ":\n" +
                       "        cls = Module\n        with R.dataflow():\n"
                       "            y = R.call_tir(cls.conv, (x, w), out_sinfo=" + out + ")\n"
                       "            R.output(y)\n        return y\n";
  Result<ir::IRModule> mod = text::ParseModule(module, "conv.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString() << "\n" << module;
  driver::CompileOptions options;
  options.num_threads_hint = 1;
  Result<ir::IRModule> kernels = driver::LowerModuleToKernels(*mod, options);
  ASSERT_TRUE(kernels.ok()) << kernels.status().ToString();
  ir::PrimFunc kernel;
  for (const ir::ModuleEntry& e : kernels->entries)
    if (e.prim) kernel = e.prim;
  ASSERT_TRUE(kernel);
  std::string dir = TempDir();
  {
    Result<Database> db = Database::Open(dir, nullptr);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<std::string> w = db->CommitWorkload(kernel);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Result<std::string> target = codegen::ResolvedTargetName({});
    ASSERT_TRUE(target.ok());
    TuningRecord r;
    r.workload = *w;
    r.target = *target;
    r.trace = PointWith(kernel, values);
    r.median_us = 50;
    r.default_us = 100;
    r.times_us = {50};
    r.threads = 1;
    ASSERT_TRUE(db->CommitRecord(r).ok());
  }
  Result<ir::IRModule> plain = driver::LowerModule(*mod, options);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  options.tuning_db = dir;
  Result<ir::IRModule> tuned = driver::LowerModule(*mod, options);
  ASSERT_TRUE(tuned.ok()) << tuned.status().ToString();
  std::string plain_text = text::PrintModule(*plain), tuned_text = text::PrintModule(*tuned);
  EXPECT_NE(plain_text.find(default_shows), std::string::npos) << plain_text;
  EXPECT_EQ(plain_text.find(shows), std::string::npos) << plain_text;
  EXPECT_NE(tuned_text.find(shows), std::string::npos) << tuned_text;
  std::string rm = "rm -rf '" + dir + "'";
  EXPECT_EQ(system(rm.c_str()), 0);
}

TEST(ConvKnobSpaceTest, TuningDbAppliesShiftPlanesWithPackedWeights) {
  ExpectTuningDbApplies(kPacked4x4, {{"conv.shift_planes", 1}}, "data_padded = T.decl_buffer((1, 8, 1,",
                        "data_padded = T.decl_buffer((1, 8, 3,");
  // With conv.plane_rows 8: a tile of one weight block (the rule: both).
  ExpectTuningDbApplies(kPacked4x4, {{"conv.shift_planes", 2}, {"conv.plane_rows", 8}}, "acc = T.decl_buffer((8, 16)",
                        "acc = T.decl_buffer((16, 16)");
}

TEST(ConvKnobSpaceTest, TuningDbAppliesRowTilesBeyondTheTapLimit) {
  ExpectTuningDbApplies(kConv1x7, {{"conv.row_tiles", 2}, {"conv.border_split", 2}}, "col0: T.int64 = y * 102 + x0",
                        "line_task");
}

// The rule's interior / border tiles, and a record of the direct kernel
// (conv.border_split 2) replacing them.
TEST(ConvKnobSpaceTest, TuningDbAppliesBorderSplitOff) {
  ExpectTuningDbApplies(kConv1x7, {{"conv.border_split", 2}}, "y0: T.int64 = col0 // 102", "line_task");
}

}  // namespace
}  // namespace tune
}  // namespace kiln
