// Call plans (vm/call_plan.h): a symbolic program's calls replay their
// recorded kernel calls when the shapes repeat, with the interpreter's
// results bit for bit; what a plan cannot trace, or a branch on data, stays
// interpreted; results a caller holds are never written again; contexts on
// threads keep plans of their own.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/profiler.h"
#include "tests/vm/relax_build_util.h"
#include "vm/module_impl.h"

namespace kiln {
namespace {

using testing::Build;
using testing::ExpectSame;
using testing::Planned;
using testing::Random;

// An arena of intermediates, a branch on a shape, a view of the argument
// (the reshape) read by a kernel, and a tuple of two results.
constexpr const char* kSymbolic = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32"), w: R.Tensor((16, 8), dtype="float32")) -> R.Tuple(R.Tensor(("n", 8), dtype="float32"), R.Tensor(("n * 16",), dtype="float32")):
        n = T.int64()
        a = R.matmul(x, w)
        b = R.nn.relu(a)
        if R.prim_value(n % 2 == 0):
            c = R.add(b, b)
            y: R.Tensor(("n", 8), dtype="float32") = R.multiply(c, b)
        else:
            y: R.Tensor(("n", 8), dtype="float32") = R.add(b, a)
        f = R.reshape(x, R.shape([n * 16]))
        g = R.add(f, f)
        r = (y, g)
        return r
)";

std::shared_ptr<const vm::Module> BuildOrDie(const char* src) {
  auto m = Build(src, Planned());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : nullptr;
}

std::unique_ptr<vm::Context> NewContext(const vm::Module& m, bool replay) {
  vm::ContextOptions o;
  o.replay = replay;
  return std::move(m.CreateContext(o)).value();
}

uint64_t Replayed(vm::Context* c) { return static_cast<vm::CallContext*>(c)->replayed_calls(); }

Result<Any> Call(vm::Context* c, std::vector<Any> args) {
  Any out;
  KILN_RETURN_IF_ERROR(c->Invoke("main", args, &out));
  return out;
}

void ExpectSameTuple(const Any& got, const Any& want) {
  ASSERT_TRUE(got.is_tuple() && want.is_tuple()) << got.Describe() << " / " << want.Describe();
  ASSERT_EQ(got.tuple_fields().size(), want.tuple_fields().size());
  for (size_t i = 0; i < got.tuple_fields().size(); ++i) {
    ExpectSame(got.tuple_fields()[i].tensor(), want.tuple_fields()[i].tensor());
  }
}

// Calls `args` on the replaying context and on the interpreting one; their
// results (a tensor or a tuple of tensors) must be equal bit for bit.
void ExpectBothAgree(vm::Context* ctx, vm::Context* ref, const std::vector<Any>& args) {
  Result<Any> got = Call(ctx, args);
  Result<Any> want = Call(ref, args);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  if (want->is_tensor()) {
    ASSERT_TRUE(got->is_tensor()) << got->Describe();
    ExpectSame(got->tensor(), want->tensor());
  } else {
    ExpectSameTuple(*got, *want);
  }
}

TEST(CallPlanTest, RepeatedShapesReplayWithTheInterpretersResults) {
  auto m = BuildOrDie(kSymbolic);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  auto ref = NewContext(*m, false);
  Tensor w = Random({16, 8}, 99);
  uint64_t seed = 1;
  // Per shape: the first call is interpreted, the second recorded, the rest
  // replayed; the plan of 6 stays while 5 runs (5 needs no larger storage).
  // Both branches of the shape if.
  for (int64_t n : {6, 6, 6, 6, 5, 5, 5, 6, 6, 6}) {
    ExpectBothAgree(ctx.get(), ref.get(), {Random({n, 16}, seed++), w});
  }
  EXPECT_EQ(Replayed(ctx.get()), 2u + 1u + 3u);
  EXPECT_EQ(Replayed(ref.get()), 0u);
}

TEST(CallPlanTest, ACycleOfShapesReplaysEachAndALargerCallDropsPlansOnItsOldStorage) {
  auto m = BuildOrDie(kSymbolic);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  auto ref = NewContext(*m, false);
  Tensor w = Random({16, 8}, 3);
  uint64_t seed = 50;
  auto check = [&](int64_t n) { ExpectBothAgree(ctx.get(), ref.get(), {Random({n, 16}, seed++), w}); };
  // An image pyramid's shapes, largest first, image after image: the first
  // image interprets each, the second records each, the rest replay.
  for (int image = 0; image < 4; ++image) {
    for (int64_t n : {9, 7, 4}) check(n);
  }
  EXPECT_EQ(Replayed(ctx.get()), 2u * 3u);
  // A larger call replaces the planned storage: the plans on the old block
  // go (the next call with their shape, still a recent key, is recorded
  // again), the results stay right.
  check(200);
  const uint64_t before = Replayed(ctx.get());
  check(9);
  EXPECT_EQ(Replayed(ctx.get()), before);
  check(9);
  EXPECT_EQ(Replayed(ctx.get()), before + 1);
}

TEST(CallPlanTest, ARandomSequenceOfBatchSizesMatchesTheInterpreter) {
  // examples/mlp.relax, as served with a symbolic batch behind a batcher
  // that forms batches of varying size.
  constexpr const char* kMlp = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 784), dtype="float32"), w0: R.Tensor((128, 784), dtype="float32"), b0: R.Tensor((128,), dtype="float32"), w1: R.Tensor((10, 128), dtype="float32"), b1: R.Tensor((10,), dtype="float32")) -> R.Tensor(("n", 10), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv0 = R.permute_dims(w0, axes=None)
            lv1 = R.matmul(x, lv0, out_dtype="void")
            lv2 = R.add(lv1, b0)
            lv3 = R.nn.relu(lv2)
            lv4 = R.permute_dims(w1, axes=None)
            lv5 = R.matmul(lv3, lv4, out_dtype="void")
            gv = R.add(lv5, b1)
            R.output(gv)
        return gv
)";
  auto m = BuildOrDie(kMlp);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  auto ref = NewContext(*m, false);
  std::vector<Any> weights = {Random({128, 784}, 1), Random({128}, 2), Random({10, 128}, 3), Random({10}, 4)};
  uint64_t state = 12345;
  int64_t n = 1;
  for (int call = 0; call < 200; ++call) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Keep the batch size two times in three, else pick another of 1-8.
    if ((state >> 33) % 3 == 0) n = 1 + static_cast<int64_t>((state >> 40) % 8);
    std::vector<Any> args = {Random({n, 784}, state)};
    args.insert(args.end(), weights.begin(), weights.end());
    SCOPED_TRACE(call);
    ExpectBothAgree(ctx.get(), ref.get(), args);
  }
  EXPECT_GT(Replayed(ctx.get()), 50u);
}

TEST(CallPlanTest, ResultsTheCallerHoldsAreNotWrittenAgain) {
  auto m = BuildOrDie(kSymbolic);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  auto ref = NewContext(*m, false);
  Tensor w = Random({16, 8}, 7);
  std::vector<Any> held, want;
  for (uint64_t seed = 10; seed < 16; ++seed) {
    std::vector<Any> args = {Random({4, 16}, seed), w};
    Result<Any> got = Call(ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    held.push_back(*got);
    want.push_back(*Call(ref.get(), args));
  }
  EXPECT_EQ(Replayed(ctx.get()), 4u);
  for (size_t i = 0; i < held.size(); ++i) ExpectSameTuple(held[i], want[i]);
  // Let go of them: a replay then hands last call's tensors out again and
  // allocates nothing.
  held.clear();
  std::vector<Any> args = {Random({4, 16}, 20), w};
  ASSERT_TRUE(Call(ctx.get(), args).ok());
  uint64_t before = DefaultCpuAllocationCount();
  Result<Any> again = Call(ctx.get(), args);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(DefaultCpuAllocationCount() - before, 0u);
  ExpectSameTuple(*again, *Call(ref.get(), args));
}

TEST(CallPlanTest, AnArgumentReturnedAsItIsComesFromThisCall) {
  constexpr const char* kPassThrough = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tuple(R.Tensor(("n", 4), dtype="float32"), R.Tensor(("n", 4), dtype="float32")):
        n = T.int64()
        a = R.add(x, x)
        r = (x, a)
        return r
)";
  auto m = BuildOrDie(kPassThrough);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  for (uint64_t seed = 1; seed < 6; ++seed) {
    Tensor x = Random({3, 4}, seed);
    Result<Any> got = Call(ctx.get(), {x});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->tuple_fields()[0].object(), x.object());
    const float* a = got->tuple_fields()[1].tensor().data<float>();
    for (int i = 0; i < 12; ++i) ASSERT_EQ(a[i], x.data<float>()[i] + x.data<float>()[i]);
  }
  EXPECT_EQ(Replayed(ctx.get()), 3u);
}

TEST(CallPlanTest, ArgumentsSharingBytesAreNotRecorded) {
  constexpr const char* kTwo = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        a = R.multiply(x, y)
        b = R.add(a, y)
        return b
)";
  auto m = BuildOrDie(kTwo);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  Tensor x = Random({5, 4}, 3), y = Random({5, 4}, 4);
  // Recorded with x twice, a replay would read x where a later call passes y.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(ctx.get(), {x, x}).ok());
  Result<Any> got = Call(ctx.get(), {x, y});
  ASSERT_TRUE(got.ok());
  const float* b = got->tensor().data<float>();
  for (int i = 0; i < 20; ++i) {
    float px = x.data<float>()[i], py = y.data<float>()[i];
    ASSERT_EQ(b[i], px * py + py) << i;
  }
  EXPECT_EQ(Replayed(ctx.get()), 0u);
}

TEST(CallPlanTest, ABranchOnDataAndAProfiledCallAreInterpreted) {
  constexpr const char* kDataIf = R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        a = R.add(x, x)
        if c:
            y: R.Tensor(("n",), dtype="float32") = R.multiply(a, a)
        else:
            y: R.Tensor(("n",), dtype="float32") = R.add(a, x)
        return y
)";
  auto m = BuildOrDie(kDataIf);
  ASSERT_NE(m, nullptr);
  auto ctx = NewContext(*m, true);
  Tensor x = Random({8}, 5);
  for (bool branch : {true, true, true, false, false}) {
    Tensor c = Tensor::Empty(std::vector<int64_t>{}, DType::Bool()).value();
    *c.data<uint8_t>() = branch;
    Result<Any> got = Call(ctx.get(), {c, x});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    float v = x.data<float>()[3], a = v + v;
    EXPECT_EQ(got->tensor().data<float>()[3], branch ? a * a : a + v);
  }
  EXPECT_EQ(Replayed(ctx.get()), 0u);

  auto sym = BuildOrDie(kSymbolic);
  ASSERT_NE(sym, nullptr);
  auto profiled = NewContext(*sym, true);
  Profiler profiler;
  profiled->set_profiler(&profiler);
  Tensor w = Random({16, 8}, 1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Call(profiled.get(), {Random({2, 16}, 2), w}).ok());
  EXPECT_EQ(Replayed(profiled.get()), 0u);
}

TEST(CallPlanTest, ContextsOnThreadsReplayPlansOfTheirOwn) {
  auto m = BuildOrDie(kSymbolic);
  ASSERT_NE(m, nullptr);
  Tensor w = Random({16, 8}, 5);
  constexpr int kThreads = 4, kCalls = 12;
  // Reference results, per thread and call, from an interpreting context.
  std::vector<std::vector<std::vector<Any>>> args(kThreads);
  std::vector<std::vector<Any>> want(kThreads);
  auto ref = NewContext(*m, false);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kCalls; ++i) {
      args[t].push_back({Random({3 + t, 16}, 100 * t + i), w});
      want[t].push_back(*Call(ref.get(), args[t].back()));
    }
  }
  std::vector<std::unique_ptr<vm::Context>> contexts;
  for (int t = 0; t < kThreads; ++t) contexts.push_back(NewContext(*m, true));
  std::vector<std::vector<Any>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Result<Any> r = Call(contexts[t].get(), args[t][i]);
        got[t].push_back(r.ok() ? *r : Any());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(Replayed(contexts[t].get()), static_cast<uint64_t>(kCalls - 2));
    for (int i = 0; i < kCalls; ++i) ExpectSameTuple(got[t][i], want[t][i]);
  }
}

}  // namespace
}  // namespace kiln
