// The checks an imported model leaves for run time (R.match_cast with
// messages): each fires here with values a user could pass, and its message
// names the ONNX node, the input, the dimension or value, the expected
// expression in the model's dimension names and the value given.
#include <gtest/gtest.h>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

TEST(OnnxRunTimeChecksE2E, ReshapeToARunTimeShapeOfAnotherElementCount) {
  B m(14);
  m.Input("x", TensorProto::FLOAT, {"batch", 3});
  m.Input("shape", TensorProto::INT64, {2});
  m.Node("Reshape", {"x", "shape"}, {"y"}, "r");
  m.Output("y");
  EXPECT_EQ(RunError(m, {F32({4, 3}, Zeros(12)), I64({2}, {6, 2})}), "");
  EXPECT_EQ(RunError(m, {F32({4, 3}, Zeros(12)), I64({2}, {5, 5})}),
            "main: ONNX Reshape node \"r\": input 1 \"shape\" asks for 25 elements; input 0 \"x\" (shape [batch, 3]) "
            "holds batch * 3 = 12");
}

TEST(OnnxRunTimeChecksE2E, SqueezeRunTimeAxesOutOfRangeOrNotOne) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 1, 3});
  m.Input("axes", TensorProto::INT64, {1});
  m.Node("Squeeze", {"x", "axes"}, {"y"}, "sq");
  m.Output("y");
  Tensor x = F32({2, 1, 3}, Zeros(6));
  EXPECT_EQ(RunError(m, {x, I64({1}, {1})}), "");
  EXPECT_EQ(RunError(m, {x, I64({1}, {3})}),
            "main: ONNX Squeeze node \"sq\": 1 of the values of input 1 \"axes\" lie outside [-3, 2], the axes of a "
            "rank-3 tensor");
  EXPECT_EQ(RunError(m, {x, I64({1}, {0})}),
            "main: ONNX Squeeze node \"sq\": an axis named by input 1 \"axes\" does not have size 1: the squeezed shape "
            "holds 3 elements; input 0 \"x\" (shape [2, 1, 3]) holds 6 elements");
}

TEST(OnnxRunTimeChecksE2E, UnsqueezeRunTimeAxesOutOfRangeOrRepeated) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 4});
  m.Input("axes", TensorProto::INT64, {2});
  m.Node("Unsqueeze", {"x", "axes"}, {"y"}, "unsq");
  m.Output("y");
  Tensor x = F32({3, 4}, Zeros(12));
  EXPECT_EQ(RunError(m, {x, I64({2}, {0, -1})}), "");
  EXPECT_EQ(RunError(m, {x, I64({2}, {4, -5})}),
            "main: ONNX Unsqueeze node \"unsq\": 2 of the values of input 1 \"axes\" lie outside [-4, 3], the axes of a "
            "rank-4 tensor");
  EXPECT_EQ(RunError(m, {x, I64({2}, {0, 0})}),
            "main: ONNX Unsqueeze node \"unsq\": the values of input 1 \"axes\" repeat an axis: the result would hold 36 "
            "elements; input 0 \"x\" (shape [n, 4]) holds n * 4 = 12 elements");
}

TEST(OnnxRunTimeChecksE2E, ReduceAndCumSumOverRunTimeAxesOutOfRange) {
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("axes", TensorProto::INT64, {1});
    m.Node("ReduceSum", {"x", "axes"}, {"y"}, "sum");
    m.Output("y");
    EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), I64({1}, {2})}),
              "main: ONNX ReduceSum node \"sum\": 1 of the values of input 1 \"axes\" lie outside [-2, 1], the axes of "
              "a rank-2 tensor");
  }
  {
    B m(14);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("axis", TensorProto::INT64, {});
    m.Node("CumSum", {"x", "axis"}, {"y"}, "cs");
    m.Output("y");
    EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), I64({}, {-3})}),
              "main: ONNX CumSum node \"cs\": 1 of the values of input 1 \"axis\" lie outside [-2, 1], the axes of a "
              "rank-2 tensor");
  }
}

TEST(OnnxRunTimeChecksE2E, SliceWithRunTimeAxesOutOfRange) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {3, 4});
  m.Input("starts", TensorProto::INT64, {1});
  m.Input("ends", TensorProto::INT64, {1});
  m.Input("axes", TensorProto::INT64, {1});
  m.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"});  // unnamed: named by its output
  m.Output("y");
  Tensor x = F32({3, 4}, Zeros(12));
  EXPECT_EQ(RunError(m, {x, I64({1}, {0}), I64({1}, {1}), I64({1}, {1})}), "");
  EXPECT_EQ(RunError(m, {x, I64({1}, {0}), I64({1}, {1}), I64({1}, {2})}),
            "main: ONNX Slice node \"y\": 1 of the values of input 3 \"axes\" lie outside [-2, 1], the axes of a rank-2 "
            "tensor");
}

TEST(OnnxRunTimeChecksE2E, SplitByRunTimeSizesThatDoNotAddUp) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 2});
  m.Input("split", TensorProto::INT64, {2});
  m.Node("Split", {"x", "split"}, {"a", "b"}, "halves");
  m.Output("a");
  m.Output("b");
  Tensor x = F32({5, 2}, Zeros(10));
  EXPECT_EQ(RunError(m, {x, I64({2}, {2, 3})}), "");
  EXPECT_EQ(RunError(m, {x, I64({2}, {2, 2})}),
            "main: ONNX Split node \"halves\": the sizes in input 1 \"split\" add up to 4; axis 0 of input 0 \"x\" "
            "(shape [n, 2]) has n = 5");
}

TEST(OnnxRunTimeChecksE2E, ResizeToRunTimeSizesThatChangeTheChannels) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, "c", 2, 2});
  m.Input("sizes", TensorProto::INT64, {4});
  auto* n = m.Node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
  B::AttrString(n, "mode", "nearest");
  m.Output("y");
  Tensor x = F32({1, 3, 2, 2}, Zeros(12));
  EXPECT_EQ(RunError(m, {x, I64({4}, {1, 3, 4, 4})}), "");
  EXPECT_EQ(RunError(m, {x, I64({4}, {1, 6, 4, 4})}),
            "main: ONNX Resize node \"up\": input 3 \"sizes\" gives axis 1 of input 0 \"x\" (shape [1, c, 2, 2]) size 6; "
            "only the spatial axes may change size (expected c = 3)");
  EXPECT_EQ(RunError(m, {x, I64({4}, {2, 3, 4, 4})}),
            "main: ONNX Resize node \"up\": input 3 \"sizes\" gives axis 0 of input 0 \"x\" (shape [1, c, 2, 2]) size 2; "
            "only the spatial axes may change size (expected 1)");
}

TEST(OnnxRunTimeChecksE2E, ResizeByRunTimeScalesThatChangeTheChannels) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {1, "c", 2, 2});
  m.Input("scales", TensorProto::FLOAT, {4});
  auto* n = m.Node("Resize", {"x", "", "scales"}, {"y"}, "up");
  B::AttrString(n, "mode", "nearest");
  m.Output("y");
  Tensor x = F32({1, 3, 2, 2}, Zeros(12));
  EXPECT_EQ(RunError(m, {x, F32({4}, {1, 1, 2, 2})}), "");
  EXPECT_EQ(RunError(m, {x, F32({4}, {1, 2, 2, 2})}),
            "main: ONNX Resize node \"up\": input 2 \"scales\" scales axis 1 of input 0 \"x\" (shape [1, c, 2, 2]) to 6; "
            "only the spatial axes may change size (expected c = 3)");
}

TEST(OnnxRunTimeChecksE2E, AddOfDimsThatDifferAtRunTime) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"h", 2});
  m.Input("y", TensorProto::FLOAT, {"g", 2});
  m.Node("Add", {"x", "y"}, {"z"}, "skip");
  m.Output("z");
  EXPECT_EQ(RunError(m, {F32({3, 2}, Zeros(6)), F32({3, 2}, Zeros(6))}), "");
  EXPECT_EQ(RunError(m, {F32({3, 2}, Zeros(6)), F32({4, 2}, Zeros(8))}),
            "main: ONNX Add node \"skip\": input 1 \"y\" (shape [g, 2]) has g = 4 at axis 0; the compiled model needs it "
            "equal to axis 0 of input 0 \"x\" (shape [h, 2]): h = 3");
}

// Before these checks the kernels read with input 0's extent: a silently
// wrong (or out of bounds) result.
TEST(OnnxRunTimeChecksE2E, ConcatOfOtherAxesThatDifferAtRunTime) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"a", "h"});
  m.Input("y", TensorProto::FLOAT, {"b", "g"});
  auto* n = m.Node("Concat", {"x", "y"}, {"z"}, "cat");
  B::AttrInt(n, "axis", 0);
  m.Output("z");
  EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), F32({1, 3}, Zeros(3))}), "");
  EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), F32({2, 4}, Zeros(8))}),
            "main: ONNX Concat node \"cat\": input 1 \"y\" (shape [b, g]) has g = 4 at axis 1; it must equal axis 1 of "
            "input 0 \"x\" (shape [a, h]): h = 3");
}

TEST(OnnxRunTimeChecksE2E, MatMulAndGemmReductionAxesThatDifferAtRunTime) {
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {"a", "k"});
    m.Input("w", TensorProto::FLOAT, {"j", 2});
    m.Node("MatMul", {"x", "w"}, {"z"}, "mm");
    m.Output("z");
    EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), F32({3, 2}, Zeros(6))}), "");
    EXPECT_EQ(RunError(m, {F32({2, 3}, Zeros(6)), F32({4, 2}, Zeros(8))}),
              "main: ONNX MatMul node \"mm\": input 1 \"w\" (shape [j, 2]) has j = 4 at axis 0; it must equal axis 1 of "
              "input 0 \"x\" (shape [a, k]): k = 3");
  }
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {"k", "a"});
    m.Input("w", TensorProto::FLOAT, {2, "j"});
    auto* n = m.Node("Gemm", {"x", "w"}, {"z"}, "fc");
    B::AttrInt(n, "transA", 1);
    B::AttrInt(n, "transB", 1);
    m.Output("z");
    EXPECT_EQ(RunError(m, {F32({3, 2}, Zeros(6)), F32({2, 3}, Zeros(6))}), "");
    EXPECT_EQ(RunError(m, {F32({3, 2}, Zeros(6)), F32({2, 5}, Zeros(10))}),
              "main: ONNX Gemm node \"fc\": input 1 \"w\" (shape [2, j]) has j = 5 at axis 1; it must equal axis 0 of "
              "input 0 \"x\" (shape [k, a]): k = 3");
  }
}

TEST(OnnxRunTimeChecksE2E, ExpandToARunTimeShapeThatDoesNotBroadcast) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 3});
  m.Input("shape", TensorProto::INT64, {2});
  m.Node("Expand", {"x", "shape"}, {"y"}, "ex");
  m.Output("y");
  Tensor x = F32({2, 3}, Zeros(6));
  EXPECT_EQ(RunError(m, {x, I64({2}, {2, 3})}), "");
  EXPECT_EQ(RunError(m, {x, I64({2}, {1, 1})}), "");
  EXPECT_EQ(RunError(m, {x, I64({2}, {2, 4})}),
            "main: ONNX Expand node \"ex\": entry 1 of input 1 \"shape\" is 4; it must be 1 or the dimension it "
            "broadcasts with, of input 0 \"x\" (shape [n, 3]): 3");
  EXPECT_EQ(RunError(m, {x, I64({2}, {5, 3})}),
            "main: ONNX Expand node \"ex\": entry 0 of input 1 \"shape\" is 5; it must be 1 or the dimension it "
            "broadcasts with, of input 0 \"x\" (shape [n, 3]): n = 2");
}

TEST(OnnxRunTimeChecksE2E, GatherOfRunTimeIndicesOutOfRange) {
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {2, 3});
    m.Input("i", TensorProto::INT64, {2});
    auto* n = m.Node("Gather", {"x", "i"}, {"y"}, "ga");
    B::AttrInt(n, "axis", 1);
    m.Output("y");
    Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
    auto module = CompileOnnx(m);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto r = RunMain(module.value(), {x, I64({2}, {2, -3})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Values(r.value()[0]), (std::vector<float>{3, 1, 6, 4}));
    EXPECT_EQ(RunError(m, {x, I64({2}, {0, 5})}),
              "main: ONNX Gather node \"ga\": 1 of the values of input 1 \"i\" lie outside [-3, 2], the indices of axis 1 "
              "of input 0 \"x\" (shape [2, 3])");
  }
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {"n", 3});
    m.Input("i", TensorProto::INT32, {});
    m.Node("Gather", {"x", "i"}, {"y"}, "row");
    m.Output("y");
    Tensor good = Tensor::Empty(std::vector<int64_t>{}, DType::Int32()).value();
    good.data<int32_t>()[0] = -4;
    EXPECT_EQ(RunError(m, {F32({4, 3}, Zeros(12)), good}), "");
    Tensor bad = Tensor::Empty(std::vector<int64_t>{}, DType::Int32()).value();
    bad.data<int32_t>()[0] = -5;
    EXPECT_EQ(RunError(m, {F32({4, 3}, Zeros(12)), bad}),
              "main: ONNX Gather node \"row\": 1 of the values of input 1 \"i\" lie outside [-n, n - 1], the indices of "
              "axis 0 of input 0 \"x\" (shape [n, 3])");
  }
}

TEST(OnnxRunTimeChecksE2E, PadCroppingMoreThanAnAxisHolds) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, "w"});
  m.Input("pads", TensorProto::INT64, {4});
  m.Node("Pad", {"x", "pads"}, {"y"}, "pad");
  m.Output("y");
  Tensor x = F32({2, 3}, Zeros(6));
  EXPECT_EQ(RunError(m, {x, I64({4}, {0, -3, 0, 0})}), "");
  EXPECT_EQ(RunError(m, {x, I64({4}, {0, -5, 0, 1})}),
            "main: ONNX Pad node \"pad\": input 1 \"pads\" crops 1 of the axes of input 0 \"x\" (shape [2, w]) to a "
            "negative size");
}

TEST(OnnxRunTimeChecksE2E, RangeWithAZeroStep) {
  B m(13);
  m.Input("start", TensorProto::FLOAT, {});
  m.Input("limit", TensorProto::FLOAT, {});
  m.Input("delta", TensorProto::FLOAT, {});
  m.Node("Range", {"start", "limit", "delta"}, {"y"}, "steps");
  m.Output("y");
  EXPECT_EQ(RunError(m, {F32({}, {0}), F32({}, {4}), F32({}, {2})}), "");
  EXPECT_EQ(RunError(m, {F32({}, {0}), F32({}, {4}), F32({}, {0})}),
            "main: ONNX Range node \"steps\": input 2 \"delta\" (the step) is 0; a Range needs a step other than 0");
}

TEST(OnnxRunTimeChecksE2E, SqueezeWithoutAxesOfASymbolicAxisThatIsNotOne) {
  B m(11);
  m.Input("x", TensorProto::FLOAT, {"batch", 1});
  m.Node("Squeeze", {"x"}, {"y"}, "score");
  m.Output("y");
  EXPECT_EQ(RunError(m, {F32({1, 1}, {0.5f})}), "");
  EXPECT_EQ(RunError(m, {F32({2, 1}, {1, 2})}),
            "main: ONNX Squeeze node \"score\" has no axes, so it squeezes axis 0 of input 0 \"x\" (shape [batch, 1]), "
            "which the compiled model takes to be 1 (batch = 2); give the axes");
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
