// The driver's library API: pass names, IR dumps into a caller's stream,
// the schedule's thread hint, EmitText's refusal of binary output, and the
// program CompileModule builds (VM code, static graph, native kernels).
#include "compiler/driver/compile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "vm/module.h"

namespace kiln {
namespace driver {
namespace {

const char* kStaticMlp = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 784), dtype="float32"), w0: R.Tensor((128, 784), dtype="float32"), b0: R.Tensor((128,), dtype="float32"), w1: R.Tensor((10, 128), dtype="float32"), b1: R.Tensor((10,), dtype="float32")) -> R.Tensor((1, 10), dtype="float32"):
        with R.dataflow():
            lv0 = R.permute_dims(w0, axes=None)
            lv1 = R.matmul(x, lv0)
            lv2 = R.add(lv1, b0)
            lv3 = R.nn.relu(lv2)
            lv4 = R.permute_dims(w1, axes=None)
            lv5 = R.matmul(lv3, lv4)
            gv = R.add(lv5, b1)
            R.output(gv)
        return gv
)";

ir::IRModule StaticMlp() {
  Result<ir::IRModule> r = text::ParseModule(kStaticMlp, "mlp.relax");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ir::IRModule();
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Driver, PassNamesInPipelineOrder) {
  EXPECT_EQ(PassNames(), (std::vector<std::string>{"parse", "wrap-tir-module", "normalize", "flatten-calls", "bind-params", "decompose-ops", "conv-transpose-phases", "dispatch-library", "dispatch-int8-matmul", "winograd-conv2d", "pack-constant-weights", "fold-constant", "canonicalize-bindings", "fold-softmax-nan-guard", "shape-condition", "guard-raise-arms", "inline-functions", "cse",
                                      "dce", "combine-shared-matmuls", "pack-matmul-weights", "mixed-precision", "legalize", "annotate-op-pattern", "fuse-ops", "fuse-tir", "view-reshapes",
                                      "remove-unused", "lower-tir"}));
}

TEST(Driver, UnknownDumpPassIsRefusedBeforeAnyWork) {
  CompileOptions options;
  std::ostringstream dumps;
  options.dump_stream = &dumps;
  options.dump_ir_after = {"parse", "legalise"};
  Result<ir::IRModule> r = LowerModule(StaticMlp(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "--dump-ir-after: unknown pass 'legalise' (passes: parse, wrap-tir-module, normalize, flatten-calls, bind-params, decompose-ops, conv-transpose-phases, dispatch-library, dispatch-int8-matmul, winograd-conv2d, pack-constant-weights, fold-constant, "
            "canonicalize-bindings, fold-softmax-nan-guard, shape-condition, guard-raise-arms, inline-functions, cse, dce, combine-shared-matmuls, pack-matmul-weights, mixed-precision, legalize, annotate-op-pattern, fuse-ops, fuse-tir, view-reshapes, remove-unused, "
            "lower-tir, "
            "all)");
  EXPECT_EQ(dumps.str(), "");  // not even the valid 'parse' dump
}

TEST(Driver, DumpsGoToTheCallersStream) {
  CompileOptions options;
  std::ostringstream dumps;
  options.dump_stream = &dumps;
  options.dump_ir_after = {"remove-unused", "normalize"};
  Result<ir::IRModule> r = LowerModule(StaticMlp(), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string s = dumps.str();
  // In pipeline order, whatever the order of the flags.
  size_t normalize = s.find("# IR after normalize\n");
  size_t removed = s.find("# IR after remove-unused\n");
  ASSERT_NE(normalize, std::string::npos) << s;
  ASSERT_NE(removed, std::string::npos) << s;
  EXPECT_LT(normalize, removed);
  EXPECT_FALSE(Contains(s, "# IR after legalize"));
  // The normalize dump shows inferred struct info on operator calls.
  EXPECT_TRUE(Contains(s.substr(normalize, removed - normalize),
                       "lv1: R.Tensor((1, 128), dtype=\"float32\") = R.matmul(x, lv0")) << s;
  // Every dump is a module the parser reads back.
  std::string after_remove = s.substr(removed + std::string("# IR after remove-unused\n").size());
  Result<ir::IRModule> reparsed = text::ParseModule(after_remove, "dump.relax");
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().message();
}

TEST(Driver, ThreadHintDecidesParallelLoops) {
  CompileOptions options;
  options.num_threads_hint = 4;
  Result<std::string> parallel = EmitText(StaticMlp(), EmitKind::kTir, options);
  ASSERT_TRUE(parallel.ok()) << parallel.status().message();
  EXPECT_TRUE(Contains(*parallel, "T.parallel(")) << *parallel;
  options.num_threads_hint = 1;
  Result<std::string> serial = EmitText(StaticMlp(), EmitKind::kTir, options);
  ASSERT_TRUE(serial.ok()) << serial.status().message();
  EXPECT_FALSE(Contains(*serial, "T.parallel(")) << *serial;
}

TEST(Driver, EmitTextRefusesBinaryOutput) {
  Result<std::string> r = EmitText(StaticMlp(), EmitKind::kVmfb, CompileOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "EmitText: binary output requested; use CompileFile");
}

TEST(Driver, CompileModuleBuildsVmCodeGraphAndKernels) {
  Result<compiler::VmfbProgram> p = CompileModule(StaticMlp(), CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->functions.size(), 1u);
  EXPECT_EQ(p->functions[0].name, "main");
  ASSERT_EQ(p->graphs.size(), 1u);  // static shapes: the graph executor can run it
  ASSERT_EQ(p->native_libraries.size(), 1u);
  const compiler::NativeLibraryInfo& lib = p->native_libraries[0];
  EXPECT_FALSE(lib.bytes.empty());
  EXPECT_FALSE(lib.target.triple.empty());
  EXPECT_EQ(p->target.triple, lib.target.triple);
  // Every kernel the code calls is in the library.
  std::vector<std::string> kernels;
  for (const auto& c : p->callables)
    if (c.kind == compiler::CallableKind::kKernel) kernels.push_back(c.name);
  std::vector<std::string> in_lib = lib.kernel_names;
  std::sort(kernels.begin(), kernels.end());
  std::sort(in_lib.begin(), in_lib.end());
  // Fusion: each layer (transpose, matmul, bias add, relu) is one kernel.
  EXPECT_EQ(kernels, (std::vector<std::string>{"fused_transpose1_matmul1_add1", "fused_transpose_matmul_add_relu"}));
  EXPECT_EQ(in_lib, kernels);
}

TEST(Driver, WithoutFusionEveryOperatorIsAKernel) {
  CompileOptions options;
  options.fuse = false;
  Result<compiler::VmfbProgram> p = CompileModule(StaticMlp(), options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> kernels = p->native_libraries.at(0).kernel_names;
  std::sort(kernels.begin(), kernels.end());
  EXPECT_EQ(kernels, (std::vector<std::string>{"add", "add1", "matmul", "matmul1", "relu", "transpose", "transpose1"}));
}

TEST(Driver, MemoryReportAndBounds) {
  CompileOptions options;
  std::ostringstream report;
  options.dump_stream = &report;
  options.report_memory = true;
  options.fuse = false;
  ASSERT_TRUE(CompileModule(StaticMlp(), options).ok());
  EXPECT_TRUE(Contains(report.str(), "memory plan: main: ")) << report.str();
  EXPECT_TRUE(Contains(report.str(), "(static)")) << report.str();
}

TEST(Driver, DnnlMatmulLeavesNoMatmulKernel) {
  CompileOptions options;
  options.matmul_to_dnnl = true;
  Result<compiler::VmfbProgram> p = CompileModule(StaticMlp(), options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  bool packed = false;
  for (const auto& c : p->callables) {
    if (c.kind == compiler::CallableKind::kPacked && c.name == "kiln.dnnl.matmul") packed = true;
    EXPECT_FALSE(c.kind == compiler::CallableKind::kKernel && c.name.compare(0, 6, "matmul") == 0) << c.name;
  }
  EXPECT_TRUE(packed);
  ASSERT_EQ(p->native_libraries.size(), 1u);
  for (const auto& k : p->native_libraries[0].kernel_names) EXPECT_NE(k.compare(0, 6, "matmul"), 0) << k;
}

TEST(Driver, ModuleWithoutKernelsHasNoNativeLibrary) {
  Result<ir::IRModule> mod = text::ParseModule(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        y = R.call_dps_packed("env.relu", (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        return y
)",
                                               "packed.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  Result<compiler::VmfbProgram> p = CompileModule(*mod, CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->native_libraries.empty());
  EXPECT_EQ(p->graphs.size(), 1u);
}

TEST(Driver, CompileFileReportsParseAndWriteErrors) {
  Status missing = CompileFile("/nonexistent/in.relax", "/nonexistent/out.vmfb", CompileOptions{});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "cannot read '/nonexistent/in.relax'");
  Status unwritable = CompileFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax", "/nonexistent/dir/out.vmfb",
                                  CompileOptions{});
  EXPECT_EQ(unwritable.code(), StatusCode::kNotFound);
  EXPECT_EQ(unwritable.message(), "writing /nonexistent/dir/out.vmfb: cannot open '/nonexistent/dir/out.vmfb' for writing");
}

TEST(Driver, MatchCastOfACompositeDimensionIsCheckedWhenRunning) {
  Result<ir::IRModule> mod = text::ParseModule(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), z: R.Tensor(ndim=1, dtype="float32")):
        n = T.int64()
        y = R.match_cast(z, R.Tensor((n * 2,), dtype="float32"))
        return y
)",
                                               "cast.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  Result<compiler::VmfbProgram> p = CompileModule(*mod, CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::string path = ::testing::TempDir() + "kiln_driver_cast_" + std::to_string(getpid()) + ".vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(*p, path).ok());
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto ctx = (*loaded)->CreateContext();
  const std::vector<int64_t> n3 = {3}, n6 = {6}, n5 = {5};
  Tensor x = Tensor::Empty(n3, DType::Float32()).value();
  Any result;
  std::vector<Any> good = {x, Tensor::Empty(n6, DType::Float32()).value()};
  Status ok = ctx->Invoke("main", good, &result);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  std::vector<Any> bad = {x, Tensor::Empty(n5, DType::Float32()).value()};
  Status s = ctx->Invoke("main", bad, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "main: match_cast of y, dimension 0: expected 6, got 5");
}

// A match_cast with messages (tests/data/match_cast_messages.relax) reports
// its own text for dimension 0 and the generic one for dimension 1.
TEST(Driver, MatchCastMessagesAreReportedWhenRunning) {
  Result<ir::IRModule> mod =
      text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/tests/data/match_cast_messages.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  Result<compiler::VmfbProgram> p = CompileModule(*mod, CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::string path = ::testing::TempDir() + "kiln_driver_messages_" + std::to_string(getpid()) + ".vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(*p, path).ok());
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto ctx = (*loaded)->CreateContext();
  Tensor x = Tensor::Empty(std::vector<int64_t>{3}, DType::Float32()).value();
  auto call = [&](int64_t rows, int64_t cols) {
    std::vector<Any> args = {x, Tensor::Empty(std::vector<int64_t>{rows, cols}, DType::Float32()).value()};
    Any result;
    return ctx->Invoke("main", args, &result);
  };
  Status ok = call(6, 3);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  Status rows = call(5, 3);
  EXPECT_EQ(rows.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rows.message(), "main: z must hold twice as many rows as x has values: 2 * n = 6, got 5");
  EXPECT_EQ(call(6, 4).message(), "main: match_cast of y, dimension 1: expected 3, got 4");
}

TEST(Driver, NestedOperatorCallsCompileAndRun) {
  // tests/passes/legalize_nested.before.relax: main(x, y) = (relu(x) + y) * y - x
  // with the calls nested in arguments, a tuple and the return.
  std::string path = ::testing::TempDir() + "kiln_driver_nested_" + std::to_string(getpid()) + ".vmfb";
  ASSERT_TRUE(
      CompileFile(std::string(KILN_SOURCE_DIR) + "/tests/passes/legalize_nested.before.relax", path, CompileOptions{})
          .ok());
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::vector<int64_t> shape = {2, 3};
  Tensor x = Tensor::Empty(shape, DType::Float32()).value();
  Tensor y = Tensor::Empty(shape, DType::Float32()).value();
  for (int i = 0; i < 6; ++i) {
    x.data<float>()[i] = static_cast<float>(i - 3);      // -3 .. 2
    y.data<float>()[i] = 0.5f * static_cast<float>(i);  // 0 .. 2.5
  }
  auto ctx = (*loaded)->CreateContext();
  Any result;
  std::vector<Any> args = {x, y};
  Status s = ctx->Invoke("main", args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(result.is_tensor());
  for (int i = 0; i < 6; ++i) {
    float xv = x.data<float>()[i], yv = y.data<float>()[i];
    float want = (std::max(xv, 0.0f) + yv) * yv - xv;
    EXPECT_FLOAT_EQ(result.tensor().data<float>()[i], want) << i;
  }
}

// view-reshapes: the reshapes run as views (no kernel), and memory planning
// keeps a viewed tensor's memory until its view's last use: without that, b
// would take a's place once a's own last use (the view) was past, and c
// would read b twice.
TEST(Driver, ViewedTensorsLiveAsLongAsTheirViews) {
  Result<ir::IRModule> mod = text::ParseModule(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            a = R.add(x, x)
            v = R.reshape(a, R.shape([n * 8]))
            b = R.multiply(x, x)
            w = R.reshape(b, R.shape([n * 8]))
            c = R.add(v, w)
            R.output(c)
        return c
)",
                                               "views.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  CompileOptions options;
  options.fuse = false;  // every operator its own kernel, the reshapes included
  Result<compiler::VmfbProgram> p = CompileModule(*mod, options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> kernels = p->native_libraries.at(0).kernel_names;
  std::sort(kernels.begin(), kernels.end());
  EXPECT_EQ(kernels, (std::vector<std::string>{"add", "add1", "multiply"}));
  std::string path = ::testing::TempDir() + "kiln_driver_views_" + std::to_string(getpid()) + ".vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(*p, path).ok());
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto ctx = (*loaded)->CreateContext();
  for (int64_t n : {3, 5, 2}) {
    Tensor x = Tensor::Empty(std::vector<int64_t>{n, 8}, DType::Float32()).value();
    for (int64_t i = 0; i < n * 8; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
    Any result;
    std::vector<Any> args = {x};
    Status s = ctx->Invoke("main", args, &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(result.is_tensor());
    Tensor c = result.tensor();
    ASSERT_EQ(c.shape(), (std::vector<int64_t>{n * 8}));
    for (int64_t i = 0; i < n * 8; ++i) {
      float v = x.data<float>()[i];
      EXPECT_EQ(c.data<float>()[i], v + v + v * v) << "n=" << n << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace driver
}  // namespace kiln
