#include "kernels/kernel_args.h"

#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/ref_kernels.h"

namespace kiln {
namespace kernels {
namespace {

using testing::Call;
using testing::SetStrides;
using testing::Zeros;

// The matmul checks, through kiln.ref.matmul (kiln.dnnl.matmul shares them and
// is tested in dnnl_matmul_test.cc).
void ExpectMatmulError(std::vector<Any> args, const std::string& message) {
  Status s = Call(RefMatmul, std::move(args));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), message);
}

TEST(KernelArgs, ArgumentCount) {
  ExpectMatmulError({Zeros({2, 2}), Zeros({2, 2})}, "kiln.ref.matmul: expected 3 arguments (A, B, Out), got 2");
}

TEST(KernelArgs, NotATensor) {
  ExpectMatmulError({Zeros({2, 2}), Any(int64_t{3}), Zeros({2, 2})},
                    "kiln.ref.matmul: argument 1 (B) must be a tensor, got int 3");
}

TEST(KernelArgs, NotOnTheCpu) {
  Tensor gpu = Zeros({2, 2});
  gpu.dl()->device = DLDevice{kDLCUDA, 0};
  ExpectMatmulError({Zeros({2, 2}), Zeros({2, 2}), gpu}, "kiln.ref.matmul: Out must be on the CPU, got device type 2");
}

TEST(KernelArgs, DTypeNotFloat32) {
  ExpectMatmulError({Zeros({2, 2}, DType::Float64()), Zeros({2, 2}), Zeros({2, 2})},
                    "kiln.ref.matmul: A has dtype float64, expected float32");
}

TEST(KernelArgs, NonCompactStrides) {
  Tensor b = Zeros({2, 2});
  SetStrides(b, {1, 2});
  ExpectMatmulError({Zeros({2, 2}), b, Zeros({2, 2})},
                    "kiln.ref.matmul: B must be compact row-major, got shape [2, 2] with strides [1, 2]");
}

TEST(KernelArgs, CompactExplicitStridesAreAccepted) {
  Tensor b = Zeros({1, 2});
  SetStrides(b, {7, 1});  // extent-1 dimensions may have any stride
  EXPECT_TRUE(IsCompactRowMajor(b));
  SetStrides(b, {2, 1});
  EXPECT_TRUE(IsCompactRowMajor(b));
  Tensor c = Zeros({3, 2});
  SetStrides(c, {1, 3});
  EXPECT_FALSE(IsCompactRowMajor(c));
}

TEST(KernelArgs, RankOfA) {
  ExpectMatmulError({Zeros({784}), Zeros({784, 2}), Zeros({2})},
                    "kiln.ref.matmul: A must have rank >= 2 ([..., M, K]), got rank 1 (float32[784])");
}

TEST(KernelArgs, RankOfB) {
  ExpectMatmulError({Zeros({2, 3}), Zeros({1, 3, 2}), Zeros({2, 2})},
                    "kiln.ref.matmul: B must have rank 2 ([K, N]), got rank 3 (float32[1, 3, 2])");
}

TEST(KernelArgs, KMismatch) {
  ExpectMatmulError({Zeros({1, 784}), Zeros({785, 2}), Zeros({1, 2})}, "kiln.ref.matmul: A has K=784 but B has K=785");
}

TEST(KernelArgs, OutShape) {
  ExpectMatmulError({Zeros({3, 1, 4}), Zeros({4, 5}), Zeros({3, 5})},
                    "kiln.ref.matmul: Out has shape [3, 5], expected [3, 1, 5]");
}

}  // namespace
}  // namespace kernels
}  // namespace kiln
