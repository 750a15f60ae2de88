// Issue 5 §4: the executor is chosen per context. Every static model of the
// tests runs through the VM and the static graph executor with the same
// inputs, and the outputs are identical bit for bit. kAuto takes the graph
// where there is one; kGraph refuses a function without one.
//
// "Looks nothing up": GraphSession resolves every callee to a function pointer
// (kernels) or a PackedFunc (packed functions) when the program is loaded, and
// builds every node's argument array in Create; Run reads only those arrays
// and stores the caller's data pointers into them. There is no name in Run's
// path to look up (graph_executor/graph_session.cc); the allocation count of
// memory_test.cc shows it makes no hidden map or string either.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "tests/runtime/runtime_test_util.h"

namespace kiln {
namespace {

// env.linear(x, w, b, out): out = x @ w^T + b; env.relu(x, out). Written for
// these tests (the MLC packed examples expect the host to register them).
Status EnvLinear(Span<const Any> args, Any*) {
  if (args.size() != 4) return InvalidArgument("env.linear takes 4 tensors");
  Tensor x = args[0].tensor(), w = args[1].tensor(), b = args[2].tensor(), out = args[3].tensor();
  int64_t rows = x.shape()[0], k = x.shape()[1], cols = w.shape()[0];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float s = b.data<float>()[c];
      for (int64_t i = 0; i < k; ++i) s += x.data<float>()[r * k + i] * w.data<float>()[c * k + i];
      out.data<float>()[r * cols + c] = s;
    }
  }
  return Status::Ok();
}

Status EnvRelu(Span<const Any> args, Any*) {
  if (args.size() != 2) return InvalidArgument("env.relu takes 2 tensors");
  Tensor x = args[0].tensor(), out = args[1].tensor();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    float v = x.data<float>()[i];
    out.data<float>()[i] = v > 0 ? v : 0;
  }
  return Status::Ok();
}

// Registered before main(): modules resolve imports when they load.
KILN_REGISTER_GLOBAL("env.linear", EnvLinear);
KILN_REGISTER_GLOBAL("env.relu", EnvRelu);

class ExecutorTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExecutorTest, VmAndGraphGiveIdenticalOutputs) {
  auto m = runtime_test::LoadModel(GetParam());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE((*m)->HasStaticGraph("main")) << GetParam() << " should be fully static";
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    vm::ContextOptions vm_options, graph_options;
    vm_options.num_threads = graph_options.num_threads = threads;
    graph_options.executor = vm::Executor::kGraph;
    auto vm_ctx = (*m)->CreateContext(vm_options);
    auto graph_ctx = (*m)->CreateContext(graph_options);
    ASSERT_TRUE(vm_ctx.ok()) << vm_ctx.status().ToString();
    ASSERT_TRUE(graph_ctx.ok()) << graph_ctx.status().ToString();
    EXPECT_EQ((*graph_ctx)->executor(), vm::Executor::kGraph);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto args = runtime_test::RandomArgs(**m, "main", {}, seed);
      ASSERT_TRUE(args.ok()) << args.status().ToString();
      Any from_vm, from_graph;
      Status s = (*vm_ctx)->Invoke("main", *args, &from_vm);
      ASSERT_TRUE(s.ok()) << s.ToString();
      s = (*graph_ctx)->Invoke("main", *args, &from_graph);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_TRUE(from_vm.is_tensor() && from_graph.is_tensor());
      EXPECT_TRUE(runtime_test::BitwiseEqual(from_vm.tensor(), from_graph.tensor())) << "seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(StaticModels, ExecutorTest,
                         ::testing::Values("mlc_e2e", "mlc_e2e_mixture", "mlc_e2e_packed", "mlp_batch4",
                                           "resnet_block", "two_adds_static"));

TEST(ExecutorChoiceTest, AutoUsesTheGraphWhereThereIsOne) {
  auto dynamic = runtime_test::LoadModel("two_adds_symbolic");
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().ToString();
  EXPECT_FALSE((*dynamic)->HasStaticGraph("main"));
  Tensor x = runtime_test::RandomTensor({3, 8}, 1);
  std::vector<Any> args = {Any(x)};
  Any out;

  vm::ContextOptions options;
  options.executor = vm::Executor::kAuto;
  auto auto_ctx = (*dynamic)->CreateContext(options);
  ASSERT_TRUE(auto_ctx.ok());
  EXPECT_TRUE((*auto_ctx)->Invoke("main", args, &out).ok());  // no graph: the VM

  options.executor = vm::Executor::kGraph;
  auto graph_ctx = (*dynamic)->CreateContext(options);
  ASSERT_TRUE(graph_ctx.ok());
  Status s = (*graph_ctx)->Invoke("main", args, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "function 'main' has no static graph (not all its shapes are static); use Executor::kVm or kAuto for it");
  // Unknown names get the VM's message with the function list.
  s = (*graph_ctx)->Invoke("nope", args, &out);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no function named 'nope'"), std::string::npos) << s.message();
}

TEST(ExecutorChoiceTest, GraphContextChecksArguments) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  vm::ContextOptions options;
  options.executor = vm::Executor::kGraph;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  Any out;
  std::vector<Any> not_a_tensor = {Any(int64_t{3})};
  Status s = (*ctx)->Invoke("main", not_a_tensor, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "main: argument 0 is int 3; the graph executor takes tensors");
  std::vector<Any> wrong_shape = {Any(runtime_test::RandomTensor({4, 7}, 1))};
  s = (*ctx)->Invoke("main", wrong_shape, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("expected float32[4, 8], got float32[4, 7]"), std::string::npos) << s.message();
  // And the context still works.
  Tensor x = runtime_test::RandomTensor({4, 8}, 2);
  std::vector<Any> good = {Any(x)};
  EXPECT_TRUE((*ctx)->Invoke("main", good, &out).ok());
}

}  // namespace
}  // namespace kiln
