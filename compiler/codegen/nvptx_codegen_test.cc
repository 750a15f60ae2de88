// The GPU path of the compiler without a GPU: every example model's kernels
// become PTX that the toolkit's ptxas assembles for sm_80 and sm_90, the
// launch description matches the kernels, and the errors fire.
#include "compiler/codegen/nvptx_codegen.h"
#include "compiler/codegen/native_codegen.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"

namespace kiln {
namespace codegen {
namespace {

const char* kPtxas = "/usr/local/cuda/bin/ptxas";

driver::CompileOptions Cuda(const std::string& arch,
                            transform::Precision precision = transform::Precision::kFloat32) {
  driver::CompileOptions o;
  o.target_triple = "cuda";
  o.gpu_arch = arch;
  o.precision = precision;
  return o;
}

ir::IRModule Example(const std::string& name) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : ir::IRModule();
}

std::vector<ir::PrimFunc> GpuPrimFuncs(const ir::IRModule& mod, const std::string& arch,
                                       transform::Precision precision = transform::Precision::kFloat32) {
  Result<ir::IRModule> lowered = driver::LowerModule(mod, Cuda(arch, precision));
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  std::vector<ir::PrimFunc> out;
  if (lowered.ok())
    for (const auto& e : lowered.value().entries)
      if (e.prim) out.push_back(e.prim);
  return out;
}

// ptxas's exit status and output for `ptx`.
int Assemble(const std::string& ptx, const std::string& arch, std::string* output) {
  char dir[] = "/tmp/kiln_ptx_XXXXXX";
  if (mkdtemp(dir) == nullptr) return -1;
  std::string in = std::string(dir) + "/k.ptx", out = std::string(dir) + "/k.cubin", log = std::string(dir) + "/log";
  std::ofstream(in) << ptx;
  std::string cmd = std::string(kPtxas) + " -arch=" + arch + " " + in + " -o " + out + " > " + log + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream l(log);
  output->assign(std::istreambuf_iterator<char>(l), std::istreambuf_iterator<char>());
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class ExamplePtx : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

void CheckExamplePtx(const std::string& file, const std::string& arch, transform::Precision precision) {
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(Example(file), arch, precision);
  ASSERT_FALSE(funcs.empty());
  PtxOptions o;
  o.arch = arch;
  Result<PtxBuild> ptx = BuildPtx(funcs, o);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->ptx.find(".target " + arch), std::string::npos);
  size_t kernels = 0;
  for (const auto& f : ptx->functions) {
    for (const auto& k : f.kernels) {
      EXPECT_NE(ptx->ptx.find(".entry " + k.name + "("), std::string::npos) << k.name;
      ++kernels;
    }
  }
  EXPECT_GT(kernels, 0u);
  if (precision == transform::Precision::kFloat16) {
    // Half operands widened on load, results rounded on store.
    EXPECT_NE(ptx->ptx.find("cvt.f32.f16"), std::string::npos);
    EXPECT_NE(ptx->ptx.find("cvt.rn.f16.f32"), std::string::npos);
  }
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX is produced but not assembled";
  std::string log;
  EXPECT_EQ(Assemble(ptx->ptx, arch, &log), 0) << log;
}

TEST_P(ExamplePtx, AssemblesWithPtxas) {
  CheckExamplePtx(std::get<0>(GetParam()), std::get<1>(GetParam()), transform::Precision::kFloat32);
}

// --precision=fp16 (docs/precision.md): the same models with half weights
// and activations.
TEST_P(ExamplePtx, AssemblesWithPtxasAtFp16) {
  CheckExamplePtx(std::get<0>(GetParam()), std::get<1>(GetParam()), transform::Precision::kFloat16);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplePtx,
                         ::testing::Combine(::testing::Values("mlp.relax", "transformer_block.relax",
                                                              "resnet_block.relax"),
                                            ::testing::Values("sm_80", "sm_90")));

TEST(NvptxCodegen, KernelsTheirLaunchAndTheirArguments) {
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(Example("mlp.relax"), "sm_90");
  Result<PtxBuild> ptx = BuildPtx(funcs, PtxOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  ASSERT_EQ(ptx->functions.size(), 2u);
  const GpuFunction& f = ptx->functions[0];
  EXPECT_EQ(f.name, "fused_transpose_matmul_add_relu");
  EXPECT_EQ(f.buffer_params, (std::vector<int32_t>{0, 1, 2, 3}));
  // The transposed weight and the matmul's result live between launches.
  EXPECT_EQ(f.workspaces.size(), 2u);
  ASSERT_EQ(f.dims.size(), 1u);
  EXPECT_EQ(f.dims[0].var->name, "n");
  EXPECT_EQ(f.dims[0].param, 1);  // x: (n, 784)
  EXPECT_EQ(f.dims[0].dim, 0);
  // transpose, matmul, add + relu: one launch each, 256 threads a block.
  ASSERT_EQ(f.kernels.size(), 3u);
  EXPECT_EQ(f.kernels[0].name, "fused_transpose_matmul_add_relu_k0");
  EXPECT_EQ(f.kernels[0].block_x, 256);
  ASSERT_NE(f.kernels[0].grid_x.as<ir::IntImmNode>(), nullptr);
  EXPECT_EQ(f.kernels[0].grid_x.as<ir::IntImmNode>()->value, 784 * 128 / 256);
  EXPECT_EQ(f.kernels[1].grid_x.as<ir::IntImmNode>(), nullptr) << "depends on n";
  for (const char* reg : {"%ctaid.x", "%tid.x", ".maxntid 256, 1, 1", "ld.global"})
    EXPECT_NE(ptx->ptx.find(reg), std::string::npos) << reg;
}

TEST(NvptxCodegen, ThreadBindingsPrintAndParseBack) {
  Result<ir::IRModule> lowered = driver::LowerModule(Example("mlp.relax"), Cuda("sm_80"));
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  std::string text = text::PrintModule(lowered.value());
  EXPECT_NE(text.find("T.thread_binding(T.int64(392), thread=\"blockIdx.x\")"), std::string::npos) << text;
  Result<ir::IRModule> back = text::ParseModule(text, "printed.relax");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(text::PrintModule(back.value()), text);
}

TEST(NvptxCodegen, AThreadBindingNeedsAThreadTag) {
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.Buffer((4,), "float32")):
        for i in T.thread_binding(4, thread="warp.x"):
            a[i] = T.float32(0)
)";
  Result<ir::IRModule> m = text::ParseModule(src, "bad.relax");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("T.thread_binding needs thread= one of blockIdx.x/y/z, threadIdx.x/y/z; got 'warp.x'"),
            std::string::npos)
      << m.status().message();
}

TEST(NvptxCodegen, AReductionToOneValueIsABlockReduction) {
  // sum over every element: no loop writes disjoint elements, so the kernel
  // is one block of 256 threads reducing through shared memory and warp
  // shuffles (gpu_reduce_schedule.h); its PTX assembles.
  const char* src = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 32), dtype="float32")) -> R.Tensor((), dtype="float32"):
        with R.dataflow():
            y = R.sum(x, axis=None, keepdims=False)
            R.output(y)
        return y
)";
  Result<ir::IRModule> m = text::ParseModule(src, "sum.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(m.value(), "sm_80");
  ASSERT_EQ(funcs.size(), 1u);
  Result<PtxBuild> ptx = BuildPtx(funcs, PtxOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  ASSERT_EQ(ptx->functions.size(), 1u);
  ASSERT_EQ(ptx->functions[0].kernels.size(), 1u);
  EXPECT_EQ(ptx->functions[0].kernels[0].block_x, 256);
  for (const char* s : {".shared .align 16 .b8", "bar.sync", "shfl.sync.down.b32"})
    EXPECT_NE(ptx->ptx.find(s), std::string::npos) << s;
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  std::string log;
  EXPECT_EQ(Assemble(ptx->ptx, "sm_80", &log), 0) << log;
}

// A block-wide row sum written by hand in TIR: each thread a strided part of
// the row into shared memory, a barrier, a shared-memory halving step, then
// the first warp finishes with shuffles. The codegen's part of the shared
// memory schedules (gpu_reduce_schedule.h writes such kernels).
const char* kBlockSum = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8, 1000), "float32"), B: T.Buffer((8,), "float32")):
        for bx in T.thread_binding(T.int64(8), thread="blockIdx.x"):
            red = T.decl_buffer((64,), "float32", scope="shared")
            for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
                red[tx] = T.float32(0)
                for j in range(T.int64(16)):
                    if tx + j * 64 < 1000:
                        red[tx] = red[tx] + A[bx, tx + j * 64]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
                if tx < 32:
                    red[tx] = red[tx] + red[tx + 32]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
                if tx < 32:
                    v: T.float32 = red[tx]
                    v1: T.float32 = v + T.call_intrin("float32", "kiln.warp_shuffle_down", v, 16)
                    v2: T.float32 = v1 + T.call_intrin("float32", "kiln.warp_shuffle_down", v1, 8)
                    n: T.int32 = T.call_intrin("int32", "kiln.warp_shuffle_down", T.Cast("int32", tx), 1)
                    if tx == 0:
                        B[bx] = v2 + T.Cast("float32", n)
)";

Result<PtxBuild> PtxOf(const std::string& src, const std::string& arch) {
  Result<ir::IRModule> m = text::ParseModule(src, "k.relax");
  if (!m.ok()) return m.TakeStatus();
  std::vector<ir::PrimFunc> funcs;
  for (const auto& e : m.value().entries)
    if (e.prim) funcs.push_back(e.prim);
  PtxOptions o;
  o.arch = arch;
  return BuildPtx(funcs, o);
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

class SharedMemoryPtx : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedMemoryPtx, SharedBuffersBarriersAndShufflesAssemble) {
  const std::string arch = GetParam();
  Result<PtxBuild> ptx = PtxOf(kBlockSum, arch);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  ASSERT_EQ(ptx->functions.size(), 1u);
  ASSERT_EQ(ptx->functions[0].kernels.size(), 1u);
  EXPECT_EQ(ptx->functions[0].kernels[0].block_x, 64) << "three thread loops, one block of 64";
  EXPECT_TRUE(ptx->functions[0].workspaces.empty()) << "the shared buffer is no workspace";
  for (const char* s : {".shared .align 16 .b8 f_k0_red[256]", "st.shared.f32", "ld.shared.f32", "bar.sync",
                        "shfl.sync.down.b32", ".maxntid 64, 1, 1"})
    EXPECT_NE(ptx->ptx.find(s), std::string::npos) << s << "\n" << ptx->ptx;
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  std::string log;
  EXPECT_EQ(Assemble(ptx->ptx, arch, &log), 0) << log;
}

INSTANTIATE_TEST_SUITE_P(Archs, SharedMemoryPtx, ::testing::Values("sm_80", "sm_90"));

// softmax and layer_norm over rows of 37 and of a symbolic m
// (tests/gpu/row_fusion.relax): each function is one kernel, a block per
// row with a shared buffer per reduction (ScheduleFusedRows), and
// assembles.
class FusedRowPtx : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedRowPtx, SoftmaxAndLayerNormAreOneKernelEachAndAssemble) {
  const std::string arch = GetParam();
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/tests/gpu/row_fusion.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(m.value(), arch);
  ASSERT_EQ(funcs.size(), 4u);
  PtxOptions o;
  o.arch = arch;
  Result<PtxBuild> ptx = BuildPtx(funcs, o);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  ASSERT_EQ(ptx->functions.size(), 4u);
  for (const auto& f : ptx->functions) {
    ASSERT_EQ(f.kernels.size(), 1u) << f.name;
    EXPECT_EQ(f.kernels[0].block_x, f.name == "softmax" || f.name == "layer_norm" ? 32 : 256) << f.name;
    // Two reductions (max and sum, mean and variance): two shared buffers.
    const std::string red = ".shared .align 16 .b8 " + f.kernels[0].name + "_red";
    size_t reds = 0;
    for (size_t at = ptx->ptx.find(red); at != std::string::npos; at = ptx->ptx.find(red, at + 1)) ++reds;
    EXPECT_EQ(reds, 2u) << f.name;
  }
  for (const char* s : {"bar.sync", "shfl.sync.down.b32", "ex2.approx"})
    EXPECT_NE(ptx->ptx.find(s), std::string::npos) << s;
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  std::string log;
  EXPECT_EQ(Assemble(ptx->ptx, arch, &log), 0) << log;
}

INSTANTIATE_TEST_SUITE_P(Archs, FusedRowPtx, ::testing::Values("sm_80", "sm_90"));

TEST(NvptxCodegen, SharedMemoryErrors) {
  struct Case {
    const char* from;
    const char* to;
    const char* error;
  } cases[] = {
      {"red = T.decl_buffer((64,), \"float32\", scope=\"shared\")",
       "red = T.decl_buffer((64,), \"float32\", scope=\"shared.dyn\")",
       "PrimFunc f (GPU): allocation of 'red' in scope 'shared.dyn' (global, local and shared are supported)"},
      {"red = T.decl_buffer((64,), \"float32\", scope=\"shared\")",
       "red = T.decl_buffer((16384,), \"float32\", scope=\"shared\")",
       "PrimFunc f (GPU): shared buffer 'red' brings the kernel's shared memory to 65536 bytes, above the 49152 of "
       "static shared memory"},
      {"                if tx < 32:\n                    red[tx] = red[tx] + red[tx + 32]",
       "                T.evaluate(T.call_intrin(\"int32\", \"tvm_storage_sync\"))",
       "PrimFunc f (GPU): a barrier (tvm_storage_sync) inside a thread loop"},
      {"T.call_intrin(\"float32\", \"kiln.warp_shuffle_down\", v, 16)",
       "T.call_intrin(\"float64\", \"kiln.warp_shuffle_down\", T.Cast(\"float64\", v), 16)",
       "PrimFunc f (GPU): kiln.warp_shuffle_down of float64 (float32 and int32 only)"},
      {"T.call_intrin(\"float32\", \"kiln.warp_shuffle_down\", v, 16)",
       "T.call_intrin(\"float32\", \"kiln.warp_shuffle_down\", v)",
       "PrimFunc f (GPU): kiln.warp_shuffle_down takes a value and a lane delta"},
      {"for tx in T.thread_binding(T.int64(64), thread=\"threadIdx.x\"):\n                if tx < 32:\n"
       "                    red[tx] = red[tx] + red[tx + 32]",
       "for tx in T.thread_binding(T.int64(32), thread=\"threadIdx.x\"):\n                if tx < 32:\n"
       "                    red[tx] = red[tx] + red[tx + 32]",
       "PrimFunc f (GPU): item 0 binds threadIdx.x with extents 64 and 32 (every thread loop of a kernel spans the "
       "whole block)"},
  };
  for (const Case& c : cases) {
    Result<PtxBuild> r = PtxOf(Replace(kBlockSum, c.from, c.to), "sm_80");
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_EQ(r.status().message(), c.error);
  }
}

TEST(NvptxCodegen, DynamicSharedMemoryIsRefused) {
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for bx in T.thread_binding(T.int64(1), thread="blockIdx.x"):
            s = T.decl_buffer((n,), "float32", scope="shared")
            for tx in T.thread_binding(T.int64(32), thread="threadIdx.x"):
                if tx < n:
                    s[tx] = A[tx]
                    B[tx] = s[tx]
)";
  Result<PtxBuild> r = PtxOf(src, "sm_80");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "PrimFunc f (GPU): shared buffer 's' has a symbolic size (dynamic shared memory is "
                                  "not supported)");
}

TEST(NvptxCodegen, SharedMemoryInsideAThreadLoopIsRefused) {
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        for bx in T.thread_binding(T.int64(1), thread="blockIdx.x"):
            for tx in T.thread_binding(T.int64(32), thread="threadIdx.x"):
                s = T.decl_buffer((32,), "float32", scope="shared")
                s[tx] = A[tx]
                B[tx] = s[tx]
)";
  Result<PtxBuild> r = PtxOf(src, "sm_80");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "PrimFunc f (GPU): shared buffer 's' is allocated inside a thread loop (allocate it "
                                  "in the block, around the thread loops)");
}

TEST(NvptxCodegen, ThreadPrivateBuffersLiveInRegisters) {
  // acc: a row per thread, kept across two thread loops; no local memory
  // once promoted (ptxas reports no stack frame).
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((64, 4), "float32"), B: T.Buffer((64, 4), "float32")):
        for bx in T.thread_binding(T.int64(1), thread="blockIdx.x"):
            acc = T.decl_buffer((64, 4), "float32", scope="local")
            for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
                for q in range(T.int64(4)):
                    acc[tx, q] = A[tx, q]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for t2 in T.thread_binding(T.int64(64), thread="threadIdx.x"):
                for q in range(T.int64(4)):
                    B[t2, q] = acc[t2, q] * T.float32(2)
)";
  Result<PtxBuild> ptx = PtxOf(src, "sm_80");
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(ptx->ptx.find(".local"), std::string::npos) << ptx->ptx;
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  std::string log;
  EXPECT_EQ(Assemble(ptx->ptx, "sm_80", &log), 0) << log;

  std::string wrong_size = Replace(src, "acc = T.decl_buffer((64, 4)", "acc = T.decl_buffer((32, 4)");
  wrong_size = Replace(wrong_size, "acc = T.decl_buffer((32, 4)", "acc = T.decl_buffer((32, 4)");
  Result<PtxBuild> r = PtxOf(wrong_size, "sm_80");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "PrimFunc f (GPU): local buffer 'acc' is allocated outside the thread loops: its "
                                  "first dimension must be the block's 64 threads");
  r = PtxOf(Replace(src, "B[t2, q] = acc[t2, q]", "B[t2, q] = acc[63 - t2, q]"), "sm_80");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "PrimFunc f (GPU): thread-private buffer 'acc' indexed with other than the thread's "
                                  "variable first");
}

TEST(NvptxCodegen, ABadArchIsRefused) {
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(Example("mlp.relax"), "sm_80");
  PtxOptions o;
  o.arch = "gfx90a";
  Result<PtxBuild> r = BuildPtx(funcs, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GPU arch must be sm_XY (e.g. sm_80, sm_90), got 'gfx90a'");
  o.arch = "sm_100";
  r = BuildPtx(funcs, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GPU arch sm_100 is newer than LLVM 19's NVPTX backend knows (up to sm_90a)");
}

TEST(NvptxCodegen, TheCpuCodegenRefusesThreadBindings) {
  std::vector<ir::PrimFunc> funcs = GpuPrimFuncs(Example("mlp.relax"), "sm_80");
  Result<std::string> r = EmitLLVMIR(funcs, CodegenOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is bound to blockIdx.x: GPU kernels are compiled for --target=cuda"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace codegen
}  // namespace kiln
