// Real PyTorch networks through ONNX (issue 7 §4, the small ones that run in
// `make test`): benchmarks/onnx/export_models.py exports the MLP 784-128-10 and
// a reduced CNN (conv/batch-norm/ReLU/pool/linear) with random weights from a
// fixed seed, with an input and PyTorch's output for it; kiln-compile compiles
// each .onnx; the VM runs it on that input; the result must match PyTorch's to
// max |kiln - torch| / max |torch| <= 1e-4.
//
// Needs Debian's /usr/bin/python3 with torch and onnx (scripts/setup.sh
// installs python3-torch, python3-torchvision, python3-onnx); without them
// every test is skipped, saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/any.h"
#include "runtime/npy.h"
#include "vm/module.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const char kPython[] = "/usr/bin/python3";

std::string ModelsDir() { return KILN_ONNX_MODELS_DIR; }

// Runs a shell command; its output goes to `log`. The exit status.
int RunShell(const std::string& command, const std::string& log) {
  int rc = std::system((command + " > '" + log + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string ReadText(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return "";
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

class OnnxModelsTest : public ::testing::Test {
 protected:
  // Exports the models once for the whole suite; records why if it cannot.
  static void SetUpTestSuite() {
    fs::create_directories(ModelsDir());
    const std::string log = ModelsDir() + "/export.log";
    if (RunShell(std::string(kPython) + " -c 'import torch, onnx'", log) != 0) {
      skip_reason_ = new std::string(std::string(kPython) + " has no torch/onnx (apt-get install python3-torch "
                                     "python3-onnx, as scripts/setup.sh does): " + ReadText(log));
      return;
    }
    const std::string cmd = std::string(kPython) + " '" + KILN_SOURCE_DIR +
                            "/benchmarks/onnx/export_models.py' --out '" + ModelsDir() + "' --models mlp,cnn_small";
    if (RunShell(cmd, log) != 0) export_error_ = new std::string("export failed: " + cmd + "\n" + ReadText(log));
  }

  void SetUp() override {
    if (skip_reason_) GTEST_SKIP() << *skip_reason_;
    ASSERT_EQ(export_error_, nullptr) << *export_error_;
  }

  // kiln-compile NAME.onnx -o OUT.vmfb [extra flags]; the .vmfb path.
  static std::string Compile(const std::string& name, const std::string& out, const std::string& flags) {
    const std::string vmfb = ModelsDir() + "/" + out + ".vmfb";
    const std::string log = ModelsDir() + "/" + out + ".compile.log";
    const std::string cmd = std::string("'") + KILN_COMPILE_PATH + "' '" + ModelsDir() + "/" + name + ".onnx' -o '" +
                            vmfb + "' " + flags;
    int rc = RunShell(cmd, log);
    EXPECT_EQ(rc, 0) << cmd << "\n" << ReadText(log);
    return rc == 0 ? vmfb : "";
  }

  // Runs main of `vmfb` on SAMPLE.x.npy with `executor` (kAuto: the static
  // graph where there is one); max |y - SAMPLE.y.npy| / max |SAMPLE.y.npy|.
  static double RelativeError(const std::string& vmfb, const std::string& sample,
                              vm::Executor executor = vm::Executor::kVm) {
    Result<std::shared_ptr<const vm::Module>> module = vm::Module::LoadFile(vmfb);
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    if (!module.ok()) return INFINITY;
    Result<Tensor> x = ReadNpyFile(ModelsDir() + "/" + sample + ".x.npy");
    Result<Tensor> ref = ReadNpyFile(ModelsDir() + "/" + sample + ".y.npy");
    EXPECT_TRUE(x.ok() && ref.ok());
    if (!x.ok() || !ref.ok()) return INFINITY;
    vm::ContextOptions context_options;
    context_options.executor = executor;
    Result<std::unique_ptr<vm::Context>> made = module.value()->CreateContext(context_options);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (!made.ok()) return INFINITY;
    std::unique_ptr<vm::Context> context = std::move(made.value());
    Any args[] = {Any(x.value())};
    Any result;
    Status st = context->Invoke("main", Span<const Any>(args, 1), &result);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok() || !result.is_tensor()) return INFINITY;
    const Tensor y = result.tensor();
    EXPECT_EQ(y.shape(), ref.value().shape());
    EXPECT_EQ(y.dtype(), DType::Float32());
    if (y.shape() != ref.value().shape() || y.dtype() != DType::Float32()) return INFINITY;
    double max_diff = 0, max_ref = 0;
    for (int64_t i = 0; i < y.NumElements(); ++i) {
      const double r = ref.value().data<float>()[i];
      max_diff = std::fmax(max_diff, std::fabs(double(y.data<float>()[i]) - r));
      if (std::isnan(y.data<float>()[i])) max_diff = INFINITY;
      max_ref = std::fmax(max_ref, std::fabs(r));
    }
    const double err = max_diff / std::fmax(max_ref, 1e-30);
    std::printf("%s on %s (%s): max |kiln - torch| / max |torch| = %.3g\n", fs::path(vmfb).filename().c_str(),
                sample.c_str(), vm::ExecutorName(executor), err);
    return err;
  }

  static std::string* skip_reason_;
  static std::string* export_error_;
};

std::string* OnnxModelsTest::skip_reason_ = nullptr;
std::string* OnnxModelsTest::export_error_ = nullptr;

constexpr double kTolerance = 1e-4;

TEST_F(OnnxModelsTest, MlpBatch64FixedDim) {
  const std::string vmfb = Compile("mlp", "mlp_b64", "--dim batch=64");
  ASSERT_FALSE(vmfb.empty());
  EXPECT_LE(RelativeError(vmfb, "mlp"), kTolerance);
  EXPECT_LE(RelativeError(vmfb, "mlp", vm::Executor::kGraph), kTolerance);  // static: the graph executor too
}

// The batch dimension stays symbolic: one program runs batch 64 and batch 1.
TEST_F(OnnxModelsTest, MlpSymbolicBatch) {
  const std::string vmfb = Compile("mlp", "mlp_dyn", "");
  ASSERT_FALSE(vmfb.empty());
  EXPECT_LE(RelativeError(vmfb, "mlp"), kTolerance);
  EXPECT_LE(RelativeError(vmfb, "mlp_b1"), kTolerance);
}

TEST_F(OnnxModelsTest, SmallCnn) {
  const std::string vmfb = Compile("cnn_small", "cnn_small", "");
  ASSERT_FALSE(vmfb.empty());
  EXPECT_LE(RelativeError(vmfb, "cnn_small"), kTolerance);
  EXPECT_LE(RelativeError(vmfb, "cnn_small", vm::Executor::kGraph), kTolerance);
}

}  // namespace
}  // namespace kiln
