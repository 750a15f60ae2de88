// Native kernel libraries: loading from memory, CPU-feature checks, and
// kernel calls from bytecode through the test library (test_kernels.c).
#include <gtest/gtest.h>

#include <vector>

#include <thread>

#include "runtime/kernel_call.h"
#include "runtime/native_library.h"
#include "runtime/thread_pool.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::VmfbProgram;
using testing::F32;
using testing::Values;
using vm::Assembler;
using vm::Const;
using vm::Imm;
using vm::Reg;

TEST(NativeLibraryTest, LoadsFromMemoryAndCallsAKernel) {
  std::vector<uint8_t> bytes = testing::TestKernelLibrary();
  auto lib = NativeLibrary::LoadFromMemory(bytes.data(), bytes.size(), "test library");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  bytes.assign(bytes.size(), 0);  // the library must not depend on the caller's buffer
  EXPECT_EQ((*lib)->table().num_kernels, 4u);
  auto add = (*lib)->Find("add_f32");
  ASSERT_TRUE(add.ok());
  EXPECT_EQ((*add)->num_args, 3);
  EXPECT_EQ((*lib)->Find("nope").status().code(), StatusCode::kNotFound);

  Tensor a = F32({3}, {1, 2, 3}), b = F32({3}, {10, 20, 30}), out = F32({3}, {0, 0, 0});
  kiln_kernel_arg args[3];
  args[0].tensor = AsKernelTensor(a.dl());
  args[1].tensor = AsKernelTensor(b.dl());
  args[2].tensor = AsKernelTensor(out.dl());
  ASSERT_TRUE(CallKernel((*add)->fn, "add_f32", args, 3, nullptr).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{11, 22, 33}));

  // parallel_for on a real pool.
  ThreadPool pool(3);
  auto scale = (*lib)->Find("scale_parallel");
  ASSERT_TRUE(scale.ok());
  Tensor x = F32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), y = F32({10}, std::vector<float>(10));
  args[0].tensor = AsKernelTensor(x.dl());
  args[1].f64 = 0.5;
  args[2].tensor = AsKernelTensor(y.dl());
  ASSERT_TRUE(CallKernel((*scale)->fn, "scale_parallel", args, 3, &pool).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5}));

  // set_error's message becomes the status, copied from the kernel's stack.
  auto fail = (*lib)->Find("fail_kernel");
  ASSERT_TRUE(fail.ok());
  Status s = CallKernel((*fail)->fn, "fail_kernel", args, 1, &pool);
  EXPECT_EQ(s.message(), "kernel 'fail_kernel': bad input from the kernel");
}

TEST(NativeLibraryTest, GarbageIsRefused) {
  std::vector<uint8_t> junk(4096, 0x5a);
  auto lib = NativeLibrary::LoadFromMemory(junk.data(), junk.size(), "junk");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(lib.status().message().find("junk: cannot load the native library"), std::string::npos)
      << lib.status().message();
  EXPECT_EQ(NativeLibrary::LoadFromMemory(nullptr, 0, "empty").status().message(),
            "empty: the native library is empty");
}

TEST(NativeLibraryTest, CpuFeaturesAgainstAFakeCpu) {
  // A CPU with avx2 and fma only; "sse4a" is unknown to it.
  auto cpu = [](const std::string& f) -> int {
    if (f == "avx2" || f == "fma") return 1;
    if (f == "sse4a") return -1;
    return 0;
  };
  EXPECT_TRUE(CheckCpuFeatures("+avx2,+fma,-avx512f,+sse4a", cpu).ok());
  Status s = CheckCpuFeatures("+avx2,+avx512f,+avx512bw,-avx512vl", cpu);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(), "the code needs CPU features this machine lacks: avx512f, avx512bw");
}

TEST(NativeLibraryTest, ArchitectureOfTheElfImage) {
  // An ELF header for x86_64 (e_machine 62) and one for aarch64 (183), little-endian.
  std::vector<uint8_t> x86(64, 0), arm(64, 0);
  for (auto* h : {&x86, &arm}) {
    (*h)[0] = 0x7f, (*h)[1] = 'E', (*h)[2] = 'L', (*h)[3] = 'F', (*h)[4] = 2, (*h)[5] = 1;
  }
  x86[18] = 62;
  arm[18] = 183;
  EXPECT_EQ(ElfArchitecture(x86.data(), x86.size()), "x86_64");
  EXPECT_EQ(ElfArchitecture(arm.data(), arm.size()), "aarch64");
  EXPECT_EQ(ElfArchitecture("not an elf file at all", 22), "");
  EXPECT_EQ(ElfArchitecture(x86.data(), 10), "");
  std::string host = HostArchitecture();
  ASSERT_EQ(host, "x86_64") << "this test describes an x86_64 host";
  EXPECT_TRUE(CheckHostArchitecture(x86.data(), x86.size(), "x86_64-linux-gnu").ok());
  Status s = CheckHostArchitecture(arm.data(), arm.size(), "aarch64-linux-gnu");
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(),
            "the code was compiled for aarch64-linux-gnu (aarch64); this machine is x86_64 (compile with kiln-compile "
            "--target for this machine)");
  EXPECT_EQ(CheckHostArchitecture(arm.data(), arm.size(), "").message(),
            "the code was compiled for aarch64; this machine is x86_64 (compile with kiln-compile --target for this "
            "machine)");
}

TEST(NativeLibraryTest, CpuFeatures) {
  EXPECT_TRUE(CheckHostCpuFeatures("").ok());
  EXPECT_TRUE(CheckHostCpuFeatures("+sse2,-avx512f,+some-unknown-feature").ok());
  const char* candidates[] = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma", "avx"};
  std::string lacking;
  __builtin_cpu_init();
  for (const char* f : candidates) {
    bool has = std::string(f) == "avx512f"    ? __builtin_cpu_supports("avx512f")
               : std::string(f) == "avx512bw" ? __builtin_cpu_supports("avx512bw")
               : std::string(f) == "avx512vl" ? __builtin_cpu_supports("avx512vl")
               : std::string(f) == "avx512dq" ? __builtin_cpu_supports("avx512dq")
               : std::string(f) == "avx2"     ? __builtin_cpu_supports("avx2")
               : std::string(f) == "fma"      ? __builtin_cpu_supports("fma")
                                              : __builtin_cpu_supports("avx");
    if (has) {
      EXPECT_TRUE(CheckHostCpuFeatures(std::string("+") + f).ok()) << f;
    } else if (lacking.empty()) {
      lacking = f;
    }
  }
  if (lacking.empty()) GTEST_SKIP() << "this CPU has every feature we can test a refusal with";
  Status s = CheckHostCpuFeatures("+sse2,+" + lacking);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(), "the code needs CPU features this machine lacks: " + lacking);
}

// main(x: float32[n], y: float32[n]) -> x + y through the add_f32 kernel,
// then scaled by the float constant 2.5 through scale_parallel.
VmfbProgram KernelProgram() {
  VmfbProgram p = testing::AddProgram();
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  int add = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kKernel, "add_f32", 0, 3});
  int scale = add + 1;
  p.callables.push_back({CallableKind::kKernel, "scale_parallel", 0, 3});
  int fail = add + 2;
  p.callables.push_back({CallableKind::kKernel, "fail_kernel", 0, 1});
  ConstantValue factor;
  factor.kind = ConstantKind::kFloat;
  factor.float_value = 2.5;
  p.constants.push_back(factor);  // constant 2
  p.functions[0].register_count = 5;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, testing::kMatchShape, {Reg(1), Const(1), Imm(1), Imm(2), Imm(0)});
  a.Call(2, testing::kMakeShape, {Imm(1), Imm(1), Imm(0)});
  a.Call(3, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(4, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, add, {Reg(0), Reg(1), Reg(3)});
  a.Call(-1, scale, {Reg(3), Const(2), Reg(4)});
  a.Ret(4);
  p.functions[0].code = a.Finish();
  compiler::FunctionInfo f;
  f.name = "fails";
  f.params.resize(1);
  f.register_count = 1;
  Assembler b;
  b.Call(-1, fail, {Reg(0)});
  b.Ret(0);
  f.code = b.Finish();
  p.functions.push_back(f);
  return p;
}

TEST(VmKernelTest, CallsKernelsFromBytecode) {
  auto m = testing::Load(testing::Serialize(KernelProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ctx = (*m)->CreateContext();
  Any out;
  std::vector<Any> args = {F32({5}, {1, 2, 3, 4, 5}), F32({5}, {1, 1, 1, 1, 1})};
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{5, 7.5, 10, 12.5, 15}));

  std::vector<Any> fail_args = {F32({1}, {0})};
  Status s = ctx->Invoke("fails", fail_args, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "fails: kernel 'fail_kernel': bad input from the kernel");
  std::vector<Any> bad_kind = {Any("text")};
  s = ctx->Invoke("fails", bad_kind, &out);
  EXPECT_EQ(s.message(), "fails: kernel 'fail_kernel': argument 0 is string \"text\"; kernels take tensors, ints and floats");
}

TEST(VmKernelTest, ManyThreadsCallParallelKernels) {
  auto m = testing::Load(testing::Serialize(KernelProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = (*m)->CreateContext();
      int64_t n = 16 + t;
      for (int iter = 0; iter < 200; ++iter) {
        std::vector<Any> args = {F32({n}, std::vector<float>(n, static_cast<float>(t))),
                                 F32({n}, std::vector<float>(n, static_cast<float>(iter)))};
        Any out;
        if (!ctx->Invoke("main", args, &out).ok() || Values(out.tensor()) != std::vector<float>(n, 2.5f * (t + iter))) {
          ++failures[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(VmKernelTest, KernelArgumentCountIsVerified) {
  VmfbProgram p = KernelProgram();
  p.callables[testing::kNumAddCallables].num_args = 2;  // the library says 3
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(m.status().message(), "kernel 'add_f32' takes 3 arguments in its library; the program says 2");
}

TEST(VmKernelTest, LibraryForAMissingCpuFeatureIsRefused) {
  __builtin_cpu_init();
  std::string lacking;
  if (!__builtin_cpu_supports("avx512f")) lacking = "avx512f";
  else if (!__builtin_cpu_supports("avx512vnni")) lacking = "avx512vnni";
  if (lacking.empty()) GTEST_SKIP() << "no testable missing feature";
  VmfbProgram p = KernelProgram();
  p.native_libraries[0].target.features = "+avx2,+" + lacking;
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(m.status().message(),
            "native library 0 (cpu 'generic'): the code needs CPU features this machine lacks: " + lacking);
}

}  // namespace
}  // namespace kiln
