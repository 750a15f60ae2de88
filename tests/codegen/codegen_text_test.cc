// The MLC course's TIR kernels, parsed from TVMScript text, compiled to a
// native library and run against a C++ reference.
#include <gtest/gtest.h>

#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

std::vector<ir::PrimFunc> PrimFuncsOf(const ir::IRModule& mod) {
  std::vector<ir::PrimFunc> out;
  for (const auto& e : mod.entries)
    if (e.prim) out.push_back(e.prim);
  return out;
}

std::unique_ptr<LoadedLibrary> BuildFile(const std::string& path) {
  Result<ir::IRModule> mod = text::ParseModuleFile(path);
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  auto built = codegen::BuildNativeLibrary(Prepare(PrimFuncsOf(*mod), 2), {});
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return nullptr;
  auto lib = LoadedLibrary::Load(built->shared_object);
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  return lib.ok() ? std::move(*lib) : nullptr;
}

// Z = relu?(X @ W^T + B)
std::vector<float> Linear(const Tensor& x, const Tensor& w, const Tensor& b, int64_t n, int64_t m, int64_t k) {
  std::vector<float> z(n * m);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0;
      for (int64_t r = 0; r < k; ++r) acc += x.data<float>()[i * k + r] * w.data<float>()[j * k + r];
      z[i * m + j] = acc + b.data<float>()[j];
    }
  return z;
}

TEST(CodegenTextTest, StaticMlcKernels) {
  auto lib = BuildFile("tests/data/mlc_e2e.relax");
  ASSERT_NE(lib, nullptr);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    kiln_kernel_env env = MakeKernelEnv(&pool);
    Tensor x = MakeTensor({1, 784}), w = MakeTensor({128, 784}), b = MakeTensor({128}), z = MakeTensor({1, 128});
    FillRandom(x, 1);
    FillRandom(w, 2);
    FillRandom(b, 3);
    kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
    ASSERT_NE(lib->Find("linear0"), nullptr);
    ASSERT_EQ(lib->Find("linear0")(&env, args, 4), 0);
    std::vector<float> ref = Linear(x, w, b, 1, 128, 784);
    EXPECT_LE(MaxAbsDiff(ref.data(), z.data<float>(), 128), 1e-4f);

    Tensor y = MakeTensor({1, 128});
    kiln_kernel_arg relu_args[] = {TensorArg(z), TensorArg(y)};
    ASSERT_EQ(lib->Find("relu0")(&env, relu_args, 2), 0);
    for (int j = 0; j < 128; ++j) EXPECT_EQ(y.data<float>()[j], std::max(z.data<float>()[j], 0.0f));
  }
}

TEST(CodegenTextTest, DynamicMlcKernelsWithMatchBuffer) {
  auto lib = BuildFile("tests/data/mlc_e2e_dynamic.relax");
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(2);
  CapturingEnv env(&pool);
  for (int64_t n : {1, 4}) {
    Tensor x = MakeTensor({n, 128}), w = MakeTensor({10, 128}), b = MakeTensor({10}), z = MakeTensor({n, 10});
    FillRandom(x, 4);
    FillRandom(w, 5);
    FillRandom(b, 6);
    kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
    ASSERT_EQ(lib->Find("linear")(env.env(), args, 4), 0) << env.last_error();
    std::vector<float> ref = Linear(x, w, b, n, 10, 128);
    EXPECT_LE(MaxAbsDiff(ref.data(), z.data<float>(), n * 10), 1e-4f) << "n=" << n;
  }
  // k is bound by X and checked against W.
  Tensor x = MakeTensor({2, 128}), w = MakeTensor({10, 100}), b = MakeTensor({10}), z = MakeTensor({2, 10});
  kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
  EXPECT_EQ(lib->Find("linear")(env.env(), args, 4), 1);
  EXPECT_EQ(env.last_error(), "linear: argument W, dimension 1: expected 128 (k), got 100");
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
