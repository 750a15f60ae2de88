// Issue 5 §2: one loaded module called from many threads at once. N threads
// each make M calls on their own Context, with inputs that differ per call,
// and every output must equal, bit for bit, what one thread computed alone.
// Static (the MLC MLP) and symbolic-shape models (the MLC dynamic MLP, the
// transformer block), contexts on one thread each and contexts sharing a
// two-thread pool. Built with -DKILN_SANITIZE=thread this is the TSan check.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/runtime_test_util.h"

namespace kiln {
namespace {

using runtime_test::BitwiseEqual;

constexpr int kThreads = 6;
constexpr int kCallsPerThread = 12;

struct Case {
  const char* model;
  const char* symbol;                // "" for static models
  std::vector<int64_t> symbol_values;  // cycled through by call number
};

// The arguments of call `c` (0 <= c < kThreads * kCallsPerThread).
std::vector<Any> ArgsFor(const vm::Module& m, const Case& k, int c) {
  std::map<std::string, int64_t> dims;
  if (*k.symbol != '\0') dims[k.symbol] = k.symbol_values[c % k.symbol_values.size()];
  Result<std::vector<Any>> args = runtime_test::RandomArgs(m, "main", dims, 1000 + c);
  KILN_CHECK(args.ok(), "%s", args.status().ToString().c_str());
  return std::move(args).value();
}

void RunCase(const Case& k, int context_threads) {
  SCOPED_TRACE(std::string(k.model) + ", " + std::to_string(context_threads) + " thread(s) per context");
  auto m = runtime_test::LoadModel(k.model);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const vm::Module& module = **m;
  vm::ContextOptions options;
  options.num_threads = context_threads;

  // Inputs and expected outputs, computed on this thread alone.
  const int total = kThreads * kCallsPerThread;
  std::vector<std::vector<Any>> inputs(total);
  std::vector<Tensor> expected(total);
  {
    auto ctx = module.CreateContext(options);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    for (int c = 0; c < total; ++c) {
      inputs[c] = ArgsFor(module, k, c);
      Any out;
      ASSERT_TRUE((*ctx)->Invoke("main", inputs[c], &out).ok());
      ASSERT_TRUE(out.is_tensor());
      expected[c] = runtime_test::Copy(out.tensor());
    }
  }
  // Distinct inputs give distinct outputs: the comparison below would see
  // a call that read another thread's data.
  ASSERT_FALSE(BitwiseEqual(expected[0], expected[1]));

  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = module.CreateContext(options);
      if (!ctx.ok()) {
        failures[t] = ctx.status().ToString();
        return;
      }
      for (int i = 0; i < kCallsPerThread; ++i) {
        // Threads walk the calls in different orders, so that calls of
        // different shapes overlap.
        int c = t * kCallsPerThread + (i * 5 + t) % kCallsPerThread;
        Any out;
        Status s = (*ctx)->Invoke("main", inputs[c], &out);
        if (!s.ok()) {
          failures[t] = s.ToString();
          return;
        }
        if (!out.is_tensor() || !BitwiseEqual(out.tensor(), expected[c])) {
          failures[t] = "call " + std::to_string(c) + ": output differs from the single-threaded one";
          return;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

const Case kStaticMlp{"mlc_e2e", "", {}};
const Case kDynamicMlp{"mlc_e2e_dynamic", "n", {1, 3, 8, 2}};
const Case kTransformer{"transformer_block", "s", {4, 9, 16}};

TEST(RuntimeThreadsTest, StaticMlpOneThreadPerContext) { RunCase(kStaticMlp, 1); }
TEST(RuntimeThreadsTest, StaticMlpSharedTwoThreadPool) { RunCase(kStaticMlp, 2); }
TEST(RuntimeThreadsTest, DynamicMlpOneThreadPerContext) { RunCase(kDynamicMlp, 1); }
TEST(RuntimeThreadsTest, DynamicMlpSharedTwoThreadPool) { RunCase(kDynamicMlp, 2); }
TEST(RuntimeThreadsTest, TransformerBlockOneThreadPerContext) { RunCase(kTransformer, 1); }
TEST(RuntimeThreadsTest, TransformerBlockSharedTwoThreadPool) { RunCase(kTransformer, 2); }

// Graph-executor contexts on many threads: the same outputs as the VM.
TEST(RuntimeThreadsTest, GraphExecutorContexts) {
  auto m = runtime_test::LoadModel("mlc_e2e");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const vm::Module& module = **m;
  const int total = kThreads * kCallsPerThread;
  std::vector<std::vector<Any>> inputs(total);
  std::vector<Tensor> expected(total);
  auto vm_ctx = module.CreateContext();
  for (int c = 0; c < total; ++c) {
    inputs[c] = ArgsFor(module, kStaticMlp, c);
    Any out;
    ASSERT_TRUE(vm_ctx->Invoke("main", inputs[c], &out).ok());
    expected[c] = runtime_test::Copy(out.tensor());
  }
  vm::ContextOptions options;
  options.executor = vm::Executor::kGraph;
  options.num_threads = 1;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = module.CreateContext(options);
      if (!ctx.ok()) {
        failures[t] = ctx.status().ToString();
        return;
      }
      for (int i = 0; i < kCallsPerThread; ++i) {
        int c = t * kCallsPerThread + i;
        Any out;
        Status s = (*ctx)->Invoke("main", inputs[c], &out);
        if (!s.ok() || !out.is_tensor() || !BitwiseEqual(out.tensor(), expected[c])) {
          failures[t] = "call " + std::to_string(c) + ": " + (s.ok() ? "output differs" : s.ToString());
          return;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

}  // namespace
}  // namespace kiln
