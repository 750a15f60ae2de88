// kiln-compile (CompileToolMain): every flag error, --help, the text outputs
// (--emit=relax|tir|llvm|asm), --dump-ir-after on stderr, and a real compile
// of examples/mlp.relax to a .vmfb that the runtime loads.
#include "compiler/driver/compile_tool.h"

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/mapped_file.h"
#include "runtime/vmfb_loader.h"
#include "vm/module.h"

namespace kiln {
namespace driver {
namespace {

struct ToolRun {
  int rc;
  std::string out;
  std::string err;
};

ToolRun RunTool(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"kiln-compile"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = CompileToolMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

std::string Mlp() { return std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax"; }

// A path in the test's temporary directory, unique per test and process.
std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "kiln_compile_tool_" + info->name() + "_" + std::to_string(getpid()) + suffix;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// What kiln-compile prints after writing `path` (its size read back).
std::string WroteLine(const std::string& path) {
  size_t n = ReadFile(path).size();
  char size[64];
  if (n < 1024) {
    std::snprintf(size, sizeof(size), "%zu bytes", n);
  } else if (n < (1u << 20)) {
    std::snprintf(size, sizeof(size), "%zu bytes (%.1f KiB)", n, n / 1024.0);
  } else {
    std::snprintf(size, sizeof(size), "%zu bytes (%.1f MiB)", n, n / 1048576.0);
  }
  return "kiln-compile: wrote " + path + ": " + size + "\n";
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// ------------------------------------------------------------------ flags

TEST(CompileTool, HelpGoesToStdout) {
  for (const char* flag : {"--help", "-h"}) {
    ToolRun r = RunTool({flag});
    EXPECT_EQ(r.rc, 0) << flag;
    EXPECT_TRUE(StartsWith(r.out, "usage: kiln-compile IN.relax -o OUT.vmfb [options]\n")) << r.out;
    EXPECT_TRUE(Contains(r.out, "--emit=vmfb|relax|tir|llvm|asm"));
    EXPECT_TRUE(Contains(r.out, "--dump-ir-after=PASS"));
    EXPECT_TRUE(Contains(r.out, "--matmul=tir|dnnl"));
    EXPECT_EQ(r.err, "");
  }
}

TEST(CompileTool, DashOWithoutAName) {
  ToolRun r = RunTool({Mlp(), "-o"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: -o needs a file name\n");
  EXPECT_EQ(r.out, "");
}

TEST(CompileTool, BadMatmul) {
  ToolRun r = RunTool({Mlp(), "-o", "x.vmfb", "--matmul=cublas"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: --matmul must be tir or dnnl, got 'cublas'\n");
}

TEST(CompileTool, BadEmit) {
  ToolRun r = RunTool({Mlp(), "--emit=obj"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: --emit must be vmfb, relax, tir, llvm or asm, got 'obj'\n");
}

TEST(CompileTool, UnknownOptionPrintsUsage) {
  for (const char* flag : {"--fast", "-O4", "-", "--dim-x=1"}) {
    ToolRun r = RunTool({Mlp(), flag});
    EXPECT_EQ(r.rc, 2) << flag;
    EXPECT_TRUE(StartsWith(r.err, std::string("kiln-compile: unknown option '") + flag + "'\nusage: kiln-compile"))
        << r.err;
  }
}

TEST(CompileTool, ValueFlagAtTheEndNeedsItsValue) {
  ToolRun r = RunTool({Mlp(), "--emit"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: --emit needs a value\n");
  r = RunTool({Mlp(), "--dim"});
  EXPECT_EQ(r.err, "kiln-compile: --dim needs NAME=N\n");
  r = RunTool({Mlp(), "--output"});
  EXPECT_EQ(r.err, "kiln-compile: --output needs a file name\n");
}

TEST(CompileTool, BadDim) {
  for (const char* dim : {"batch", "batch=0", "=3", "batch=x", "batch=1,seq"}) {
    ToolRun r = RunTool({Mlp(), "-o", "x.vmfb", "--dim", dim});
    EXPECT_EQ(r.rc, 2) << dim;
    std::string item = std::string(dim) == "batch=1,seq" ? "seq" : dim;
    EXPECT_EQ(r.err, "kiln-compile: --dim: expected NAME=N with N a positive integer, got '" + item + "'\n");
  }
}

TEST(CompileTool, BadThreads) {
  for (const char* v : {"0", "two", "-3", "2x"}) {
    ToolRun r = RunTool({Mlp(), "--emit=tir", "--threads", v});
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err, std::string("kiln-compile: --threads must be an integer from 1 to 1024, got '") + v + "'\n");
  }
}

TEST(CompileTool, BadJobs) {
  for (const char* v : {"0", "two", "-3", "2x", "1025"}) {
    ToolRun r = RunTool({Mlp(), "--emit=tir", "--jobs", v});
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err, std::string("kiln-compile: --jobs must be an integer from 1 to 1024, got '") + v + "'\n");
  }
}

TEST(CompileTool, BadTuningCache) {
  for (const char* v : {"hot", "Cold"}) {
    ToolRun r = RunTool({Mlp(), "--emit=tir", std::string("--tuning-cache=") + v});
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err, std::string("kiln-compile: --tuning-cache must be warm or cold, got '") + v + "'\n");
  }
}

// A 16 x 8 3 x 3 conv over 12 x 12 (padding 1) as kiln-compile --threads 1
// and --threads 2 build it: the hint decides the conv's parallel chunks, and
// both builds compute the same numbers (checked against a direct loop).
TEST(CompileTool, ThreadsHintChangesTheConvScheduleNotItsResult) {
  std::string relax = TempPath(".relax");
  std::ofstream(relax) << R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 12, 12), dtype="float32"), w: R.Tensor((16, 8, 3, 3), dtype="float32")) -> R.Tensor((1, 16, 12, 12), dtype="float32"):
        with R.dataflow():
            y = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])
            R.output(y)
        return y
)";
  ToolRun one = RunTool({relax, "--emit=tir", "--threads", "1"});
  ToolRun two = RunTool({relax, "--emit=tir", "--threads=2"});
  ASSERT_EQ(one.rc, 0) << one.err;
  ASSERT_EQ(two.rc, 0) << two.err;
  EXPECT_NE(one.out, two.out);
  EXPECT_FALSE(Contains(one.out, "T.parallel(")) << one.out;
  EXPECT_TRUE(Contains(two.out, "T.parallel(")) << two.out;

  const int C = 8, O = 16, H = 12, W = 12;
  Tensor x = Tensor::Empty(std::vector<int64_t>{1, C, H, W}, DType::Float32()).value();
  Tensor w = Tensor::Empty(std::vector<int64_t>{O, C, 3, 3}, DType::Float32()).value();
  for (int i = 0; i < C * H * W; ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 19) / 19.0f - 0.5f;
  for (int i = 0; i < O * C * 9; ++i) w.data<float>()[i] = static_cast<float>((i * 11) % 23) / 23.0f - 0.5f;
  std::vector<float> want(O * H * W, 0.0f);
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < H; ++r)
      for (int c = 0; c < W; ++c) {
        float acc = 0;
        for (int ci = 0; ci < C; ++ci)
          for (int kr = 0; kr < 3; ++kr)
            for (int kc = 0; kc < 3; ++kc) {
              int ir = r + kr - 1, ic = c + kc - 1;
              if (ir < 0 || ir >= H || ic < 0 || ic >= W) continue;
              acc += x.data<float>()[(ci * H + ir) * W + ic] * w.data<float>()[((o * C + ci) * 3 + kr) * 3 + kc];
            }
        want[(o * H + r) * W + c] = acc;
      }
  for (const char* threads : {"1", "2"}) {
    std::string path = TempPath(std::string("_") + threads + ".vmfb");
    ToolRun r = RunTool({relax, "-o", path, "--threads", threads});
    ASSERT_EQ(r.rc, 0) << r.err;
    Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadFile(path);
    std::remove(path.c_str());
    ASSERT_TRUE(mod.ok()) << mod.status().message();
    auto ctx = (*mod)->CreateContext();
    Any result;
    std::vector<Any> args = {x, w};
    Status s = ctx->Invoke("main", args, &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(result.is_tensor());
    for (int i = 0; i < O * H * W; ++i)
      ASSERT_NEAR(result.tensor().data<float>()[i], want[i], 1e-4f * std::max(1.0f, std::fabs(want[i])))
          << "--threads " << threads << ", element " << i;
  }
  std::remove(relax.c_str());
}

TEST(CompileTool, NoInput) {
  ToolRun r = RunTool({"-o", "x.vmfb"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: no input file\nusage: kiln-compile")) << r.err;
  EXPECT_EQ(RunTool({}).rc, 2);
}

TEST(CompileTool, TwoInputs) {
  ToolRun r = RunTool({"a.relax", "b.relax", "-o", "x.vmfb"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: more than one input file ('a.relax' and 'b.relax')\n");
}

TEST(CompileTool, NoOutputFile) {
  ToolRun r = RunTool({Mlp()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: no output file (-o OUT.vmfb)\n");
}

TEST(CompileTool, UnknownDumpPassListsThePasses) {
  std::string passes;
  for (const std::string& p : PassNames()) passes += p + ", ";
  const std::string want = "kiln-compile: --dump-ir-after: unknown pass 'fold' (passes: " + passes + "all)\n";
  ToolRun text = RunTool({Mlp(), "--emit=relax", "--dump-ir-after=fold"});
  EXPECT_EQ(text.rc, 1);
  EXPECT_EQ(text.err, want);
  EXPECT_EQ(text.out, "");
  std::string vmfb = TempPath(".vmfb");
  ToolRun bin = RunTool({Mlp(), "-o", vmfb, "--dump-ir-after=legalize", "--dump-ir-after=fold"});
  EXPECT_EQ(bin.rc, 1);
  EXPECT_EQ(bin.err, want);
  EXPECT_FALSE(std::ifstream(vmfb).good());
}

// --------------------------------------------------------- input problems

TEST(CompileTool, MissingInputFile) {
  for (const char* emit : {"--emit=vmfb", "--emit=relax"}) {
    ToolRun r = RunTool({"/nonexistent/in.relax", "-o", TempPath(".out"), emit});
    EXPECT_EQ(r.rc, 1) << emit;
    EXPECT_EQ(r.err, "kiln-compile: cannot read '/nonexistent/in.relax'\n") << emit;
  }
}

TEST(CompileTool, DispatchRulesFile) {
  ToolRun missing = RunTool({Mlp(), "--emit=relax", "--dispatch=/nonexistent/rules.yaml"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_EQ(missing.err, "kiln-compile: cannot read the dispatch rule file '/nonexistent/rules.yaml'\n");
  std::string rules = TempPath(".yaml");
  std::ofstream(rules) << "rules:\n  - {op: matmul, library: dnnl}\n";
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--dispatch", rules});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "R.call_dps_packed(\"kiln.dnnl.matmul\"")) << r.out;
  std::ofstream(rules) << "rules:\n  - {op: softmax, library: dnnl}\n";
  ToolRun bad = RunTool({Mlp(), "--emit=relax", "--dispatch", rules});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Contains(bad.err, "'op' must be conv2d or matmul, got 'softmax'")) << bad.err;
  std::remove(rules.c_str());
}

TEST(CompileTool, CompileErrorsCarryTheLocation) {
  std::string in = TempPath(".relax");
  std::ofstream(in) << R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((4, 5), dtype="float32")):
        r = R.matmul(x, y)
        return r
)";
  for (const char* emit : {"--emit=vmfb", "--emit=tir"}) {
    ToolRun r = RunTool({in, "-o", TempPath(".out"), emit});
    EXPECT_EQ(r.rc, 1) << emit;
    EXPECT_EQ(r.err, "kiln-compile: " + in + ":5:13: R.matmul: reduction dimensions differ: x (2, 3) has K=3 but y (4, 5) has K=4\n"
                     "            r = R.matmul(x, y)\n"
                     "                ^\n");
  }
  std::remove(in.c_str());
}

TEST(CompileTool, CannotWriteTheOutput) {
  ToolRun text = RunTool({Mlp(), "--emit=relax", "-o", "/nonexistent/dir/out.relax"});
  EXPECT_EQ(text.rc, 1);
  EXPECT_EQ(text.err, "kiln-compile: cannot write '/nonexistent/dir/out.relax'\n");
  ToolRun bin = RunTool({Mlp(), "-o", "/nonexistent/dir/out.vmfb"});
  EXPECT_EQ(bin.rc, 1);
  EXPECT_EQ(bin.err,
            "kiln-compile: writing /nonexistent/dir/out.vmfb: cannot open '/nonexistent/dir/out.vmfb' for writing\n");
}

// ---------------------------------------------------------- text outputs

TEST(CompileTool, EmitRelaxShowsTheFusedKernels) {
  ToolRun r = RunTool({Mlp(), "--emit=relax"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "def fused_transpose_matmul_add_relu(")) << r.out;
  EXPECT_TRUE(Contains(r.out, "R.call_tir(cls.fused_transpose_matmul_add_relu, (w0, x, b0)")) << r.out;
  EXPECT_FALSE(Contains(r.out, "def relu(")) << r.out;
}

TEST(CompileTool, PrecisionOption) {
  for (const char* bad : {"int4", "fp8", "FP16"}) {
    ToolRun r = RunTool({Mlp(), "--emit=relax", std::string("--precision=") + bad});
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_EQ(r.err, std::string("kiln-compile: --precision must be fp32, fp16 or bf16, got '") + bad + "'\n");
  }
  // The matmuls take half operands and accumulate in float32; main's
  // signature stays float32.
  ToolRun bf16 = RunTool({Mlp(), "--emit=relax", "--precision=bf16"});
  ASSERT_EQ(bf16.rc, 0) << bf16.err;
  EXPECT_TRUE(Contains(bf16.out, "dtype=\"bfloat16\"")) << bf16.out;
  ToolRun fp32 = RunTool({Mlp(), "--emit=relax", "--precision=fp32"});
  ASSERT_EQ(fp32.rc, 0) << fp32.err;
  EXPECT_FALSE(Contains(fp32.out, "float16")) << fp32.out;
  EXPECT_EQ(fp32.out, RunTool({Mlp(), "--emit=relax"}).out);
}

TEST(CompileTool, FuseAndBoundOptions) {
  ToolRun bad = RunTool({Mlp(), "--emit=relax", "--fuse=maybe"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_EQ(bad.err, "kiln-compile: --fuse must be on or off, got 'maybe'\n");
  ToolRun bad_winograd = RunTool({Mlp(), "--emit=relax", "--winograd=2"});
  EXPECT_EQ(bad_winograd.rc, 2);
  EXPECT_EQ(bad_winograd.err, "kiln-compile: --winograd must be on or off, got '2'\n");
  ToolRun off = RunTool({Mlp(), "--emit=relax", "--winograd=off"});
  EXPECT_EQ(off.rc, 0) << off.err;
  ToolRun no_eq = RunTool({Mlp(), "--emit=relax", "--bound", "n"});
  EXPECT_EQ(no_eq.rc, 2);
  EXPECT_TRUE(Contains(no_eq.err, "kiln-compile: ")) << no_eq.err;
  std::string vmfb = TempPath(".vmfb");
  ToolRun bounded = RunTool({Mlp(), "-o", vmfb, "--bound", "n=64", "--report-memory", "--fuse=off"});
  ASSERT_EQ(bounded.rc, 0) << bounded.err;
  EXPECT_TRUE(Contains(bounded.err, "memory plan: main: ")) << bounded.err;
  EXPECT_TRUE(Contains(bounded.err, "(static)")) << bounded.err;
  std::remove(vmfb.c_str());
}

TEST(CompileTool, EmitRelaxPrintsTheLoweredModule) {
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--fuse=off"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(Contains(r.out, "@I.ir_module")) << r.out;
  EXPECT_TRUE(Contains(r.out, "@T.prim_func\n    def matmul(")) << r.out;
  EXPECT_TRUE(Contains(r.out, "R.call_tir(cls.matmul, (x, lv0), out_sinfo=R.Tensor((n, 128), dtype=\"float32\"))"))
      << r.out;
  EXPECT_FALSE(Contains(r.out, "R.matmul(")) << r.out;
}

TEST(CompileTool, EmitRelaxWithDnnlMatmul) {
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--matmul=dnnl", "--fuse=off"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "R.call_dps_packed(\"kiln.dnnl.matmul\", (x, lv0)")) << r.out;
  EXPECT_FALSE(Contains(r.out, "def matmul(")) << r.out;
  EXPECT_TRUE(Contains(r.out, "def add(")) << r.out;
}

TEST(CompileTool, EmitTirPrintsOnlyScheduledPrimFuncs) {
  ToolRun r = RunTool({Mlp(), "--emit=tir"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "@T.prim_func")) << r.out;
  EXPECT_FALSE(Contains(r.out, "@R.function")) << r.out;
  // The default schedule vectorizes the innermost loops (T.parallel depends
  // on the host's thread count; compile_test.cc checks it with a fixed hint).
  EXPECT_TRUE(Contains(r.out, "T.vectorized(")) << r.out;
}

TEST(CompileTool, EmitLlvmShowsInlineVectorMath) {
  // R.exp on a (64, 256) tensor: the vectorized loop is 16-float vector code
  // with the exp inlined (no libm call), as --emit=llvm shows.
  std::string in = TempPath(".relax");
  std::ofstream(in) << R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 256), dtype="float32")):
        with R.dataflow():
            y = R.exp(x)
            R.output(y)
        return y
)";
  ToolRun llvm = RunTool({in, "--emit=llvm", "--cpu=znver4", "--target=x86_64-linux-gnu"});
  ASSERT_EQ(llvm.rc, 0) << llvm.err;
  EXPECT_TRUE(Contains(llvm.out, "<16 x float>")) << llvm.out.substr(0, 3000);
  EXPECT_FALSE(Contains(llvm.out, "@expf")) << llvm.out.substr(0, 3000);
  EXPECT_FALSE(Contains(llvm.out, "@llvm.exp.")) << llvm.out.substr(0, 3000);
  std::remove(in.c_str());
}

TEST(CompileTool, EmitLlvmAndAsm) {
  ToolRun llvm = RunTool({Mlp(), "--emit=llvm", "--fuse=off"});
  ASSERT_EQ(llvm.rc, 0) << llvm.err;
  EXPECT_TRUE(Contains(llvm.out, "define i32 @matmul(")) << llvm.out.substr(0, 2000);
  EXPECT_TRUE(Contains(llvm.out, "@kiln_kernel_query")) << llvm.out.substr(0, 2000);
  ToolRun asm_ = RunTool({Mlp(), "--emit=asm", "-O1", "--fuse=off"});
  ASSERT_EQ(asm_.rc, 0) << asm_.err;
  EXPECT_TRUE(Contains(asm_.out, ".text")) << asm_.out.substr(0, 2000);
  EXPECT_TRUE(Contains(asm_.out, "\nmatmul:")) << asm_.out.substr(0, 2000);
}

TEST(CompileTool, EmitToAFile) {
  std::string path = TempPath(".tir");
  ToolRun r = RunTool({Mlp(), "--emit", "tir", "--output", path});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, WroteLine(path));
  EXPECT_EQ(ReadFile(path), RunTool({Mlp(), "--emit=tir"}).out);
  std::remove(path.c_str());
}

TEST(CompileTool, DumpIrAfterLegalizeGoesToStderr) {
  ToolRun r = RunTool({Mlp(), "--emit=tir", "--dump-ir-after=legalize"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(StartsWith(r.err, "# IR after legalize\n")) << r.err.substr(0, 500);
  EXPECT_TRUE(Contains(r.err, "R.call_tir(cls.matmul")) << r.err;
  EXPECT_FALSE(Contains(r.err, "# IR after normalize")) << r.err;
  // Right after legalize, kernels are not scheduled yet.
  EXPECT_FALSE(Contains(r.err, "T.vectorized(")) << r.err;
  EXPECT_FALSE(Contains(r.out, "# IR after")) << r.out.substr(0, 500);
}

TEST(CompileTool, DumpIrAfterAllInPipelineOrder) {
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--dump-ir-after=all"});
  ASSERT_EQ(r.rc, 0) << r.err;
  size_t at = 0;
  for (const char* pass : {"parse", "normalize", "legalize", "remove-unused", "lower-tir"}) {
    size_t next = r.err.find(std::string("# IR after ") + pass + "\n", at);
    EXPECT_NE(next, std::string::npos) << pass;
    if (next != std::string::npos) at = next;
  }
}

// ------------------------------------------------------------- compiling

TEST(CompileTool, CompilesTheMlpToALoadableVmfb) {
  std::string path = TempPath(".vmfb");
  ToolRun r = RunTool({Mlp(), "-o", path});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");  // not a terminal: no progress line
  std::string bytes = ReadFile(path);
  EXPECT_EQ(r.out, WroteLine(path));
  EXPECT_TRUE(StartsWith(r.out, "kiln-compile: wrote " + path + ": " + std::to_string(bytes.size()) + " bytes (")) << r.out;
  ASSERT_GT(bytes.size(), 12u);
  // docs/vmfb_format.md: a uint32 size prefix, then the FlatBuffer whose
  // file identifier follows its root offset.
  EXPECT_EQ(bytes.substr(8, 4), "KILN");
  Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadFile(path);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  EXPECT_EQ((*mod)->FunctionNames(), std::vector<std::string>{"main"});
  EXPECT_FALSE((*mod)->HasStaticGraph("main"));  // n is symbolic
  std::remove(path.c_str());
}

TEST(CompileTool, CompilesWithTargetFlagsAndDnnl) {
  std::string path = TempPath(".vmfb");
  ToolRun r = RunTool({Mlp(), "-o", path, "--matmul", "dnnl", "--cpu", "generic", "--target",
                       "x86_64-unknown-linux-gnu", "-O0", "--dim=batch=2", "--bound", "n=64"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GT(ReadFile(path).size(), 8u);
  std::remove(path.c_str());
}

TEST(CompileTool, OnnxInput) {
  // Debian's libonnx-testdata (scripts/setup.sh): a one-node Add model.
  const std::string model = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx";
  if (!std::ifstream(model).good()) GTEST_SKIP() << model << " is not installed";
  ToolRun text = RunTool({model, "--emit", "relax"});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "def main(x: R.Tensor((3, 4, 5), dtype=\"float32\")")) << text.out;
  std::string path = TempPath(".vmfb");
  ToolRun bin = RunTool({model, "-o", path, "-O1"});
  ASSERT_EQ(bin.rc, 0) << bin.err;
  EXPECT_EQ(bin.out, WroteLine(path));
  Result<std::shared_ptr<const vm::Module>> mod = vm::Module::LoadFile(path);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  std::remove(path.c_str());
}

TEST(CompileTool, ProgressLinesOnRequest) {
  std::string path = TempPath(".vmfb");
  ToolRun r = RunTool({Mlp(), "-o", path, "--progress", "-O0"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: compiling " + Mlp() + "\n")) << r.err;
  EXPECT_TRUE(Contains(r.err, "kiln-compile: compiled " + Mlp() + " in ")) << r.err;
  EXPECT_EQ(r.err.back(), '\n');
  // Text output gets the same lines, on stderr only.
  r = RunTool({Mlp(), "--emit=tir", "--progress"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: compiling " + Mlp() + "\n")) << r.err;
  EXPECT_TRUE(StartsWith(r.out, "# from tvm.script")) << r.out.substr(0, 100);
  // The line stays away from IR dumps on the same stream.
  r = RunTool({Mlp(), "-o", path, "--progress", "-O0", "--dump-ir-after=lower-tir"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(Contains(r.err, "kiln-compile: compiling")) << r.err.substr(0, 200);
  // A failed compile ends without the "compiled" line.
  std::string bad = TempPath(".relax");
  std::ofstream(bad) << "not a module\n";
  r = RunTool({bad, "-o", path, "--progress"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: compiling " + bad + "\nkiln-compile: " + bad + ":1:")) << r.err;
  EXPECT_FALSE(Contains(r.err, "compiled")) << r.err;
  std::remove(bad.c_str());
  std::remove(path.c_str());
}

TEST(CompileTool, DimIsAConfigOptionToo) {
  std::string yaml = TempPath(".yaml");
  std::ofstream(yaml) << "dim: [batch=0]\n";
  ToolRun r = RunTool({Mlp(), "--config", yaml, "--emit=relax"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: --dim: expected NAME=N with N a positive integer, got 'batch=0'\n");
  std::remove(yaml.c_str());
}

// --------------------------------------------------------- config, dumps

TEST(CompileTool, ConfigFileGivesOptionsAndFlagsOverrideIt) {
  std::string yaml = TempPath(".yaml");
  std::ofstream(yaml) << "emit: tir\nmatmul: dnnl\ndump-ir-after: [legalize]\n";
  // The file alone: TIR, with the matmul sent to oneDNN (no matmul kernel).
  ToolRun r = RunTool({Mlp(), "--config", yaml});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "# IR after legalize")) << r.err;
  EXPECT_FALSE(Contains(r.out, "def matmul")) << r.out;
  // A flag replaces the file's value.
  r = RunTool({Mlp(), "--config=" + yaml, "--matmul=tir", "--dump-ir-after=dce", "--fuse=off"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "def matmul")) << r.out;
  EXPECT_TRUE(Contains(r.err, "# IR after dce")) << r.err;
  EXPECT_FALSE(Contains(r.err, "# IR after legalize")) << r.err;
  std::remove(yaml.c_str());
}

TEST(CompileTool, CudaTargetEmitsPtxAndWritesAGpuVmfb) {
  ToolRun r = RunTool({Mlp(), "--target=cuda", "--arch=sm_90", "--emit=asm"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, ".target sm_90")) << r.out.substr(0, 300);
  EXPECT_TRUE(Contains(r.out, ".entry fused_transpose_matmul_add_relu_k0(")) << r.out.substr(0, 300);
  std::string out = TempPath(".vmfb");
  r = RunTool({Mlp(), "--target=cuda", "--arch=sm_90", "-o", out});
  EXPECT_EQ(r.rc, 0) << r.err;
  Result<FileBytes> bytes = MapFile(out);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<Program> p = DecodeVmfb(*bytes);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->gpu_modules.size(), 1u);
  EXPECT_EQ(p->gpu_modules[0].arch, "sm_90");
  EXPECT_TRUE(p->native_libraries.empty());
  std::remove(out.c_str());
  r = RunTool({Mlp(), "--target=cuda", "--arch=sm_7", "--emit=asm"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "GPU arch must be sm_XY")) << r.err;
}

TEST(CompileTool, ConfigFileErrors) {
  std::string yaml = TempPath(".yaml");
  std::ofstream(yaml) << "emit: tir\nspeed: max\n";
  ToolRun r = RunTool({Mlp(), "--config", yaml});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: " + yaml + ":2:1: unknown option 'speed' (options: output, emit, params, "
                   "params-function, dump-ir-before, dump-ir-after, dump-ir-after-all, matmul, dispatch, fuse, winograd, bound, dim, "
                   "report-memory, "
                   "target, cpu, features, arch, ptxas, O, tuning-db, tuning-cache, threads, jobs, precision)\n");
  std::ofstream(yaml) << "matmul: cublas\n";
  r = RunTool({Mlp(), "--config", yaml, "--emit=relax"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-compile: --matmul must be tir or dnnl, got 'cublas'\n");
  std::ofstream(yaml) << "O: 7\n";
  r = RunTool({Mlp(), "--config", yaml, "--emit=relax"});
  EXPECT_EQ(r.err, "kiln-compile: O must be 0, 1, 2 or 3, got '7'\n");
  std::ofstream(yaml) << "dump-ir-after-all: maybe\n";
  r = RunTool({Mlp(), "--config", yaml, "--emit=relax"});
  EXPECT_EQ(r.err, "kiln-compile: dump-ir-after-all must be true or false, got 'maybe'\n");
  std::ofstream(yaml) << "emit: [tir, relax]\n";
  r = RunTool({Mlp(), "--config", yaml});
  EXPECT_EQ(r.err, "kiln-compile: 'emit' given more than once\n");
  r = RunTool({Mlp(), "--config", "/nonexistent/k.yaml"});
  EXPECT_EQ(r.err, "kiln-compile: /nonexistent/k.yaml: cannot open the config file\n");
  r = RunTool({Mlp(), "--config"});
  EXPECT_EQ(r.err, "kiln-compile: --config needs a file name\n");
  r = RunTool({Mlp(), "--params"});
  EXPECT_EQ(r.err, "kiln-compile: --params needs a file name\n");
  std::remove(yaml.c_str());
}

TEST(CompileTool, DumpBeforeAndAfterAllPrintParsableText) {
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--dump-ir-before=legalize", "--dump-ir-after-all"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "# IR before legalize\n")) << r.err;
  for (const auto& pass : PassNames()) {
    if (pass == "bind-params" || pass == "mixed-precision") continue;  // run only with params / --precision
    EXPECT_TRUE(Contains(r.err, "# IR after " + pass + "\n")) << pass;
  }
  // Every dumped module parses again.
  size_t pos = 0;
  int modules = 0;
  while ((pos = r.err.find("# IR ", pos)) != std::string::npos) {
    size_t start = r.err.find('\n', pos) + 1;
    size_t end = r.err.find("# IR ", start);
    std::string text = r.err.substr(start, end == std::string::npos ? std::string::npos : end - start);
    Result<ir::IRModule> m = text::ParseModule(text, "dump.relax");
    EXPECT_TRUE(m.ok()) << m.status().message();
    ++modules;
    pos = start;
  }
  // One before legalize, one after each pass but bind-params and mixed-precision.
  EXPECT_EQ(modules, static_cast<int>(PassNames().size()) - 1);
}

TEST(CompileTool, UnknownDumpBeforePass) {
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--dump-ir-before=fuse"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: --dump-ir-before: unknown pass 'fuse' (passes: parse,")) << r.err;
}

TEST(CompileTool, ParamsFileErrorsNameTheFile) {
  std::string bad = TempPath(".npz");
  std::ofstream(bad) << "PK\x03\x04 not really";
  ToolRun r = RunTool({Mlp(), "--emit=relax", "--params", bad});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(StartsWith(r.err, "kiln-compile: " + bad + ": ")) << r.err;
  std::remove(bad.c_str());
}

// The options by name that kiln.compile(options=...) passes (the --config names).
TEST(ApplyCompileOptions, SetsTheSameFieldsAsTheFlags) {
  CompileOptions options;
  OptionValues values = {{"fuse", {"off"}}, {"bound", {"n=128", "s=64"}}, {"O", {"2"}}, {"tuning-db", {"db"}}};
  ASSERT_TRUE(ApplyCompileOptions(values, &options).ok());
  EXPECT_FALSE(options.fuse);
  EXPECT_EQ(options.upper_bounds.at("n"), 128);
  EXPECT_EQ(options.upper_bounds.at("s"), 64);
  EXPECT_EQ(options.opt_level, 2);
  EXPECT_EQ(options.tuning_db, "db");
}

TEST(ApplyCompileOptions, UnknownAndToolOnlyNamesAreRefused) {
  CompileOptions options;
  Status s = ApplyCompileOptions({{"fusion", {"on"}}}, &options);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown compile option 'fusion' (expected one of params"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("output"), std::string::npos) << s.message();
  EXPECT_EQ(ApplyCompileOptions({{"emit", {"tir"}}}, &options).code(), StatusCode::kInvalidArgument);
  Status bad = ApplyCompileOptions({{"winograd", {"maybe"}}}, &options);
  EXPECT_EQ(bad.message(), "--winograd must be on or off, got 'maybe'");
}

}  // namespace
}  // namespace driver
}  // namespace kiln
