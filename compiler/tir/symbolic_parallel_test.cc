// SpreadSymbolicParallel, as before/after TIR text: a parallel loop over a
// symbolic batch takes in the channel loop below it (through loops of
// extent 1), or hands its parallelism to the loops of a sequence; loops
// whose iterations are not independent, static parallel loops and inner
// extents that use the batch stay as they are.
#include "compiler/tir/symbolic_parallel.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/default_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;

// The body of `f`'s text from its first loop on (the header lines, which
// repeat the parameters, left out).
std::string Loops(const PrimFunc& f) {
  std::string text = Print(f);
  size_t at = text.find("        for ");
  return at == std::string::npos ? text : text.substr(at);
}

TEST(SymbolicParallelTest, BatchAndChannelsBecomeOneParallelLoop) {
  // A nearest resize by 2 over a symbolic batch, as the default schedule
  // leaves it (PP-OCRv4 det's FPN): at n = 1 one thread did all of it.
  PrimFunc before = ParseFunc(R"(
@T.prim_func
def resize(a_handle: T.handle, b_handle: T.handle, h: T.int64, w: T.int64):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 96, h, w), "float32")
    b = T.match_buffer(b_handle, (n, 96, h * 2, w * 2), "float32")
    for i0 in T.parallel(n):
        for i1, i2 in T.grid(T.int64(96), h * 2):
            for i3 in T.vectorized(w * 2):
                b[i0, i1, i2, i3] = a[i0, i1, i2 // 2, i3 // 2]
)",
                              "resize");
  PrimFunc after = SpreadSymbolicParallel(before);
  ASSERT_NE(after, before);
  EXPECT_EQ(Loops(after), R"(        for i0_i1 in T.parallel(n * 96):
            for i2 in range(h * 2):
                for i3 in T.vectorized(w * 2):
                    b[i0_i1 // 96, i0_i1 % 96, i2, i3] = a[i0_i1 // 96, i0_i1 % 96, i2 // 2, i3 // 2]
)") << Print(after);
  // Rows of a run-time length under each channel: the division is
  // negligible there, so a thread hint adds no second copy.
  EXPECT_EQ(Print(SpreadSymbolicParallel(before, 4)), Print(after));
}

TEST(SymbolicParallelTest, ABatchOfAtLeastTheThreadsKeepsItsLoop) {
  // With a thread hint, the fused loop (a division per short row) runs only
  // for batches below the hint; larger ones keep the batch loop parallel
  // and the rows serial, as when the batch is pinned. One image's 1024
  // exponentials are enough work for a launch over 3 images.
  PrimFunc before = ParseFunc(R"(
@T.prim_func
def ex(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 128, 8), "float32")
    b = T.match_buffer(b_handle, (n, 128, 8), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(128)):
            for i2 in range(T.int64(8)):
                b[i0, i1, i2] = T.exp(a[i0, i1, i2])
)",
                              "ex");
  PrimFunc after = SpreadSymbolicParallel(before, 4);
  ASSERT_NE(after, before);
  std::string text = Print(after);
  EXPECT_NE(text.find(R"(        if n >= 4:
            for i0 in T.parallel(n):
                for i1, i2 in T.grid(T.int64(128), T.int64(8)):
                    b[i0, i1, i2] = T.exp(a[i0, i1, i2])
        else:
            for i0_i1 in T.parallel(n * 128):
                for i2 in range(T.int64(8)):
                    b[i0_i1 // 128, i0_i1 % 128, i2] = T.exp(a[i0_i1 // 128, i0_i1 % 128, i2])
)"), std::string::npos) << text;
  // Without a hint (or with one thread) the fused loop alone, as before.
  EXPECT_EQ(Print(SpreadSymbolicParallel(before, 1)), Print(SpreadSymbolicParallel(before)));
  EXPECT_EQ(Print(SpreadSymbolicParallel(before)).find("if n"), std::string::npos);
  // With two threads only batch 1 would take the fused loop, and one image
  // is below a launch's work (parallel_work.h): it would run serially with
  // a division per row. The nest stays as it was.
  EXPECT_EQ(SpreadSymbolicParallel(before, 2), before);
}

TEST(SymbolicParallelTest, ImagesTooSmallForALaunchKeepTheBatchLoop) {
  // romanizer_decoder's last-token gather: one 256-float row of a table per
  // image. Fused over (image, column), batch 1 ran 256 scalar iterations
  // with a division and a remainder each, serially (far below a launch's
  // work); left alone, each row is one contiguous copy.
  PrimFunc take = ParseFunc(R"(
@T.prim_func
def take(a: T.Buffer((160, 256), "float32"), idx_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    idx = T.match_buffer(idx_handle, (n,), "int64")
    b = T.match_buffer(b_handle, (n, 256), "float32")
    for image in T.parallel(n):
        for i0, i1 in T.grid(T.int64(1), T.int64(256)):
            b[i0 + image, i1] = a[T.Select(idx[i0 + image] < T.int64(0), idx[i0 + image] + T.int64(160), idx[i0 + image]), i1]
)",
                            "take");
  for (int threads : {0, 1, 2, 4, 16}) EXPECT_EQ(SpreadSymbolicParallel(take, threads), take) << threads;
  // Silero VAD's STFT magnitude (129 x 4 floats an image): fused it took
  // 10.5 us at batch 1 against 4.5 us as two loops (one thread, kiln-bench
  // trace medians); below a launch's work it now keeps its batch loop at
  // every hint up to 4.
  PrimFunc mag = ParseFunc(R"(
@T.prim_func
def mag(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 258, 5), "float32")
    b = T.match_buffer(b_handle, (n, 129, 4), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(129)):
            for i2 in T.vectorized(T.int64(4)):
                b[i0, i1, i2] = a[i0, i1, i2 + 1] * a[i0, i1 + 129, i2 + 1]
)",
                           "mag");
  for (int threads : {0, 2, 4}) EXPECT_EQ(SpreadSymbolicParallel(mag, threads), mag) << threads;
  // A larger image (256 x 256 floats) still spreads at batch 1.
  PrimFunc big = ParseFunc(R"(
@T.prim_func
def big(a_handle: T.handle, b_handle: T.handle):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 256, 256), "float32")
    b = T.match_buffer(b_handle, (n, 256, 256), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(256)):
            for i2 in range(T.int64(256)):
                b[i0, i1, i2] = a[i0, i1, i2] + T.float32(1)
)",
                           "big");
  EXPECT_NE(Print(SpreadSymbolicParallel(big, 2)).find("T.parallel(n * 256)"), std::string::npos)
      << Print(SpreadSymbolicParallel(big, 2));
}

TEST(SymbolicParallelTest, UnitLoopsStayBetween) {
  PrimFunc before = ParseFunc(R"(
@T.prim_func
def head(a_handle: T.handle, b_handle: T.handle, h: T.int64):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 1, h, 64), "float32")
    b = T.match_buffer(b_handle, (n, 1, h, 64), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(1)):
            for i2 in range(h):
                for i3 in T.vectorized(T.int64(64)):
                    b[i0, i1, i2, i3] = T.sigmoid(a[i0, i1, i2, i3])
)",
                              "head");
  PrimFunc after = SpreadSymbolicParallel(before);
  ASSERT_NE(after, before);
  // The rows are symbolic: no fused loop (it would divide by h), the batch
  // serial and the rows parallel.
  EXPECT_EQ(Loops(after), R"(        for i0, i1 in T.grid(n, T.int64(1)):
            for i2 in T.parallel(h):
                for i3 in T.vectorized(T.int64(64)):
                    b[i0, i1, i2, i3] = T.sigmoid(a[i0, i1, i2, i3])
)") << Print(after);
}

TEST(SymbolicParallelTest, SequenceLoopsTurnParallel) {
  // Two loops in the batch loop (an add, then a copy into a concatenation):
  // the batch runs serially, each channel loop in parallel; the scalar
  // statement between them stays.
  PrimFunc before = ParseFunc(R"(
@T.prim_func
def cat(a_handle: T.handle, s_handle: T.handle, c_handle: T.handle, h: T.int64):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 8, h), "float32")
    s = T.match_buffer(s_handle, (n,), "float32")
    c = T.match_buffer(c_handle, (n, 16, h), "float32")
    t = T.decl_buffer((n, 8, h), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(8)):
            for i2 in T.vectorized(h):
                t[i0, i1, i2] = a[i0, i1, i2] + T.float32(1)
        s[i0] = T.float32(0)
        for i1, i2 in T.grid(T.int64(16), h):
            c[i0, i1, i2] = T.if_then_else(i1 < T.int64(8), t[i0, i1 % T.int64(8), i2], a[i0, i1 % T.int64(8), i2])
)",
                              "cat");
  PrimFunc after = SpreadSymbolicParallel(before);
  ASSERT_NE(after, before);
  // The first loop turns parallel; the second reads t and a at i1 % 8, but
  // stores c only at i1: it does too. The scalar store stays serial.
  EXPECT_EQ(Loops(after), R"(        for i0 in range(n):
            for i1 in T.parallel(T.int64(8)):
                for i2 in T.vectorized(h):
                    t[i0, i1, i2] = a[i0, i1, i2] + T.float32(1)
            s[i0] = T.float32(0)
            for i1 in T.parallel(T.int64(16)):
                for i2 in range(h):
                    c[i0, i1, i2] = T.if_then_else(i1 < 8, t[i0, i1 % 8, i2], a[i0, i1 % 8, i2])
)") << Print(after);
}

TEST(SymbolicParallelTest, LeftAlone) {
  // Iteration i1 + 1 reads what i1 wrote (a running sum along channels).
  PrimFunc carried = ParseFunc(R"(
@T.prim_func
def carried(a_handle: T.handle, n: T.int64):
    a = T.match_buffer(a_handle, (n, 8), "float32")
    for i0 in T.parallel(n):
        for i1 in range(T.int64(7)):
            a[i0, i1 + T.int64(1)] = a[i0, i1 + T.int64(1)] + a[i0, i1]
)",
                               "carried");
  EXPECT_EQ(SpreadSymbolicParallel(carried), carried);
  // A static parallel loop is already spread.
  PrimFunc fixed = ParseFunc(R"(
@T.prim_func
def fixed(a: T.Buffer((4, 8), "float32")):
    for i0 in T.parallel(T.int64(4)):
        for i1 in range(T.int64(8)):
            a[i0, i1] = T.float32(0)
)",
                             "fixed");
  EXPECT_EQ(SpreadSymbolicParallel(fixed), fixed);
  // The inner extent uses the batch variable (a triangle).
  PrimFunc triangle = ParseFunc(R"(
@T.prim_func
def triangle(a_handle: T.handle, n: T.int64):
    a = T.match_buffer(a_handle, (n, n), "float32")
    for i0 in T.parallel(n):
        for i1 in range(i0):
            a[i0, i1] = T.float32(0)
)",
                                "triangle");
  EXPECT_EQ(SpreadSymbolicParallel(triangle), triangle);
}

TEST(SymbolicParallelTest, AnEpilogueJoinsItsProducerBeforeTheBatchLoopSplits) {
  // A transform's custom nest over a symbolic batch (the Winograd output
  // transform: one task per image and block of 16 channels) writing T, then
  // a PReLU reading T three times, as MTCNN's ONet fuses them. After the
  // default schedule and the driver's InlineElementwise after it, the PReLU
  // is in T's stores and T is gone (one pass over the batch's outputs, no
  // intermediate of the whole batch). With two threads the PReLU's batch
  // loop splits into two versions (n >= 2 or not), which the inlining did
  // not take: it stayed a second pass until the default schedule inlined
  // before splitting.
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def out_prelu(m_handle: T.handle, bias: T.Buffer((32,), "float32"), slope: T.Buffer((32,), "float32"), y_handle: T.handle):
    n = T.int64()
    m = T.match_buffer(m_handle, (n * 2, 16, 9), "float32")
    y = T.match_buffer(y_handle, (n, 32, 3, 3), "float32")
    t = T.decl_buffer((n, 32, 3, 3), "float32")
    for n_ob in T.parallel(n * 2):
        for ol in range(T.int64(16)):
            for i, j in T.grid(T.int64(3), T.int64(3)):
                t[n_ob // 2, n_ob % 2 * 16 + ol, i, j] = m[n_ob, ol, i * 3 + j] + bias[n_ob % 2 * 16 + ol]
    for i0, i1, i2, i3 in T.grid(n, T.int64(32), T.int64(3), T.int64(3)):
        y[i0, i1, i2, i3] = T.Select(t[i0, i1, i2, i3] >= T.float32(0), t[i0, i1, i2, i3], t[i0, i1, i2, i3] * slope[i1])
)",
                         "out_prelu");
  for (int threads : {1, 2}) {
    PrimFunc out = InlineElementwise(ApplyDefaultSchedule(f, threads), /*after_schedule=*/true);
    std::string text = Print(out);
    EXPECT_EQ(text.find("decl_buffer"), std::string::npos) << threads << " threads\n" << text;
    EXPECT_EQ(text.find("t["), std::string::npos) << threads << " threads\n" << text;
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
