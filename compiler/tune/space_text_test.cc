// User design spaces in text (space_text.h) and C++ (space_registry.h): the
// MLC course's stochastic schedule of mm parses, replays deterministically for
// a seed with every decision in range and the numbers kept; a printed trace
// reads back as a space with its decisions fixed; every error names
// FILE:LINE:COLUMN.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tune/space_registry.h"
#include "compiler/tune/space_text.h"
#include "compiler/tune/tune_test_workloads.h"

namespace kiln {
namespace tune {
namespace {

using testing::kCourseMM;
using testing::kMMRelu;
using tir::testing::ParseFunc;
using tir::testing::SameNumbers;

// The course's stochastic schedule, as written there (keywords, a def
// around it, a comment, a call over two lines), plus a categorical choice.
const char* kCourseSpace = R"(# MLC course, "stochastic_schedule_mm"
def stochastic_schedule_mm(sch: tvm.tir.Schedule):
    block_C = sch.get_block("C", "mm")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=64)
    i_factors = sch.sample_perfect_tile(i, n=2)
    i0, i1 = sch.split(loop=i, factors=i_factors)
    j_0, j_1 = sch.split(loop=j,
                         factors=j_factors)
    sch.reorder(i0, j_0, i1, k, j_1)
    sch.parallel(i0)
    sch.vectorize(j_1)
    u = sch.sample_categorical(candidates=[0, 1], probs=[0.5, 0.5])
    sch.annotate("unused_knob", u)
    sch.decompose_reduction(block_C, k)
    return sch
)";

TextSpace Parse(const std::string& text) {
  Result<TextSpace> s = ParseTextSpace(text, "space.py");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : TextSpace();
}

std::string ParseError(const std::string& text) {
  Result<TextSpace> s = ParseTextSpace(text, "space.py");
  return s.ok() ? "(parsed)" : s.status().message();
}

std::string ApplyError(const std::string& text, const char* func_text, const char* name) {
  TextSpace space = Parse(text);
  Result<tir::Schedule> s = ApplyTextSpace(ParseFunc(func_text, name), space, 1);
  return s.ok() ? "(applied)" : s.status().message();
}

TEST(TextSpaceTest, CourseSpaceParsesAndReplaysDeterministically) {
  TextSpace space = Parse(kCourseSpace);
  ASSERT_EQ(space.trace.instructions().size(), 12u);
  EXPECT_EQ(space.where[0].line, 3);
  EXPECT_EQ(space.where[0].column, 5);
  EXPECT_EQ(space.where[0].text, "block_C = sch.get_block(\"C\", \"mm\")");
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  std::set<std::string> points;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Result<tir::Schedule> a = ApplyTextSpace(f, space, seed);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Result<tir::Schedule> b = ApplyTextSpace(f, space, seed);
    ASSERT_TRUE(b.ok());
    // Same seed, same point.
    EXPECT_EQ(a->trace().ToString(), b->trace().ToString());
    EXPECT_TRUE(ir::StructuralEqual(a->func(), b->func()));
    // Every decision in range: j's tile product 128 with innermost <= 64,
    // i's innermost <= 16 (the default bound), the categorical index 0 or 1.
    int samples = 0;
    for (const auto& inst : a->trace().instructions()) {
      if (inst.name == "sample_perfect_tile") {
        ++samples;
        ASSERT_EQ(inst.decision.size(), 2u);
        EXPECT_EQ(inst.decision[0] * inst.decision[1], 128);
        EXPECT_LE(inst.decision[1], inst.inputs[2].i);
        EXPECT_GE(inst.decision[1], 1);
      } else if (inst.name == "sample_categorical") {
        ++samples;
        ASSERT_EQ(inst.decision.size(), 1u);
        EXPECT_TRUE(inst.decision[0] == 0 || inst.decision[0] == 1);
      }
    }
    EXPECT_EQ(samples, 3);
    // The point's trace replays on its own, and computes what mm computes.
    Result<tir::Schedule> r = tir::Schedule::Replay(f, a->trace());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(ir::StructuralEqual(r->func(), a->func()));
    if (seed <= 2) {
      Status same = SameNumbers(f, a->func());
      EXPECT_TRUE(same.ok()) << same.ToString() << "\n" << a->trace().ToString();
    }
    points.insert(a->trace().ToString());
  }
  EXPECT_GT(points.size(), 1u);  // seeds choose different points
}

TEST(TextSpaceTest, PrintedTraceReadsBackWithItsDecisions) {
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  Result<tir::Schedule> point = ApplyTextSpace(f, Parse(kCourseSpace), 3);
  ASSERT_TRUE(point.ok()) << point.status().ToString();
  std::string printed = point->trace().ToString();
  TextSpace again = Parse(printed);
  // Decisions written in the text are kept whatever the seed.
  for (uint64_t seed : {1u, 7u}) {
    Result<tir::Schedule> r = ApplyTextSpace(f, again, seed);
    ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << printed;
    EXPECT_EQ(r->trace().ToString(), printed);
    EXPECT_TRUE(ir::StructuralEqual(r->func(), point->func()));
  }
}

TEST(TextSpaceTest, ComputeAtAndSampledLocation) {
  // The course's mm_relu: the relu block under the matmul's tiles.
  const char* space = R"(
b = sch.get_block("Y")
c = sch.get_block("C")
i, j, k = sch.get_loops(b)
jf = sch.sample_perfect_tile(j, n=2, max_innermost_factor=8)
j0, j1 = sch.split(j, factors=jf)
sch.reorder(j0, k, j1)
sch.reverse_compute_at(c, j0)
loc = sch.sample_compute_location(c, decision=-1)
sch.unroll(j1)
)";
  ir::PrimFunc f = ParseFunc(kMMRelu, "mm_relu");
  Result<tir::Schedule> s = ApplyTextSpace(f, Parse(space), 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Status same = SameNumbers(f, s->func());
  EXPECT_TRUE(same.ok()) << same.ToString() << "\n" << s->trace().ToString();
}

TEST(TextSpaceTest, SyntaxErrorsQuoteFileLineColumn) {
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\"\n"), "space.py:1:18: '(' is never closed");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C)\n"), "space.py:1:19: unterminated string");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\")\nsch.vectorise(b)\n"),
            ParseError("b = sch.get_block(\"C\")\nsch.vectorise(b)\n"));  // deterministic
  EXPECT_NE(ParseError("b = sch.get_block(\"C\")\nsch.vectorise(b)\n").find("space.py:2:5: unknown schedule primitive "
                                                                             "'vectorise'"),
            std::string::npos);
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\"))\n"), "space.py:1:23: ')' closes nothing");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\"]\n"), "space.py:1:22: ']' does not close the '(' opened at 1:18");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\") $\n"), "space.py:1:24: unexpected character '$'");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\") x\n"), "space.py:1:24: expected the end of the statement, found 'x'");
  EXPECT_EQ(ParseError("# only a comment\n"), "space.py: no schedule statement (expected lines such as `b = "
                                                "sch.get_block(\"C\")`)");
}

TEST(TextSpaceTest, ArgumentErrorsNameTheArgument) {
  const std::string head = "b = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b)\n";
  EXPECT_EQ(ParseError(head + "sch.vectorize(b)\n"), "space.py:3:15: vectorize's loop: 'b' is a block, expected a loop");
  EXPECT_EQ(ParseError(head + "sch.parallel(q)\n"), "space.py:3:14: 'q' is not bound by an earlier statement");
  EXPECT_EQ(ParseError(head + "f = sch.sample_perfect_tile(j, m=2)\n"),
            "space.py:3:32: sample_perfect_tile has no argument 'm'");
  EXPECT_EQ(ParseError(head + "f = sch.sample_perfect_tile(loop=j)\n"),
            "space.py:3:9: sample_perfect_tile needs its argument 'n'");
  EXPECT_EQ(ParseError(head + "f = sch.sample_perfect_tile(j, n=2)\na, b2, c = sch.split(j, factors=f)\n"),
            "space.py:4:1: split makes 2 loops, the statement names 3");
  EXPECT_EQ(ParseError(head + "t = sch.sample_perfect_tile(j, n=2)\nj0, j1 = sch.split(j, factors=[t, 4])\n"),
            "space.py:4:31: split's factors: mixes integers and sampled ints; use one sample_perfect_tile for all "
            "factors");
  EXPECT_EQ(ParseError(head + "x = sch.parallel(i)\n"), "space.py:3:1: parallel returns nothing to bind");
  EXPECT_EQ(ParseError("b = sch.get_block(\"C\")\nsch.get_loops(b)\n"),
            "space.py:2:5: get_loops's results must be named, one name each (i, j, k = sch.get_loops(...))");
  EXPECT_EQ(ParseError(head + "v = sch.sample_categorical(candidates=[1, 2], probs=[1.0])\n"),
            "space.py:3:9: sample_categorical needs as many probabilities as candidates (at least one)");
  EXPECT_EQ(ParseError(head + "sch.reorder(k, i=j)\n"), "space.py:3:16: reorder takes loops by position only");
}

TEST(TextSpaceTest, StatementsThatDoNotApplyNameTheirLine) {
  // A block the workload does not have.
  EXPECT_EQ(ApplyError("b = sch.get_block(\"D\")\n", kCourseMM, "mm").find("space.py:1:1: `b = sch.get_block(\"D\")` does not "
                                                                    "apply to mm: "),
            0u);
  // Three names for mm_relu's two loops of C.
  std::string m = ApplyError("c = sch.get_block(\"C\")\ni, j, k = sch.get_loops(c)\n", kMMRelu, "mm_relu");
  EXPECT_EQ(m, "space.py:2:1: `i, j, k = sch.get_loops(c)` does not apply to mm_relu: get_loops gives 2 handles, the "
               "statement names 3");
  // A fixed tile that does not divide the loop.
  m = ApplyError("b = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b)\nf = sch.sample_perfect_tile(j, n=2, "
                 "decision=[3, 5])\n",
                 kCourseMM, "mm");
  EXPECT_EQ(m.find("space.py:3:1: `f = sch.sample_perfect_tile(j, n=2, decision=[3, 5])` does not apply to mm: "), 0u)
      << m;
  EXPECT_NE(m.find("not a perfect 2-tiling of extent 128"), std::string::npos) << m;
  // A loop inner to its block's other loop cannot be parallel over a reduction.
  m = ApplyError("b = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b)\nsch.parallel(k)\n", kCourseMM, "mm");
  EXPECT_EQ(m.find("space.py:3:1: `sch.parallel(k)` does not apply to mm: "), 0u) << m;
}

TEST(TextSpaceTest, LoadTextSpaceReadsAFile) {
  std::string path = ::testing::TempDir() + "/kiln_space_text_test.py";
  std::ofstream(path) << kCourseSpace;
  Result<TextSpace> s = LoadTextSpace(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->file, path);
  Result<TextSpace> missing = LoadTextSpace(path + ".absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot read the space file " + path + ".absent");
}

TEST(SpaceRegistryTest, RegisteredFunctionIsASpace) {
  bool ok = RegisterSpace("test_mm_j_tiles", [](tir::Schedule* sch) -> Status {
    KILN_ASSIGN_OR_RETURN(tir::BlockRV c, sch->GetBlock("C"));
    KILN_ASSIGN_OR_RETURN(std::vector<tir::LoopRV> loops, sch->GetLoops(c));
    KILN_ASSIGN_OR_RETURN(std::vector<tir::ExprRV> f, sch->SamplePerfectTile(loops[1], 2, 32));
    KILN_ASSIGN_OR_RETURN(std::vector<tir::LoopRV> j, sch->SplitSampled(loops[1], f));
    return sch->Vectorize(j[1]);
  });
  EXPECT_TRUE(ok);
  EXPECT_FALSE(RegisterSpace("test_mm_j_tiles", [](tir::Schedule*) { return Status::Ok(); }));  // taken
  EXPECT_FALSE(RegisterSpace("generic", [](tir::Schedule*) { return Status::Ok(); }));          // built-in
  EXPECT_TRUE(FindSpace("test_mm_j_tiles"));
  ir::PrimFunc f = ParseFunc(kCourseMM, "mm");
  Result<tir::Schedule> a = ApplyRegisteredSpace(f, "test_mm_j_tiles", 4);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<tir::Schedule> b = ApplyRegisteredSpace(f, "test_mm_j_tiles", 4);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->trace().ToString(), b->trace().ToString());
  Result<tir::Schedule> r = tir::Schedule::Replay(f, a->trace());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ir::StructuralEqual(r->func(), a->func()));
  Result<tir::Schedule> none = ApplyRegisteredSpace(f, "no_such_space", 1);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "no design space named 'no_such_space' is registered");
  // The function's own failure, named.
  const char* add = R"(@T.prim_func
def add1(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
)";
  Result<tir::Schedule> bad = ApplyRegisteredSpace(ParseFunc(add, "add1"), "test_mm_j_tiles", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("space test_mm_j_tiles on add1: "), 0u) << bad.status().message();
}

}  // namespace
}  // namespace tune
}  // namespace kiln
