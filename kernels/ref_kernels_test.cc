#include "kernels/ref_kernels.h"

#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"

namespace kiln {
namespace kernels {
namespace {

using testing::Call;
using testing::MakeTensor;
using testing::Values;
using testing::Zeros;

TEST(RefMatmul, HandComputed2x3Times3x2) {
  Tensor a = MakeTensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor b = MakeTensor({3, 2}, std::vector<float>{7, 8, 9, 10, 11, 12});
  Tensor out = Zeros({2, 2});
  ASSERT_TRUE(Call(RefMatmul, {a, b, out}).ok());
  // [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
  EXPECT_EQ(Values(out), (std::vector<float>{58, 64, 139, 154}));
}

TEST(RefMatmul, BatchDimsAreFlattenedIntoRows) {
  Tensor a = MakeTensor({2, 1, 2}, std::vector<float>{1, 2, 3, 4});
  Tensor b = MakeTensor({2, 3}, std::vector<float>{1, 0, 2, 0, 1, -1});
  Tensor out = Zeros({2, 1, 3});
  ASSERT_TRUE(Call(RefMatmul, {a, b, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{1, 2, 0, 3, 4, 2}));
}

TEST(RefMatmul, EmptyReductionGivesZeros) {
  Tensor a = Zeros({2, 0});
  Tensor b = Zeros({0, 2});
  Tensor out = MakeTensor({2, 2}, std::vector<float>{9, 9, 9, 9});
  ASSERT_TRUE(Call(RefMatmul, {a, b, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{0, 0, 0, 0}));
}

TEST(RefMatmul, InPlaceOverASquareProblem) {
  Tensor a = MakeTensor({1, 2}, std::vector<float>{1, 2});
  Tensor b = MakeTensor({2, 2}, std::vector<float>{1, 1, 0, 1});
  ASSERT_TRUE(Call(RefMatmul, {a, b, a}).ok());
  EXPECT_EQ(Values(a), (std::vector<float>{1, 3}));
}

TEST(RefAdd, SameShape) {
  Tensor a = MakeTensor({2, 2}, std::vector<float>{1, 2, 3, 4});
  Tensor b = MakeTensor({2, 2}, std::vector<float>{10, 20, 30, 40});
  Tensor out = Zeros({2, 2});
  ASSERT_TRUE(Call(RefAdd, {a, b, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{11, 22, 33, 44}));
}

TEST(RefAdd, BroadcastsBiasOverRows) {
  Tensor a = MakeTensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor bias = MakeTensor({3}, std::vector<float>{10, 20, 30});
  Tensor out = Zeros({2, 3});
  ASSERT_TRUE(Call(RefAdd, {a, bias, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(RefAdd, BroadcastsBothSides) {
  Tensor col = MakeTensor({2, 1}, std::vector<float>{1, 2});
  Tensor row = MakeTensor({1, 3}, std::vector<float>{10, 20, 30});
  Tensor out = Zeros({2, 3});
  ASSERT_TRUE(Call(RefAdd, {col, row, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{11, 21, 31, 12, 22, 32}));
}

TEST(RefAdd, ScalarAndInt64AndInPlace) {
  Tensor a = MakeTensor<int64_t>({3}, {1, 2, 3}, DType::Int64());
  Tensor s = MakeTensor<int64_t>({}, {100}, DType::Int64());
  ASSERT_TRUE(Call(RefAdd, {a, s, a}).ok());
  EXPECT_EQ(Values<int64_t>(a), (std::vector<int64_t>{101, 102, 103}));
}

TEST(RefAdd, BroadcastShapes) {
  std::vector<int64_t> a = {8, 1, 6, 1}, b = {7, 1, 5};
  Result<std::vector<int64_t>> s = BroadcastShapes("f", a, b);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<int64_t>{8, 7, 6, 5}));
}

TEST(RefRelu, ClampsNegatives) {
  Tensor a = MakeTensor({4}, std::vector<float>{-1, 0, 2.5f, -0.5f});
  Tensor out = Zeros({4});
  ASSERT_TRUE(Call(RefRelu, {a, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{0, 0, 2.5f, 0}));
  Tensor i = MakeTensor<int32_t>({2}, {-3, 3}, DType::Int32());
  ASSERT_TRUE(Call(RefRelu, {i, i}).ok());
  EXPECT_EQ(Values<int32_t>(i), (std::vector<int32_t>{0, 3}));
}

TEST(RefPermuteDims, Transposes2D) {
  Tensor a = MakeTensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor out = Zeros({3, 2});
  ASSERT_TRUE(Call(RefPermuteDims, {a, out}).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(RefPermuteDims, ReversesAxesOf3D) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  Tensor a = MakeTensor({2, 3, 4}, v);
  Tensor out = Zeros({4, 3, 2});
  ASSERT_TRUE(Call(RefPermuteDims, {a, out}).ok());
  // out[k][j][i] = a[i][j][k] = i*12 + j*4 + k
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) EXPECT_EQ(out.data<float>()[k * 6 + j * 2 + i], i * 12 + j * 4 + k);
}

TEST(RefPermuteDims, ExplicitAxesWithNegativeEntry) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  Tensor a = MakeTensor({2, 3, 4}, v);
  Tensor out = Zeros({2, 4, 3});
  ASSERT_TRUE(Call(RefPermuteDims, {a, Any::Shape({0, -1, 1}), out}).ok());
  // out[i][k][j] = a[i][j][k]
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out.data<float>()[i * 12 + k * 3 + j], i * 12 + j * 4 + k);
}

// ---------------------------------------------------------------- errors

void ExpectError(const Status& s, const std::string& message) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), message);
}

TEST(RefErrors, Matmul) {
  Tensor a = Zeros({2, 784});
  Tensor b = Zeros({785, 10});
  ExpectError(Call(RefMatmul, {a, b, Zeros({2, 10})}), "kiln.ref.matmul: A has K=784 but B has K=785");
}

TEST(RefErrors, AddUnsupportedDType) {
  Tensor h = Zeros({2}, DType::Float16());
  ExpectError(Call(RefAdd, {h, h, h}), "kiln.ref.add: A has dtype float16, expected float32, float64, int32 or int64");
}

TEST(RefErrors, AddMixedDTypes) {
  ExpectError(Call(RefAdd, {Zeros({2}), Zeros({2}, DType::Int32()), Zeros({2})}),
              "kiln.ref.add: B has dtype int32, expected float32");
}

TEST(RefErrors, AddShapesDoNotBroadcast) {
  ExpectError(Call(RefAdd, {Zeros({2, 3}), Zeros({4}), Zeros({2, 3})}),
              "kiln.ref.add: shapes [2, 3] and [4] do not broadcast (dimension 0 from the end: 3 vs 4)");
}

TEST(RefErrors, AddWrongOutShape) {
  ExpectError(Call(RefAdd, {Zeros({2, 3}), Zeros({3}), Zeros({3, 2})}),
              "kiln.ref.add: Out has shape [3, 2], expected [2, 3]");
}

TEST(RefErrors, AddArgCount) {
  ExpectError(Call(RefAdd, {Zeros({2}), Zeros({2})}), "kiln.ref.add: expected 3 arguments (A, B, Out), got 2");
}

TEST(RefErrors, ReluWrongOutShape) {
  ExpectError(Call(RefRelu, {Zeros({4}), Zeros({5})}), "kiln.ref.relu: Out has shape [5], expected [4]");
}

TEST(RefErrors, ReluUnsupportedDType) {
  Tensor u = Zeros({4}, DType::UInt8());
  ExpectError(Call(RefRelu, {u, u}), "kiln.ref.relu: A has dtype uint8, expected float32, float64, int32 or int64");
}

TEST(RefErrors, PermuteDims) {
  Tensor a = Zeros({2, 3});
  ExpectError(Call(RefPermuteDims, {a}),
              "kiln.ref.permute_dims: expected 2 arguments (A, Out) or 3 (A, axes, Out), got 1");
  ExpectError(Call(RefPermuteDims, {a, Any(int64_t{1}), Zeros({3, 2})}),
              "kiln.ref.permute_dims: argument 1 (axes) must be a shape, got int 1");
  ExpectError(Call(RefPermuteDims, {a, Any::Shape({0}), Zeros({3, 2})}),
              "kiln.ref.permute_dims: axes [0] has 1 entries but A has rank 2");
  ExpectError(Call(RefPermuteDims, {a, Any::Shape({0, 0}), Zeros({3, 2})}),
              "kiln.ref.permute_dims: axes [0, 0] is not a permutation of the 2 axes of A");
  ExpectError(Call(RefPermuteDims, {a, Any::Shape({0, 2}), Zeros({3, 2})}),
              "kiln.ref.permute_dims: axes [0, 2] is not a permutation of the 2 axes of A");
  ExpectError(Call(RefPermuteDims, {a, Zeros({2, 3})}), "kiln.ref.permute_dims: Out has shape [2, 3], expected [3, 2]");
  ExpectError(Call(RefPermuteDims, {a, Zeros({3, 2}, DType::Int32())}),
              "kiln.ref.permute_dims: Out has dtype int32, expected float32");
  Tensor wide = Zeros({2}, DType{kDLFloat, 32, 4});
  ExpectError(Call(RefPermuteDims, {wide, wide}),
              "kiln.ref.permute_dims: A has dtype float32x4; only 1, 2, 4 or 8-byte elements are supported");
}

}  // namespace
}  // namespace kernels
}  // namespace kiln
