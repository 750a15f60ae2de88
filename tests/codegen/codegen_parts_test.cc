// Libraries compiled in parts (compiler/codegen/kernel_partition.h) and the
// merging of parallel loops that several kernels share
// (compiler/codegen/merge_outlined.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "compiler/codegen/kernel_partition.h"
#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

ir::PrimFunc Renamed(const ir::PrimFunc& f, const std::string& name) {
  auto copy = std::make_shared<ir::PrimFuncNode>(*f);
  copy->name = name;
  return copy;
}

TEST(CodegenMergeTest, KernelsThatDifferOnlyInNameShareTheirParallelLoop) {
  std::vector<ir::PrimFunc> funcs = Prepare({MakeAdd(), Renamed(MakeAdd(), "add_copy"), MakeRelu()}, 2);
  // -O0: the outlined functions keep their names in the printed IR.
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, {"", "", "", 0});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_NE(ir->find("@add.par0("), std::string::npos);
  EXPECT_NE(ir->find("@add.par0.task("), std::string::npos);
  EXPECT_EQ(ir->find("@add_copy.par0"), std::string::npos);  // merged into add's
  EXPECT_NE(ir->find("@relu.par0("), std::string::npos);     // a different loop stays
  // Each kernel keeps its own entry (its checks name it) and body.
  EXPECT_NE(ir->find("define i32 @add_copy("), std::string::npos);
  EXPECT_NE(ir->find("@add_copy.body("), std::string::npos);

  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary(funcs, {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Result<std::unique_ptr<LoadedLibrary>> lib = LoadedLibrary::Load(built->shared_object);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  ThreadPool pool(2);
  CapturingEnv env(&pool);
  const int64_t n = 50001;
  for (const char* name : {"add", "add_copy"}) {
    Tensor a = MakeTensor({n}), b = MakeTensor({n}), c = MakeTensor({n});
    FillRandom(a, 7);
    FillRandom(b, 8);
    kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
    ASSERT_EQ((*lib)->Find(name)(env.env(), args, 3), 0) << env.last_error();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]) << name;
  }
  // A wrong shape is still reported under the kernel's own name.
  Tensor a = MakeTensor({4}), b = MakeTensor({5}), c = MakeTensor({4});
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
  EXPECT_NE((*lib)->Find("add_copy")(env.env(), args, 3), 0);
  EXPECT_EQ(env.last_error().rfind("add_copy: ", 0), 0u) << env.last_error();
}

// C[i] = A[i] + ... + A[i] (`terms` times): a kernel whose size grows with
// `terms`.
ElementwiseKernel Sum(const std::string& name, int terms) {
  std::string expr = "A[i]";
  for (int t = 1; t < terms; ++t) expr += " + A[i]";
  return {name, expr, "float32", "float32"};
}

// Twelve kernels of different sizes, and a copy of the first under another
// name: together above kMinPartitionedNodes.
std::vector<ir::PrimFunc> LargeLibrary() {
  std::vector<ElementwiseKernel> kernels;
  for (int k = 0; k < 12; ++k) kernels.push_back(Sum("sum" + std::to_string(k), 500 + 40 * k));
  kernels.push_back(Sum("sum0_copy", 500));
  Result<ir::IRModule> mod = text::ParseModule(ElementwiseModule(kernels), "<test>");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<ir::PrimFunc> funcs;
  if (!mod.ok()) return funcs;
  for (const auto& e : mod->entries)
    if (e.prim) funcs.push_back(e.prim);
  return Prepare(funcs, 1);
}

TEST(CodegenPartsTest, SmallLibraryIsOnePart) {
  std::vector<ir::PrimFunc> funcs = Prepare({MakeAdd(), MakeRelu(), MakeScale()}, 2);
  std::vector<std::vector<size_t>> parts = codegen::PartitionKernels(funcs);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0], (std::vector<size_t>{0, 1, 2}));
}

TEST(CodegenPartsTest, LargeLibraryIsSplitWithCopiesTogether) {
  std::vector<ir::PrimFunc> funcs = LargeLibrary();
  ASSERT_EQ(funcs.size(), 13u);
  uint64_t total = 0;
  for (const auto& f : funcs) total += codegen::KernelNodeCount(f);
  ASSERT_GE(total, codegen::kMinPartitionedNodes);
  std::vector<std::vector<size_t>> parts = codegen::PartitionKernels(funcs);
  EXPECT_EQ(parts.size(), codegen::kMaxKernelParts);
  std::set<size_t> seen;
  for (const auto& p : parts) {
    EXPECT_FALSE(p.empty());
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
    for (size_t k : p) EXPECT_TRUE(seen.insert(k).second) << "kernel " << k << " in two parts";
    // sum0 (0) and its copy (12) are compiled in the same module.
    EXPECT_EQ(std::count(p.begin(), p.end(), 0u), std::count(p.begin(), p.end(), 12u));
  }
  EXPECT_EQ(seen.size(), funcs.size());
  EXPECT_EQ(codegen::PartitionKernels(funcs), parts);  // deterministic
}

TEST(CodegenPartsTest, PartsLinkIntoTheSameLibraryForAnyJobCount) {
  std::vector<ir::PrimFunc> funcs = LargeLibrary();
  ASSERT_GT(codegen::PartitionKernels(funcs).size(), 1u);
  codegen::CodegenOptions one, three;
  one.jobs = 1;
  three.jobs = 3;
  Result<codegen::NativeLibraryBuild> a = codegen::BuildNativeLibrary(funcs, one);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<codegen::NativeLibraryBuild> b = codegen::BuildNativeLibrary(funcs, three);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(a->shared_object == b->shared_object);
  ASSERT_EQ(a->kernel_names.size(), funcs.size());
  for (size_t k = 0; k < funcs.size(); ++k) EXPECT_EQ(a->kernel_names[k], funcs[k]->name);

  Result<std::unique_ptr<LoadedLibrary>> lib = LoadedLibrary::Load(b->shared_object);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->table()->num_kernels, static_cast<int32_t>(funcs.size()));
  for (size_t k = 0; k < funcs.size(); ++k) {
    int terms = k < 12 ? 500 + 40 * static_cast<int>(k) : 500;
    Tensor x = MakeTensor({37}), y = MakeTensor({37});
    FillRandom(x, static_cast<uint32_t>(k));
    std::string error;
    ASSERT_EQ(RunKernel(**lib, funcs[k]->name, {x, y}, &error), 0) << funcs[k]->name << ": " << error;
    for (int i = 0; i < 37; ++i) {
      float want = static_cast<float>(terms) * x.data<float>()[i];
      EXPECT_NEAR(y.data<float>()[i], want, 1e-4f * terms) << funcs[k]->name << " [" << i << "]";
    }
  }
}

TEST(CodegenPartsTest, DuplicateNameInDifferentPartsIsReported) {
  std::vector<ir::PrimFunc> funcs = LargeLibrary();
  funcs.back() = Renamed(funcs.back(), funcs[5]->name);  // sum0_copy renamed sum5: another part
  std::vector<std::vector<size_t>> parts = codegen::PartitionKernels(funcs);
  ASSERT_GT(parts.size(), 1u);
  for (const auto& p : parts) {
    bool has5 = std::count(p.begin(), p.end(), 5u) > 0, has12 = std::count(p.begin(), p.end(), 12u) > 0;
    EXPECT_FALSE(has5 && has12) << "the two kernels named sum5 share a module";
  }
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary(funcs, {});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().message(), "two PrimFuncs are named 'sum5' (kernel names must be unique)");
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
