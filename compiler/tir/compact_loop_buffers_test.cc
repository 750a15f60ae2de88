// CompactLoopBuffers: a buffer holding one slice per iteration of its loop
// moves inside that loop with the slice's dimension of extent 1, with the
// same numbers as before; buffers whose iterations could share a slice and
// too large slices stay.
#include "compiler/tir/compact_loop_buffers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// As fusion leaves a concatenation max-pooled channel by channel: the copy
// and the pool share the channel loop.
const char* kConcatPool = R"(
@T.prim_func
def concat_pool(a: T.Buffer((1, 3, 6, 6), "float32"), b: T.Buffer((1, 2, 6, 6), "float32"), out: T.Buffer((1, 5, 3, 3), "float32")):
    t = T.decl_buffer((1, 5, 6, 6), "float32")
    for i0 in range(T.int64(1)):
        for c in T.parallel(T.int64(5)):
            for y in range(T.int64(6)):
                for x in T.vectorized(T.int64(6)):
                    t[i0, c, y, x] = T.if_then_else(c < T.int64(3), a[i0, c, y, x], b[i0, c - T.int64(3), y, x])
            for y in range(T.int64(3)):
                for x in range(T.int64(3)):
                    out[i0, c, y, x] = T.max(T.max(t[i0, c, y * T.int64(2), x * T.int64(2)], t[i0, c, y * T.int64(2) + T.int64(1), x * T.int64(2)]), T.max(t[i0, c, y * T.int64(2), x * T.int64(2) + T.int64(1)], t[i0, c, y * T.int64(2) + T.int64(1), x * T.int64(2) + T.int64(1)]))
)";

TEST(CompactLoopBuffersTest, PerChannelSliceMovesIntoTheChannelLoop) {
  PrimFunc f = ParseFunc(kConcatPool, "concat_pool");
  PrimFunc out = CompactLoopBuffers(f);
  ASSERT_NE(out, f);
  testing::StmtCensus c = testing::CountStmts(out);
  ASSERT_EQ(c.allocations.size(), 1u) << testing::Print(out);
  EXPECT_EQ(c.allocations[0].depth, 2) << testing::Print(out);  // inside i0 and c
  EXPECT_EQ(c.allocations[0].shape, (std::vector<int64_t>{1, 1, 6, 6})) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

TEST(CompactLoopBuffersTest, SharedAndLargeSlicesStay) {
  // The outer loop k does not index t: iteration k + 1 reads what k wrote.
  PrimFunc carried = ParseFunc(R"(
@T.prim_func
def carried(a: T.Buffer((4, 8), "float32"), out: T.Buffer((4, 8), "float32")):
    t = T.decl_buffer((4, 8), "float32")
    for k in range(T.int64(3)):
        for i in range(T.int64(4)):
            for j in range(T.int64(8)):
                if k == T.int64(0):
                    t[i, j] = T.float32(0)
                t[i, j] = t[i, j] + a[i, j]
                out[i, j] = t[i, j]
)",
                               "carried");
  EXPECT_EQ(CompactLoopBuffers(carried), carried);
  // Two loops over i: the slice written by the first is read by the second.
  PrimFunc two_loops = ParseFunc(R"(
@T.prim_func
def two_loops(a: T.Buffer((4, 8), "float32"), out: T.Buffer((4, 8), "float32")):
    t = T.decl_buffer((4, 8), "float32")
    for i in range(T.int64(4)):
        for j in range(T.int64(8)):
            t[i, j] = a[i, j] * T.float32(2)
    for i in range(T.int64(4)):
        for j in range(T.int64(8)):
            out[i, j] = t[i, j] + T.float32(1)
)",
                                 "two_loops");
  EXPECT_EQ(CompactLoopBuffers(two_loops), two_loops);
  // A slice of 64 x 256 floats (64 KB) is over kMaxCompactedBytes.
  PrimFunc large = ParseFunc(R"(
@T.prim_func
def large(a: T.Buffer((2, 64, 256), "float32"), out: T.Buffer((2, 64, 256), "float32")):
    t = T.decl_buffer((2, 64, 256), "float32")
    for c in range(T.int64(2)):
        for i, j in T.grid(T.int64(64), T.int64(256)):
            t[c, i, j] = a[c, i, j] * T.float32(2)
        for i, j in T.grid(T.int64(64), T.int64(256)):
            out[c, i, j] = t[c, i, j] + T.float32(1)
)",
                             "large");
  EXPECT_EQ(CompactLoopBuffers(large), large);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
