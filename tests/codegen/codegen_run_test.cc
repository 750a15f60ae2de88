// Builds kernels from TIR, loads the .so and checks results against C++
// references, with 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "runtime/native_library.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

std::unique_ptr<LoadedLibrary> Build(const std::vector<ir::PrimFunc>& funcs, int threads_hint) {
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary(Prepare(funcs, threads_hint), {});
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return nullptr;
  Result<std::unique_ptr<LoadedLibrary>> lib = LoadedLibrary::Load(built->shared_object);
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  return lib.ok() ? std::move(*lib) : nullptr;
}

class CodegenRunTest : public ::testing::TestWithParam<int> {
 protected:
  int threads() const { return GetParam(); }
};

TEST_P(CodegenRunTest, ElementwiseAddSymbolicN) {
  auto lib = Build({MakeAdd()}, threads());
  ASSERT_NE(lib, nullptr);
  kiln_kernel_fn add = lib->Find("add");
  ASSERT_NE(add, nullptr);
  ThreadPool pool(threads());
  kiln_kernel_env env = MakeKernelEnv(&pool);
  for (int64_t n : {1, 3, 1000, 100003}) {
    Tensor a = MakeTensor({n}), b = MakeTensor({n}), c = MakeTensor({n});
    FillRandom(a, 1);
    FillRandom(b, 2);
    kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
    ASSERT_EQ(add(&env, args, 3), 0);
    std::vector<float> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[i] = a.data<float>()[i] + b.data<float>()[i];
    EXPECT_LE(MaxAbsDiff(ref.data(), c.data<float>(), n), 1e-4f) << "n=" << n;
  }
}

TEST_P(CodegenRunTest, ParallelLoopOverSymbolicExtentUsesTheThreads) {
  auto lib = Build({MakeAdd()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  CapturingEnv env(&pool);
  const int64_t n = 50001;  // not a multiple of the task count
  Tensor a = MakeTensor({n}), b = MakeTensor({n}), c = MakeTensor({n});
  FillRandom(a, 3);
  FillRandom(b, 4);
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
  ASSERT_EQ(lib->Find("add")(env.env(), args, 3), 0);
  if (threads() >= 2) {
    // Between one and 8 chunks per thread (fewer where the work is small,
    // tir/parallel_work.h): claimed dynamically by the pool.
    EXPECT_GE(env.last_num_tasks(), threads());
    EXPECT_LE(env.last_num_tasks(), 8 * threads());
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]) << i;
}

TEST_P(CodegenRunTest, ReluViaMax) {
  auto lib = Build({MakeRelu()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  kiln_kernel_env env = MakeKernelEnv(&pool);
  Tensor x = MakeTensor({7, 33}), y = MakeTensor({7, 33});
  FillRandom(x, 5);
  kiln_kernel_arg args[] = {TensorArg(x), TensorArg(y)};
  ASSERT_EQ(lib->Find("relu")(&env, args, 2), 0);
  std::vector<float> ref(7 * 33);
  for (int i = 0; i < 7 * 33; ++i) ref[i] = std::max(x.data<float>()[i], 0.0f);
  EXPECT_LE(MaxAbsDiff(ref.data(), y.data<float>(), 7 * 33), 1e-4f);
}

void ReferenceLinear(const Tensor& x, const Tensor& w, const Tensor& b, int64_t batch, std::vector<float>* z) {
  z->assign(batch * 128, 0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < 128; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < 784; ++k) acc += x.data<float>()[i * 784 + k] * w.data<float>()[j * 784 + k];
      (*z)[i * 128 + j] = acc + b.data<float>()[j];
    }
  }
}

TEST_P(CodegenRunTest, Linear0StaticAndSymbolicBatch) {
  auto lib_static = Build({MakeLinear0(false)}, threads());
  auto lib_sym = Build({MakeLinear0(true)}, threads());
  ASSERT_NE(lib_static, nullptr);
  ASSERT_NE(lib_sym, nullptr);
  ThreadPool pool(threads());
  kiln_kernel_env env = MakeKernelEnv(&pool);
  for (int64_t batch : {1, 5}) {
    Tensor x = MakeTensor({batch, 784}), w = MakeTensor({128, 784}), b = MakeTensor({128}), z = MakeTensor({batch, 128});
    FillRandom(x, 10 + batch);
    FillRandom(w, 20);
    FillRandom(b, 30);
    std::vector<float> ref;
    ReferenceLinear(x, w, b, batch, &ref);
    kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
    if (batch == 1) {
      ASSERT_EQ(lib_static->Find("linear0")(&env, args, 4), 0);
      EXPECT_LE(MaxAbsDiff(ref.data(), z.data<float>(), batch * 128), 1e-4f);
      std::memset(z.raw_data(), 0, z.NumBytes());
    }
    ASSERT_EQ(lib_sym->Find("linear0")(&env, args, 4), 0);
    EXPECT_LE(MaxAbsDiff(ref.data(), z.data<float>(), batch * 128), 1e-4f) << "batch=" << batch;
  }
}

TEST_P(CodegenRunTest, ScalarParamSelectAndCast) {
  auto lib = Build({MakeScale()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  kiln_kernel_env env = MakeKernelEnv(&pool);
  Tensor a = MakeTensor({37}), c = MakeTensor({37});
  FillRandom(a, 6);
  kiln_kernel_arg args[3] = {TensorArg(a), TensorArg(c), {}};
  args[2].i64 = -3;
  ASSERT_EQ(lib->Find("scale")(&env, args, 3), 0);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(c.data<float>()[i], a.data<float>()[i] * -3.0f + (i % 2 == 0 ? 1 : 0), 1e-5);
}

TEST_P(CodegenRunTest, ScalarShapeParameter) {
  auto lib = Build({MakeIota()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  CapturingEnv env(&pool);
  Tensor a = MakeTensor({9});
  kiln_kernel_arg args[2] = {TensorArg(a), {}};
  args[1].i64 = 9;
  ASSERT_EQ(lib->Find("iota")(env.env(), args, 2), 0) << env.last_error();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(a.data<float>()[i], static_cast<float>(i));
  args[1].i64 = 4;  // disagrees with the tensor
  EXPECT_EQ(lib->Find("iota")(env.env(), args, 2), 1);
  EXPECT_EQ(env.last_error(), "iota: argument A, dimension 0: expected 4 (n), got 9");
}

TEST_P(CodegenRunTest, FloorDivAndModRoundTowardNegativeInfinity) {
  auto lib = Build({MakeFloorOps()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  kiln_kernel_env env = MakeKernelEnv(&pool);
  const int32_t as[] = {7, -7, 7, -7, 0, 6, -6, 1};
  const int32_t bs[] = {2, 2, -2, -2, 3, 3, 3, -5};
  const int n = 8;
  Tensor a = MakeTensor({n}, DType::Int32()), b = MakeTensor({n}, DType::Int32());
  Tensor d = MakeTensor({n}, DType::Int32()), m = MakeTensor({n}, DType::Int32());
  std::memcpy(a.raw_data(), as, sizeof(as));
  std::memcpy(b.raw_data(), bs, sizeof(bs));
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(d), TensorArg(m)};
  ASSERT_EQ(lib->Find("floor_ops")(&env, args, 4), 0);
  for (int i = 0; i < n; ++i) {
    int32_t q = static_cast<int32_t>(std::floor(static_cast<double>(as[i]) / bs[i]));
    EXPECT_EQ(d.data<int32_t>()[i], q) << as[i] << " // " << bs[i];
    EXPECT_EQ(m.data<int32_t>()[i], as[i] - q * bs[i]) << as[i] << " % " << bs[i];
  }
}

TEST_P(CodegenRunTest, SymbolicAllocationUsesTheWorkspace) {
  auto lib = Build({MakeWorkspaceUser()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  CapturingEnv env(&pool);
  const int64_t n = 20000;
  Tensor a = MakeTensor({n}), c = MakeTensor({n});
  FillRandom(a, 7);
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(c)};
  ASSERT_EQ(lib->Find("big_tmp")(env.env(), args, 2), 0);
  EXPECT_EQ(env.workspace_allocs(), 1);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[n - 1 - i] * 2 + a.data<float>()[i] * 2) << i;
}

// The same kernel at a size that fits its stack block: no workspace call.
TEST_P(CodegenRunTest, SmallSymbolicAllocationUsesTheStack) {
  auto lib = Build({MakeWorkspaceUser()}, threads());
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(threads());
  CapturingEnv env(&pool);
  for (int64_t n : {1, 1000, 4096, 4097}) {
    Tensor a = MakeTensor({n}), c = MakeTensor({n});
    FillRandom(a, 7);
    kiln_kernel_arg args[] = {TensorArg(a), TensorArg(c)};
    int before = env.workspace_allocs();
    ASSERT_EQ(lib->Find("big_tmp")(env.env(), args, 2), 0);
    EXPECT_EQ(env.workspace_allocs() - before, n * 4 <= 16 * 1024 ? 0 : 1) << n;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(c.data<float>()[i], a.data<float>()[n - 1 - i] * 2 + a.data<float>()[i] * 2) << n << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, CodegenRunTest, ::testing::Values(1, 2));

TEST(CodegenLibraryTest, QueryTableDescribesTheKernels) {
  Result<codegen::NativeLibraryBuild> built =
      codegen::BuildNativeLibrary(Prepare({MakeAdd(), MakeLinear0(true), MakeScale()}, 2), {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->kernel_names, (std::vector<std::string>{"add", "linear0", "scale"}));
  EXPECT_FALSE(built->triple.empty());
  EXPECT_FALSE(built->cpu.empty());
  ASSERT_GT(built->shared_object.size(), 4u);
  EXPECT_EQ(std::memcmp(built->shared_object.data(), "\x7f" "ELF", 4), 0);
  auto lib = LoadedLibrary::Load(built->shared_object);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  const kiln_kernel_library* t = (*lib)->table();
  EXPECT_EQ(t->abi_version, KILN_KERNEL_ABI_VERSION);
  ASSERT_EQ(t->num_kernels, 3u);
  EXPECT_STREQ(t->kernels[1].name, "linear0");
  EXPECT_EQ(t->kernels[1].num_args, 4);
  EXPECT_EQ(t->kernels[2].num_args, 3);
  EXPECT_EQ(built->triple, t->target_triple);
  EXPECT_EQ(built->cpu, t->target_cpu);
  EXPECT_EQ(built->features, t->target_features);
  // The exported kernel symbol is the table's function.
  EXPECT_EQ(reinterpret_cast<void*>(t->kernels[0].fn), (*lib)->Symbol("add"));
  // Another ABI version is refused.
  auto query = reinterpret_cast<kiln_kernel_query_fn>((*lib)->Symbol(KILN_KERNEL_QUERY_SYMBOL));
  ASSERT_NE(query, nullptr);
  EXPECT_EQ(query(KILN_KERNEL_ABI_VERSION + 1), nullptr);
  // Internal helpers are not exported.
  EXPECT_EQ((*lib)->Symbol("add.body"), nullptr);
}

TEST(CodegenLibraryTest, RuntimeLoadsTheLibraryFromMemory) {
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary(Prepare({MakeLinear0(true)}, 2), {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  // The recorded host features are ones the runtime's checker accepts here.
  EXPECT_TRUE(CheckHostCpuFeatures(built->features).ok()) << CheckHostCpuFeatures(built->features).ToString();
  auto lib = NativeLibrary::LoadFromMemory(built->shared_object.data(), built->shared_object.size(), "linear0.so");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  auto entry = (*lib)->Find("linear0");
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  ThreadPool pool(2);
  kiln_kernel_env env = MakeKernelEnv(&pool);
  const int64_t batch = 3;
  Tensor x = MakeTensor({batch, 784}), w = MakeTensor({128, 784}), b = MakeTensor({128}), z = MakeTensor({batch, 128});
  FillRandom(x, 41);
  FillRandom(w, 42);
  FillRandom(b, 43);
  kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
  ASSERT_EQ((*entry)->fn(&env, args, 4), 0);
  std::vector<float> ref;
  ReferenceLinear(x, w, b, batch, &ref);
  EXPECT_LE(MaxAbsDiff(ref.data(), z.data<float>(), batch * 128), 1e-4f);
}

TEST(CodegenLibraryTest, IrAndAssemblyShowParallelAndVectorizedLoops) {
  std::vector<ir::PrimFunc> funcs = Prepare({MakeLinear0(true)}, 2);
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, {});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_NE(ir->find("linear0.par0.task"), std::string::npos);  // outlined parallel loop
  EXPECT_NE(ir->find("x float>"), std::string::npos);           // vector code for the bias add
  // No external function besides LLVM intrinsics.
  for (size_t pos = ir->find("\ndeclare"); pos != std::string::npos; pos = ir->find("\ndeclare", pos + 1)) {
    std::string line = ir->substr(pos + 1, ir->find('\n', pos + 1) - pos - 1);
    EXPECT_NE(line.find("@llvm."), std::string::npos) << line;
  }
  Result<std::string> unopt = codegen::EmitLLVMIR(funcs, {"", "", "", 0});
  ASSERT_TRUE(unopt.ok());
  EXPECT_NE(unopt->find("llvm.loop.vectorize.enable"), std::string::npos);
  Result<std::string> asm_text = codegen::EmitAssembly(funcs, {});
  ASSERT_TRUE(asm_text.ok()) << asm_text.status().ToString();
  EXPECT_NE(asm_text->find("kiln_kernel_query"), std::string::npos);
}

TEST(CodegenLibraryTest, LoopsAroundVectorizedLoopsAreNotVectorizedAgain) {
  // Rows of 49 summed one vector chain each: LLVM must not vectorize the row
  // loop across rows (gathers) once it has unrolled the inner one. A loop
  // with no vectorized loop inside keeps LLVM's choice.
  const char* source = R"(@I.ir_module
class Module:
    @T.prim_func
    def rows(A: T.Buffer((64, 49), "float32"), S: T.Buffer((64, 16), "float32")):
        for r in T.serial(64):
            for l in T.vectorized(16):
                S[r, l] = A[r, l] + A[r, l + 16] + A[r, l + 32]
    @T.prim_func
    def plain(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in T.serial(64):
            B[i] = A[i] * T.float32(2)
)";
  Result<ir::IRModule> mod = text::ParseModule(source, "<test>");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<ir::PrimFunc> funcs;
  for (const auto& e : mod->entries) funcs.push_back(e.prim);
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, {"", "", "", 0});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  const std::string off = "!\"llvm.loop.vectorize.enable\", i1 false}";
  const std::string on = "!\"llvm.loop.vectorize.enable\", i1 true}";
  size_t first = ir->find(off);
  ASSERT_NE(first, std::string::npos) << *ir;
  EXPECT_EQ(ir->find(off, first + 1), std::string::npos);  // only the row loop
  EXPECT_NE(ir->find(on), std::string::npos);              // the inner loop
}

TEST(CodegenLibraryTest, VectorLoopsOfRunTimeExtentFoldTheirTail) {
  // A vectorized loop over a symbolic extent (a row of a model compiled for
  // every image size) asks LLVM for masked lanes and no interleaving, so a
  // row of 10 runs as one masked vector instead of a scalar remainder; a
  // static extent keeps LLVM's own choice.
  const char* source = R"(@I.ir_module
class Module:
    @T.prim_func
    def row(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.vectorized(n):
            B[i] = A[i] * T.float32(2)
    @T.prim_func
    def fixed(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
        for i in T.vectorized(100):
            B[i] = A[i] * T.float32(2)
)";
  Result<ir::IRModule> mod = text::ParseModule(source, "<test>");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  for (const auto& e : mod->entries) {
    SCOPED_TRACE(e.name);
    Result<std::string> ir = codegen::EmitLLVMIR({e.prim}, {"", "", "", 0});
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    const bool symbolic = e.name == "row";
    EXPECT_EQ(ir->find("!\"llvm.loop.vectorize.predicate.enable\", i1 true}") != std::string::npos, symbolic) << *ir;
    EXPECT_EQ(ir->find("!\"llvm.loop.interleave.count\", i32 1}") != std::string::npos, symbolic);
  }
}

TEST(CodegenLibraryTest, VectorLoopsOfRunTimeExtentWithGathersStayScalar) {
  // A run-time extent loop whose accesses jump by more than two elements
  // (a transpose's reads, at a static or a symbolic stride) is not
  // vectorized: LLVM assembled its lanes one by one, slower than the scalar
  // loop. A stride-2 load (the even columns of a row) keeps the folded tail.
  const char* source = R"(@I.ir_module
class Module:
    @T.prim_func
    def transpose_static(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 256), "float32")
        B = T.match_buffer(b, (256, n), "float32")
        for k in range(T.int64(256)):
            for i in T.vectorized(n):
                B[k, i] = A[i, k]
    @T.prim_func
    def transpose_symbolic(a: T.handle, b: T.handle):
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (m, n), "float32")
        for k in range(m):
            for i in T.vectorized(n):
                B[k, i] = A[i, k]
    @T.prim_func
    def even(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n * 2,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.vectorized(n):
            B[i] = A[i * 2]
)";
  Result<ir::IRModule> mod = text::ParseModule(source, "<test>");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  for (const auto& e : mod->entries) {
    SCOPED_TRACE(e.name);
    Result<std::string> ir = codegen::EmitLLVMIR({e.prim}, {"", "", "", 0});
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    const bool gather = e.name != "even";
    EXPECT_EQ(ir->find("!\"llvm.loop.vectorize.enable\", i1 false}") != std::string::npos, gather) << *ir;
    EXPECT_EQ(ir->find("!\"llvm.loop.vectorize.predicate.enable\", i1 true}") != std::string::npos, !gather) << *ir;
  }
}

// LLVM 19's SLP vectorizer miscompiled this broadcast on AVX-512 targets
// (masked-gather trees with poison lanes: 4 of 60 outputs wrong), so x86
// code is built with "+prefer-no-gather" (native_codegen.cc). The IR check
// holds on any host; the numbers are checked where the host has AVX-512.
TEST(CodegenLibraryTest, SmallBroadcastOnAvx512HasNoGathersAndRightNumbers) {
  const char* source = R"(@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((4, 1, 3), "float32"), B: T.Buffer((1, 5, 1), "float32"), C: T.Buffer((4, 5, 3), "float32")):
        for i0, i1, i2 in T.grid(4, 5, 3):
            C[i0, i1, i2] = A[i0, 0, i2] + B[0, i1, 0]
)";
  Result<ir::IRModule> mod = text::ParseModule(source, "<test>");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<ir::PrimFunc> funcs = Prepare({mod->entries[0].prim}, 1);
  codegen::CodegenOptions opts;
  opts.triple = "x86_64-unknown-linux-gnu";
  opts.cpu = "skylake-avx512";
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, opts);
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_EQ(ir->find("llvm.masked.gather"), std::string::npos) << *ir;
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl")) {
    GTEST_SKIP() << "the host has no AVX-512: the numbers are checked on AVX-512 hosts only";
  }
  opts.features = "+avx512f,+avx512vl,+avx512bw,+avx512dq,+avx512cd";
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary(funcs, opts);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Result<std::unique_ptr<LoadedLibrary>> lib = LoadedLibrary::Load(built->shared_object);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  ThreadPool pool(1);
  kiln_kernel_env env = MakeKernelEnv(&pool);
  Tensor a = MakeTensor({4, 1, 3}), b = MakeTensor({1, 5, 1}), c = MakeTensor({4, 5, 3});
  FillRandom(a, 1);
  FillRandom(b, 2);
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
  ASSERT_EQ((*lib)->Find("add")(&env, args, 3), 0);
  for (int i0 = 0; i0 < 4; ++i0)
    for (int i1 = 0; i1 < 5; ++i1)
      for (int i2 = 0; i2 < 3; ++i2) {
        float want = a.data<float>()[i0 * 3 + i2] + b.data<float>()[i1];
        EXPECT_EQ(c.data<float>()[(i0 * 5 + i1) * 3 + i2], want) << i0 << "," << i1 << "," << i2;
      }
#endif
}

TEST(CodegenLibraryTest, Transpose16MovesColumnsIntoRowsAtTheirOffsets) {
  // transpose16(S[..], stride, D[..], off_0 .. off_15): D[off_r + c] =
  // S[c * stride + r] (depthwise_channel_block.h's moves between NCHW planes
  // and channel-minor tiles). Source rows 24 apart from column 3; the rows
  // land 20 apart from 2, but rows 14 and 15 swapped and row 0 written
  // twice (where the schedules discard a chunk's unread pixels).
  std::string offsets;
  for (int r = 0; r < 16; ++r) {
    int at = r == 14 ? 15 : r == 15 ? 14 : r;
    offsets += ", " + std::to_string(at * 20 + 2);
  }
  std::string source = R"(@I.ir_module
class Module:
    @T.prim_func
    def t16(X: T.Buffer((16, 24), "float32"), Y: T.Buffer((320,), "float32")):
        for i in range(320):
            Y[i] = T.float32(-1)
        T.evaluate(T.call_intrin("int32", "transpose16", X[0, 3], 24, Y[0])" + offsets + R"())
)";
  Result<ir::IRModule> mod = text::ParseModule(source, "<test>");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto lib = Build({mod->entries[0].prim}, 1);
  ASSERT_NE(lib, nullptr);
  ThreadPool pool(1);
  kiln_kernel_env env = MakeKernelEnv(&pool);
  Tensor x = MakeTensor({16, 24}), y = MakeTensor({320});
  FillRandom(x, 7);
  kiln_kernel_arg args[] = {TensorArg(x), TensorArg(y)};
  ASSERT_EQ(lib->Find("t16")(&env, args, 2), 0);
  for (int r = 0; r < 16; ++r) {
    int at = r == 14 ? 15 : r == 15 ? 14 : r;
    for (int c = 0; c < 16; ++c) ASSERT_EQ(y.data<float>()[at * 20 + 2 + c], x.data<float>()[c * 24 + 3 + r]) << r << "," << c;
    for (int c = 0; c < 2; ++c) EXPECT_EQ(y.data<float>()[r * 20 + c], -1.0f) << r;  // untouched
  }
}

TEST(CodegenLibraryTest, CrossTargetAssembly) {
  codegen::CodegenOptions opts;
  opts.triple = "aarch64-unknown-linux-gnu";
  Result<std::string> asm_text = codegen::EmitAssembly(Prepare({MakeAdd()}, 2), opts);
  ASSERT_TRUE(asm_text.ok()) << asm_text.status().ToString();
  EXPECT_NE(asm_text->find("ret"), std::string::npos);
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
