// The thread count as a session option: LoadOptions / ContextOptions /
// GraphSessionOptions pick the pool a call's kernels launch on, kernels see
// its size in env->num_threads and split parallel loops into that many tasks,
// and packed functions see it as ThreadPool::Current().
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "graph_executor/graph_session.h"
#include "runtime/registry.h"
#include "runtime/thread_pool.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::GraphArgInfo;
using compiler::GraphArgKind;
using compiler::VmfbProgram;
using testing::F32;
using testing::Values;
using vm::Assembler;
using vm::Reg;

constexpr int64_t kProbeSize = 9;  // 1 + up to 8 threads

void RegisterCurrentThreads() {
  static std::once_flag once;
  std::call_once(once, [] {
    Status s = RegisterGlobalFunction("test.current_threads", [](Span<const Any>, Any* ret) -> Status {
      ThreadPool* pool = ThreadPool::Current();
      *ret = Any(static_cast<int64_t>(pool != nullptr ? pool->num_threads() : 0));
      return Status::Ok();
    });
    KILN_CHECK(s.ok(), "%s", s.ToString().c_str());
  });
}

GraphArgInfo OutArg() {
  GraphArgInfo a;
  a.kind = GraphArgKind::kOutput;
  a.index = 0;
  a.dtype = DType::Float32();
  a.shape = {kProbeSize};
  return a;
}

// probe(out: float32[9]): thread_probe(out) (tests/vm/test_kernels.c), also as
// a static graph; current() -> the current pool's size seen by a packed function.
VmfbProgram ProbeProgram() {
  RegisterCurrentThreads();
  VmfbProgram p = testing::AddProgram();
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  int probe = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kKernel, "thread_probe", 0, 1});
  int current = probe + 1;
  p.callables.push_back({CallableKind::kPacked, "test.current_threads", 0, -1});

  compiler::FunctionInfo f;
  f.name = "probe";
  f.params.resize(1);
  f.register_count = 1;
  Assembler a;
  a.Call(-1, probe, {Reg(0)});
  a.Ret(0);
  f.code = a.Finish();
  p.functions.push_back(f);

  compiler::FunctionInfo c;
  c.name = "current";
  c.register_count = 1;
  Assembler b;
  b.Call(0, current, {});
  b.Ret(0);
  c.code = b.Finish();
  p.functions.push_back(c);

  compiler::GraphInfo g;
  g.function = "probe";
  g.arena_bytes = 0;
  g.outputs = {OutArg()};
  g.nodes = {{static_cast<uint32_t>(probe), {OutArg()}}};
  p.graphs.push_back(g);
  return p;
}

const std::vector<uint8_t>& ProbeBytes() {
  static const std::vector<uint8_t>* bytes = new std::vector<uint8_t>(testing::Serialize(ProbeProgram()));
  return *bytes;
}

std::shared_ptr<const vm::Module> LoadProbe(const vm::LoadOptions& options = {}) {
  auto m = vm::Module::LoadBuffer(ProbeBytes().data(), ProbeBytes().size(), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : nullptr;
}

// Runs probe in `ctx`; returns {num_threads, tasks seen by each task slot...}.
std::vector<float> Probe(vm::Context* ctx) {
  Tensor out = F32({kProbeSize}, std::vector<float>(kProbeSize, 0));
  std::vector<Any> args = {Any(out)};
  Status s = ctx->Invoke("probe", args, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return Values(out);
}

// What probe writes with n threads: n, then n in each of n slots.
std::vector<float> Expected(int n) {
  std::vector<float> v(kProbeSize, 0);
  v[0] = static_cast<float>(n);
  for (int i = 0; i < n; ++i) v[1 + i] = static_cast<float>(n);
  return v;
}

int64_t CurrentThreads(vm::Context* ctx) {
  Any out;
  Status s = ctx->Invoke("current", {}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out.is_int() ? out.int_value() : -1;
}

TEST(ThreadsTest, DefaultIsOneThreadPerCore) {
  auto m = LoadProbe();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->thread_pool(), ThreadPool::Global());
  auto ctx = m->CreateContext();
  EXPECT_EQ(ctx->thread_pool(), ThreadPool::Global());
  int n = DefaultThreadCount();
  if (n + 1 > kProbeSize) GTEST_SKIP() << "more cores than the probe has slots";
  EXPECT_EQ(Probe(ctx.get()), Expected(n));
  EXPECT_EQ(CurrentThreads(ctx.get()), n);
}

TEST(ThreadsTest, ContextOptionPicksTheThreadCount) {
  auto m = LoadProbe();
  ASSERT_TRUE(m);
  for (int n : {1, 2, 3, 8}) {
    vm::ContextOptions options;
    options.num_threads = n;
    auto ctx = m->CreateContext(options);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    EXPECT_EQ((*ctx)->thread_pool(), ThreadPool::Shared(n));  // shared per size
    EXPECT_EQ(Probe(ctx->get()), Expected(n)) << n << " threads";
    EXPECT_EQ(CurrentThreads(ctx->get()), n);
  }
  // The current pool is set only during a call.
  EXPECT_EQ(ThreadPool::Current(), nullptr);
}

TEST(ThreadsTest, LoadOptionSetsTheModuleDefault) {
  vm::LoadOptions load;
  load.num_threads = 1;
  auto m = LoadProbe(load);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->thread_pool()->num_threads(), 1);
  auto ctx = m->CreateContext();
  EXPECT_EQ(Probe(ctx.get()), Expected(1));
  // num_threads 0 in ContextOptions keeps the module's default.
  auto same = m->CreateContext(vm::ContextOptions());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->thread_pool(), m->thread_pool());
  // A context may still ask for more.
  vm::ContextOptions two;
  two.num_threads = 2;
  auto ctx2 = m->CreateContext(two);
  ASSERT_TRUE(ctx2.ok());
  EXPECT_EQ(Probe(ctx2->get()), Expected(2));
}

TEST(ThreadsTest, CallerOwnedPools) {
  ThreadPool mine(3);
  vm::LoadOptions load;
  load.thread_pool = &mine;
  load.num_threads = 7;  // ignored: the pool wins
  auto m = LoadProbe(load);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->thread_pool(), &mine);
  EXPECT_EQ(Probe(m->CreateContext().get()), Expected(3));
  ThreadPool other(2);
  vm::ContextOptions options;
  options.thread_pool = &other;
  auto ctx = m->CreateContext(options);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(Probe(ctx->get()), Expected(2));
}

TEST(ThreadsTest, BadThreadCountsAreRefused) {
  vm::LoadOptions load;
  load.num_threads = -1;
  auto m = vm::Module::LoadBuffer(ProbeBytes().data(), ProbeBytes().size(), load);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "LoadOptions: num_threads is -1; use 0 (one per core) to 1024");

  auto good = LoadProbe();
  ASSERT_TRUE(good);
  vm::ContextOptions options;
  options.num_threads = 5000;
  auto ctx = good->CreateContext(options);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ctx.status().message(), "ContextOptions: num_threads is 5000; use 0 (one per core) to 1024");

  graph_executor::GraphSessionOptions graph;
  graph.num_threads = -3;
  auto session = graph_executor::GraphSession::Create(good, "probe", graph);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().message(), "GraphSessionOptions: num_threads is -3; use 0 (one per core) to 1024");
}

TEST(ThreadsTest, GraphSessionThreadCount) {
  vm::LoadOptions load;
  load.num_threads = 2;
  auto m = LoadProbe(load);
  ASSERT_TRUE(m);
  auto run = [](graph_executor::GraphSession* s) {
    Tensor out = F32({kProbeSize}, std::vector<float>(kProbeSize, 0));
    std::vector<Tensor> outputs = {out};
    Status st = s->Run({}, outputs);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return Values(out);
  };
  auto by_default = graph_executor::GraphSession::Create(m, "probe");  // the module's pool
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_EQ((*by_default)->thread_pool(), m->thread_pool());
  EXPECT_EQ(run(by_default->get()), Expected(2));
  for (int n : {1, 3}) {
    graph_executor::GraphSessionOptions options;
    options.num_threads = n;
    auto s = graph_executor::GraphSession::Create(m, "probe", options);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->thread_pool(), ThreadPool::Shared(n));
    EXPECT_EQ(run(s->get()), Expected(n));
  }
}

// Contexts of different sizes called from several threads at once: each call
// sees its own context's count.
TEST(ThreadsTest, ContextsOfDifferentSizesCoexist) {
  auto m = LoadProbe();
  ASSERT_TRUE(m);
  constexpr int kCallers = 4, kCalls = 100;
  std::vector<int> failures(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      int n = 1 + t % 3;
      vm::ContextOptions options;
      options.num_threads = n;
      auto ctx = m->CreateContext(options);
      if (!ctx.ok()) {
        failures[t] = kCalls;
        return;
      }
      for (int i = 0; i < kCalls; ++i) {
        Tensor out = F32({kProbeSize}, std::vector<float>(kProbeSize, 0));
        std::vector<Any> args = {Any(out)};
        if (!(*ctx)->Invoke("probe", args, nullptr).ok() || Values(out) != Expected(n)) ++failures[t];
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures, std::vector<int>(kCallers, 0));
}

}  // namespace
}  // namespace kiln
