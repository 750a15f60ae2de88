// 1-D convolutions over short sequences with packed weights (DeepCut's
// 32 -> 200 convs of width 2..8 over 21 positions, as [N, C, 1, W] conv2d):
// one-row planes of 17 to 48 output columns take shift-plane tiles of one
// weight block (8 rows x the exact columns) instead of 8 x 32 halo tiles;
// narrower planes keep the halo tiles. Structure, and numbers against a
// double reference (static batch) and against the static build (symbolic
// batch), with constant (packed at compile time) and pre-packed weights.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/tir/conv_schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace conv_test;  // NOLINT
using namespace ir;         // NOLINT
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

// n images of c channels, 1 x w, o outputs, kernel 1 x kw.
ConvCase Row(int64_t n, int64_t c, int64_t w, int64_t o, int64_t kw, const std::string& weights) {
  ConvCase k{n, c, 1, w, o, 1, kw};
  k.weights = weights;
  return k;
}

TEST(Conv1dShiftPlanesTest, PackedWeightsOnShortRowsTakeShiftPlanes) {
  // Output widths 20, 17, 21 - 5 + 1 + 2 (padding) = 19, and 40 (three
  // vectors): kw planes, one 8-row tile of the whole row.
  std::vector<ConvCase> cases = {Row(3, 32, 21, 200, 2, "constant"), Row(3, 32, 21, 200, 5, "constant"),
                                 Row(2, 12, 44, 24, 5, "packed")};
  ConvCase padded = Row(2, 9, 21, 16, 5, "constant");
  padded.pl = padded.pr = 1;
  cases.push_back(padded);
  for (const ConvCase& k : cases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
      PrimFunc f = LowerConv(k, threads, BoundWeights(k));
      ASSERT_NE(f, nullptr);
      Census c = Count(f);
      EXPECT_EQ(PackedPlanes(c), k.kw);
      EXPECT_EQ(AccRows(c), std::vector<int64_t>{8});
      EXPECT_EQ(MaxParamRank(f), 5u);  // still the packed weight
    }
  }
}

TEST(Conv1dShiftPlanesTest, OtherPlanesKeepTheirTiles) {
  // 14 output columns (one vector; shift planes measured slower there), two
  // rows, and more than 48 columns: the halo layout (one column plane).
  for (const ConvCase& k : {Row(3, 32, 21, 200, 8, "constant"), ConvCase{1, 8, 2, 21, 16, 1, 3},
                            Row(1, 8, 60, 16, 3, "constant")}) {
    ConvCase c = k;
    c.weights = "constant";
    SCOPED_TRACE(c.Name());
    PrimFunc f = LowerConv(c, 1, BoundWeights(c));
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(PackedPlanes(Count(f)), 1);
  }
}

TEST(Conv1dShiftPlanesTest, StaticBatchNumbers) {
  ConvCase a = Row(3, 32, 21, 200, 5, "constant");
  ConvCase b = Row(2, 7, 23, 24, 3, "packed");  // odd channels and width: 21 columns
  b.epilogue = "bn_relu";
  ConvCase c = Row(1, 5, 44, 16, 4, "constant");  // 41 columns: 2 vectors and 9 lanes
  c.epilogue = "bn_residual_relu";
  ConvCase d = Row(2, 9, 21, 16, 5, "packed");
  d.pl = d.pr = 1;
  d.block = 8;
  for (const ConvCase& k : {a, b, c, d}) {
    CheckConv(k, 1);
    CheckConv(k, 2);
  }
}

// The case's module with a symbolic batch "n" (k.n must be a batch no other
// dimension of its tensors starts with).
std::string SymbolicModule(const ConvCase& k) {
  std::string src = ConvModule(k), from = "R.Tensor((" + std::to_string(k.n) + ", ", to = "R.Tensor((\"n\", ";
  for (size_t at = src.find(from); at != std::string::npos; at = src.find(from, at + to.size()))
    src.replace(at, from.size(), to);
  return src;
}

TEST(Conv1dShiftPlanesTest, SymbolicBatchMatchesStatic) {
  // The symbolic build (batch peeled, the same tiles per image) against the
  // static one, which StaticBatchNumbers checks against the reference.
  ConvCase a = Row(5, 32, 21, 200, 4, "constant");
  ConvCase b = Row(7, 6, 29, 24, 9, "packed");  // 21 columns, odd channels
  b.epilogue = "bias_relu6";
  for (const ConvCase& k : {a, b}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
      params::ParamList bound = BoundWeights(k);
      PrimFunc lowered = LowerConv(k, threads, bound);
      ASSERT_NE(lowered, nullptr);
      EXPECT_EQ(PackedPlanes(Count(lowered)), k.kw);
      auto fixed = Compile(ConvModule(k), threads, bound, false);
      auto sym = Compile(SymbolicModule(k), threads, bound, false);
      ASSERT_NE(fixed, nullptr);
      ASSERT_NE(sym, nullptr);
      std::vector<float> x = RandomFloats(k.n * k.c * k.w, 1), w = Weights(k), scale = RandomFloats(k.o, 3),
                         shift = RandomFloats(k.o, 4), r = RandomFloats(k.n * k.o * k.Wo(), 5);
      std::vector<Any> args = {FloatTensor({k.n, k.c, 1, k.w}, x), WeightArg(k, w), FloatTensor({k.o, 1, 1}, scale),
                               FloatTensor({k.o, 1, 1}, shift), FloatTensor({k.n, k.o, 1, k.Wo()}, r)};
      if (k.weights == "constant") args.erase(args.begin() + 1);
      Result<Tensor> want = InvokeMain(*fixed, args);
      Result<Tensor> got = InvokeMain(*sym, args);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->shape(), want->shape());
      const float* g = got->data<float>();
      const float* e = want->data<float>();
      int64_t count = k.n * k.o * k.Wo();
      int bad = 0;
      for (int64_t i = 0; i < count; ++i)
        if (!(std::fabs(g[i] - e[i]) <= 1e-5f * (1 + std::fabs(e[i]))) && bad++ < 5)
          ADD_FAILURE() << "element " << i << ": " << g[i] << " vs " << e[i];
      EXPECT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
