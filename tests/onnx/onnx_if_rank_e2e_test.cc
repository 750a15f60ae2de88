// ONNX If whose branches give different ranks (compiler/onnx/if_tail.cc):
// torch's `x.squeeze(1)` on a dimension that may be 1, followed by the rank
// check torch's RNN cells export. What follows the If is imported once per
// branch; each copy's rank checks fold; an If that feeds the tail joins it;
// a copy that does not import raises when it runs; and the errors (both
// copies failing, graph outputs of two ranks, the limit on copied nodes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/text/text.h"
#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// y = x.squeeze(1) as torch exports it when x's dimension 1 is symbolic:
// If(Shape(x)[1] == 1, Squeeze(x, [1]), Identity(x)), rank 1 or 2.
void SqueezeIf(B* m, const std::string& x, const std::string& y, const std::string& name) {
  m->Node("Shape", {x}, {name + "_shape"});
  m->InitializerI64(name + "_axis", {}, {1});
  B::AttrInt(m->Node("Gather", {name + "_shape", name + "_axis"}, {name + "_dim"}), "axis", 0);
  m->InitializerI64(name + "_one", {}, {1});
  m->Node("Equal", {name + "_dim", name + "_one"}, {name + "_cond"});
  B then_g;
  then_g.InitializerI64(name + "_axes", {1}, {1});
  then_g.Node("Squeeze", {x, name + "_axes"}, {name + "_squeezed"});
  then_g.Output(name + "_squeezed");
  B else_g;
  else_g.Node("Identity", {x}, {name + "_same"});
  else_g.Output(name + "_same");
  auto* n = m->Node("If", {name + "_cond"}, {y}, name);
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
}

// y2 (n, 1) from y of rank 1 or 2 as a torch RNN cell's batching check
// exports it: If(Cast(Not(Size(Shape(y)) == 1), bool), ReduceSum(y, [1],
// keepdims), Unsqueeze(y, [1])). Folds at import once y's rank is known.
void RankIf(B* m, const std::string& y, const std::string& y2, const std::string& name) {
  m->Node("Shape", {y}, {name + "_shape"});
  m->Node("Size", {name + "_shape"}, {name + "_rank"});
  m->InitializerI64(name + "_one", {}, {1});
  m->Node("Equal", {name + "_rank", name + "_one"}, {name + "_is1"});
  m->Node("Not", {name + "_is1"}, {name + "_not1"});
  B::AttrInt(m->Node("Cast", {name + "_not1"}, {name + "_cond"}), "to", TensorProto::BOOL);
  B then_g;
  then_g.InitializerI64(name + "_raxes", {1}, {1});
  then_g.Node("ReduceSum", {y, name + "_raxes"}, {name + "_sum"});
  then_g.Output(name + "_sum");
  B else_g;
  else_g.InitializerI64(name + "_uaxes", {1}, {1});
  else_g.Node("Unsqueeze", {y, name + "_uaxes"}, {name + "_col"});
  else_g.Output(name + "_col");
  auto* n = m->Node("If", {name + "_cond"}, {y2}, name);
  B::AttrGraph(n, "then_branch", then_g);
  B::AttrGraph(n, "else_branch", else_g);
}

// The row sums of x (n, t): x.squeeze(1) then the rank check, as above.
float RowSum(const std::vector<float>& x, int64_t t, int64_t row) {
  float s = 0;
  for (int64_t j = 0; j < t; ++j) s += x[static_cast<size_t>(row * t + j)];
  return s;
}

// out = RankIf(SqueezeIf(x)) + exp(min over axis 1 of x); Exp and ReduceMin
// come after the If in node order but do not depend on it, and `ex` is a
// graph output of its own.
B TailModel() {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", "t"});
  SqueezeIf(&m, "x", "y", "sq");
  m.Node("Exp", {"x"}, {"ex"});
  auto* rmin = m.Node("ReduceMin", {"ex"}, {"exm"});
  B::AttrInts(rmin, "axes", {1});
  RankIf(&m, "y", "y2", "rank");
  m.Node("Add", {"y2", "exm"}, {"out"});
  m.Output("out");
  m.Output("ex");
  return m;
}

TEST(OnnxIfRankE2E, WhatFollowsIsImportedOncePerBranchAndItsRankChecksFold) {
  B m = TailModel();
  std::string text = ImportText(m);
  ASSERT_NE(text, "");
  EXPECT_NE(text.find("def sq_after_then("), std::string::npos) << text;
  EXPECT_NE(text.find("def sq_after_else("), std::string::npos) << text;
  EXPECT_EQ(Count(text, "if "), 1u) << text;           // the rank checks folded in each copy
  EXPECT_EQ(Count(text, "R.exp("), 1u) << text;        // imported once, ahead of the If
  EXPECT_EQ(Count(text, "R.sum("), 1u) << text;        // one copy reduces, the other unsqueezes
  EXPECT_EQ(text.find("vm.builtin.raise"), std::string::npos) << text;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  for (int64_t t : {1, 3}) {
    const int64_t n = 2;
    std::vector<float> x = Ramp(n * t, -1, 1, static_cast<uint64_t>(t));
    auto out = RunMain(*module, {F32({n, t}, x)});
    ASSERT_TRUE(out.ok()) << "t=" << t << ": " << out.status().ToString();
    ASSERT_EQ(out->size(), 2u);
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{n, 1})) << "t=" << t;
    ASSERT_EQ((*out)[1].shape(), (std::vector<int64_t>{n, t})) << "t=" << t;
    std::vector<float> o = Values((*out)[0]);
    for (int64_t i = 0; i < n; ++i) {
      float lo = *std::min_element(x.begin() + i * t, x.begin() + (i + 1) * t);
      EXPECT_NEAR(o[static_cast<size_t>(i)], RowSum(x, t, i) + std::exp(lo), 1e-5f) << "t=" << t << " row " << i;
    }
  }
}

TEST(OnnxIfRankE2E, TwoSuchIfsWhoseResultsMeetGiveFourCopies) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", "t"});
  m.Input("w", TensorProto::FLOAT, {"n", "u"});
  SqueezeIf(&m, "x", "y", "sqx");
  SqueezeIf(&m, "w", "z", "sqw");  // after the first, independent of it, read by its tail
  RankIf(&m, "y", "y2", "rankx");
  RankIf(&m, "z", "z2", "rankw");
  m.Node("Add", {"y2", "z2"}, {"out"});
  m.Output("out");
  std::string text = ImportText(m);
  ASSERT_NE(text, "");
  EXPECT_EQ(Count(text, "def sqw_after_then"), 2u) << text;  // once in each copy of sqx's tail
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  for (int64_t t : {1, 3}) {
    for (int64_t u : {1, 2}) {
      const int64_t n = 3;
      std::vector<float> x = Ramp(n * t, -1, 1, 7), w = Ramp(n * u, -2, 2, 8);
      auto out = RunMain(*module, {F32({n, t}, x), F32({n, u}, w)});
      ASSERT_TRUE(out.ok()) << "t=" << t << " u=" << u << ": " << out.status().ToString();
      ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{n, 1}));
      std::vector<float> o = Values((*out)[0]);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(o[static_cast<size_t>(i)], RowSum(x, t, i) + RowSum(w, u, i), 1e-5f) << "t=" << t << " u=" << u;
      }
    }
  }
}

// y = x.squeeze(1); Gemm(Unsqueeze(y, [1]), W): a matrix when x had one
// column, rank 3 otherwise, which Gemm refuses (as ONNX Runtime does when it
// runs that path).
B RaiseModel() {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", "t"});
  SqueezeIf(&m, "x", "y", "sq");
  m.InitializerI64("ax1", {1}, {1});
  m.Node("Unsqueeze", {"y", "ax1"}, {"col"});
  m.Initializer("W", {1, 2}, {2, -3});
  m.Node("Gemm", {"col", "W"}, {"out"});
  m.Output("out");
  return m;
}

TEST(OnnxIfRankE2E, ACopyThatDoesNotImportRaisesWhenItsBranchRuns) {
  B m = RaiseModel();
  std::string text = ImportText(m);
  ASSERT_NE(text, "");
  EXPECT_NE(text.find("R.call_packed(\"vm.builtin.raise\""), std::string::npos) << text;
  auto module = CompileOnnx(m);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << text;
  auto ok = RunMain(*module, {F32({2, 1}, {1.5f, -1})});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Values((*ok)[0]), (std::vector<float>{3, -4.5f, -2, 3}));
  auto bad = RunMain(*module, {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(bad.ok());
  const std::string& msg = bad.status().message();
  EXPECT_NE(msg.find("node \"sq\" (#3) If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 "
                     "float32 when it is false; what follows could not be compiled for the false case:"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("Gemm (opset 13): A and B must be matrices"), std::string::npos) << msg;
}

TEST(OnnxIfRankE2E, ErrorsWhenNeitherCopyImportsOrTheOutputsKeepTwoRanks) {
  std::string err;
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {"n", "t"});
    SqueezeIf(&m, "x", "y", "sq");
    m.Node("FancyOp", {"y"}, {"out"});
    m.Output("out");
    EXPECT_EQ(ImportText(m, {}, &err), "");
    EXPECT_EQ(Count(err, "FancyOp (opset 13): unsupported operator"), 1u) << err;
    EXPECT_NE(err.find("node \"sq\" (#3) If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 "
                       "float32 when it is false; the 1 nodes that depend on it import for neither branch (the "
                       "problems are listed)"),
              std::string::npos) << err;
  }
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {"n", "t"});
    SqueezeIf(&m, "x", "y", "sq");
    m.Output("y");
    EXPECT_EQ(ImportText(m, {}, &err), "");
    EXPECT_NE(err.find("If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 float32 when it "
                       "is false; the graph output \"y\" that depends on it is then rank 1 float32 or rank 2 float32 "
                       "(one rank per value)"),
              std::string::npos) << err;
  }
}

TEST(OnnxIfRankE2E, TheNodesCopiedAreLimitedOverTheWholeModel) {
  // TailModel's tail: the rank check's Shape, Size, Equal, Not, Cast and If
  // (1 + its 2 branch nodes), and Add.
  ImportOptions fits;
  fits.if_tail_limit = 9;
  std::string err;
  EXPECT_NE(ImportText(TailModel(), fits, &err), "") << err;
  ImportOptions small;
  small.if_tail_limit = 8;
  EXPECT_EQ(ImportText(TailModel(), small, &err), "");
  EXPECT_NE(err.find("node \"sq\" (#3) If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 "
                     "float32 when it is false, so the 9 nodes that depend on it would be imported once per branch, "
                     "bringing the nodes imported twice to 9, above the limit of 8 (ImportOptions::if_tail_limit)"),
            std::string::npos) << err;
  // Nested splits count too: the second If's copies inside each copy of the
  // first's tail (TwoSuchIfs...: 20 nodes for the first, 12 in each of its
  // copies) pass the limit in the first's else copy: an import error, not a
  // raise in that branch.
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", "t"});
  m.Input("w", TensorProto::FLOAT, {"n", "u"});
  SqueezeIf(&m, "x", "y", "sqx");
  SqueezeIf(&m, "w", "z", "sqw");
  RankIf(&m, "y", "y2", "rankx");
  RankIf(&m, "z", "z2", "rankw");
  m.Node("Add", {"y2", "z2"}, {"out"});
  m.Output("out");
  ImportOptions nested;
  nested.if_tail_limit = 44;
  EXPECT_NE(ImportText(m, nested, &err), "") << err;
  nested.if_tail_limit = 43;
  EXPECT_EQ(ImportText(m, nested, &err), "");
  EXPECT_NE(err.find("node \"sqw\" (#7) If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 "
                     "float32 when it is false, so the 12 nodes that depend on it would be imported once per branch, "
                     "bringing the nodes imported twice to 44, above the limit of 43"),
            std::string::npos) << err;
  EXPECT_NE(err.find("node \"sqx\" (#3) If (opset 13): output 0 is rank 1 float32 when the condition is true, rank 2 "
                     "float32 when it is false; the"),
            std::string::npos) << err;
  EXPECT_NE(err.find("float32 when it is false; the 14 nodes that depend on it could not be imported for both branches "
                     "within the limit (the problems are listed)"),
            std::string::npos) << err;
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
