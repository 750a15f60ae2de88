// InlineElementwise: chains of elementwise temporaries collapse into the
// nest that produces their first value (forward and reverse inlining), with
// the same numbers as before; reductions, temporaries read twice, and
// broadcasts that would recompute too much are left alone.
#include "compiler/tir/inline_elementwise.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::CountStmts;
using testing::SameNumbers;
using testing::StmtCensus;


// As the Winograd output transform and its epilogue are fused: a producer
// storing two columns per iteration, then add, relu (one nest), then a
// multiply by another input.
const char* kChain = R"(
@T.prim_func
def chain(a: T.Buffer((8, 6), "float32"), b: T.Buffer((8, 6), "float32"), out: T.Buffer((8, 6), "float32")):
    t0 = T.decl_buffer((8, 6), "float32")
    t1 = T.decl_buffer((8, 6), "float32")
    t2 = T.decl_buffer((8, 6), "float32")
    for i, j in T.grid(T.int64(8), T.int64(3)):
        t0[i, j * T.int64(2)] = a[i, j * T.int64(2)] * T.float32(2)
        t0[i, j * T.int64(2) + T.int64(1)] = a[i, j * T.int64(2) + T.int64(1)] - T.float32(1)
    for i, j in T.grid(T.int64(8), T.int64(6)):
        t1[i, j] = t0[i, j] + b[i, j]
        t2[i, j] = T.max(t1[i, j], T.float32(0))
    for i, j in T.grid(T.int64(8), T.int64(6)):
        out[i, j] = t2[i, j] * b[i, j]
)";

TEST(InlineElementwiseTest, ChainCollapsesIntoTheProducer) {
  PrimFunc f = ParseFunc(kChain, "chain");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 2) << testing::Print(out);  // the producer's two stores, now to `out`
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// A concatenation reading the temporary at shifted channels (forward only:
// the consumer is twice the temporary's size).
TEST(InlineElementwiseTest, ConcatenationInlinesItsInput) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def concat(a: T.Buffer((4, 5), "float32"), b: T.Buffer((4, 5), "float32"), out: T.Buffer((8, 5), "float32")):
    t0 = T.decl_buffer((4, 5), "float32")
    for i, j in T.grid(T.int64(4), T.int64(5)):
        t0[i, j] = T.max(b[i, j] + T.float32(1), T.float32(0))
    for i, j in T.grid(T.int64(8), T.int64(5)):
        out[i, j] = T.if_then_else(i < T.int64(4), a[i, j], t0[i - T.int64(4), j])
)",
                         "concat");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  EXPECT_EQ(CountStmts(out).allocates, 0) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// After a schedule: plain stores of a window (as pool_schedule writes them,
// a border store and a vectorized interior) take the bias + relu that
// follows, which reads the batch dimension of one as 0.
TEST(InlineElementwiseTest, ScheduledStoresTakeTheirEpilogue) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def pool(a: T.Buffer((1, 4, 10), "float32"), bias: T.Buffer((4,), "float32"), out: T.Buffer((1, 4, 5), "float32")):
    t0 = T.decl_buffer((1, 4, 5), "float32")
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(4)):
            t0[n, c, T.int64(0)] = a[n, c, T.int64(0)]
            for x in T.vectorized(T.int64(4)):
                t0[n, c, x + T.int64(1)] = T.max(a[n, c, x * T.int64(2) + T.int64(1)], a[n, c, x * T.int64(2) + T.int64(2)])
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(4)):
            for x in T.vectorized(T.int64(5)):
                out[n, c, x] = T.max(t0[T.int64(0), c, x] + bias[c], T.float32(0))
)",
                         "pool");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 2) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// A transpose (NHWC -> NCHW) read by a packing nest as a convolution
// schedule writes it (lets, a guard, a flat destination index): the packing
// reads the NHWC input, and the transposed temporary goes.
TEST(InlineElementwiseTest, CopyOfATransposeReadsItsSource) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def pack(x: T.Buffer((2, 4, 5, 3), "float32"), out: T.Buffer((2, 3, 1, 30), "float32")):
    t0 = T.decl_buffer((2, 3, 4, 5), "float32")
    for n in T.parallel(T.int64(2)):
        for c, h in T.grid(T.int64(3), T.int64(4)):
            for w in T.vectorized(T.int64(5)):
                t0[n, c, h, w] = x[n, h, w, c]
    for p in T.parallel(T.int64(6)):
        n: T.int64 = p // T.int64(3)
        ch: T.int64 = p % T.int64(3)
        for r in range(T.int64(6)):
            if r < T.int64(4):
                for b in T.vectorized(T.int64(5)):
                    out[n, ch, T.int64(0), r * T.int64(5) + b] = t0[n, ch, r, b]
            else:
                for z in T.vectorized(T.int64(5)):
                    out[n, ch, T.int64(0), r * T.int64(5) + z] = T.float32(0)
)",
                         "pack");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 2) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// Silero VAD's STFT input with a symbolic batch of windows: the reflect pad
// ran as one parallel loop fused over (window, column), indexing t0 by
// v // 12 and v % 12, and the convolution's staging copied windows out of
// t0. The copy now reads x through the pad's indices, with v // 12 and
// v % 12 replaced by the staging's own indices (no division left).
const char* kFusedPad = R"(
@T.prim_func
def stft_stage(x: T.Buffer((3, 8), "float32"), col: T.Buffer((3, 2, 8), "float32")):
    t0 = T.decl_buffer((3, 1, 12), "float32")
    for v in T.parallel(T.int64(36)):
        for c in range(T.int64(1)):
            t0[v // T.int64(12), c, v % T.int64(12)] = x[v // T.int64(12), T.Select(v % T.int64(12) < T.int64(2), T.int64(2) - v % T.int64(12), T.Select(v % T.int64(12) >= T.int64(10), T.int64(17) - v % T.int64(12), v % T.int64(12) - T.int64(2)))]
    for n in T.parallel(T.int64(3)):
        for p, k in T.grid(T.int64(2), T.int64(8)):
            col[n, p, k] = t0[n, T.int64(0), p * T.int64(4) + k]
)";

TEST(InlineElementwiseTest, CopyOfAPadOverFusedLoopsReadsItsSource) {
  PrimFunc f = ParseFunc(kFusedPad, "stft_stage");
  PrimFunc out = InlineElementwise(f, /*after_schedule=*/true);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 1) << testing::Print(out);
  std::string text = testing::Print(out);
  EXPECT_EQ(text.find("//"), std::string::npos) << text;
  EXPECT_EQ(text.find("%"), std::string::npos) << text;
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
}

// A fused loop that does not come apart into the stored indices (its
// remainder's dimension is not the divisor, or it is divided only) stays.
TEST(InlineElementwiseTest, FusedLoopsThatDoNotInvertStay) {
  const char* texts[] = {
      R"(
@T.prim_func
def f(x: T.Buffer((36,), "float32"), col: T.Buffer((3, 2, 8), "float32")):
    t0 = T.decl_buffer((6, 12), "float32")
    for v in range(T.int64(36)):
        t0[v // T.int64(6), v % T.int64(6)] = x[v]
    for n, p, k in T.grid(T.int64(3), T.int64(2), T.int64(8)):
        col[n, p, k] = t0[n, p * T.int64(4) + k]
)",
      R"(
@T.prim_func
def f(x: T.Buffer((36,), "float32"), col: T.Buffer((3, 2, 8), "float32")):
    t0 = T.decl_buffer((3, 12), "float32")
    for v in range(T.int64(36)):
        for k in range(T.int64(12)):
            t0[v // T.int64(12), k] = x[v]
    for n, p, k in T.grid(T.int64(3), T.int64(2), T.int64(8)):
        col[n, p, k] = t0[n, p * T.int64(4) + k]
)"};
  for (const char* text : texts) {
    PrimFunc f = ParseFunc(text, "f");
    EXPECT_EQ(InlineElementwise(f, /*after_schedule=*/true), f) << text;
  }
}

// After a schedule, a consumer reading the temporary twice at its point
// (SiLU after a strided depthwise convolution's rows: x * sigmoid(x)) takes
// the producer's cheap stores, each value repeated; before the schedules
// (the default), and with a producer value that calls exp, it does not.
const char* kSiluAfterRows = R"(
@T.prim_func
def silu(a: T.Buffer((1, 3, 9), "float32"), bias: T.Buffer((3,), "float32"), out: T.Buffer((1, 3, 4), "float32")):
    t0 = T.decl_buffer((1, 3, 4), "float32")
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(3)):
            t0[n, c, T.int64(0)] = a[n, c, T.int64(0)] * T.float32(2) + bias[c]
            for x in T.vectorized(T.int64(3)):
                t0[n, c, x + T.int64(1)] = T.max(a[n, c, x * T.int64(2) + T.int64(1)], a[n, c, x * T.int64(2) + T.int64(2)])
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(3)):
            for x in T.vectorized(T.int64(4)):
                out[n, c, x] = t0[T.int64(0), c, x] * T.sigmoid(t0[T.int64(0), c, x])
)";

TEST(InlineElementwiseTest, ScheduledStoresTakeAnEpilogueReadingThemTwice) {
  PrimFunc f = ParseFunc(kSiluAfterRows, "silu");
  EXPECT_EQ(InlineElementwise(f), f);  // before the schedules: left alone
  PrimFunc out = InlineElementwise(f, /*after_schedule=*/true);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 2) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);

  // A producer value with a call (exp) would run twice per element: kept.
  std::string costly = kSiluAfterRows;
  const std::string from = "a[n, c, T.int64(0)] * T.float32(2)";
  costly.replace(costly.find(from), from.size(), "T.exp(a[n, c, T.int64(0)])");
  PrimFunc g = ParseFunc(costly, "silu");
  EXPECT_EQ(InlineElementwise(g, /*after_schedule=*/true), g);
  // A producer value of three loads (a window's taps summed): kept.
  std::string taps = kSiluAfterRows;
  const std::string two = "a[n, c, x * T.int64(2) + T.int64(2)])";
  taps.replace(taps.find(two), two.size(), "a[n, c, x * T.int64(2) + T.int64(2)]) + bias[c]");
  PrimFunc t3 = ParseFunc(taps, "silu");
  EXPECT_EQ(InlineElementwise(t3, /*after_schedule=*/true), t3);
  // Read twice at different points (a stencil): kept.
  std::string shifted = kSiluAfterRows;
  const std::string at = "T.sigmoid(t0[T.int64(0), c, x])";
  shifted.replace(shifted.find(at), at.size(), "T.sigmoid(t0[T.int64(0), c, T.int64(3) - x])");
  PrimFunc h = ParseFunc(shifted, "silu");
  EXPECT_EQ(InlineElementwise(h, /*after_schedule=*/true), h);
}

// A register tile's value with a BN scale and shift (a depthwise kernel's
// tile stores, its hard-swish after them): three loads, one of them from a
// "local" buffer (a register), cheap to repeat.
const char* kScaledTileThenSilu = R"(
@T.prim_func
def bn(a: T.Buffer((1, 3, 4), "float32"), scale: T.Buffer((3,), "float32"), shift: T.Buffer((3,), "float32"), out: T.Buffer((1, 3, 4), "float32")):
    t0 = T.decl_buffer((1, 3, 4), "float32")
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(3)):
            acc = T.decl_buffer((4,), "float32", scope="local")
            for x in T.vectorized(T.int64(4)):
                acc[x] = a[n, c, x] * T.float32(2)
            for x in T.vectorized(T.int64(4)):
                t0[n, c, x] = acc[x] * scale[c] + shift[c]
    for n in range(T.int64(1)):
        for c in T.parallel(T.int64(3)):
            for x in T.vectorized(T.int64(4)):
                out[n, c, x] = t0[T.int64(0), c, x] * T.sigmoid(t0[T.int64(0), c, x])
)";

TEST(InlineElementwiseTest, RegisterTileLoadsAreCheapToRepeat) {
  PrimFunc f = ParseFunc(kScaledTileThenSilu, "bn");
  PrimFunc out = InlineElementwise(f, /*after_schedule=*/true);
  ASSERT_NE(out, f);
  EXPECT_EQ(testing::Print(out).find("t0 = T.decl_buffer"), std::string::npos) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  // The same tile in memory ("global"): three loads of memory, kept.
  std::string global = kScaledTileThenSilu;
  const std::string local = ", scope=\"local\")";
  global.replace(global.find(local), local.size(), ")");
  PrimFunc g = ParseFunc(global, "bn");
  EXPECT_EQ(InlineElementwise(g, /*after_schedule=*/true), g) << testing::Print(g);
}

// A matmul's register tile (6 rows x 32 columns, unrolled and vectorized)
// stored with its bias, then x * sigmoid(x): repeated into the tile's
// stores, the sigmoid of 192 values at once made ppocrv4_rec's symbolic
// matmul + add + swish kernels 17 -> 21 us; the swish stays a pass of its
// own. Hard-swish (no call) still goes into the tile's stores.
const char* kMatmulTileThenSwish = R"(
@T.prim_func
def mm(a: T.Buffer((6, 32), "float32"), bias: T.Buffer((32,), "float32"), out: T.Buffer((6, 32), "float32")):
    t0 = T.decl_buffer((6, 32), "float32")
    for tile in T.parallel(T.int64(1)):
        acc = T.decl_buffer((6, 32), "float32", scope="local")
        for ii in T.unroll(T.int64(6)):
            for jj in T.vectorized(T.int64(32)):
                acc[ii, jj] = a[ii, jj] * T.float32(2)
        for ii in T.unroll(T.int64(6)):
            for jj in T.vectorized(T.int64(32)):
                t0[ii, jj] = acc[ii, jj] + bias[jj]
    for i in T.parallel(T.int64(6)):
        for j in T.vectorized(T.int64(32)):
            out[i, j] = t0[i, j] * T.sigmoid(t0[i, j])
)";

TEST(InlineElementwiseTest, WideTilesKeepAMathEpilogueReadingThemTwice) {
  PrimFunc f = ParseFunc(kMatmulTileThenSwish, "mm");
  EXPECT_EQ(InlineElementwise(f, /*after_schedule=*/true), f) << testing::Print(f);
  // Hard-swish over the same tile: min / max, no call, taken.
  std::string hs = kMatmulTileThenSwish;
  const std::string from = "T.sigmoid(t0[i, j])";
  hs.replace(hs.find(from), from.size(), "T.min(T.max(t0[i, j] + T.float32(3), T.float32(0)), T.float32(6))");
  PrimFunc g = ParseFunc(hs, "mm");
  PrimFunc out = InlineElementwise(g, /*after_schedule=*/true);
  ASSERT_NE(out, g);
  EXPECT_EQ(testing::Print(out).find("t0 = T.decl_buffer"), std::string::npos) << testing::Print(out);
  Status s = SameNumbers(g, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  // A tile of 4 x 32 (8 vectors): the sigmoid goes into its stores.
  std::string narrow = kMatmulTileThenSwish;
  for (const char* shape : {"(6, 32)", "T.int64(6)"}) {
    std::string to = std::string(shape) == "(6, 32)" ? "(4, 32)" : "T.int64(4)";
    for (size_t at = narrow.find(shape); at != std::string::npos; at = narrow.find(shape, at + to.size()))
      narrow.replace(at, std::string(shape).size(), to);
  }
  PrimFunc n = ParseFunc(narrow, "mm");
  PrimFunc taken = InlineElementwise(n, /*after_schedule=*/true);
  ASSERT_NE(taken, n) << narrow;
  s = SameNumbers(n, taken);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(taken);
}

// An STFT's magnitude as a fused strided_slice chain lowers it: a staged
// copy of the spectrum, its real and imaginary halves copied out of it, then
// sqrt(re^2 + im^2). The copy read twice gives each half its source; then
// every temporary goes, and one nest reads the input.
TEST(InlineElementwiseTest, CopyReadTwiceGivesEachReaderItsSource) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def mag(a: T.Buffer((1, 6, 3), "float32"), out: T.Buffer((1, 3, 3), "float32")):
    t0 = T.decl_buffer((1, 6, 3), "float32")
    re = T.decl_buffer((1, 3, 3), "float32")
    im = T.decl_buffer((1, 3, 3), "float32")
    for i0 in range(T.int64(1)):
        for i1, i2 in T.grid(T.int64(6), T.int64(3)):
            t0[i0, i1, i2] = a[i0, i1, i2]
        for i1, i2 in T.grid(T.int64(3), T.int64(3)):
            re[i0, i1, i2] = t0[i0, i1, i2]
            im[i0, i1, i2] = t0[i0, i1 + T.int64(3), i2]
            out[i0, i1, i2] = T.sqrt(re[i0, i1, i2] * re[i0, i1, i2] + im[i0, i1, i2] * im[i0, i1, i2])
)", "mag");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 1) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  // After the schedules a copy read twice is theirs (packing): it stays.
  EXPECT_EQ(CountStmts(InlineElementwise(f, /*after_schedule=*/true)).allocates, 3);
}

// A 1-D convolution's tiles over a symbolic batch (conv_dot_schedule.h:
// one tile shape per row width, by a run-time test), then its bias and relu
// in a loop that SpreadSymbolicParallel fused over (image, channel): t0 is
// read at v // 4 and v % 4. After the schedules each tile's store takes the
// epilogue at its own indices, with no division left.
const char* kTilesThenFusedEpilogue = R"(
@T.prim_func
def conv_epilogue(a: T.Buffer((2, 4, 1, 3), "float32"), bias: T.Buffer((4, 1), "float32"), out: T.Buffer((2, 4, 1, 3), "float32")):
    t0 = T.decl_buffer((2, 4, 1, 3), "float32")
    for n in T.parallel(T.int64(2)):
        for o in range(T.int64(4)):
            if o < T.int64(2):
                for x in range(T.int64(3)):
                    t0[n, o, T.int64(0), x] = a[n, o, T.int64(0), x] * T.float32(2)
            else:
                for x in range(T.int64(3)):
                    t0[n, o, T.int64(0), x] = a[n, o, T.int64(0), x] - T.float32(1)
    for v in T.parallel(T.int64(8)):
        for y in range(T.int64(1)):
            for x in T.vectorized(T.int64(3)):
                out[v // T.int64(4), v % T.int64(4), y, x] = T.max(t0[v // T.int64(4), v % T.int64(4), y, x] + bias[v % T.int64(4), T.int64(0)], T.float32(0))
)";

TEST(InlineElementwiseTest, TilesTakeAnEpilogueOverFusedLoops) {
  PrimFunc f = ParseFunc(kTilesThenFusedEpilogue, "conv_epilogue");
  PrimFunc out = InlineElementwise(f, /*after_schedule=*/true);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  std::string text = testing::Print(out);
  EXPECT_EQ(c.allocates, 0) << text;
  EXPECT_EQ(c.stores, 2) << text;  // the two tile stores, now to `out`
  EXPECT_EQ(text.find("//"), std::string::npos) << text;
  EXPECT_EQ(text.find("%"), std::string::npos) << text;
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
}

// Fused loops that do not visit t0 once per element stay: a loop over 6
// of the 8 (image, channel) pairs, a remainder that is not the channel
// count, and a load at another point than the store.
TEST(InlineElementwiseTest, FusedEpiloguesThatDoNotCoverStay) {
  const std::string base = kTilesThenFusedEpilogue;
  const std::pair<std::string, std::string> edits[] = {
      {"for v in T.parallel(T.int64(8)):", "for v in T.parallel(T.int64(6)):"},
      {"out[v // T.int64(4), v % T.int64(4), y, x] = T.max(t0[v // T.int64(4), v % T.int64(4), y, x]",
       "out[v // T.int64(2), v % T.int64(2), y, x] = T.max(t0[v // T.int64(2), v % T.int64(2), y, x]"},
      {"T.max(t0[v // T.int64(4), v % T.int64(4), y, x]", "T.max(t0[v // T.int64(4), T.int64(3) - v % T.int64(4), y, x]"},
  };
  for (const auto& [from, to] : edits) {
    std::string text = base;
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
    PrimFunc f = ParseFunc(text, "conv_epilogue");
    PrimFunc out = InlineElementwise(f, /*after_schedule=*/true);
    EXPECT_EQ(CountStmts(out).allocates, 1) << testing::Print(out);
  }
}

// A pad of the lowest value (as the ONNX importer pads a MaxPool input that
// may be shorter than the window: 3 rows to 4) read by a 2 x 2 / 2 max
// window whose taps are tested loads: the pad goes into the taps, one test
// over one load of the source, and the padded copy goes.
const char* kPadMaxPool = R"(
@T.prim_func
def f(a: T.Buffer((2, 3, 6), "float32"), out: T.Buffer((2, 2, 3), "float32")):
    t0 = T.decl_buffer((2, 4, 6), "float32")
    for c, i, j in T.grid(T.int64(2), T.int64(4), T.int64(6)):
        t0[c, i, j] = T.if_then_else(i < T.int64(3), a[c, i, j], T.float32(-3.4028234663852886e+38))
    for c, y, x, ky, kx in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(2), T.int64(2)):
        if ky == T.int64(0) and kx == T.int64(0):
            out[c, y, x] = T.float32(-3.4028234663852886e+38)
        out[c, y, x] = T.max(out[c, y, x], T.if_then_else(y * T.int64(2) + ky < T.int64(4), t0[c, y * T.int64(2) + ky, x * T.int64(2) + kx], T.float32(-3.4028234663852886e+38)))
)";

TEST(InlineElementwiseTest, PadGoesIntoAMaxWindowsTaps) {
  PrimFunc f = ParseFunc(kPadMaxPool, "f");
  PrimFunc out = InlineElementwise(f);
  ASSERT_NE(out, f);
  StmtCensus c = CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << testing::Print(out);
  EXPECT_EQ(c.stores, 2) << testing::Print(out);  // the window's init and update
  std::string text = testing::Print(out);
  EXPECT_EQ(text.find("T.if_then_else(T.if_then_else"), std::string::npos) << text;  // the tests merged
  EXPECT_NE(text.find("a[c, y * 2 + ky"), std::string::npos) << text;
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
}

// The same pad read by a sum window (an average pool: the pad would be
// counted), or by a max window whose own test pads with another value: left
// as they are.
TEST(InlineElementwiseTest, PadStaysBeforeOtherWindows) {
  std::string sum = kPadMaxPool;
  sum.replace(sum.find("T.max(out[c, y, x], "), 20, "(out[c, y, x] + ");
  std::string other = kPadMaxPool;
  other.replace(other.rfind("T.float32(-3.4028234663852886e+38)"), 34, "T.float32(0)");
  for (const std::string& src : {sum, other}) {
    PrimFunc f = ParseFunc(src.c_str(), "f");
    PrimFunc out = InlineElementwise(f);
    EXPECT_EQ(CountStmts(out).allocates, 1) << testing::Print(out);
  }
}

TEST(InlineElementwiseTest, LeavesReductionsSharedAndBroadcastTemporaries) {
  const char* cases[] = {
      // A reduction consumer (sum over j): its nest stays for the schedules.
      R"(
@T.prim_func
def f(a: T.Buffer((8, 6), "float32"), out: T.Buffer((8,), "float32")):
    t0 = T.decl_buffer((8, 6), "float32")
    for i, j in T.grid(T.int64(8), T.int64(6)):
        t0[i, j] = a[i, j] * T.float32(2)
    for i, j in T.grid(T.int64(8), T.int64(6)):
        if j == T.int64(0):
            out[i] = T.float32(0)
        out[i] = out[i] + t0[i, j]
)",
      // Read twice.
      R"(
@T.prim_func
def f(a: T.Buffer((8, 6), "float32"), out: T.Buffer((8, 6), "float32")):
    t0 = T.decl_buffer((8, 6), "float32")
    for i, j in T.grid(T.int64(8), T.int64(6)):
        t0[i, j] = T.exp(a[i, j])
    for i, j in T.grid(T.int64(8), T.int64(6)):
        out[i, j] = t0[i, j] * t0[i, j]
)",
      // A copy of a copy, but read by a reduction: left for its schedule.
      R"(
@T.prim_func
def f(a: T.Buffer((6, 8), "float32"), out: T.Buffer((8,), "float32")):
    t0 = T.decl_buffer((8, 6), "float32")
    for i, j in T.grid(T.int64(8), T.int64(6)):
        t0[i, j] = a[j, i]
    for i, j in T.grid(T.int64(8), T.int64(6)):
        if j == T.int64(0):
            out[i] = T.float32(0)
        out[i] = out[i] + t0[i, j]
)",
      // A broadcast: 8 values read by 48 outputs.
      R"(
@T.prim_func
def f(a: T.Buffer((8, 6), "float32"), out: T.Buffer((8, 6), "float32")):
    t0 = T.decl_buffer((8,), "float32")
    for i in range(T.int64(8)):
        t0[i] = T.sqrt(a[i, T.int64(0)])
    for i, j in T.grid(T.int64(8), T.int64(6)):
        out[i, j] = a[i, j] * t0[i]
)",
  };
  for (const char* src : cases) {
    PrimFunc f = ParseFunc(src, "f");
    PrimFunc out = InlineElementwise(f);
    EXPECT_EQ(out, f) << testing::Print(out);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
