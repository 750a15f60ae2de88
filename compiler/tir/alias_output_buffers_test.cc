// AliasOutputBuffers: a workspace of the output's shape whose last use is
// the output's element-by-element store lives in the output, with the same
// numbers; every condition that guards it keeps a kernel unchanged when it
// fails.
#include "compiler/tir/alias_output_buffers.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// Softmax over long rows as the row schedule leaves it: e is written, summed
// and read once more by the output's store. `tail` is the output statement.
std::string Softmax(const std::string& tail) {
  return R"(
@T.prim_func
def sm(a: T.Buffer((2, 64), "float32"), out: T.Buffer((2, 64), "float32")):
    e = T.decl_buffer((2, 64), "float32")
    for i in range(T.int64(2)):
        s = T.decl_buffer((1,), "float32")
        s[T.int64(0)] = T.float32(0)
        for j in T.parallel(T.int64(64)):
            e[i, j] = T.exp(a[i, j])
        for k in range(T.int64(64)):
            s[T.int64(0)] = s[T.int64(0)] + e[i, k]
)" + tail;
}

const char* kOutput = R"(        for j in T.parallel(T.int64(64)):
            out[i, j] = e[i, j] / s[T.int64(0)]
)";

TEST(AliasOutputBuffersTest, SoftmaxWorkspaceLivesInTheOutput) {
  PrimFunc f = ParseFunc(Softmax(kOutput), "sm");
  PrimFunc out = AliasOutputBuffers(f);
  ASSERT_NE(out, f);
  testing::StmtCensus c = testing::CountStmts(out);
  ASSERT_EQ(c.allocations.size(), 1u) << testing::Print(out);  // s only
  EXPECT_EQ(c.allocations[0].shape, (std::vector<int64_t>{1})) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// The same softmax over rows of symbolic length (YOLOv8's DFL softmax
// over h * w * 21 positions): the workspace's extent and the output's are
// equal expressions built separately, proven equal; the workspace lives in
// the output. One of another length keeps it.
std::string SymbolicSoftmax(const std::string& out_len) {
  return R"(
@T.prim_func
def sm(a_handle: T.handle, out_handle: T.handle, h: T.int64, w: T.int64):
    a = T.match_buffer(a_handle, (2, h * w * 21), "float32")
    out = T.match_buffer(out_handle, (2, )" + out_len + R"(), "float32")
    e = T.decl_buffer((2, h * (w * 21)), "float32")
    for i in range(T.int64(2)):
        s = T.decl_buffer((1,), "float32")
        s[T.int64(0)] = T.float32(0)
        for j in range(h * w * 21):
            e[i, j] = T.exp(a[i, j])
        for k in range(h * w * 21):
            s[T.int64(0)] = s[T.int64(0)] + e[i, k]
        for j in range(h * w * 21):
            out[i, j] = e[i, j] / s[T.int64(0)]
)";
}

TEST(AliasOutputBuffersTest, SymbolicRowsProvenEqualBeforeAfter) {
  PrimFunc f = ParseFunc(SymbolicSoftmax("h * w * 21"), "sm");
  PrimFunc out = AliasOutputBuffers(f);
  ASSERT_NE(out, f);
  testing::StmtCensus c = testing::CountStmts(out);
  ASSERT_EQ(c.allocations.size(), 1u) << testing::Print(out);  // s only
  EXPECT_EQ(c.allocations[0].shape, (std::vector<int64_t>{1})) << testing::Print(out);
  PrimFunc other = ParseFunc(SymbolicSoftmax("h * w * 20 + w"), "sm");
  EXPECT_EQ(AliasOutputBuffers(other), other);
}

TEST(AliasOutputBuffersTest, StoreInsideTheScopeOfALaterAllocation) {
  // As ExtendAllocateScopes leaves a long row's softmax: the sum's partial
  // results are declared after the exp loop, and their allocation holds the
  // sum and the output loops.
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def sm(a: T.Buffer((1, 64), "float32"), out: T.Buffer((1, 64), "float32")):
    e = T.decl_buffer((1, 64), "float32")
    for i in range(T.int64(1)):
        for j in T.parallel(T.int64(64)):
            e[i, j] = T.exp(a[i, j])
        p = T.decl_buffer((2,), "float32")
        for q in T.parallel(T.int64(2)):
            p[q] = T.float32(0)
            for k in range(T.int64(32)):
                p[q] = p[q] + e[i, q * T.int64(32) + k]
        for j in T.parallel(T.int64(64)):
            out[i, j] = e[i, j] / (p[T.int64(0)] + p[T.int64(1)])
)",
                         "sm");
  PrimFunc out = AliasOutputBuffers(f);
  ASSERT_NE(out, f);
  testing::StmtCensus c = testing::CountStmts(out);
  ASSERT_EQ(c.allocations.size(), 1u) << testing::Print(out);  // p only
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

TEST(AliasOutputBuffersTest, EveryConditionKeepsTheWorkspaceWhenItFails) {
  auto unchanged = [](const std::string& src, const char* why) {
    PrimFunc f = ParseFunc(src, "sm");
    EXPECT_EQ(AliasOutputBuffers(f), f) << why;
  };
  // The store reads e at another element, which an earlier iteration of
  // the aliased loop would already have overwritten.
  unchanged(Softmax(R"(        for j in T.parallel(T.int64(64)):
            out[i, j] = e[i, T.int64(63) - j] / s[T.int64(0)]
)"),
            "e read at another index");
  // e is read after the output's store.
  unchanged(Softmax(kOutput + std::string(R"(        for j in range(T.int64(64)):
            s[T.int64(0)] = s[T.int64(0)] + e[i, j]
)")),
            "e read after the store");
  // The output is read (not only written).
  unchanged(Softmax(R"(        for j in T.parallel(T.int64(64)):
            out[i, j] = e[i, j] / s[T.int64(0)]
        for j in range(T.int64(64)):
            s[T.int64(0)] = s[T.int64(0)] + out[i, j]
)"),
            "the output is read");
  // Two passes over the store: the second would read its own output.
  unchanged(Softmax(R"(        for r in range(T.int64(2)):
            for j in T.parallel(T.int64(64)):
                out[i, j] = e[i, j] / s[T.int64(0)]
)"),
            "each element written twice");
}

TEST(AliasOutputBuffersTest, ARowLoopThatDoesNotOwnItsRowKeepsTheWorkspace) {
  // The outer loop r does not index e: its second iteration reads the e
  // values that the first one's output store replaced.
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def sm(a: T.Buffer((64,), "float32"), out: T.Buffer((64,), "float32")):
    e = T.decl_buffer((64,), "float32")
    for j in range(T.int64(64)):
        e[j] = a[j]
    for r in range(T.int64(2)):
        for j in range(T.int64(64)):
            e[j] = e[j] + T.float32(1)
        for j in range(T.int64(64)):
            out[j] = e[j] * T.float32(2)
)",
                         "sm");
  EXPECT_EQ(AliasOutputBuffers(f), f);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
