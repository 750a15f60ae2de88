// FlattenTrailingReductions: a mean over the last two axes (static or
// symbolic) becomes one flat reduction (then vectorized by the row-reduction
// schedule) with the same numbers; reductions whose loads are not the trailing axes stay.
#include "compiler/tir/flatten_reduction.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/reduce_schedule.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::CountStmts;
using testing::SameNumbers;


// As legalize + LowerBlocks write R.mean(x, axis=[2, 3], keepdims=True).
const char* kMean = R"(
@T.prim_func
def mean(A: T.Buffer((1, 6, 13, 13), "float32"), M: T.Buffer((1, 6, 1, 1), "float32")):
    for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(6), T.int64(1), T.int64(1)):
        s = T.decl_buffer((1,), "float32")
        for k0, k1 in T.grid(T.int64(13), T.int64(13)):
            if k0 == T.int64(0) and k1 == T.int64(0):
                s[T.int64(0)] = T.float32(0)
            s[T.int64(0)] = s[T.int64(0)] + A[i0, i1, k0, k1]
        M[i0, i1, i2, i3] = s[T.int64(0)] / T.float32(169)
)";

TEST(FlattenReductionTest, MeanOverTwoAxesBecomesOneVectorizedRow) {
  PrimFunc f = ParseFunc(kMean, "mean");
  PrimFunc flat = FlattenTrailingReductions(f);
  ASSERT_NE(flat, f);
  EXPECT_EQ(CountStmts(flat).loops, CountStmts(f).loops - 1);  // k0, k1 -> k
  Status s = SameNumbers(f, flat);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(flat);
  PrimFunc vec = ScheduleRowReductions(flat, 1);
  EXPECT_GT(CountStmts(vec).vectorized, 0) << testing::Print(vec);
  s = SameNumbers(f, vec);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(vec);
}

// The same mean over a symbolic H x W (a model compiled for any image size):
// one flat loop over h * w, which the row-reduction schedule vectorizes with
// a tail. (Numbers: the corpus's PP-OCRv4 detector runs it.)
TEST(FlattenReductionTest, SymbolicExtentsFlattenToo) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def mean(a_handle: T.handle, M: T.Buffer((1, 6, 1, 1), "float32")):
    h = T.int64()
    w = T.int64()
    A = T.match_buffer(a_handle, (1, 6, h, w), "float32")
    for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(6), T.int64(1), T.int64(1)):
        s = T.decl_buffer((1,), "float32")
        for k0, k1 in T.grid(h, w):
            if k0 == T.int64(0) and k1 == T.int64(0):
                s[T.int64(0)] = T.float32(0)
            s[T.int64(0)] = s[T.int64(0)] + A[i0, i1, k0, k1]
        M[i0, i1, i2, i3] = s[T.int64(0)] / T.Cast("float32", h * w)
)", "mean");
  PrimFunc flat = FlattenTrailingReductions(f);
  ASSERT_NE(flat, f);
  EXPECT_EQ(CountStmts(flat).loops, CountStmts(f).loops - 1) << testing::Print(flat);
  PrimFunc vec = ScheduleRowReductions(flat, 1);
  EXPECT_GT(CountStmts(vec).vectorized, 0) << testing::Print(vec);
}

TEST(FlattenReductionTest, OtherReductionsStay) {
  const char* cases[] = {
      // The axes read transposed.
      R"(
@T.prim_func
def f(A: T.Buffer((6, 5, 4), "float32"), M: T.Buffer((6,), "float32")):
    for i, k0, k1 in T.grid(T.int64(6), T.int64(4), T.int64(5)):
        if k0 == T.int64(0) and k1 == T.int64(0):
            M[i] = T.float32(0)
        M[i] = M[i] + A[i, k1, k0]
)",
      // A window: the reduction axes are offsets of other indices.
      R"(
@T.prim_func
def f(A: T.Buffer((6, 8), "float32"), M: T.Buffer((5, 7), "float32")):
    for i, j, k0, k1 in T.grid(T.int64(5), T.int64(7), T.int64(2), T.int64(2)):
        if k0 == T.int64(0) and k1 == T.int64(0):
            M[i, j] = T.float32(0)
        M[i, j] = M[i, j] + A[i + k0, j + k1]
)",
  };
  for (const char* src : cases) {
    PrimFunc f = ParseFunc(src, "f");
    EXPECT_EQ(FlattenTrailingReductions(f), f) << src;
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
