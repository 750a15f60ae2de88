// The GPU .vmfb without a GPU: every example model compiles with
// --target=cuda into a file whose GPU segment round-trips through the writer
// and the loader and whose PTX assembles with ptxas for sm_80 and sm_90;
// every check of the loader fires on a damaged file, naming the kernel; a GPU
// module loaded for the CPU is refused clearly; the host side of a launch
// (gpu_launch.h) computes the grids, parameters and workspaces.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/driver/ptxas.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/cuda/gpu_launch.h"
#include "runtime/cuda/gpu_linker.h"
#include "tools/common/prepared_call.h"
#include "tools/kiln-dump/dump.h"
#include "runtime/vmfb_gpu.h"
#include "runtime/vmfb_loader.h"
#include "vm/module.h"

namespace kiln {
namespace {

const char* kPtxas = "/usr/local/cuda/bin/ptxas";

// PTX only unless a test asks for ptxas ("": the compiler finds it), so that
// the loader tests damage a file whose last segment is the PTX.
driver::CompileOptions Cuda(const std::string& arch, const std::string& ptxas = driver::kNoPtxas) {
  driver::CompileOptions o;
  o.target_triple = "cuda";
  o.gpu_arch = arch;
  o.ptxas = ptxas;
  return o;
}

compiler::VmfbProgram CompileExample(const std::string& name, const std::string& arch = "sm_80",
                                     const std::string& ptxas = driver::kNoPtxas) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  Result<compiler::VmfbProgram> p = driver::CompileModule(*m, Cuda(arch, ptxas));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : compiler::VmfbProgram();
}

// The file's bytes, kept alive by the returned FileBytes' owner.
FileBytes Serialize(const compiler::VmfbProgram& program) {
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(program);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto owned = std::make_shared<std::vector<uint8_t>>(bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>());
  FileBytes f;
  f.data = owned->data();
  f.size = owned->size();
  f.owner = owned;
  return f;
}

// The decoded program points into the file's bytes (its PTX, names), as a
// loaded module's does into its mapping: the bytes of every file decoded here
// stay alive until the test binary exits (ASan: a use-after-free when they
// were freed on return).
Result<Program> Decode(const compiler::VmfbProgram& program) {
  static std::vector<FileBytes>* kept = new std::vector<FileBytes>();
  kept->push_back(Serialize(program));
  return DecodeVmfb(kept->back());
}

class ExampleVmfb : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// Compiled with the ptxas the compiler finds: the PTX assembles for the arch
// (ptxas is the assembler the driver's JIT embeds) and its cubin travels in
// the file.
TEST_P(ExampleVmfb, RoundTripsAndItsPtxAssembles) {
  const std::string& file = std::get<0>(GetParam());
  const std::string& arch = std::get<1>(GetParam());
  compiler::VmfbProgram written = CompileExample(file, arch, /*ptxas=*/"");
  ASSERT_EQ(written.gpu_modules.size(), 1u);
  EXPECT_TRUE(written.native_libraries.empty());
  EXPECT_TRUE(written.graphs.empty());
  Result<Program> p = Decode(written);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->gpu_modules.size(), 1u);
  const compiler::GpuModuleInfo& w = written.gpu_modules[0];
  const ProgramGpuModule& g = p->gpu_modules[0];
  EXPECT_EQ(g.format, "ptx");
  EXPECT_EQ(g.arch, arch);
  ASSERT_EQ(std::string(g.ptx, g.ptx_size), w.ptx);
  ASSERT_EQ(g.functions.size(), w.functions.size());
  size_t kernel_callables = 0;
  for (const ProgramCallable& c : p->callables) kernel_callables += c.kind == CallableKind::kKernel;
  EXPECT_EQ(g.functions.size(), kernel_callables);  // one kernel function per Kernel callable
  for (size_t i = 0; i < g.functions.size(); ++i) {
    const ProgramGpuFunction& f = g.functions[i];
    const compiler::GpuFunctionInfo& wf = w.functions[i];
    EXPECT_EQ(f.name, wf.name);
    EXPECT_EQ(f.num_args, wf.num_args);
    ASSERT_EQ(f.params.size(), wf.params.size());
    for (size_t j = 0; j < f.params.size(); ++j) {
      EXPECT_EQ(static_cast<int>(f.params[j].kind), static_cast<int>(wf.params[j].kind));
      EXPECT_EQ(f.params[j].arg, wf.params[j].arg);
      EXPECT_EQ(f.params[j].dim, wf.params[j].dim);
      EXPECT_EQ(f.params[j].workspace, wf.params[j].workspace);
    }
    ASSERT_EQ(f.workspaces.size(), wf.workspaces.size());
    for (size_t j = 0; j < f.workspaces.size(); ++j) {
      EXPECT_EQ(f.workspaces[j].name, wf.workspaces[j].name);
      EXPECT_EQ(f.workspaces[j].dtype, wf.workspaces[j].dtype);
      EXPECT_EQ(f.workspaces[j].shape, wf.workspaces[j].shape);
    }
    ASSERT_EQ(f.kernels.size(), wf.kernels.size());
    for (size_t j = 0; j < f.kernels.size(); ++j) {
      EXPECT_EQ(f.kernels[j].name, wf.kernels[j].name);
      EXPECT_EQ(f.kernels[j].grid_x, wf.kernels[j].grid_x);
      EXPECT_EQ(f.kernels[j].block_x, wf.kernels[j].block_x);
    }
  }
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  ASSERT_GT(w.cubin.size(), 4u) << file << " " << arch;
  EXPECT_EQ(w.cubin.compare(0, 4, "\x7f" "ELF"), 0);
  ASSERT_NE(g.cubin, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(g.cubin), g.cubin_size), w.cubin);
  EXPECT_NE(DescribeGpuModule(g, 0).find(StrFormat("bytes of PTX, %zu bytes of cubin", w.cubin.size())),
            std::string::npos)
      << DescribeGpuModule(g, 0);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleVmfb,
                         ::testing::Combine(::testing::Values("mlp.relax", "transformer_block.relax",
                                                              "resnet_block.relax"),
                                            ::testing::Values("sm_80", "sm_90")),
                         [](const ::testing::TestParamInfo<ExampleVmfb::ParamType>& info) {
                           std::string n = std::get<0>(info.param);
                           return n.substr(0, n.find('.')) + "_" + std::get<1>(info.param);
                         });

// kiln-dump prints the segment and its launch table; CPU dumps have no
// GPU section.
TEST(GpuVmfbDump, ShowsTheLaunchTable) {
  FileBytes f = Serialize(CompileExample("mlp.relax"));
  Result<Program> p = DecodeVmfb(f);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::string dump = tools::DumpProgram(*p, &f);
  for (const char* want :
       {"GPU modules (1):\n  GPU module 0 (ptx, sm_80): 2 kernel functions, 6 kernels, ",
        "    fused_transpose_matmul_add_relu (4 args): params (a0, a1, a2, a3, ws0, ws1, $1.0)\n",
        "      ws1 lv1: float32[$1.0, 128]\n",
        "      kernel fused_transpose_matmul_add_relu_k1: grid ((($1.0 + 63) // 64) * 2) x block 256\n",
        "  GPU module 0 (ptx, sm_80)\n"}) {
    EXPECT_NE(dump.find(want), std::string::npos) << "missing: " << want << "\n" << dump;
  }
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  Result<compiler::VmfbProgram> cpu = driver::CompileModule(*m, driver::CompileOptions());
  ASSERT_TRUE(cpu.ok());
  FileBytes g = Serialize(*cpu);
  Result<Program> q = DecodeVmfb(g);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(tools::DumpProgram(*q, &g).find("GPU module"), std::string::npos);
}

// A damaged copy of the MLP's GPU module must fail to load with `code` and a
// message containing `expected`.
void ExpectDamage(const std::function<void(compiler::VmfbProgram*)>& damage, StatusCode code,
                  const std::string& expected) {
  static const compiler::VmfbProgram mlp = CompileExample("mlp.relax");
  compiler::VmfbProgram p = mlp;
  ASSERT_EQ(p.gpu_modules.size(), 1u);
  damage(&p);
  Result<Program> r = Decode(p);
  ASSERT_FALSE(r.ok()) << "loaded; expected: " << expected;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
}

compiler::GpuFunctionInfo& First(compiler::VmfbProgram* p) { return p->gpu_modules[0].functions[0]; }

TEST(GpuVmfbLoader, MissingPtx) {
  ExpectDamage([](compiler::VmfbProgram* p) { p->gpu_modules[0].ptx.clear(); }, StatusCode::kDataLoss,
               "GPU module 0 has no PTX");
}

TEST(GpuVmfbLoader, PtxWithoutTarget) {
  ExpectDamage([](compiler::VmfbProgram* p) { p->gpu_modules[0].ptx = "// not PTX\n"; }, StatusCode::kDataLoss,
               "GPU module 0's PTX has no .target directive");
}

TEST(GpuVmfbLoader, ArchMismatch) {
  ExpectDamage([](compiler::VmfbProgram* p) { p->gpu_modules[0].arch = "sm_90"; }, StatusCode::kDataLoss,
               "GPU module 0's PTX is for sm_80; the module says sm_90");
}

TEST(GpuVmfbLoader, BadArch) {
  ExpectDamage([](compiler::VmfbProgram* p) { p->gpu_modules[0].arch = "gfx90a"; }, StatusCode::kDataLoss,
               "GPU module 0 has arch 'gfx90a' (expected sm_XY)");
}

TEST(GpuVmfbLoader, UnknownFormat) {
  ExpectDamage([](compiler::VmfbProgram* p) { p->gpu_modules[0].format = "cubin"; }, StatusCode::kUnimplemented,
               "GPU module 0 has format 'cubin'; this runtime loads 'ptx'");
}

TEST(GpuVmfbLoader, KernelNotInPtx) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).kernels[0].name = "no_such_kernel"; }, StatusCode::kDataLoss,
               "kernel function 'fused_transpose_matmul_add_relu': kernel 'no_such_kernel' is not in the PTX");
}

TEST(GpuVmfbLoader, ParameterCountMismatch) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).params.pop_back(); }, StatusCode::kDataLoss,
               "kernel 'fused_transpose_matmul_add_relu_k0' takes 7 parameters in the PTX; the launch table gives 6");
}

TEST(GpuVmfbLoader, ArgumentCountMismatch) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).num_args = 5; }, StatusCode::kDataLoss,
               "kernel function 'fused_transpose_matmul_add_relu' takes 5 arguments; the program calls it with 4");
}

TEST(GpuVmfbLoader, ParameterFromAMissingArgument) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).params[0].arg = 7; }, StatusCode::kDataLoss,
               "'fused_transpose_matmul_add_relu': kernel parameter 0 comes from argument 7; the function has 4");
}

TEST(GpuVmfbLoader, ParameterFromAMissingWorkspace) {
  ExpectDamage(
      [](compiler::VmfbProgram* p) {
        for (auto& q : First(p).params)
          if (q.kind == compiler::GpuParamKind::kWorkspace) q.workspace = 9;
      },
      StatusCode::kDataLoss, "is workspace 9; the function has 2");
}

TEST(GpuVmfbLoader, MalformedGrid) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).kernels[1].grid_x = "($1.0 + "; }, StatusCode::kDataLoss,
               "kernel 'fused_transpose_matmul_add_relu_k1' has a malformed grid size '($1.0 + '");
}

TEST(GpuVmfbLoader, GridOfAMissingDimension) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).kernels[1].grid_x = "$9.0"; }, StatusCode::kDataLoss,
               "has a malformed grid size '$9.0'");
}

TEST(GpuVmfbLoader, BadBlockSize) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).kernels[0].block_x = 2048; }, StatusCode::kDataLoss,
               "kernel 'fused_transpose_matmul_add_relu_k0' has block size 2048 (1..1024)");
}

TEST(GpuVmfbLoader, MalformedWorkspace) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).workspaces[0].shape[0] = "max("; }, StatusCode::kDataLoss,
               "workspace 'lv0' has a malformed dimension 'max('");
}

TEST(GpuVmfbLoader, FunctionWithoutACallable) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).name = "orphan"; }, StatusCode::kDataLoss,
               "kernel function 'orphan' implements no kernel callable of the program");
}

TEST(GpuVmfbLoader, DuplicateFunction) {
  ExpectDamage(
      [](compiler::VmfbProgram* p) { p->gpu_modules[0].functions.push_back(p->gpu_modules[0].functions[0]); },
      StatusCode::kDataLoss, "kernel function 'fused_transpose_matmul_add_relu' appears twice");
}

TEST(GpuVmfbLoader, FunctionWithoutAName) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).name.clear(); }, StatusCode::kDataLoss,
               "GPU module 0: a kernel function has no name");
}

TEST(GpuVmfbLoader, NegativeArgumentCount) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).num_args = -2; }, StatusCode::kDataLoss,
               "kernel function 'fused_transpose_matmul_add_relu' takes -2 arguments");
}

TEST(GpuVmfbLoader, DimensionPastTheRankCap) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).params.back().dim = 99; }, StatusCode::kDataLoss,
               "kernel parameter 6 is dimension 99 of argument 1");
}

TEST(GpuVmfbLoader, UnknownParameterKind) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).params[0].kind = static_cast<compiler::GpuParamKind>(7); },
               StatusCode::kDataLoss, "kernel parameter 0 has an unknown kind 7");
}

TEST(GpuVmfbLoader, WorkspaceWithABadDtype) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).workspaces[0].dtype = DType{kDLFloat, 4, 1}; },
               StatusCode::kDataLoss, "workspace 'lv0' has an invalid dtype");
}

TEST(GpuVmfbLoader, FunctionWithoutKernels) {
  ExpectDamage([](compiler::VmfbProgram* p) { First(p).kernels.clear(); }, StatusCode::kDataLoss,
               "kernel function 'fused_transpose_matmul_add_relu' has no kernels");
}

TEST(GpuVmfbLoader, ChangedPtxBytes) {
  compiler::VmfbProgram p = CompileExample("mlp.relax");
  FileBytes f = Serialize(p);
  const std::string& ptx = p.gpu_modules[0].ptx;
  // Find the PTX in the file and change one byte of it.
  auto* owned = static_cast<std::vector<uint8_t>*>(f.owner.get());
  auto it = std::search(owned->begin(), owned->end(), ptx.begin(), ptx.end());
  ASSERT_NE(it, owned->end());
  *(it + static_cast<std::ptrdiff_t>(ptx.size() / 2)) ^= 1;
  Result<Program> r = DecodeVmfb(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("the GPU module 0 segment"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("does not match its checksum"), std::string::npos) << r.status().message();
}

TEST(GpuVmfbLoader, TruncatedPtx) {
  FileBytes f = Serialize(CompileExample("mlp.relax"));
  f.size -= 100;  // the PTX is the file's last segment
  Result<Program> r = DecodeVmfb(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated .vmfb: the GPU module 0 segment ends at byte"), std::string::npos)
      << r.status().message();
}

// A module with a cubin: the cubin is checked (an ELF file, its checksum)
// and named in the messages; without ptxas the file has no cubin.
compiler::VmfbProgram MlpWithCubin() {
  compiler::VmfbProgram p = CompileExample("mlp.relax", "sm_90", /*ptxas=*/"");
  return p;
}

TEST(GpuVmfbLoader, CubinThatIsNotElf) {
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent";
  compiler::VmfbProgram p = MlpWithCubin();
  ASSERT_FALSE(p.gpu_modules[0].cubin.empty());
  p.gpu_modules[0].cubin = "not an ELF file";
  Result<Program> r = Decode(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("GPU module 0's cubin is not an ELF file"), std::string::npos)
      << r.status().message();
}

TEST(GpuVmfbLoader, ChangedCubinBytes) {
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent";
  compiler::VmfbProgram p = MlpWithCubin();
  // As bytes: a char of the ELF above 0x7f compares negative with a uint8_t.
  const std::vector<uint8_t> cubin(p.gpu_modules[0].cubin.begin(), p.gpu_modules[0].cubin.end());
  ASSERT_FALSE(cubin.empty());
  FileBytes f = Serialize(p);
  auto* owned = static_cast<std::vector<uint8_t>*>(f.owner.get());
  auto it = std::search(owned->begin(), owned->end(), cubin.begin(), cubin.end());
  ASSERT_NE(it, owned->end());
  *(it + static_cast<std::ptrdiff_t>(cubin.size() / 2)) ^= 1;
  Result<Program> r = DecodeVmfb(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("the GPU module 0 cubin segment"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("does not match its checksum"), std::string::npos) << r.status().message();
}

TEST(GpuVmfbLoader, NoPtxasNoCubin) {
  compiler::VmfbProgram p = CompileExample("mlp.relax", "sm_90", driver::kNoPtxas);
  EXPECT_TRUE(p.gpu_modules[0].cubin.empty());
  Result<Program> r = Decode(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gpu_modules[0].cubin, nullptr);
  EXPECT_EQ(DescribeGpuModule(r->gpu_modules[0], 0).find("cubin"), std::string::npos);
}

// Which image a device loads: the cubin on its own major version at an
// equal or newer minor, the PTX forward on anything newer, nothing older.
TEST(GpuImageChoice, CubinWithinAMajorVersionPtxForward) {
  static const char kElf[] = "\x7f" "ELF";
  ProgramGpuModule m;
  m.arch = "sm_80";
  EXPECT_EQ(ChooseGpuImage(m, 8, 0), GpuImage::kPtx);  // no cubin in the file
  m.cubin = reinterpret_cast<const uint8_t*>(kElf);
  m.cubin_size = 4;
  EXPECT_EQ(ChooseGpuImage(m, 8, 0), GpuImage::kCubin);
  EXPECT_EQ(ChooseGpuImage(m, 8, 6), GpuImage::kCubin);
  EXPECT_EQ(ChooseGpuImage(m, 9, 0), GpuImage::kPtx);   // sm_80 cubins do not run on sm_90
  EXPECT_EQ(ChooseGpuImage(m, 7, 5), GpuImage::kNone);
  m.arch = "sm_86";
  EXPECT_EQ(ChooseGpuImage(m, 8, 0), GpuImage::kNone);
  EXPECT_EQ(ChooseGpuImage(m, 8, 9), GpuImage::kCubin);
  m.arch = "sm_90";
  EXPECT_EQ(ChooseGpuImage(m, 9, 0), GpuImage::kCubin);
  EXPECT_EQ(ChooseGpuImage(m, 10, 0), GpuImage::kPtx);
  m.arch = "bad";
  EXPECT_EQ(ChooseGpuImage(m, 9, 0), GpuImage::kNone);
}

TEST(GpuVmfbLoader, CpuLoadOfAGpuModuleIsRefused) {
  FileBytes f = Serialize(CompileExample("transformer_block.relax"));
  Result<std::shared_ptr<const vm::Module>> m = vm::Module::LoadBuffer(f.data, f.size);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(m.status().message().find("this module's kernels run on a GPU ("), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("(sm_80)"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("kiln-run --device=cuda"), std::string::npos) << m.status().message();
}

TEST(GpuVmfbLoader, CpuFilesCarryNoGpuSegment) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  Result<compiler::VmfbProgram> cpu = driver::CompileModule(*m, driver::CompileOptions());
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  FileBytes f = Serialize(*cpu);
  Result<Program> p = DecodeVmfb(f);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->gpu_modules.empty());
  EXPECT_EQ(p->native_libraries.size(), 1u);
  EXPECT_TRUE(vm::Module::LoadBuffer(f.data, f.size).ok());
}

TEST(GpuVmfbCompile, CpuLibraryKernelsAreRefused) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  driver::CompileOptions o = Cuda("sm_80");
  o.matmul_to_dnnl = true;
  Result<compiler::VmfbProgram> r = driver::CompileModule(*m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("--target=cuda: the module calls 'kiln.dnnl."), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("a CPU library kernel"), std::string::npos) << r.status().message();
}

// An 8-bit matmul (ONNX MatMulInteger, as quantize_dynamic writes it) with a
// constant weight: on the CPU it calls the 8-bit library kernel, for the GPU
// it compiles to a generated kernel whose PTX assembles; no CPU packed
// function is left in the GPU file.
TEST(GpuVmfbCompile, IntegerMatmulIsAGeneratedKernel) {
  const std::string src =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor((\"m\", 64), dtype=\"uint8\"), "
      "za: R.Tensor((), dtype=\"uint8\")):\n        m = T.int64()\n        with R.dataflow():\n"
      "            b = R.const(3, \"int8\")\n            bb = R.broadcast_to(b, R.shape([64, 48]))\n"
      "            zb = R.const(-1, \"int8\")\n"
      "            y = R.matmul_integer(a, bb, za, zb)\n            R.output(y)\n        return y\n";
  Result<ir::IRModule> m = text::ParseModule(src, "q.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Result<compiler::VmfbProgram> cpu = driver::CompileModule(*m, driver::CompileOptions());
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  bool cpu_calls_int8 = false;
  for (const compiler::CallableInfo& c : cpu->callables)
    cpu_calls_int8 |= c.kind == compiler::CallableKind::kPacked && c.name.rfind("kiln.int8.", 0) == 0;
  EXPECT_TRUE(cpu_calls_int8);
  Result<compiler::VmfbProgram> gpu = driver::CompileModule(*m, Cuda("sm_90", /*ptxas=*/""));
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  for (const compiler::CallableInfo& c : gpu->callables)
    EXPECT_NE(c.kind, compiler::CallableKind::kPacked) << c.name;
  ASSERT_EQ(gpu->gpu_modules.size(), 1u);
  EXPECT_NE(gpu->gpu_modules[0].ptx.find("matmul_integer"), std::string::npos);
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent: the PTX was not assembled";
  EXPECT_EQ(gpu->gpu_modules[0].cubin.compare(0, 4, "\x7f" "ELF"), 0);  // ptxas assembled it
}

// The host side of a launch: the MLP's first kernel function, called as the
// bytecode calls it (w0, x, b0, out) with n = 5.
TEST(GpuLaunchPlan, GridsParametersAndWorkspaces) {
  Result<Program> p = Decode(CompileExample("mlp.relax"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const ProgramGpuFunction& f = p->gpu_modules[0].functions[0];
  ASSERT_EQ(f.name, "fused_transpose_matmul_add_relu");
  Tensor w0 = Tensor::Empty({128, 784}, DType::Float32()).value();
  Tensor x = Tensor::Empty({5, 784}, DType::Float32()).value();
  Tensor b0 = Tensor::Empty({128}, DType::Float32()).value();
  Tensor out = Tensor::Empty({5, 128}, DType::Float32()).value();
  std::vector<Any> args = {Any(w0), Any(x), Any(b0), Any(out)};
  Result<cuda::GpuLaunchPlan> plan = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // params (a0, a1, a2, a3, ws0, ws1, $1.0): see kiln-dump of the file.
  ASSERT_EQ(plan->values.size(), 7u);
  EXPECT_EQ(plan->values[0], reinterpret_cast<uint64_t>(w0.raw_data()));
  EXPECT_EQ(plan->values[1], reinterpret_cast<uint64_t>(x.raw_data()));
  EXPECT_EQ(plan->values[3], reinterpret_cast<uint64_t>(out.raw_data()));
  EXPECT_EQ(plan->values[6], 5u);
  ASSERT_EQ(plan->workspace_slots.size(), 2u);
  EXPECT_EQ(plan->workspace_slots[0].first, 4u);
  EXPECT_EQ(plan->workspace_bytes, (std::vector<uint64_t>{784 * 128 * 4, 5 * 128 * 4}));
  // The transpose and the bias + relu: one thread per output element, 256
  // per block; the matmul: a block per 64x64 tile of the 5 x 128 result.
  EXPECT_EQ(plan->grids, (std::vector<uint32_t>{(784 * 128 + 255) / 256, (5 + 63) / 64 * 2,
                                                (5 * 128 + 255) / 256}));

  // n = 0: nothing to launch for the n-sized kernels.
  Tensor x0 = Tensor::Empty({0, 784}, DType::Float32()).value();
  args[1] = Any(x0);
  plan = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->grids[1], 0u);
}

TEST(GpuLaunchPlan, Errors) {
  Result<Program> p = Decode(CompileExample("mlp.relax"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const ProgramGpuFunction& f = p->gpu_modules[0].functions[0];
  Tensor t = Tensor::Empty({128, 784}, DType::Float32()).value();
  std::vector<Any> args = {Any(t), Any(t), Any(t)};
  Result<cuda::GpuLaunchPlan> r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GPU kernel function 'fused_transpose_matmul_add_relu' takes 4 arguments, got 3");
  args = {Any(t), Any(int64_t{3}), Any(t), Any(t)};
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("argument 1 is"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("its kernels read it as a buffer"), std::string::npos) << r.status().message();
  // A rank-0 tensor where the kernels read dimension 0 of argument 1 (n).
  Tensor scalar = Tensor::Empty(std::vector<int64_t>{}, DType::Float32()).value();
  args = {Any(t), Any(scalar), Any(t), Any(t)};
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("its kernels read dimension 0 of argument 1, which has rank 0"),
            std::string::npos)
      << r.status().message();
  args = {Any(t), Any(t), Any(t), Any(std::string("s"))};
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GPU kernels take tensors and ints"), std::string::npos)
      << r.status().message();
}

// The VM's side of a GPU module with the device replaced by a recorder (the
// device's part, PTX JIT and cuLaunchKernel, runs in the GPU check): the
// loader hands every kernel function and tensor constant to the linker, the
// VM calls each function's packed launcher in bytecode order with the
// call's tensors, and each launch plan is the one for those shapes.
class RecordingLinker final : public GpuLinker {
 public:
  Status LoadModule(const ProgramGpuModule& module) override {
    modules.push_back(module.arch);
    return Status::Ok();
  }
  Result<PackedFunc> Resolve(const ProgramGpuModule&, const ProgramGpuFunction& function) override {
    resolved.push_back(function.name);
    ProgramGpuFunction f = function;
    return PackedFunc([this, f](Span<const Any> args, Any* ret) -> Status {
      KILN_ASSIGN_OR_RETURN(cuda::GpuLaunchPlan plan, cuda::PlanGpuLaunch(f, args));
      launches.push_back({f.name, plan.grids});
      *ret = Any();
      return Status::Ok();
    });
  }
  Result<Any> UploadConstant(const Any& host) override {
    ++uploads;
    return host;
  }
  std::vector<std::string> modules, resolved;
  std::vector<std::pair<std::string, std::vector<uint32_t>>> launches;
  int uploads = 0;
};

TEST(GpuVmfbVm, LaunchesEachKernelFunctionThroughTheLinker) {
  FileBytes f = Serialize(CompileExample("mlp.relax"));
  auto gpu = std::make_shared<RecordingLinker>();
  vm::LoadOptions options;
  options.gpu = gpu;
  options.num_threads = 1;
  Result<std::shared_ptr<const vm::Module>> m = vm::Module::LoadBuffer(f.data, f.size, options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(gpu->modules, (std::vector<std::string>{"sm_80"}));
  EXPECT_EQ(gpu->resolved,
            (std::vector<std::string>{"fused_transpose_matmul_add_relu", "fused_transpose1_matmul1_add1"}));
  size_t tensor_constants = 0;
  for (const ProgramConstant& c : (*m)->linked_program()->program.constants)
    tensor_constants += c.kind == ProgramConstantKind::kTensor;
  EXPECT_EQ(gpu->uploads, static_cast<int>(tensor_constants));

  std::unique_ptr<vm::Context> ctx = (*m)->CreateContext();
  std::vector<Any> args = {Any(Tensor::Empty({3, 784}, DType::Float32()).value()),
                           Any(Tensor::Empty({128, 784}, DType::Float32()).value()),
                           Any(Tensor::Empty({128}, DType::Float32()).value()),
                           Any(Tensor::Empty({10, 128}, DType::Float32()).value()),
                           Any(Tensor::Empty({10}, DType::Float32()).value())};
  Any result;
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(result.is_tensor());
  EXPECT_EQ(result.tensor().shape(), (std::vector<int64_t>{3, 10}));
  ASSERT_EQ(gpu->launches.size(), 2u);
  EXPECT_EQ(gpu->launches[0].first, "fused_transpose_matmul_add_relu");
  EXPECT_EQ(gpu->launches[0].second, (std::vector<uint32_t>{392, 2, 2}));  // 784*128/256, ceil(3*128/256)
  EXPECT_EQ(gpu->launches[1].first, "fused_transpose1_matmul1_add1");
  EXPECT_EQ(gpu->launches[1].second, (std::vector<uint32_t>{5, 1, 1}));    // ceil(128*10/256), ceil(3*10/256)
}

// ---- cuBLAS (kernels/cuda): the compiled module calls the device's library ----

driver::CompileOptions CudaWithCublas() {
  driver::CompileOptions o = Cuda("sm_80");
  transform::DispatchRule r;
  r.op = "matmul";
  r.library = "cublas";
  r.where = "test";
  o.dispatch_rules.push_back(r);
  return o;
}

std::vector<std::string> PackedCallables(const compiler::VmfbProgram& p) {
  std::vector<std::string> names;
  for (const compiler::CallableInfo& c : p.callables)
    if (c.kind == compiler::CallableKind::kPacked) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  return names;
}

// RecordingLinker that also provides device functions: records each
// resolved name and each call's argument shapes.
class CublasRecordingLinker final : public GpuLinker {
 public:
  Status LoadModule(const ProgramGpuModule& module) override { return inner.LoadModule(module); }
  Result<PackedFunc> Resolve(const ProgramGpuModule& m, const ProgramGpuFunction& f) override { return inner.Resolve(m, f); }
  Result<Any> UploadConstant(const Any& host) override { return inner.UploadConstant(host); }
  Result<PackedFunc> ResolvePacked(const std::string& name) override {
    if (name.rfind("kiln.cublas.", 0) != 0 && name.rfind("kiln.cudnn.", 0) != 0) return NotFound(name);
    packed.push_back(name);
    return PackedFunc([this, name](Span<const Any> args, Any* ret) -> Status {
      std::string shapes = name;
      for (const Any& a : args) shapes += " " + (a.is_tensor() ? ShapeToString(a.tensor().shape()) : a.Describe());
      calls.push_back(shapes);
      *ret = Any();
      return Status::Ok();
    });
  }
  RecordingLinker inner;
  std::vector<std::string> packed, calls;
};

TEST(GpuVmfbCublas, TheMlpCallsCublasWithItsEpilogues) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  Result<compiler::VmfbProgram> p = driver::CompileModule(*m, CudaWithCublas());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // matmul + add + relu, then matmul + add: two calls, the transposes stay kernels.
  EXPECT_EQ(PackedCallables(*p), (std::vector<std::string>{"kiln.cublas.matmul_bias", "kiln.cublas.matmul_bias_relu"}));
  ASSERT_EQ(p->gpu_modules.size(), 1u);

  FileBytes f = Serialize(*p);
  // Without a device the file says it needs one.
  Result<std::shared_ptr<const vm::Module>> cpu = vm::Module::LoadBuffer(f.data, f.size);
  ASSERT_FALSE(cpu.ok());
  EXPECT_NE(cpu.status().message().find("it needs a CUDA device"), std::string::npos) << cpu.status().message();

  auto gpu = std::make_shared<CublasRecordingLinker>();
  vm::LoadOptions options;
  options.gpu = gpu;
  options.num_threads = 1;
  Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadBuffer(f.data, f.size, options);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::sort(gpu->packed.begin(), gpu->packed.end());
  EXPECT_EQ(gpu->packed, PackedCallables(*p));
  std::unique_ptr<vm::Context> ctx = (*mod)->CreateContext();
  std::vector<Any> args = {Any(Tensor::Empty({3, 784}, DType::Float32()).value()),
                           Any(Tensor::Empty({128, 784}, DType::Float32()).value()),
                           Any(Tensor::Empty({128}, DType::Float32()).value()),
                           Any(Tensor::Empty({10, 128}, DType::Float32()).value()),
                           Any(Tensor::Empty({10}, DType::Float32()).value())};
  Any result;
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(gpu->calls, (std::vector<std::string>{
                            "kiln.cublas.matmul_bias_relu [3, 784] [784, 128] [128] [3, 128]",
                            "kiln.cublas.matmul_bias [3, 128] [128, 10] [10] [3, 10]"}));
}

TEST(GpuVmfbCublas, AModuleWithoutKernelsStillPutsItsConstantsOnTheDevice) {
  const std::string src =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2, 3), dtype=\"float32\")):\n"
      "        with R.dataflow():\n"
      "            gv = R.matmul(x, R.const([[1, 2], [3, 4], [5, 6]], \"float32\"))\n"
      "            R.output(gv)\n        return gv\n";
  Result<ir::IRModule> m = text::ParseModule(src, "cublas_only.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Result<compiler::VmfbProgram> p = driver::CompileModule(*m, CudaWithCublas());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(PackedCallables(*p), (std::vector<std::string>{"kiln.cublas.matmul"}));
  EXPECT_TRUE(p->gpu_modules.empty());
  FileBytes f = Serialize(*p);
  Result<std::shared_ptr<const vm::Module>> cpu = vm::Module::LoadBuffer(f.data, f.size);
  ASSERT_FALSE(cpu.ok());
  EXPECT_NE(cpu.status().message().find("('kiln.cublas.matmul' (sm_80)); it needs a CUDA device"), std::string::npos)
      << cpu.status().message();
  auto gpu = std::make_shared<CublasRecordingLinker>();
  vm::LoadOptions options;
  options.gpu = gpu;
  Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadBuffer(f.data, f.size, options);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  EXPECT_EQ(gpu->inner.uploads, 1);
  EXPECT_TRUE(gpu->inner.modules.empty());
  EXPECT_EQ((*mod)->linked_program()->gpu, gpu);
}

TEST(GpuVmfbCudnn, TheResnetBlockCallsCudnn) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/resnet_block.relax");
  ASSERT_TRUE(m.ok());
  driver::CompileOptions o = Cuda("sm_80");
  transform::DispatchRule r;
  r.op = "conv2d";
  r.library = "cudnn";
  r.where = "test";
  o.dispatch_rules.push_back(r);
  Result<compiler::VmfbProgram> p = driver::CompileModule(*m, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(PackedCallables(*p), (std::vector<std::string>{"kiln.cudnn.conv2d"}));
  FileBytes f = Serialize(*p);
  auto gpu = std::make_shared<CublasRecordingLinker>();
  vm::LoadOptions options;
  options.gpu = gpu;
  options.num_threads = 1;
  Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadBuffer(f.data, f.size, options);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::unique_ptr<vm::Context> ctx = (*mod)->CreateContext();
  std::vector<Any> args = {Any(Tensor::Empty({1, 64, 56, 56}, DType::Float32()).value())};
  for (int conv = 0; conv < 2; ++conv) {
    args.push_back(Any(Tensor::Empty({64, 64, 3, 3}, DType::Float32()).value()));
    for (int i = 0; i < 4; ++i) args.push_back(Any(Tensor::Empty({64}, DType::Float32()).value()));
  }
  Any result;
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(gpu->calls, (std::vector<std::string>(
                            2, "kiln.cudnn.conv2d [1, 64, 56, 56] [64, 64, 3, 3] [9] [1, 64, 56, 56]")));
  // cuDNN for the CPU is refused like cuBLAS.
  driver::CompileOptions cpu;
  cpu.dispatch_rules = o.dispatch_rules;
  Result<compiler::VmfbProgram> refused = driver::CompileModule(*m, cpu);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "test: library cudnn runs on the GPU; compile with --target=cuda");
}

TEST(GpuVmfbCublas, ACublasRuleIsRefusedForTheCpu) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  driver::CompileOptions o;  // the CPU
  o.dispatch_rules = CudaWithCublas().dispatch_rules;
  Result<compiler::VmfbProgram> r = driver::CompileModule(*m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "test: library cublas runs on the GPU; compile with --target=cuda");
}

// Launch-plan errors no compiled file produces, on a function made by hand:
// a scalar read from a tensor, a workspace dimension past a rank, a grid
// that comes out negative.
TEST(GpuLaunchPlan, ErrorsOfHandMadeTables) {
  ProgramGpuFunction f;
  f.name = "k";
  f.num_args = 2;
  f.params = {{GpuParamKind::kBuffer, 0, -1, 0}, {GpuParamKind::kDim, 1, -1, 0}};
  f.kernels = {{"k_k0", "$1 - 5", 32}};
  Tensor t = Tensor::Empty(std::vector<int64_t>{2, 3}, DType::Float32()).value();
  std::vector<Any> args = {Any(t), Any(t)};
  Result<cuda::GpuLaunchPlan> r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GPU kernel function 'k': argument 1 is a tensor; its kernels read it as an int");
  args[1] = Any(int64_t{2});
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "GPU kernel function 'k': kernel 'k_k0' has grid '$1 - 5' = -3 for these arguments");
  f.kernels[0].grid_x = "$1";
  f.workspaces = {{"w", DType::Float32(), {"$0.3"}}};
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "GPU kernel function 'k': workspace 'w' has dimension '$0.3', which these arguments do not give");
  f.workspaces[0].shape = {"$0.1 * $1"};
  r = cuda::PlanGpuLaunch(f, Span<const Any>(args.data(), args.size()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workspace_bytes, (std::vector<uint64_t>{3 * 2 * 4}));
  EXPECT_EQ(r->grids, (std::vector<uint32_t>{2}));
}

// A launch reads every buffer argument on the GPU: a host tensor there (or
// one on another device) is refused before any launch.
TEST(GpuLaunchPlan, BuffersMustBeOnTheLaunchDevice) {
  ProgramGpuFunction f;
  f.name = "k";
  f.num_args = 3;
  f.params = {{GpuParamKind::kBuffer, 0, -1, 0}, {GpuParamKind::kBuffer, 1, -1, 0}, {GpuParamKind::kDim, 2, -1, 0}};
  f.kernels = {{"k_k0", "$2", 32}};
  Tensor dev = Tensor::Empty(std::vector<int64_t>{2, 3}, DType::Float32()).value();
  dev.object()->dl.device = DLDevice{kDLCUDA, 0};
  Tensor host = Tensor::Empty(std::vector<int64_t>{2, 3}, DType::Float32()).value();
  std::vector<Any> args = {Any(dev), Any(dev), Any(int64_t{4})};
  Span<const Any> span(args.data(), args.size());
  EXPECT_TRUE(cuda::CheckGpuArgumentDevices(f, span, DLDevice{kDLCUDA, 0}).ok());
  args[1] = Any(host);
  Status s = cuda::CheckGpuArgumentDevices(f, Span<const Any>(args.data(), args.size()), DLDevice{kDLCUDA, 0});
  EXPECT_EQ(s.message(), "GPU kernel function 'k': argument 1 is on cpu; its kernels read memory of cuda:0");
  s = cuda::CheckGpuArgumentDevices(f, Span<const Any>(args.data(), 1), DLDevice{kDLCUDA, 1});
  EXPECT_EQ(s.message(), "GPU kernel function 'k': argument 0 is on cuda:0; its kernels read memory of cuda:1");
  // Managed memory is reachable from every device.
  host.object()->dl.device = DLDevice{kDLCUDAManaged, 0};
  EXPECT_TRUE(cuda::CheckGpuArgumentDevices(f, Span<const Any>(args.data(), args.size()), DLDevice{kDLCUDA, 0}).ok());
}

// kiln-run / kiln-bench --device=cuda with a CPU file: refused before the
// device is opened, so on any machine.
TEST(GpuVmfbTools, CpuFileOnTheGpuIsRefused) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok());
  Result<compiler::VmfbProgram> cpu = driver::CompileModule(*m, driver::CompileOptions());
  ASSERT_TRUE(cpu.ok());
  std::string path = ::testing::TempDir() + "/gpu_vmfb_cpu_file.vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(*cpu, path).ok());
  tools::CallSpec spec;
  spec.module_path = path;
  spec.inputs = {"4x784xf32=random:1", "128x784xf32=random:2", "128xf32=random:3", "10x128xf32=random:4",
                 "10xf32=random:5"};
  spec.device = 1;
  Result<std::unique_ptr<tools::PreparedCall>> call = tools::PreparedCall::Create(spec);
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(call.status().message().rfind("--device=cuda:1: '" + path + "' was compiled for the CPU (target '", 0), 0u)
      << call.status().message();
  EXPECT_NE(call.status().message().find("compile it with kiln-compile --target=cuda"), std::string::npos);
  std::remove(path.c_str());
}

// The no-device path of a GPU module: run by ctest with KILN_CUDA_DRIVER
// naming a library that does not exist (kiln_gpu_vmfb_no_driver_test), so it
// holds on any machine; skipped when run without it.
TEST(GpuVmfbNoDriver, OpeningTheDeviceSaysWhy) {
  const char* driver = std::getenv("KILN_CUDA_DRIVER");
  if (driver == nullptr) GTEST_SKIP() << "KILN_CUDA_DRIVER is not set (ctest sets it for this case)";
  Result<std::shared_ptr<cuda::CudaGpuLinker>> gpu = cuda::CudaGpuLinker::Create(0);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message().rfind(std::string("no CUDA driver: ") + driver + ": ", 0), 0u)
      << gpu.status().message();

  // kiln-run / kiln-bench's path: the same error before the module loads.
  std::string path = ::testing::TempDir() + "/gpu_vmfb_no_driver.vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(CompileExample("mlp.relax"), path).ok());
  tools::CallSpec spec;
  spec.module_path = path;
  spec.inputs = {"4x784xf32=random:1", "128x784xf32=random:2", "128xf32=random:3", "10x128xf32=random:4",
                 "10xf32=random:5"};
  spec.device = 0;
  Result<std::unique_ptr<tools::PreparedCall>> call = tools::PreparedCall::Create(spec);
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().message().rfind(std::string("no CUDA driver: ") + driver + ": ", 0), 0u)
      << call.status().message();
  // On the CPU the same file is refused, naming the device it needs.
  spec.device = -1;
  call = tools::PreparedCall::Create(spec);
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(call.status().message().find("it needs a CUDA device: kiln-run --device=cuda"), std::string::npos)
      << call.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln
