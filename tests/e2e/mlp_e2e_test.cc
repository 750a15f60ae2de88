// The MLP of examples/mlp.relax, end to end: text -> passes -> LLVM kernels ->
// .vmfb -> loader -> VM (and oneDNN, and the graph executor for a static
// variant), against a plain C++ reference.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "graph_executor/graph_session.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

struct MlpWeights {
  Tensor w0 = RandomTensor({128, 784}, 2);
  Tensor b0 = RandomTensor({128}, 3);
  Tensor w1 = RandomTensor({10, 128}, 4);
  Tensor b1 = RandomTensor({10}, 5);
};

std::string MlpSource() { return ReadFile("examples/mlp.relax"); }

void CheckMlp(const std::shared_ptr<const vm::Module>& module, int64_t n) {
  MlpWeights w;
  Tensor x = RandomTensor({n, 784}, 100 + n);
  auto ctx = module->CreateContext();
  Any result;
  std::vector<Any> args = {x, w.w0, w.b0, w.w1, w.b1};
  Status s = ctx->Invoke("main", args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(result.is_tensor()) << result.Describe();
  Tensor expected = ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1);
  EXPECT_LE(MaxAbsDiff(result.tensor(), expected), 1e-4f) << "n = " << n;
}

TEST(MlpE2E, GeneratedKernelsForSeveralBatchSizes) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t n : {1, 7, 64}) CheckMlp(*module, n);
}

TEST(MlpE2E, MatmulThroughOneDnnMatchesGeneratedKernels) {
#ifndef KILN_HAVE_DNNL_KERNELS
  GTEST_SKIP() << "built without oneDNN (KILN_WITH_DNNL=OFF)";
#endif
  driver::CompileOptions options;
  options.matmul_to_dnnl = true;
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax", options);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t n : {1, 7, 64}) CheckMlp(*module, n);
}

TEST(MlpE2E, ContextIsReusedAcrossCallsWithDifferentBatchSizes) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  MlpWeights w;
  auto ctx = (*module)->CreateContext();
  for (int64_t n : {3, 1, 64, 3}) {
    Tensor x = RandomTensor({n, 784}, 7 * n);
    Any result;
    std::vector<Any> args = {x, w.w0, w.b0, w.w1, w.b1};
    ASSERT_TRUE(ctx->Invoke("main", args, &result).ok());
    EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1)), 1e-4f);
  }
}

// One module, many callers: each thread has its own context and batch size,
// and every output is checked against the single-threaded reference.
TEST(MlpE2E, ManyThreadsShareOneModule) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  MlpWeights w;
  constexpr int kThreads = 4, kCalls = 25;
  std::vector<Tensor> xs, expected;
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(RandomTensor({1 + 5 * t, 784}, 50 + t));
    expected.push_back(ReferenceMlp(xs[t], w.w0, w.b0, w.w1, w.b1));
  }
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = (*module)->CreateContext();
      std::vector<Any> args = {xs[t], w.w0, w.b0, w.w1, w.b1};
      for (int i = 0; i < kCalls; ++i) {
        Any result;
        if (!ctx->Invoke("main", args, &result).ok() || !result.is_tensor() ||
            MaxAbsDiff(result.tensor(), expected[t]) > 1e-4f) {
          ++failures[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(MlpE2E, WrongArgumentShapeNamesFunctionArgumentAndDimension) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  MlpWeights w;
  Tensor x = RandomTensor({2, 100}, 1);
  auto ctx = (*module)->CreateContext();
  Any result;
  std::vector<Any> args = {x, w.w0, w.b0, w.w1, w.b1};
  Status s = ctx->Invoke("main", args, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("main: argument x, dimension 1: expected 784, got 100"), std::string::npos) << s.message();
}

TEST(MlpE2E, WrongWeightShapeIsReported) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  MlpWeights w;
  Tensor x = RandomTensor({2, 784}, 1);
  Tensor bad_w1 = RandomTensor({10, 127}, 1);
  auto ctx = (*module)->CreateContext();
  Any result;
  std::vector<Any> args = {x, w.w0, w.b0, bad_w1, w.b1};
  Status s = ctx->Invoke("main", args, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("argument w1, dimension 1: expected 128, got 127"), std::string::npos) << s.message();
}

TEST(MlpE2E, UnknownFunctionIsAnError) {
  auto module = CompileAndLoad(MlpSource(), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  Any result;
  Status s = ctx->Invoke("predict", {}, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("predict"), std::string::npos) << s.message();
}

TEST(MlpE2E, StaticMismatchIsACompileErrorWithLocation) {
  std::string src = MlpSource();
  // w0 takes 785 features: x (n, 784) @ permute_dims(w0) (785, 128) cannot work.
  src = std::regex_replace(src, std::regex(R"(w0: R.Tensor\(\(128, 784\))"), "w0: R.Tensor((128, 785)");
  auto bytes = CompileToBytes(src, "bad_mlp.relax");
  ASSERT_FALSE(bytes.ok());
  const std::string& m = bytes.status().message();
  EXPECT_TRUE(std::regex_search(m, std::regex(R"(bad_mlp\.relax:\d+:\d+)"))) << m;
  EXPECT_NE(m.find("784"), std::string::npos) << m;
  EXPECT_NE(m.find("785"), std::string::npos) << m;
}

TEST(MlpE2E, ParseErrorHasLocation) {
  auto bytes = CompileToBytes("@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2, 3), \"float32\"):\n        return x\n",
                              "broken.relax");
  ASSERT_FALSE(bytes.ok());
  // The unclosed '(' of line 4 is reported where the file ends, naming where it opened.
  EXPECT_TRUE(std::regex_search(bytes.status().message(), std::regex(R"(broken\.relax:\d+:\d+: error: expected '\)' to close '\(' opened at 4:13)")))
      << bytes.status().message();
}

TEST(MlpE2E, MissingPackedFunctionFailsTheLoadWithItsName) {
  const char* src = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.call_dps_packed("test.not_registered", (x,), out_sinfo=R.Tensor((2, 3), dtype="float32"))
            R.output(y)
        return y
)";
  auto module = CompileAndLoad(src, "missing.relax");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("test.not_registered"), std::string::npos) << module.status().message();
}

TEST(MlpE2E, StaticMlpRunsOnTheGraphExecutor) {
  std::string src = std::regex_replace(MlpSource(), std::regex(R"(\"n\")"), "8");
  src = std::regex_replace(src, std::regex(R"(\n\s*n = T.int64\(\))"), "");
  auto bytes = CompileToBytes(src, "static_mlp.relax");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto module = vm::Module::LoadBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE((*module)->HasStaticGraph("main"));
  auto session = graph_executor::GraphSession::Create(*module, "main");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  MlpWeights w;
  Tensor x = RandomTensor({8, 784}, 9);
  Tensor y = Tensor::Empty({8, 10}, DType::Float32()).value();
  std::vector<Tensor> inputs = {x, w.w0, w.b0, w.w1, w.b1};
  std::vector<Tensor> outputs = {y};
  for (int i = 0; i < 3; ++i) {
    Status s = (*session)->Run(inputs, outputs);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_LE(MaxAbsDiff(y, ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1)), 1e-4f);
  }
  // The VM runs the same file.
  CheckMlp(*module, 8);
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
