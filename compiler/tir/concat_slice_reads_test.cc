// ReadConcatSlicesInPlace: a concatenation staged per channel for a fused
// pool becomes one loop per source whose pool reads the source in place,
// with the same numbers; stagings it cannot drop stay.
#include "compiler/tir/concat_slice_reads.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// As CompactLoopBuffers leaves SqueezeNet's concatenation + max pool: one
// channel's slice staged in t, then pooled from it.
const char* kStaged = R"(
@T.prim_func
def staged(a: T.Buffer((1, 3, 6, 6), "float32"), b: T.Buffer((1, 2, 6, 6), "float32"), out: T.Buffer((1, 5, 3, 3), "float32")):
    for i0 in range(T.int64(1)):
        for c in T.parallel(T.int64(5)):
            t = T.decl_buffer((6, 6), "float32")
            for y in range(T.int64(6)):
                for x in T.vectorized(T.int64(6)):
                    t[y, x] = T.if_then_else(c < T.int64(3), a[i0, c, y, x], b[i0, c - T.int64(3), y, x])
            for y in range(T.int64(3)):
                for x in range(T.int64(3)):
                    out[i0, c, y, x] = T.max(T.max(t[y * T.int64(2), x * T.int64(2)], t[y * T.int64(2) + T.int64(1), x * T.int64(2)]), T.max(t[y * T.int64(2), x * T.int64(2) + T.int64(1)], t[y * T.int64(2) + T.int64(1), x * T.int64(2) + T.int64(1)]))
)";

TEST(ConcatSliceReadsTest, PoolReadsEachSourceInPlace) {
  PrimFunc f = ParseFunc(kStaged, "staged");
  PrimFunc out = ReadConcatSlicesInPlace(f);
  ASSERT_NE(out, f);
  const std::string text = testing::Print(out);
  testing::StmtCensus c = testing::CountStmts(out);
  EXPECT_EQ(c.allocates, 0) << text;
  EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
  EXPECT_NE(text.find("for c in T.parallel(T.int64(3)):"), std::string::npos) << text;
  EXPECT_NE(text.find("for c in T.parallel(T.int64(2)):"), std::string::npos) << text;
  EXPECT_NE(text.find("out[i0, c + 3, y, x] = T.max(T.max(b[i0, c, y * 2, x * 2], b[i0, c, y * 2 + 1, x * 2])"),
            std::string::npos)
      << text;
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
}

TEST(ConcatSliceReadsTest, StagingsThatCannotGoStay) {
  // The consumer writes into a source: the staged copy is a snapshot.
  std::string writes = kStaged;
  writes.replace(writes.find("out[i0, c, y, x] ="), 18, "a[i0, 0, y, x] =");
  PrimFunc w = ParseFunc(writes, "staged");
  EXPECT_EQ(ReadConcatSlicesInPlace(w), w);
  // The fill covers part of the buffer only (rows 0..4 of 6).
  std::string partial = kStaged;
  partial.replace(partial.find("for y in range(T.int64(6)):"), 27, "for y in range(T.int64(5)):");
  PrimFunc p = ParseFunc(partial, "staged");
  EXPECT_EQ(ReadConcatSlicesInPlace(p), p);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
