// PruneGuardedBranches: arms that the enclosing conditions decide go, as in
// the symbolic depthwise kernels' versions nested under each other's tests;
// arms the facts do not decide, and conditions on memory, stay.
#include "compiler/tir/prune_guarded_branches.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::Print;

// `before`'s function `name`, pruned, prints as `after`'s.
void ExpectPrunedTo(const char* before, const char* after, const char* name) {
  EXPECT_EQ(Print(PruneGuardedBranches(ParseFunc(before, name))), Print(ParseFunc(after, name)));
}

// As conv_symbolic_schedule.cc nests a run-time width ladder under the test
// of another version: `w // 2 >= 16` chose the other version, so here
// w // 2 <= 15.
const char* kLadder = R"(
@T.prim_func
def ladder(a: T.Buffer((8,), "float32"), w: T.int64, h: T.int64):
    if w // 2 >= 16:
        a[0] = T.float32(1)
    else:
        if w // 2 >= 56 or w // 2 == 32:
            a[1] = T.float32(2)
        else:
            if h >= 8 and w // 2 >= 16:
                a[2] = T.float32(3)
            else:
                if h >= 8 and w // 2 >= 8:
                    a[3] = T.float32(4)
                else:
                    a[4] = T.float32(5)
        if w // 2 < 16:
            a[5] = T.float32(6)
        if (w // 2 + 1) * 2 <= 32:
            a[6] = T.float32(7)
)";

const char* kLadderPruned = R"(
@T.prim_func
def ladder(a: T.Buffer((8,), "float32"), w: T.int64, h: T.int64):
    if w // 2 >= 16:
        a[0] = T.float32(1)
    else:
        if h >= 8 and w // 2 >= 8:
            a[3] = T.float32(4)
        else:
            a[4] = T.float32(5)
        a[5] = T.float32(6)
        a[6] = T.float32(7)
)";

TEST(PruneGuardedBranchesTest, ArmsTheEnclosingTestsDecideGo) {
  ExpectPrunedTo(kLadder, kLadderPruned, "ladder");
}

// Then-arms learn each conjunct, else-arms each negated disjunct; a
// negated conjunction or an inequality `!=` tells nothing about its parts.
TEST(PruneGuardedBranchesTest, ConjunctionsAndDisjunctions) {
  ExpectPrunedTo(R"(
@T.prim_func
def logic(a: T.Buffer((8,), "float32"), w: T.int64, h: T.int64):
    if w >= 4 and h < 3:
        if h <= 2:
            a[0] = T.float32(1)
        if w < 4 or h == 5:
            a[1] = T.float32(2)
    else:
        if w >= 4:
            a[2] = T.float32(3)
    if w < 2 or h > 7:
        a[3] = T.float32(4)
    else:
        if not (h >= 8):
            a[4] = T.float32(5)
        if w != 9:
            a[5] = T.float32(6)
)",
                 R"(
@T.prim_func
def logic(a: T.Buffer((8,), "float32"), w: T.int64, h: T.int64):
    if w >= 4 and h < 3:
        a[0] = T.float32(1)
    else:
        if w >= 4:
            a[2] = T.float32(3)
    if w < 2 or h > 7:
        a[3] = T.float32(4)
    else:
        a[4] = T.float32(5)
        if w != 9:
            a[5] = T.float32(6)
)",
                 "logic");
}

// A condition on memory is no fact (the arm may store to it), and a fact
// about a loop variable holds only inside its own iteration.
TEST(PruneGuardedBranchesTest, MemoryAndUndecidedConditionsStay) {
  ExpectPrunedTo(R"(
@T.prim_func
def stays(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "int64"), w: T.int64):
    if b[0] >= 4:
        b[0] = T.int64(0)
        if b[0] >= 4:
            a[0] = T.float32(1)
    for i in range(T.int64(8)):
        if i >= w:
            a[i] = T.float32(2)
            if i >= w:
                a[i] = T.float32(3)
        if w >= 3:
            a[i] = T.float32(4)
)",
                 R"(
@T.prim_func
def stays(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "int64"), w: T.int64):
    if b[0] >= 4:
        b[0] = T.int64(0)
        if b[0] >= 4:
            a[0] = T.float32(1)
    for i in range(T.int64(8)):
        if i >= w:
            a[i] = T.float32(2)
            a[i] = T.float32(3)
        if w >= 3:
            a[i] = T.float32(4)
)",
                 "stays");
}

// A loop left with nothing to do goes with its arm (the codegen never sees a
// loop with an empty body).
TEST(PruneGuardedBranchesTest, HollowLoopsGo) {
  ExpectPrunedTo(R"(
@T.prim_func
def hollow(a: T.Buffer((8,), "float32"), w: T.int64):
    if w >= 4:
        a[0] = T.float32(1)
    else:
        for i in range(w):
            for j in T.vectorized(T.int64(8)):
                if w > 5:
                    a[j] = T.float32(2)
        a[1] = T.float32(3)
)",
                 R"(
@T.prim_func
def hollow(a: T.Buffer((8,), "float32"), w: T.int64):
    if w >= 4:
        a[0] = T.float32(1)
    else:
        a[1] = T.float32(3)
)",
                 "hollow");
}

TEST(PruneGuardedBranchesTest, NothingToPruneReturnsTheSameFunction) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def same(a: T.Buffer((8,), "float32"), w: T.int64):
    if w >= 4:
        a[0] = T.float32(1)
    else:
        if w >= 2:
            a[1] = T.float32(2)
)",
                         "same");
  EXPECT_EQ(PruneGuardedBranches(f), f);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
