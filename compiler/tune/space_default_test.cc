// The default schedules' knob space (space.h, DefaultSpace): its all-default
// point lowers to exactly the default schedule, other points compute the
// same numbers with other tiles, and knob traces replay and round-trip
// through JSON like any trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/lower.h"
#include "compiler/tune/space.h"
#include "compiler/tune/trace_json.h"
#include "compiler/tune/tune_test_workloads.h"

namespace kiln {
namespace tune {
namespace {

using testing::kCourseMM;
using tir::testing::ParseFunc;
using tir::testing::SameNumbers;

// A GEMV with a relu epilogue: one row (the one-row kernel and its partial
// sums), an epilogue fused into the tiles.
const char* kGemvRelu = R"(@T.prim_func
def gemv_relu(A: T.Buffer((1, 96), "float32"), B: T.Buffer((96, 80), "float32"), C: T.Buffer((1, 80), "float32")):
    Y = T.alloc_buffer((1, 80), "float32")
    for i, j, k in T.grid(1, 80, 96):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(1, 80):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
)";

// A 3x3 convolution as legalization writes it (8 channels, 10 x 10).
const char* kConv = R"(@T.prim_func
def conv2d(data: T.Buffer((1, 8, 10, 10), "float32"), weight: T.Buffer((8, 8, 3, 3), "float32"), conv2d: T.Buffer((1, 8, 10, 10), "float32")):
    T.func_attr({"op_pattern": 4, "tir.noalias": True})
    # with T.block("root"):
    for i0, i1, i2, i3, k0, k1, k2 in T.grid(T.int64(1), T.int64(8), T.int64(10), T.int64(10), T.int64(8), T.int64(3), T.int64(3)):
        with T.block("conv2d"):
            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, k0, k1, k2])
            T.reads(data[T.int64(0), T.int64(0):T.int64(8), T.int64(0):T.int64(10), T.int64(0):T.int64(10)], weight[T.int64(0):T.int64(8), T.int64(0):T.int64(8), T.int64(0):T.int64(3), T.int64(0):T.int64(3)])
            T.writes(conv2d[T.int64(0), T.int64(0):T.int64(8), T.int64(0):T.int64(10), T.int64(0):T.int64(10)])
            with T.init():
                conv2d[v_i0, v_i1, v_i2, v_i3] = T.float32(0)
            conv2d[v_i0, v_i1, v_i2, v_i3] = conv2d[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 1 >= 0 and v_i2 * 1 + v_k1 * 1 - 1 < 10 and v_i3 * 1 + v_k2 * 1 - 1 >= 0 and v_i3 * 1 + v_k2 * 1 - 1 < 10, data[v_i0, v_k0, v_i2 * 1 + v_k1 * 1 - 1, v_i3 * 1 + v_k2 * 1 - 1] * weight[v_i1, v_k0, v_k1, v_k2], T.float32(0))

)";

// A stride-2 depthwise 3x3 convolution (8 channels, 11 x 13, padding 1), as
// legalization writes it: the strided depthwise schedule's tile knobs.
const char* kDwConv = R"(@T.prim_func
def dw(data: T.Buffer((1, 8, 11, 13), "float32"), weight: T.Buffer((8, 1, 3, 3), "float32"), conv2d: T.Buffer((1, 8, 6, 7), "float32")):
    for i0, i1, i2, i3, k0, k1, k2 in T.grid(T.int64(1), T.int64(8), T.int64(6), T.int64(7), T.int64(1), T.int64(3), T.int64(3)):
        with T.block("conv2d"):
            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, k0, k1, k2])
            with T.init():
                conv2d[v_i0, v_i1, v_i2, v_i3] = T.float32(0)
            conv2d[v_i0, v_i1, v_i2, v_i3] = conv2d[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(v_i2 * 2 + v_k1 * 1 - 1 >= 0 and v_i2 * 2 + v_k1 * 1 - 1 < 11 and v_i3 * 2 + v_k2 * 1 - 1 >= 0 and v_i3 * 2 + v_k2 * 1 - 1 < 13, data[v_i0, v_i1 // (T.int64(8) // T.int64(8)) * 1 + v_k0, v_i2 * 2 + v_k1 * 1 - 1, v_i3 * 2 + v_k2 * 1 - 1] * weight[v_i1, v_k0, v_k1, v_k2], T.float32(0))
)";

// The same at stride 1 (rows of 13): depthwise_schedule.h takes it by its
// rule (rows of one vector); depthwise.unit_stride 2 leaves it to the conv
// schedule.
const char* kDwConvUnitStride = R"(@T.prim_func
def dw(data: T.Buffer((1, 8, 11, 13), "float32"), weight: T.Buffer((8, 1, 3, 3), "float32"), conv2d: T.Buffer((1, 8, 11, 13), "float32")):
    for i0, i1, i2, i3, k0, k1, k2 in T.grid(T.int64(1), T.int64(8), T.int64(11), T.int64(13), T.int64(1), T.int64(3), T.int64(3)):
        with T.block("conv2d"):
            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, k0, k1, k2])
            with T.init():
                conv2d[v_i0, v_i1, v_i2, v_i3] = T.float32(0)
            conv2d[v_i0, v_i1, v_i2, v_i3] = conv2d[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 1 >= 0 and v_i2 * 1 + v_k1 * 1 - 1 < 11 and v_i3 * 1 + v_k2 * 1 - 1 >= 0 and v_i3 * 1 + v_k2 * 1 - 1 < 13, data[v_i0, v_i1 // (T.int64(8) // T.int64(8)) * 1 + v_k0, v_i2 * 1 + v_k1 * 1 - 1, v_i3 * 1 + v_k2 * 1 - 1] * weight[v_i1, v_k0, v_k1, v_k2], T.float32(0))
)";

// A 1-D convolution (8 -> 8 channels, width 100, kernel 5, padding 2): the
// conv2d schedules take it lifted to height 1, which ScheduleConvs on the
// nest as lowered does not see.
const char* kConv1d = R"(@T.prim_func
def conv1d(data: T.Buffer((1, 8, 100), "float32"), weight: T.Buffer((8, 8, 5), "float32"), conv1d: T.Buffer((1, 8, 100), "float32")):
    for i0, i1, i2, k0, k1 in T.grid(T.int64(1), T.int64(8), T.int64(100), T.int64(8), T.int64(5)):
        with T.block("conv1d"):
            v_i0, v_i1, v_i2, v_k0, v_k1 = T.axis.remap("SSSRR", [i0, i1, i2, k0, k1])
            T.reads(data[T.int64(0), T.int64(0):T.int64(8), T.int64(0):T.int64(100)], weight[T.int64(0):T.int64(8), T.int64(0):T.int64(8), T.int64(0):T.int64(5)])
            T.writes(conv1d[T.int64(0), T.int64(0):T.int64(8), T.int64(0):T.int64(100)])
            with T.init():
                conv1d[v_i0, v_i1, v_i2] = T.float32(0)
            conv1d[v_i0, v_i1, v_i2] = conv1d[v_i0, v_i1, v_i2] + T.if_then_else(v_i2 * 1 + v_k1 * 1 - 2 >= 0 and v_i2 * 1 + v_k1 * 1 - 2 < 100, data[v_i0, v_k0, v_i2 * 1 + v_k1 * 1 - 2] * weight[v_i1, v_k0, v_k1], T.float32(0))
)";

// A 3 x 3 / 2 max pool with padding 1 (8 channels, 28 x 28 -> 14 x 14), as
// legalization writes it: the window schedule's nest (pool_schedule.h).
const char* kMaxPool = R"(@T.prim_func
def max_pool2d(data: T.Buffer((1, 8, 28, 28), "float32"), pool_max: T.Buffer((1, 8, 14, 14), "float32")):
    for i0, i1, i2, i3, k0, k1 in T.grid(T.int64(1), T.int64(8), T.int64(14), T.int64(14), T.int64(3), T.int64(3)):
        with T.block("pool_max"):
            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1 = T.axis.remap("SSSSRR", [i0, i1, i2, i3, k0, k1])
            with T.init():
                pool_max[v_i0, v_i1, v_i2, v_i3] = T.float32("-inf")
            pool_max[v_i0, v_i1, v_i2, v_i3] = T.max(pool_max[v_i0, v_i1, v_i2, v_i3], T.if_then_else(v_i2 * 2 + v_k0 - 1 >= 0 and v_i2 * 2 + v_k0 - 1 < 28 and v_i3 * 2 + v_k1 - 1 >= 0 and v_i3 * 2 + v_k1 - 1 < 28, data[v_i0, v_i1, v_i2 * 2 + v_k0 - 1, v_i3 * 2 + v_k1 - 1], T.float32("-inf")))
)";

const char* kAdd = R"(@T.prim_func
def add1(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
)";

// Softmax over rows of 1001 and a mean over rows of 777 (the worst shapes'
// odd rows, fewer of them), as legalization and fusion write them.
const char* kSoftmax = R"(@T.prim_func
def softmax(A: T.Buffer((4, 1001), "float32"), T_softmax: T.Buffer((4, 1001), "float32")):
    T_max = T.alloc_buffer((4,), "float32")
    T_exp = T.alloc_buffer((4, 1001), "float32")
    T_sum = T.alloc_buffer((4,), "float32")
    for i, k in T.grid(T.int64(4), T.int64(1001)):
        with T.block("T_max"):
            v_i, v_k = T.axis.remap("SR", [i, k])
            with T.init():
                T_max[v_i] = T.float32("-inf")
            T_max[v_i] = T.max(T_max[v_i], A[v_i, v_k])
    for i0, i1 in T.grid(T.int64(4), T.int64(1001)):
        with T.block("T_exp"):
            v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
            T_exp[v_i0, v_i1] = T.exp(T.min(A[v_i0, v_i1] - T_max[v_i0], T.float32(0)))
    for i_1, k_1 in T.grid(T.int64(4), T.int64(1001)):
        with T.block("T_sum"):
            v_i_1, v_k_1 = T.axis.remap("SR", [i_1, k_1])
            with T.init():
                T_sum[v_i_1] = T.float32(0)
            T_sum[v_i_1] = T_sum[v_i_1] + T_exp[v_i_1, v_k_1]
    for i0_1, i1_1 in T.grid(T.int64(4), T.int64(1001)):
        with T.block("T_softmax"):
            v_i0_1, v_i1_1 = T.axis.remap("SS", [i0_1, i1_1])
            T_softmax[v_i0_1, v_i1_1] = T_exp[v_i0_1, v_i1_1] / T_sum[v_i0_1]
)";

const char* kMean = R"(@T.prim_func
def mean(A: T.Buffer((8, 777), "float32"), T_mean: T.Buffer((8,), "float32")):
    T_mean_sum = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(T.int64(8), T.int64(777)):
        with T.block("T_mean_sum"):
            v_i, v_k = T.axis.remap("SR", [i, k])
            with T.init():
                T_mean_sum[v_i] = T.float32(0)
            T_mean_sum[v_i] = T_mean_sum[v_i] + A[v_i, v_k]
    for i_1 in range(T.int64(8)):
        with T.block("T_mean"):
            v_i_1 = T.axis.remap("S", [i_1])
            T_mean[v_i_1] = T_mean_sum[v_i_1] / T.Cast("float32", T.int64(1) * T.int64(777))
)";

// A sampled point of the knob space of `f`.
tir::Schedule Sample(const ir::PrimFunc& f, int threads, uint64_t seed) {
  Result<tir::Schedule> s = tir::Schedule::Create(f, seed);
  EXPECT_TRUE(s.ok());
  Status st = ApplyDefaultSpace(&*s, DefaultSpaceKnobs(f, threads), threads);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return std::move(*s);
}

void ExpectDefaultPointIsDefault(const char* text, const char* name, int threads) {
  ir::PrimFunc f = ParseFunc(text, name);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    tir::Schedule sampled = Sample(f, threads, seed);
    Result<tir::Trace> point = DefaultPoint(sampled.trace());
    ASSERT_TRUE(point.ok());
    Result<tir::Schedule> replayed = tir::Schedule::Replay(f, *point);
    ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
    std::string why;
    EXPECT_TRUE(ir::StructuralEqual(LowerScheduled(replayed->func()), LowerWithDefaultSchedule(f, threads), &why))
        << name << " threads " << threads << ": " << why << "\n" << point->ToString();
  }
}

TEST(DefaultSpaceTest, MatmulHasKnobs) {
  std::vector<Knob> k1 = DefaultSpaceKnobs(ParseFunc(kCourseMM, "mm"), 1);
  std::vector<std::string> names;
  for (const auto& k : k1) {
    names.push_back(k.name);
    ASSERT_FALSE(k.candidates.empty());
    // Candidate 0 is the rule: 0, or for the thread hint the threads measured with.
    EXPECT_EQ(k.candidates[0], k.name == kThreadsKnob ? 1 : 0) << k.name;
  }
  // The tile loop is parallel with a hint of 2 or more, so the hint is a
  // decision too.
  // Prefetching B ahead is a decision wherever B has a static shape (the
  // rule prefetches weights of 2 MiB or more; the course's B is 64 KiB).
  EXPECT_EQ(names, (std::vector<std::string>{"matmul.mr", "matmul.nr", "matmul.pack", "matmul.row_split",
                                             "matmul.prefetch", "threads"}));
  EXPECT_EQ(k1.back().candidates, (std::vector<int64_t>{1, 2, 4}));
  // With threads, whether the tile loop runs in parallel is a knob too.
  EXPECT_EQ(DefaultSpaceKnobs(ParseFunc(kCourseMM, "mm"), 4).size(), 7u);
  std::vector<Knob> kc = DefaultSpaceKnobs(ParseFunc(kConv, "conv2d"), 1);
  ASSERT_EQ(kc.size(), 6u);
  EXPECT_EQ(kc[0].name, "conv.mr");
  EXPECT_EQ(kc[3].name, "conv.im2col");  // a conv of one group: the im2col panels too
  EXPECT_EQ(kc[4].name, "conv.shift_planes");  // the packed input's layout
  EXPECT_EQ(kc[5].name, "threads");
  // A 1-D convolution: the conv knobs too (its default schedule is the
  // conv2d one at height 1).
  std::vector<Knob> k1d = DefaultSpaceKnobs(ParseFunc(kConv1d, "conv1d"), 1);
  ASSERT_GE(k1d.size(), 3u);
  EXPECT_EQ(k1d[0].name, "conv.mr");
  // A strided depthwise conv: its tile (no longer an empty space).
  std::vector<Knob> kdw = DefaultSpaceKnobs(ParseFunc(kDwConv, "dw"), 1);
  ASSERT_EQ(kdw.size(), 4u);
  EXPECT_EQ(kdw[0].name, "depthwise.rows");
  EXPECT_EQ(kdw[1].name, "depthwise.cols");
  EXPECT_EQ(kdw[2].name, "depthwise.flat");
  EXPECT_EQ(kdw[3].name, "depthwise.copy");
  // With 16 channels the channel-block kernel takes it (depthwise_channel_block.h):
  // depthwise.block 1 offers the per-channel kernels.
  std::string dw16 = kDwConv;
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"(1, 8, 11, 13)", "(1, 16, 11, 13)"}, {"(8, 1, 3, 3)", "(16, 1, 3, 3)"}, {"(1, 8, 6, 7)", "(1, 16, 6, 7)"},
           {"T.int64(1), T.int64(8), T.int64(6)", "T.int64(1), T.int64(16), T.int64(6)"},
           {"(T.int64(8) // T.int64(8))", "(T.int64(16) // T.int64(16))"}}) {
    size_t at = dw16.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    dw16.replace(at, from.size(), to);
  }
  std::vector<Knob> k16 = DefaultSpaceKnobs(ParseFunc(dw16, "dw"), 1);
  ASSERT_EQ(k16.size(), 5u);
  EXPECT_EQ(k16[4].name, "depthwise.block");
  // A 120^2 -> 60^2 plane, its band too big for L1: the window schedule's,
  // and the banded kernel by depthwise.banded.
  std::string big = kDwConv;
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"(1, 8, 11, 13)", "(1, 8, 120, 120)"}, {"(1, 8, 6, 7)", "(1, 8, 60, 60)"},
           {"T.int64(6), T.int64(7)", "T.int64(60), T.int64(60)"}, {"< 11", "< 120"}, {"< 13", "< 120"}}) {
    size_t at = big.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    big.replace(at, from.size(), to);
  }
  // (3x3 at column stride 2: the direct kernel takes it, depthwise.direct
  // 1 leaves it to the window schedule; so a 5x5 window here.)
  std::vector<std::string> big_names, direct_names;
  for (const Knob& k : DefaultSpaceKnobs(ParseFunc(big, "dw"), 1)) direct_names.push_back(k.name);
  ASSERT_FALSE(direct_names.empty());
  EXPECT_EQ(direct_names[0], "depthwise.rows");
  EXPECT_EQ(direct_names.back(), "depthwise.direct");
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"(8, 1, 3, 3)", "(8, 1, 5, 5)"}, {"T.int64(3), T.int64(3))", "T.int64(5), T.int64(5))"}}) {
    size_t at = big.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    big.replace(at, from.size(), to);
  }
  for (size_t at = big.find("* 1 - 1"); at != std::string::npos; at = big.find("* 1 - 1", at)) big.replace(at, 7, "* 1 - 2");
  for (const Knob& k : DefaultSpaceKnobs(ParseFunc(big, "dw"), 1)) big_names.push_back(k.name);
  ASSERT_FALSE(big_names.empty());
  EXPECT_EQ(big_names[0], "depthwise.banded");
  // At stride 1 the same, and the knob that lets that schedule take it.
  std::vector<Knob> kdw1 = DefaultSpaceKnobs(ParseFunc(kDwConvUnitStride, "dw"), 1);
  ASSERT_GE(kdw1.size(), 5u);
  EXPECT_EQ(kdw1[0].name, "depthwise.rows");
  EXPECT_EQ(kdw1[4].name, "depthwise.unit_stride");
  EXPECT_EQ(kdw1[4].candidates, (std::vector<int64_t>{0, 1, 2}));
  // An elementwise loop: its vector split.
  std::vector<Knob> k2 = DefaultSpaceKnobs(ParseFunc(kAdd, "add1"), 1);
  ASSERT_GE(k2.size(), 2u);
  EXPECT_EQ(k2[0].name, "elementwise.vector");
  EXPECT_EQ(k2[1].name, "elementwise.unroll");
  // A pool: the window schedule's knobs (after any elementwise ones).
  std::vector<std::string> pool_names;
  for (const Knob& k : DefaultSpaceKnobs(ParseFunc(kMaxPool, "max_pool2d"), 1)) {
    if (k.name == kThreadsKnob) continue;  // its first candidate is the thread count
    EXPECT_EQ(k.candidates[0], 0) << k.name;
    EXPECT_GE(k.candidates.size(), 2u) << k.name;
    if (k.name.rfind("pool.", 0) == 0) pool_names.push_back(k.name);
  }
  EXPECT_EQ(pool_names, (std::vector<std::string>{"pool.taps", "pool.borders", "pool.deinterleave", "pool.vector"}));
  // Nothing the default schedule vectorizes or tiles: no knobs (the space
  // is the default schedule alone).
  EXPECT_TRUE(DefaultSpaceKnobs(ParseFunc(R"(@T.prim_func
def tiny(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
    for i in range(2):
        with T.block("B"):
            vi = T.axis.spatial(2, i)
            B[vi] = A[vi] + T.float32(1)
)", "tiny"), 1).empty());
}

// The row-reduction schedule's knobs: softmax and a row mean each get a
// space of several distinct points, every one computing the same numbers.
TEST(DefaultSpaceTest, RowReductionsHaveKnobs) {
  for (const auto& [text, name] : {std::pair<const char*, const char*>{kSoftmax, "softmax"}, {kMean, "mean"}}) {
    ir::PrimFunc f = ParseFunc(text, name);
    std::vector<std::string> names;
    for (const Knob& k : DefaultSpaceKnobs(f, 1)) names.push_back(k.name);
    EXPECT_NE(std::find(names.begin(), names.end(), "reduce.lanes"), names.end()) << name;
    EXPECT_NE(std::find(names.begin(), names.end(), "reduce.unroll"), names.end()) << name;
    ir::PrimFunc def = LowerWithDefaultSchedule(f, 1);
    // The default itself (a mean over 8 rows once lost its rows to
    // AliasOutputBuffers: its 8-lane tree step had the output's shape).
    Status def_same = SameNumbers(f, def);
    EXPECT_TRUE(def_same.ok()) << name << ": " << def_same.ToString();
    std::vector<ir::PrimFunc> distinct = {def};
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      tir::Schedule s = Sample(f, 1, seed);
      ir::PrimFunc lowered = LowerScheduled(s.func());
      bool seen = false;
      for (const ir::PrimFunc& d : distinct) seen = seen || ir::StructuralEqual(d, lowered);
      if (!seen) distinct.push_back(lowered);
      Status same = SameNumbers(f, lowered);
      EXPECT_TRUE(same.ok()) << name << ": " << same.ToString() << "\n" << s.trace().ToString();
    }
    EXPECT_GE(distinct.size(), 4u) << name;
  }
  // With two threads, a long row split across threads: its chunks per
  // thread are a knob.
  const char* long_row = R"(@T.prim_func
def rowsum(A: T.Buffer((1, 40000), "float32"), S: T.Buffer((1,), "float32")):
    for i, k in T.grid(T.int64(1), T.int64(40000)):
        with T.block("S"):
            v_i, v_k = T.axis.remap("SR", [i, k])
            with T.init():
                S[v_i] = T.float32(0)
            S[v_i] = S[v_i] + A[v_i, v_k]
)";
  ir::PrimFunc f = ParseFunc(long_row, "rowsum");
  std::vector<Knob> knobs = DefaultSpaceKnobs(f, 2);
  bool split = false;
  for (const Knob& k : knobs) split = split || k.name == "reduce.split_chunks";
  EXPECT_TRUE(split);
  ExpectDefaultPointIsDefault(long_row, "rowsum", 2);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Status same = SameNumbers(f, LowerScheduled(Sample(f, 2, seed).func()));
    EXPECT_TRUE(same.ok()) << same.ToString();
  }
}

// The thread hint as a decision: measured with one thread, a matmul may
// still be planned for two (a parallel tile loop), and computes the same.
TEST(DefaultSpaceTest, ThreadHintIsADecision) {
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  tir::Trace t = Sample(f, 1, 1).trace();
  ASSERT_EQ(t.instructions()[1].name, "annotate");
  ASSERT_EQ(t.instructions()[1].inputs[0].s, "kiln.knob.threads");
  for (size_t i = 2; i < t.instructions().size(); ++i)
    if (t.instructions()[i].name == "sample_categorical") t.SetDecision(i, {0});
  t.SetDecision(0, {0});
  Result<tir::Schedule> serial = tir::Schedule::Replay(f, t);
  t.SetDecision(0, {1});  // candidates {1, 2, 4}: 2
  Result<tir::Schedule> two = tir::Schedule::Replay(f, t);
  ASSERT_TRUE(serial.ok() && two.ok());
  std::string a = tir::testing::Print(LowerScheduled(serial->func()));
  std::string b = tir::testing::Print(LowerScheduled(two->func()));
  EXPECT_EQ(a.find("T.parallel("), std::string::npos) << a;
  EXPECT_NE(b.find("T.parallel("), std::string::npos) << b;
  EXPECT_TRUE(SameNumbers(f, LowerScheduled(two->func())).ok());
}

TEST(DefaultSpaceTest, ElementwiseVectorSplit) {
  ir::PrimFunc f = ParseFunc(kAdd, "add1");
  tir::Trace t = Sample(f, 1, 1).trace();
  // vector = 16 (index 3), unroll = 2 (index 2).
  t.SetDecision(2, {3});
  t.SetDecision(4, {2});
  Result<tir::Schedule> s = tir::Schedule::Replay(f, t);
  ASSERT_TRUE(s.ok()) << s.status().ToString() << t.ToString();
  ir::PrimFunc lowered = LowerScheduled(s->func());
  std::string text = tir::testing::Print(lowered);
  EXPECT_NE(text.find("in T.unroll(2)"), std::string::npos) << text;
  EXPECT_NE(text.find("in T.vectorized(16)"), std::string::npos) << text;
  EXPECT_TRUE(SameNumbers(f, lowered).ok());
}

TEST(DefaultSpaceTest, AllDefaultDecisionsGiveTheDefaultSchedule) {
  ExpectDefaultPointIsDefault(kCourseMM, "mm", 1);
  ExpectDefaultPointIsDefault(kCourseMM, "mm", 4);
  ExpectDefaultPointIsDefault(kGemvRelu, "gemv_relu", 1);
  ExpectDefaultPointIsDefault(kAdd, "add1", 2);
  ExpectDefaultPointIsDefault(kConv, "conv2d", 1);
  ExpectDefaultPointIsDefault(kConv1d, "conv1d", 1);
  ExpectDefaultPointIsDefault(kDwConv, "dw", 1);
  ExpectDefaultPointIsDefault(kMaxPool, "max_pool2d", 1);
}

TEST(DefaultSpaceTest, OtherPointsComputeTheSameNumbers) {
  for (const auto& [text, name] :
       {std::pair<const char*, const char*>{kCourseMM, "mm"}, {kGemvRelu, "gemv_relu"}, {kAdd, "add1"}, {kConv, "conv2d"},
        {kConv1d, "conv1d"}, {kDwConv, "dw"}, {kMaxPool, "max_pool2d"}}) {
    ir::PrimFunc f = ParseFunc(text, name);
    ir::PrimFunc def = LowerWithDefaultSchedule(f, 1);
    int differ = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      tir::Schedule s = Sample(f, 1, seed);
      ir::PrimFunc lowered = LowerScheduled(s.func());
      differ += !ir::StructuralEqual(lowered, def);
      Status same = SameNumbers(f, lowered);
      EXPECT_TRUE(same.ok()) << name << ": " << same.ToString() << "\n" << s.trace().ToString();
    }
    EXPECT_GT(differ, 0) << name << ": every sample lowered to the default";
  }
}

TEST(DefaultSpaceTest, KnobsChangeTheTile) {
  // mr = 4, nr = 16, no packing: (128 / 4) x (128 / 16) = 256 tiles of 4 x 16.
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  tir::Trace t = Sample(f, 1, 1).trace();
  auto set = [&](const std::string& knob, int64_t value) {
    for (size_t i = 0; i + 1 < t.instructions().size(); ++i) {
      const auto& next = t.instructions()[i + 1];
      if (next.name == "annotate" && next.inputs[0].s == "kiln.knob." + knob) {
        const auto& c = t.instructions()[i].inputs[0].ints;
        for (size_t k = 0; k < c.size(); ++k)
          if (c[k] == value) t.SetDecision(i, {static_cast<int64_t>(k)});
      }
    }
  };
  set("matmul.mr", 4);
  set("matmul.nr", 16);
  set("matmul.pack", 1);
  Result<tir::Schedule> s = tir::Schedule::Replay(f, t);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::string text = tir::testing::Print(LowerScheduled(s->func()));
  EXPECT_NE(text.find("for tile in range(T.int64(256))"), std::string::npos) << text;
  EXPECT_NE(text.find("acc = T.decl_buffer((4, 16)"), std::string::npos) << text;
}

TEST(DefaultSpaceTest, PrefetchKnobAddsHintsAndKeepsTheNumbers) {
  // matmul.prefetch 2 on the course's 128^3 matmul (B 64 KiB: the rule does
  // not prefetch): the k loop prefetches B 16 rows ahead (4 KiB of a 64-column
  // tile's panel); 0 (the rule) and 1 (never) lower without hints. Every
  // point computes the default's numbers.
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  for (int64_t value : {0, 1, 2}) {
    tir::Trace t = Sample(f, 1, 1).trace();
    for (size_t i = 0; i + 1 < t.instructions().size(); ++i) {
      const auto& next = t.instructions()[i + 1];
      if (next.name != "annotate" || t.instructions()[i].name != "sample_categorical") continue;
      const auto& c = t.instructions()[i].inputs[0].ints;
      int64_t want = next.inputs[0].s == "kiln.knob.matmul.prefetch" ? value : next.inputs[0].s == "kiln.knob.threads" ? 1 : 0;
      for (size_t k = 0; k < c.size(); ++k)
        if (c[k] == want) t.SetDecision(i, {static_cast<int64_t>(k)});
    }
    Result<tir::Schedule> s = tir::Schedule::Replay(f, t);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ir::PrimFunc lowered = LowerScheduled(s->func());
    std::string text = tir::testing::Print(lowered);
    EXPECT_EQ(text.find("\"prefetch\"") != std::string::npos, value == 2) << value << "\n" << text;
    if (value == 2) EXPECT_NE(text.find("T.min(k + 16, "), std::string::npos) << text;
    if (value == 0) EXPECT_TRUE(ir::StructuralEqual(lowered, LowerWithDefaultSchedule(f, 1)));
    Status same = SameNumbers(f, lowered);
    EXPECT_TRUE(same.ok()) << value << ": " << same.ToString();
  }
}

TEST(DefaultSpaceTest, KnobTraceRoundTripsThroughJson) {
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  tir::Schedule s = Sample(f, 1, 7);
  Result<Json> j = TraceToJson(s.trace());
  ASSERT_TRUE(j.ok());
  Result<tir::Trace> back = TraceFromJson(*j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToString(), s.trace().ToString());
  Result<tir::Schedule> r = tir::Schedule::Replay(f, *back);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(ir::StructuralEqual(r->func(), s.func()));
}

// The im2col panels (conv.im2col, conv_im2col_schedule.h) as decisions of
// the space: for a conv2d and a 1-D conv, each chunk size replays from the
// trace (through its JSON form) to the same kernel, differs from the
// default, and computes the same numbers as the unscheduled function.
TEST(DefaultSpaceTest, Im2colKnobPointsReplayAndComputeTheSameNumbers) {
  for (const auto& [text, name] :
       {std::pair<const char*, const char*>{kConv, "conv2d"}, {kConv1d, "conv1d"}}) {
    ir::PrimFunc f = ParseFunc(text, name);
    ir::PrimFunc def = LowerWithDefaultSchedule(f, 1);
    tir::Trace t = Sample(f, 1, 1).trace();
    size_t at = 0;
    std::vector<int64_t> candidates;
    for (size_t i = 0; i + 1 < t.instructions().size(); ++i) {
      const auto& next = t.instructions()[i + 1];
      if (next.name == "annotate" && next.inputs[0].s == "kiln.knob.conv.im2col") {
        at = i;
        candidates = t.instructions()[i].inputs[0].ints;
      }
    }
    ASSERT_EQ(candidates, (std::vector<int64_t>{0, 16, 32, 48, 64})) << name << "\n" << t.ToString();
    // Every other knob at the rule's choice, so only the panels differ.
    Result<tir::Trace> base = DefaultPoint(t);
    ASSERT_TRUE(base.ok());
    std::vector<std::string> kernels;
    for (int64_t d = 1; d < static_cast<int64_t>(candidates.size()); ++d) {
      tir::Trace point = *base;
      point.SetDecision(at, {d});
      Result<Json> j = TraceToJson(point);
      ASSERT_TRUE(j.ok());
      Result<tir::Trace> back = TraceFromJson(*j);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(back->ToString(), point.ToString());
      Result<tir::Schedule> s = tir::Schedule::Replay(f, *back);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      ir::PrimFunc lowered = LowerScheduled(s->func());
      std::string printed = tir::testing::Print(lowered);
      EXPECT_NE(printed.find("_panel = T.decl_buffer"), std::string::npos) << name << " " << candidates[d];
      EXPECT_FALSE(ir::StructuralEqual(lowered, def)) << name << " " << candidates[d];
      Status same = SameNumbers(f, lowered);
      EXPECT_TRUE(same.ok()) << name << " " << candidates[d] << ": " << same.ToString();
      kernels.push_back(printed);
    }
    // Several distinct points: 16 and 64 points a chunk are different kernels.
    EXPECT_NE(kernels.front(), kernels.back()) << name;
  }
}

// The packed input's layout (conv.shift_planes) as a decision of the space:
// the halo layout packs one copy of the input, shift planes one per kernel
// column. Where the rule picks shift planes (a 10 x 10 plane) the halo
// point differs; where it picks the halo layout (a 34 x 34 plane, more
// columns than shift planes take at one thread; a 1-D conv of 60 points)
// the shift-plane point differs. Every point replays through JSON and computes the same numbers.
TEST(DefaultSpaceTest, ShiftPlaneKnobPointsChangeThePackingAndComputeTheSameNumbers) {
  std::string wide = kConv;
  for (size_t at = wide.find("10"); at != std::string::npos; at = wide.find("10", at)) wide.replace(at, 2, "34");
  // A 1-D conv of 60 points: the direct kernel (at 100, a line of 64 or
  // more, the interior / border tiles' rule takes it).
  std::string short1d = kConv1d;
  for (size_t at = short1d.find("100"); at != std::string::npos; at = short1d.find("100", at)) short1d.replace(at, 3, "60");
  struct Case {
    std::string text;
    const char* name;
    std::string rule_packing, other_packing;  // the packed input's declaration
    int64_t other;                            // the knob value that is not the rule
  };
  const Case cases[] = {
      {short1d, "conv1d", "data_padded = T.decl_buffer((1, 8, 1,", "data_padded = T.decl_buffer((1, 8, 5,", 2},
      {kConv, "conv2d", "data_padded = T.decl_buffer((1, 8, 3,", "data_padded = T.decl_buffer((1, 8, 1,", 1},
      {wide, "conv2d", "data_padded = T.decl_buffer((1, 8, 1,", "data_padded = T.decl_buffer((1, 8, 3,", 2},
  };
  for (const Case& c : cases) {
    ir::PrimFunc f = ParseFunc(c.text.c_str(), c.name);
    ir::PrimFunc def = LowerWithDefaultSchedule(f, 1);
    EXPECT_NE(tir::testing::Print(def).find(c.rule_packing), std::string::npos) << c.name << "\n" << tir::testing::Print(def);
    tir::Trace t = Sample(f, 1, 1).trace();
    size_t at = 0;
    std::vector<int64_t> candidates;
    for (size_t i = 0; i + 1 < t.instructions().size(); ++i) {
      const auto& next = t.instructions()[i + 1];
      if (next.name == "annotate" && next.inputs[0].s == "kiln.knob.conv.shift_planes") {
        at = i;
        candidates = t.instructions()[i].inputs[0].ints;
      }
    }
    ASSERT_EQ(candidates, (std::vector<int64_t>{0, 1, 2})) << c.name << "\n" << t.ToString();
    Result<tir::Trace> base = DefaultPoint(t);
    ASSERT_TRUE(base.ok());
    for (int64_t d : {1, 2}) {
      tir::Trace point = *base;
      point.SetDecision(at, {d});
      Result<Json> j = TraceToJson(point);
      ASSERT_TRUE(j.ok());
      Result<tir::Trace> back = TraceFromJson(*j);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      Result<tir::Schedule> s = tir::Schedule::Replay(f, *back);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      ir::PrimFunc lowered = LowerScheduled(s->func());
      std::string printed = tir::testing::Print(lowered);
      // The rule's own layout as a knob gives the default kernel; the other
      // layout another packing.
      EXPECT_EQ(ir::StructuralEqual(lowered, def), d != c.other) << c.name << " " << d << "\n" << printed;
      EXPECT_NE(printed.find(d == c.other ? c.other_packing : c.rule_packing), std::string::npos)
          << c.name << " " << d << "\n" << printed;
      Status same = SameNumbers(f, lowered);
      EXPECT_TRUE(same.ok()) << c.name << " " << d << ": " << same.ToString();
    }
  }
}

TEST(DefaultSpaceTest, AnnotateMisuseIsAnError) {
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  Result<tir::Schedule> s = tir::Schedule::Create(f, 1);
  ASSERT_TRUE(s.ok());
  Result<tir::ExprRV> v = s->SampleCategorical({4}, {1.0});
  ASSERT_TRUE(v.ok());
  Status empty = s->Annotate("", *v);
  EXPECT_NE(empty.message().find("annotate: the key is empty"), std::string::npos) << empty.ToString();
  Status unknown = s->Annotate("kiln.knob.matmul.mr", tir::ExprRV(99));
  EXPECT_NE(unknown.message().find("v99 is not a sampled value"), std::string::npos) << unknown.ToString();
  // A damaged trace: annotate with a loop instead of a sampled value.
  ASSERT_TRUE(s->Annotate("kiln.knob.matmul.mr", *v).ok());
  tir::Trace t = s->trace();
  tir::Instruction bad = t.instructions().back();
  bad.inputs[1] = tir::TraceArg::Int(3);
  t.SetLast(bad);
  Result<tir::Schedule> r = tir::Schedule::Replay(f, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("annotate takes a key and one sampled value"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace tune
}  // namespace kiln
