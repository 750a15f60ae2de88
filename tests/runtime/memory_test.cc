// Issue 5 §3: planned memory. A call on static shapes allocates nothing after
// the first two (the second records its call plan on the VM; counted three ways: operator new of this binary, the context's
// allocator, the default CPU allocator); a pooled allocator reuses blocks
// across calls of varying shapes under a cap; a caller's allocator that fails
// gives a clear status and leaves the context usable; the peak bytes of a
// call are reported.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "graph_executor/graph_session.h"
#include "tests/runtime/runtime_test_util.h"

namespace kiln {
namespace {

using runtime_test::StartCountingNew;
using runtime_test::StopCountingNew;

// Fails every allocation while `fail` is set.
class SwitchableAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes, size_t alignment) override {
    if (fail.load()) return nullptr;
    return DefaultCpuAllocator()->Allocate(nbytes, alignment);
  }
  void Free(void* p) override { DefaultCpuAllocator()->Free(p); }
  std::string Describe() const override { return "the test allocator (failing on purpose)"; }
  std::atomic<bool> fail{false};
};

struct Counts {
  uint64_t news = 0, context_allocations = 0, default_allocations = 0;
};

// Calls main `calls` times, releasing each result before the next call, and
// counts what the calls allocated.
Counts CountCalls(vm::Context* ctx, const CountingAllocator& counter, const std::vector<Any>& args, int calls) {
  const std::string name = "main";
  Any out;
  uint64_t context_before = counter.allocations(), default_before = DefaultCpuAllocationCount();
  Status status;
  StartCountingNew();
  for (int i = 0; i < calls && status.ok(); ++i) {
    status = ctx->Invoke(name, args, &out);
    out = Any();
  }
  Counts c;
  c.news = StopCountingNew();
  c.context_allocations = counter.allocations() - context_before;
  c.default_allocations = DefaultCpuAllocationCount() - default_before - c.context_allocations;
  EXPECT_TRUE(status.ok()) << status.ToString();
  return c;
}

class StaticCallTest : public ::testing::TestWithParam<std::tuple<const char*, vm::Executor, int>> {};

TEST_P(StaticCallTest, AllocatesNothingAfterTheSecondCall) {
  auto [model, executor, threads] = GetParam();
  auto m = runtime_test::LoadModel(model);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto args = runtime_test::RandomArgs(**m, "main", {}, 7);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  CountingAllocator counter;
  vm::ContextOptions options;
  options.allocator = &counter;
  options.executor = executor;
  options.num_threads = threads;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();

  // Two calls: on the VM the second records the call plan that the later
  // ones replay (vm/call_plan.h).
  Counts warm = CountCalls(ctx->get(), counter, *args, 2);
  EXPECT_GT(warm.context_allocations, 0u);  // at least the result
  Counts steady = CountCalls(ctx->get(), counter, *args, 20);
  EXPECT_EQ(steady.news, 0u) << "operator new during calls";
  EXPECT_EQ(steady.context_allocations, 0u) << "the context's allocator during calls";
  EXPECT_EQ(steady.default_allocations, 0u) << "the default CPU allocator during calls";
}

INSTANTIATE_TEST_SUITE_P(Models, StaticCallTest,
                         ::testing::Values(std::make_tuple("mlc_e2e", vm::Executor::kVm, 1),
                                           std::make_tuple("mlc_e2e", vm::Executor::kVm, 2),
                                           std::make_tuple("mlc_e2e", vm::Executor::kGraph, 1),
                                           std::make_tuple("mlp_batch4", vm::Executor::kVm, 1),
                                           std::make_tuple("mlp_batch4", vm::Executor::kGraph, 2),
                                           std::make_tuple("two_adds_static", vm::Executor::kVm, 1),
                                           std::make_tuple("two_adds_static", vm::Executor::kAuto, 1),
                                           std::make_tuple("two_outputs_static", vm::Executor::kVm, 1),
                                           std::make_tuple("two_outputs_static", vm::Executor::kGraph, 1)));

// A tuple result whose tuple the caller keeps (while dropping nothing) keeps
// its fields: the next call makes new ones and the kept values stay.
TEST(MemoryTest, KeptTuplesKeepTheirFields) {
  auto m = runtime_test::LoadModel("two_outputs_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (vm::Executor executor : {vm::Executor::kVm, vm::Executor::kGraph}) {
    SCOPED_TRACE(vm::ExecutorName(executor));
    vm::ContextOptions options;
    options.executor = executor;
    auto ctx = (*m)->CreateContext(options);
    ASSERT_TRUE(ctx.ok());
    Tensor x1 = runtime_test::RandomTensor({4, 8}, 1), x2 = runtime_test::RandomTensor({4, 8}, 2);
    std::vector<Any> a1 = {Any(x1)}, a2 = {Any(x2)};
    Any first, second;
    ASSERT_TRUE((*ctx)->Invoke("main", a1, &first).ok());
    ASSERT_TRUE(first.is_tuple());
    Tensor sum = runtime_test::Copy(first.tuple_fields()[0].tensor());
    ASSERT_TRUE((*ctx)->Invoke("main", a2, &second).ok());
    EXPECT_TRUE(runtime_test::BitwiseEqual(first.tuple_fields()[0].tensor(), sum));
    EXPECT_NE(first.tuple_fields()[0].tensor().raw_data(), second.tuple_fields()[0].tensor().raw_data());
    EXPECT_FALSE(runtime_test::BitwiseEqual(first.tuple_fields()[1].tensor(), second.tuple_fields()[1].tensor()));
  }
}

// The planned storage of a static plan exists once the context does: the
// first call allocates only its result.
TEST(MemoryTest, StaticPlanIsAllocatedWithTheContext) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CountingAllocator counter;
  vm::ContextOptions options;
  options.allocator = &counter;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(counter.allocations(), 1u);
  // t: float32[4, 8], plus the 64-byte header the context puts before each
  // block (ContextOptions::allocator).
  EXPECT_EQ(counter.bytes_held(), 128 + 64);
  std::vector<Any> args = {Any(runtime_test::RandomTensor({4, 8}, 1))};
  Any out;
  ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
  EXPECT_EQ(counter.allocations(), 2u);  // + the result
  // A context whose allocator fails cannot be made.
  SwitchableAllocator failing;
  failing.fail = true;
  options.allocator = &failing;
  auto refused = (*m)->CreateContext(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "main: planned storage 0: cannot allocate 128 bytes for a uint8[128] tensor from the test allocator "
            "(failing on purpose)");
}

// A result the caller keeps is never overwritten: the next call makes a new
// one (one allocation), and the kept values stay as they were.
TEST(MemoryTest, KeptResultsAreNotReused) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (vm::Executor executor : {vm::Executor::kVm, vm::Executor::kGraph}) {
    SCOPED_TRACE(vm::ExecutorName(executor));
    CountingAllocator counter;
    vm::ContextOptions options;
    options.allocator = &counter;
    options.executor = executor;
    auto ctx = (*m)->CreateContext(options);
    ASSERT_TRUE(ctx.ok());
    std::vector<Any> a = {Any(runtime_test::RandomTensor({4, 8}, 1))};
    std::vector<Any> b = {Any(runtime_test::RandomTensor({4, 8}, 2))};
    Any first, second;
    ASSERT_TRUE((*ctx)->Invoke("main", a, &first).ok());
    Tensor first_copy = runtime_test::Copy(first.tensor());
    uint64_t before = counter.allocations();
    ASSERT_TRUE((*ctx)->Invoke("main", b, &second).ok());
    EXPECT_EQ(counter.allocations() - before, 1u);
    EXPECT_NE(first.tensor().raw_data(), second.tensor().raw_data());
    EXPECT_TRUE(runtime_test::BitwiseEqual(first.tensor(), first_copy));
  }
}

// two_adds_static: t (128 bytes, planned) and the result (128 bytes).
TEST(MemoryTest, PeakBytesOfAKnownPlan) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<Any> args = {Any(runtime_test::RandomTensor({4, 8}, 3))};
  for (vm::Executor executor : {vm::Executor::kVm, vm::Executor::kGraph}) {
    SCOPED_TRACE(vm::ExecutorName(executor));
    vm::ContextOptions options;
    options.executor = executor;
    auto ctx = (*m)->CreateContext(options);
    ASSERT_TRUE(ctx.ok());
    EXPECT_EQ((*ctx)->LastCallPeakBytes(), 0u);
    for (int i = 0; i < 3; ++i) {
      Any out;
      ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
      EXPECT_EQ((*ctx)->LastCallPeakBytes(), 256u) << "call " << i;
    }
    // A result still held counts: the next call needs a new one.
    Any kept, out;
    ASSERT_TRUE((*ctx)->Invoke("main", args, &kept).ok());
    ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
    EXPECT_EQ((*ctx)->LastCallPeakBytes(), 384u);
  }
}

// y = (x + x) * x, as the kernels compute it.
void ExpectTwoAdds(const Any& out, const Tensor& x) {
  ASSERT_TRUE(out.is_tensor());
  Tensor y = out.tensor();
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    float v = x.data<float>()[i];
    ASSERT_EQ(y.data<float>()[i], (v + v) * v) << "element " << i;
  }
}

TEST(MemoryTest, PoolReusesBlocksAcrossShapes) {
  auto m = runtime_test::LoadModel("two_adds_symbolic");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CountingAllocator base;
  PoolAllocator pool(/*cap_bytes=*/0, &base);
  vm::ContextOptions options;
  options.allocator = &pool;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  const int64_t rows[] = {3, 5, 2, 7};
  auto call = [&](int i) {
    Tensor x = runtime_test::RandomTensor({rows[i % 4], 8}, 10 + i);
    std::vector<Any> args = {Any(x)};
    Any out;
    ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
    ExpectTwoAdds(out, x);
  };
  for (int i = 0; i < 4; ++i) call(i);  // warm-up: every shape once
  uint64_t before = base.allocations();
  for (int i = 4; i < 40; ++i) call(i);
  EXPECT_EQ(base.allocations() - before, 0u) << "the pool went to its base allocator after warm-up";
  EXPECT_GT(pool.bytes_cached(), 0u);
}

TEST(MemoryTest, PoolCapRefusesAndTheContextRecovers) {
  auto m = runtime_test::LoadModel("two_adds_symbolic");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  PoolAllocator pool(/*cap_bytes=*/1024);
  vm::ContextOptions options;
  options.allocator = &pool;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  Tensor small = runtime_test::RandomTensor({2, 8}, 1);
  Tensor large = runtime_test::RandomTensor({100, 8}, 2);  // 3200 bytes per tensor
  std::vector<Any> small_args = {Any(small)}, large_args = {Any(large)};
  Any out;
  ASSERT_TRUE((*ctx)->Invoke("main", small_args, &out).ok());
  ExpectTwoAdds(out, small);
  out = Any();
  Status s = (*ctx)->Invoke("main", large_args, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("main: vm.builtin.alloc_"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("3200 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cap of 1024 bytes"), std::string::npos) << s.message();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*ctx)->Invoke("main", small_args, &out).ok());
    ExpectTwoAdds(out, small);
  }
  out = Any();
  EXPECT_LE(pool.bytes_held(), 1024u);
}

TEST(MemoryTest, AFailingAllocatorGivesAStatusAndTheContextStaysUsable) {
  auto m = runtime_test::LoadModel("two_adds_symbolic");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  SwitchableAllocator allocator;
  vm::ContextOptions options;
  options.allocator = &allocator;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  Tensor x = runtime_test::RandomTensor({3, 8}, 4);
  std::vector<Any> args = {Any(x)};
  Any out;
  allocator.fail = true;
  Status s = (*ctx)->Invoke("main", args, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  // The 96-byte intermediate in the call-time arena, laid out 64-byte aligned.
  EXPECT_NE(s.message().find("main: vm.builtin.alloc_arena: cannot allocate 128 bytes"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("the test allocator (failing on purpose)"), std::string::npos) << s.message();
  allocator.fail = false;
  ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
  ExpectTwoAdds(out, x);
  // Fails again in the middle of a warm context (a new result shape), then recovers.
  Tensor y = runtime_test::RandomTensor({5, 8}, 5);
  std::vector<Any> y_args = {Any(y)};
  allocator.fail = true;
  EXPECT_EQ((*ctx)->Invoke("main", y_args, &out).code(), StatusCode::kResourceExhausted);
  allocator.fail = false;
  ASSERT_TRUE((*ctx)->Invoke("main", y_args, &out).ok());
  ExpectTwoAdds(out, y);
}

TEST(MemoryTest, GraphArenaFromAFailingAllocator) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  SwitchableAllocator allocator;
  vm::ContextOptions options;
  options.allocator = &allocator;
  options.executor = vm::Executor::kGraph;
  allocator.fail = true;
  auto refused = (*m)->CreateContext(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("cannot allocate the graph's 128-byte arena from the test allocator"),
            std::string::npos)
      << refused.status().message();
  allocator.fail = false;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  // Outputs are allocated per call when none can be reused.
  Tensor x = runtime_test::RandomTensor({4, 8}, 6);
  std::vector<Any> args = {Any(x)};
  Any out;
  allocator.fail = true;
  Status s = (*ctx)->Invoke("main", args, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("main: graph output"), std::string::npos) << s.message();
  allocator.fail = false;
  ASSERT_TRUE((*ctx)->Invoke("main", args, &out).ok());
  ExpectTwoAdds(out, x);
}

// GraphSession::Run with the caller's outputs: nothing allocated at all.
TEST(MemoryTest, GraphSessionWithCallerOutputsAllocatesNothing) {
  auto m = runtime_test::LoadModel("mlc_e2e");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto session = graph_executor::GraphSession::Create(*m, "main");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto args = runtime_test::RandomArgs(**m, "main", {}, 9);
  std::vector<Tensor> inputs;
  for (const Any& a : *args) inputs.push_back(a.tensor());
  auto outputs = (*session)->NewOutputs();
  ASSERT_TRUE(outputs.ok());
  ASSERT_TRUE((*session)->Run(inputs, *outputs).ok());
  uint64_t default_before = DefaultCpuAllocationCount();
  StartCountingNew();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*session)->Run(inputs, *outputs).ok());
  EXPECT_EQ(StopCountingNew(), 0u);
  EXPECT_EQ(DefaultCpuAllocationCount(), default_before);
}

TEST(MemoryTest, UnknownExecutorIsRefused) {
  auto m = runtime_test::LoadModel("two_adds_static");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  vm::ContextOptions options;
  options.executor = static_cast<vm::Executor>(7);
  auto ctx = (*m)->CreateContext(options);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().message(), "ContextOptions: unknown executor 7");
}

}  // namespace
}  // namespace kiln
