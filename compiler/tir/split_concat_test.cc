// SplitConcatenations: a concatenation stored to a kernel's output becomes
// one nest per source; then InlineElementwise makes the sources computed in
// the kernel write their slices of the output (no temporary, no copy), the
// default schedule parallelizes the slices over a symbolic batch, and an
// upsampling into a slice of another map's size reads each source column
// once. Same numbers as the select chain; left alone: a concatenation into
// a temporary, a source that something else also reads.
#include "compiler/tir/split_concat.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/upsample_loops.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::CountStmts;
using testing::ParseFunc;
using testing::SameNumbers;
using testing::StmtCensus;

bool HasSelect(const PrimFunc& f) { return testing::Print(f).find("if_then_else") != std::string::npos; }

int ParallelLoops(const PrimFunc& f) {
  struct Finder : StmtExprVisitor {
    int n = 0;
    void VisitStmt(const Stmt& s) override {
      if (const auto* l = As<ForNode>(s)) n += l->for_kind == ForKind::kParallel;
      StmtExprVisitor::VisitStmt(s);
    }
  } v;
  v.VisitStmt(f->body);
  return v.n;
}

// Three sources on axis 1, the last one a single channel.
const char* kThree = R"(
@T.prim_func
def concat(a: T.Buffer((2, 3, 4), "float32"), b: T.Buffer((2, 5, 4), "float32"), c: T.Buffer((2, 1, 4), "float32"), out: T.Buffer((2, 9, 4), "float32")):
    for i, j, k in T.grid(T.int64(2), T.int64(9), T.int64(4)):
        out[i, j, k] = T.if_then_else(j < T.int64(3), a[i, j, k], T.if_then_else(j < T.int64(8), b[i, j - T.int64(3), k], c[i, j - T.int64(8), k]))
)";

TEST(SplitConcatTest, OneCopyPerSource) {
  PrimFunc f = ParseFunc(kThree, "concat");
  ASSERT_TRUE(HasSplittableConcatenation(f));
  PrimFunc out = SplitConcatenations(f);
  ASSERT_NE(out, f);
  EXPECT_FALSE(HasSelect(out)) << testing::Print(out);
  EXPECT_EQ(CountStmts(out).stores, 3) << testing::Print(out);
  EXPECT_EQ(CountStmts(out).loops, 9) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// As fuse-tir leaves PP-OCRv4 det's feature pyramid: a scale, a 2x
// upsampling of it, a relu, and the concatenation of the upsampled map, the
// relu and an input. The upsampling and the relu write their slices of
// `out` themselves: no temporary but the small scaled map is left.
const char* kFused = R"(
@T.prim_func
def fused(a: T.Buffer((2, 4, 3), "float32"), s: T.Buffer((2, 4, 1), "float32"), b: T.Buffer((2, 4, 6), "float32"), out: T.Buffer((2, 12, 6), "float32")):
    t0 = T.decl_buffer((2, 4, 3), "float32")
    t1 = T.decl_buffer((2, 4, 6), "float32")
    t2 = T.decl_buffer((2, 4, 6), "float32")
    for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(3)):
        t0[i, j, k] = a[i, j, k] + a[i, j, k] * s[i, j, T.int64(0)]
    for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(6)):
        t1[i, j, k] = t0[i, j, k // T.int64(2)]
    for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(6)):
        t2[i, j, k] = T.max(b[i, j, k], T.float32(0))
    for i, j, k in T.grid(T.int64(2), T.int64(12), T.int64(6)):
        out[i, j, k] = T.if_then_else(j < T.int64(4), t1[i, j, k], T.if_then_else(j < T.int64(8), t2[i, j - T.int64(4), k], b[i, j - T.int64(8), k]))
)";

TEST(SplitConcatTest, SourcesWriteTheirSlices) {
  PrimFunc f = ParseFunc(kFused, "fused");
  PrimFunc out = InlineElementwise(SplitConcatenations(LowerBlocks(f)));
  StmtCensus c = CountStmts(out);
  // t1 and t2 are gone; each of the three slices is one store into `out`.
  EXPECT_LE(c.allocates, 1) << testing::Print(out);
  EXPECT_FALSE(HasSelect(out)) << testing::Print(out);
  std::string text = testing::Print(out);
  EXPECT_EQ(text.find("t1["), std::string::npos) << text;
  EXPECT_EQ(text.find("t2["), std::string::npos) << text;
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
}

// The relu also feeds a second output: its temporary stays, the slice copies
// it, and the numbers are the same.
TEST(SplitConcatTest, SourceReadElsewhereKeepsItsCopy) {
  PrimFunc f = ParseFunc(R"(
@T.prim_func
def fused(b: T.Buffer((2, 4, 6), "float32"), c: T.Buffer((2, 2, 6), "float32"), out: T.Buffer((2, 6, 6), "float32"), out2: T.Buffer((2, 4, 6), "float32")):
    t2 = T.decl_buffer((2, 4, 6), "float32")
    for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(6)):
        t2[i, j, k] = T.max(b[i, j, k], T.float32(0))
    for i, j, k in T.grid(T.int64(2), T.int64(6), T.int64(6)):
        out[i, j, k] = T.if_then_else(j < T.int64(4), t2[i, j, k], c[i, j - T.int64(4), k])
    for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(6)):
        out2[i, j, k] = t2[i, j, k] * T.float32(2)
)",
                         "fused");
  PrimFunc out = InlineElementwise(SplitConcatenations(LowerBlocks(f)));
  EXPECT_EQ(CountStmts(out).allocates, 1) << testing::Print(out);
  EXPECT_FALSE(HasSelect(out)) << testing::Print(out);
  Status s = SameNumbers(f, out);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
}

// A concatenation into a temporary (read in place by a pointwise
// convolution's schedule, conv_match.h) is not split.
TEST(SplitConcatTest, ConcatenationIntoATemporaryIsLeftAlone) {
  PrimFunc f = LowerBlocks(ParseFunc(R"(
@T.prim_func
def fused(a: T.Buffer((2, 4), "float32"), b: T.Buffer((2, 4), "float32"), out: T.Buffer((4, 4), "float32")):
    t = T.decl_buffer((4, 4), "float32")
    for i, j in T.grid(T.int64(4), T.int64(4)):
        t[i, j] = T.if_then_else(i < T.int64(2), a[i, j], b[i - T.int64(2), j])
    for i, j in T.grid(T.int64(4), T.int64(4)):
        out[i, j] = t[i, j] + T.float32(1)
)",
                                    "fused"));
  EXPECT_FALSE(HasSplittableConcatenation(f));
  EXPECT_EQ(SplitConcatenations(f), f);
}

// A chain on two loop variables is no concatenation.
TEST(SplitConcatTest, ChainOnTwoAxesIsLeftAlone) {
  PrimFunc f = LowerBlocks(ParseFunc(R"(
@T.prim_func
def f(a: T.Buffer((4, 4), "float32"), b: T.Buffer((4, 4), "float32"), out: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(T.int64(4), T.int64(4)):
        out[i, j] = T.if_then_else(i < T.int64(2), a[i, j], T.if_then_else(j < T.int64(2), b[i, j], a[j, i]))
)",
                                    "f"));
  EXPECT_EQ(SplitConcatenations(f), f);
}

// Symbolic batch and spatial sizes, as the detector compiled for any image:
// after the default schedule for two threads, every slice (its upsampled
// source written in place) is a parallel loop over channels, and the 2x
// upsampling into a map whose width is another map's times 8 reads each
// source column once (vectorized loops of 2 lanes).
const char* kSymbolic = R"(
@T.prim_func
def fused(a_handle: T.handle, b_handle: T.handle, out_handle: T.handle, h: T.int64, w: T.int64):
    n = T.int64()
    a = T.match_buffer(a_handle, (n, 16, h * 4, w * 4), "float32")
    b = T.match_buffer(b_handle, (n, 16, h * 8, w * 8), "float32")
    out = T.match_buffer(out_handle, (n, 32, h * 8, w * 8), "float32")
    t = T.decl_buffer((n, 16, h * 8, w * 8), "float32")
    for i0, i1, i2, i3 in T.grid(n, T.int64(16), h * 8, w * 8):
        t[i0, i1, i2, i3] = a[i0, i1, T.min(T.max(i2 // T.int64(2), T.int64(0)), h * 4 - T.int64(1)), T.min(T.max(i3 // T.int64(2), T.int64(0)), w * 4 - T.int64(1))]
    for i0, i1, i2, i3 in T.grid(n, T.int64(32), h * 8, w * 8):
        out[i0, i1, i2, i3] = T.if_then_else(i1 < T.int64(16), b[i0, i1, i2, i3], t[i0, i1 - T.int64(16), i2, i3])
)";

TEST(SplitConcatTest, SymbolicSlicesRunInParallel) {
  PrimFunc f = LowerBlocks(ParseFunc(kSymbolic, "fused"));
  PrimFunc split = InlineElementwise(SplitConcatenations(f));
  EXPECT_EQ(CountStmts(split).allocates, 0) << testing::Print(split);
  PrimFunc scheduled = SplitUpsampleLoops(ApplyDefaultSchedule(split, 2));
  EXPECT_EQ(ParallelLoops(scheduled), 2) << testing::Print(scheduled);
  std::string text = testing::Print(scheduled);
  EXPECT_NE(text.find("T.vectorized(T.int64(2))"), std::string::npos) << text;
  EXPECT_FALSE(HasSelect(scheduled)) << text;
}

// YOLOv8's detection head, compiled for symbolic sizes: two maps reshaped to
// rows of h * w and g * v positions, concatenated along those rows. The
// chain tests the flat axis against h * w (a symbolic bound): split, each
// map's producer writes its slice of `out` (no temporary), the slices'
// stores are vectorized, and no select on the flat axis is left.
const char* kSymbolicRows = R"(
@T.prim_func
def head(a_handle: T.handle, b_handle: T.handle, out_handle: T.handle):
    n = T.int64()
    h = T.int64()
    w = T.int64()
    g = T.int64()
    v = T.int64()
    a = T.match_buffer(a_handle, (n, 8, h, w), "float32")
    b = T.match_buffer(b_handle, (n, 8, g, v), "float32")
    out = T.match_buffer(out_handle, (n, 8, h * w + g * v), "float32")
    ta = T.decl_buffer((n, 8, h * w), "float32")
    tb = T.decl_buffer((n, 8, g * v), "float32")
    for i0, i1, i2 in T.grid(n, T.int64(8), h * w):
        ta[i0, i1, i2] = a[i0, i1, i2 // w, i2 % w]
    for i0, i1, i2 in T.grid(n, T.int64(8), g * v):
        tb[i0, i1, i2] = b[i0, i1, i2 // v, i2 % v]
    for i0, i1, i2 in T.grid(n, T.int64(8), h * w + g * v):
        out[i0, i1, i2] = T.if_then_else(i2 < h * w, ta[i0, i1, i2], tb[i0, i1, i2 - h * w])
)";

TEST(SplitConcatTest, SymbolicBoundsBeforeAfter) {
  PrimFunc f = LowerBlocks(ParseFunc(kSymbolicRows, "head"));
  ASSERT_TRUE(HasSplittableConcatenation(f));
  PrimFunc split = InlineElementwise(SplitConcatenations(f));
  EXPECT_EQ(CountStmts(split).allocates, 0) << testing::Print(split);
  EXPECT_EQ(CountStmts(split).stores, 2) << testing::Print(split);
  EXPECT_FALSE(HasSelect(split)) << testing::Print(split);
  PrimFunc scheduled = ApplyDefaultSchedule(split, 1);
  // Each map's copy: rows of w (v) columns, one vector loop each.
  EXPECT_EQ(CountStmts(scheduled).vectorized, 2) << testing::Print(scheduled);
  std::string text = testing::Print(scheduled);
  EXPECT_EQ(text.find(" // "), std::string::npos) << text;
}

// A harmonic stack, as basic-pitch's ONNX export has it under a symbolic
// batch: a spectrum x of R rows and W bins shifted by 0, 1, 2 and 3 bins
// (slices zero-padded back to W) as pieces of width 1 on a last axis,
// concatenated there, sliced to O bins and transposed to channels. The
// concatenation is kept in a temporary, so SplitConcatenations leaves it;
// inlining moves it (and the slice) into the transpose's store of `out` but
// not the padded shifts (4 x O elements of `out` a row for W of each).
std::string HarmonicStack(int rows, int width, int kept) {
  std::string src = R"(
@T.prim_func
def stack(x_handle: T.handle, out_handle: T.handle):
    n = T.int64()
    x = T.match_buffer(x_handle, (n, R, W), "float32")
    out = T.match_buffer(out_handle, (n, 4, R, O), "float32")
    s1 = T.decl_buffer((n, R, W1, 1), "float32")
    p1 = T.decl_buffer((n, R, W, 1), "float32")
    s2 = T.decl_buffer((n, R, W2, 1), "float32")
    p2 = T.decl_buffer((n, R, W, 1), "float32")
    s3 = T.decl_buffer((n, R, W3, 1), "float32")
    p3 = T.decl_buffer((n, R, W, 1), "float32")
    c = T.decl_buffer((n, R, W, 4), "float32")
    cs = T.decl_buffer((n, R, O, 4), "float32")
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W1), T.int64(1)):
        s1[i0, i1, i2, i3] = x[i0, i1, i2 + T.int64(1)]
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W), T.int64(1)):
        p1[i0, i1, i2, i3] = T.if_then_else(i2 < T.int64(W1), s1[i0, i1, i2, i3], T.float32(0))
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W2), T.int64(1)):
        s2[i0, i1, i2, i3] = x[i0, i1, i2 + T.int64(2)]
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W), T.int64(1)):
        p2[i0, i1, i2, i3] = T.if_then_else(i2 < T.int64(W2), s2[i0, i1, i2, i3], T.float32(0))
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W3), T.int64(1)):
        s3[i0, i1, i2, i3] = x[i0, i1, i2 + T.int64(3)]
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W), T.int64(1)):
        p3[i0, i1, i2, i3] = T.if_then_else(i2 < T.int64(W3), s3[i0, i1, i2, i3], T.float32(0))
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(W), T.int64(4)):
        c[i0, i1, i2, i3] = T.if_then_else(i3 < T.int64(1), x[i0, i1, i2], T.if_then_else(i3 < T.int64(2), p1[i0, i1, i2, i3 - T.int64(1)], T.if_then_else(i3 < T.int64(3), p2[i0, i1, i2, i3 - T.int64(2)], p3[i0, i1, i2, i3 - T.int64(3)])))
    for i0, i1, i2, i3 in T.grid(n, T.int64(R), T.int64(O), T.int64(4)):
        cs[i0, i1, i2, i3] = c[i0, i1, i2, i3]
    for i0, i1, i2, i3 in T.grid(n, T.int64(4), T.int64(R), T.int64(O)):
        out[i0, i1, i2, i3] = cs[i0, i2, i3, i1]
)";
  for (auto [key, v] : std::vector<std::pair<std::string, int>>{
           {"W1", width - 1}, {"W2", width - 2}, {"W3", width - 3}, {"R", rows}, {"W", width}, {"O", kept}})
    src = std::regex_replace(src, std::regex("\\b" + key + "\\b"), std::to_string(v));
  return src;
}

// Pieces of 32 x 40 elements: the second split takes the chain, each
// shifted spectrum is written to its channel, no select on the channel and
// no temporary left. With the batch static (2) and symbolic: the same
// nests, and with the batch static the same numbers. (Symbolic, inlining
// the concatenation into the sliced transpose needs the batch to cancel in
// inline_elementwise's growth check.)
TEST(SplitConcatTest, ConcatenationInlinedIntoTheOutputIsSplitToo) {
  std::string symbolic = HarmonicStack(32, 48, 40);
  std::string fixed = std::regex_replace(symbolic, std::regex(R"(    n = T.int64\(\)\n)"), "");
  fixed = std::regex_replace(fixed, std::regex(R"(\bn\b)"), "T.int64(2)");
  for (const std::string& source : {fixed, symbolic}) {
    PrimFunc f = LowerBlocks(ParseFunc(source, "stack"));
    ASSERT_FALSE(HasSplittableConcatenation(f));
    PrimFunc once = InlineElementwise(SplitConcatenations(f));
    EXPECT_TRUE(HasSplittableConcatenation(once)) << testing::Print(once);
    PrimFunc out = SplitConcatenationsAndInline(f);
    std::string text = testing::Print(out);
    EXPECT_EQ(CountStmts(out).allocates, 0) << text;
    EXPECT_EQ(CountStmts(out).stores, 4) << text;
    EXPECT_EQ(text.find("i1 < "), std::string::npos) << "no select on the channel: " << text;
    if (source == fixed) {
      Status s = SameNumbers(f, out);
      EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << text;
    }
  }
}

// Pieces of 4 x 5 elements (under kMinLateSplitPieceElements): the chain
// inlining made stays one nest (many small nests cost more than the select).
TEST(SplitConcatTest, SmallPiecesOfALateChainStayOneNest) {
  PrimFunc f = LowerBlocks(ParseFunc(HarmonicStack(4, 8, 5), "stack"));
  PrimFunc once = InlineElementwise(SplitConcatenations(f));
  ASSERT_TRUE(HasSplittableConcatenation(once)) << testing::Print(once);
  PrimFunc out = SplitConcatenationsAndInline(f);
  EXPECT_TRUE(ir::StructuralEqual(out, once)) << testing::Print(out);
}

// Bounds not proven increasing (h * w then g: g may be below h * w), or the
// last one not proven inside the axis: the chain is left alone.
TEST(SplitConcatTest, UnprovenSymbolicBoundsAreLeftAlone) {
  PrimFunc f = LowerBlocks(ParseFunc(R"(
@T.prim_func
def chain(a_handle: T.handle, b_handle: T.handle, c_handle: T.handle, out_handle: T.handle):
    n = T.int64()
    h = T.int64()
    g = T.int64()
    a = T.match_buffer(a_handle, (n, h), "float32")
    b = T.match_buffer(b_handle, (n, g), "float32")
    c = T.match_buffer(c_handle, (n, h + g), "float32")
    out = T.match_buffer(out_handle, (n, h + g), "float32")
    for i0, i1 in T.grid(n, h + g):
        out[i0, i1] = T.if_then_else(i1 < h, a[i0, i1], T.if_then_else(i1 < g, b[i0, i1 - h], c[i0, i1]))
)",
                                     "chain"));
  EXPECT_FALSE(HasSplittableConcatenation(f));
  EXPECT_EQ(SplitConcatenations(f), f);
  PrimFunc past = LowerBlocks(ParseFunc(R"(
@T.prim_func
def past(a_handle: T.handle, b_handle: T.handle, out_handle: T.handle):
    n = T.int64()
    h = T.int64()
    g = T.int64()
    a = T.match_buffer(a_handle, (n, h), "float32")
    b = T.match_buffer(b_handle, (n, g), "float32")
    out = T.match_buffer(out_handle, (n, g), "float32")
    for i0, i1 in T.grid(n, g):
        out[i0, i1] = T.if_then_else(i1 < h, a[i0, i1], b[i0, i1 - h])
)",
                                        "past"));
  EXPECT_FALSE(HasSplittableConcatenation(past));
}

}  // namespace
}  // namespace tir
}  // namespace kiln
