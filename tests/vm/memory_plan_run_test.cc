// Memory-planned programs run: compiled from .relax with and without
// planning, their outputs agree; a static plan allocates nothing but the
// results after the first call; a symbolic one lays out one arena per call
// (storage per symbolic size without the call-time arena); upper bounds make
// a symbolic program static and a dimension beyond its bound is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "runtime/allocator.h"
#include "tests/vm/relax_build_util.h"

namespace kiln {
namespace {

using testing::Build;
using testing::ExpectSame;
using testing::Planned;
using testing::Random;
using testing::RunMain;
using testing::Unplanned;

constexpr const char* kStaticMlp = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 16), dtype="float32"), w0: R.Tensor((16, 32), dtype="float32"), w1: R.Tensor((32, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            lv0 = R.matmul(x, w0)
            lv1 = R.nn.relu(lv0)
            lv2 = R.matmul(lv1, w1)
            lv3 = R.add(lv2, lv2)
            gv = R.nn.relu(lv3)
            R.output(gv)
        return gv
)";

TEST(MemoryPlanRunTest, StaticProgramAllocatesOnlyItsResultAfterTheFirstCall) {
  auto planned = Build(kStaticMlp, Planned());
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kStaticMlp, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<Any> args = {Random({4, 16}, seed), Random({16, 32}, seed + 10), Random({32, 8}, seed + 20)};
    uint64_t allocations = 0, plain_allocations = 0;
    Result<Tensor> got = RunMain(ctx.get(), args, &allocations);
    Result<Tensor> want = RunMain(ref_ctx.get(), args, &plain_allocations);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
    // Released results and intermediates are reused from the second call on
    // (vm/module.h, "Memory"): the first call allocates every tensor
    // (unplanned) or only the result (planned: the arena came with the
    // context).
    EXPECT_EQ(plain_allocations, seed == 1 ? 5u : 0u);
    EXPECT_EQ(allocations, seed == 1 ? 1u : 0u);
  }
}

constexpr const char* kSymbolic = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.nn.relu(lv0)
            lv2 = R.add(lv1, x)
            lv3 = R.multiply(lv2, lv2)
            gv = R.subtract(lv3, x)
            R.output(gv)
        return gv
)";

TEST(MemoryPlanRunTest, SymbolicProgramMatchesAndReusesItsStorage) {
  relax::VMCodegenOptions storage_per_size = Planned();
  storage_per_size.memory.call_time_arena = false;
  auto planned = Build(kSymbolic, storage_per_size);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kSymbolic, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  Tensor w = Random({8, 8}, 99);
  // n * 32-byte intermediates in two storages: they grow with n only.
  struct Step {
    int64_t n;
    uint64_t allocations;
  };
  // The result is reused when its shape repeats (n=5 twice).
  for (Step step : {Step{5, 3}, Step{5, 0}, Step{1, 1}, Step{17, 3}, Step{9, 1}}) {
    std::vector<Any> args = {Random({step.n, 8}, step.n), w};
    uint64_t allocations = 0;
    Result<Tensor> got = RunMain(ctx.get(), args, &allocations);
    Result<Tensor> want = RunMain(ref_ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
    EXPECT_EQ(allocations, step.allocations) << "n=" << step.n;
  }
}

TEST(MemoryPlanRunTest, SymbolicProgramLaysOutOneArenaWhenCalled) {
  auto planned = Build(kSymbolic, Planned());
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kSymbolic, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  Tensor w = Random({8, 8}, 99);
  // Four n * 32-byte intermediates in one arena laid out per call: it is
  // allocated when it grows, the result when its shape is new.
  struct Step {
    int64_t n;
    uint64_t allocations;
  };
  for (Step step : {Step{5, 2}, Step{5, 0}, Step{1, 1}, Step{17, 2}, Step{9, 1}, Step{17, 1}, Step{17, 0}}) {
    std::vector<Any> args = {Random({step.n, 8}, step.n), w};
    uint64_t allocations = 0;
    Result<Tensor> got = RunMain(ctx.get(), args, &allocations);
    Result<Tensor> want = RunMain(ref_ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
    EXPECT_EQ(allocations, step.allocations) << "n=" << step.n;
  }
}

TEST(MemoryPlanRunTest, AnUpperBoundGivesAStaticPlan) {
  auto planned = Build(kSymbolic, Planned({{"n", 32}}));
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kSymbolic, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  Tensor w = Random({8, 8}, 7);
  for (int64_t n : {3, 32, 1, 17}) {
    std::vector<Any> args = {Random({n, 8}, n + 100), w};
    uint64_t allocations = 0;
    Result<Tensor> got = RunMain(ctx.get(), args, &allocations);
    Result<Tensor> want = RunMain(ref_ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
    // One arena sized for n = 32, allocated with the context: each call
    // allocates its result only (a new shape every time).
    EXPECT_EQ(allocations, 1u) << "n=" << n;
  }
  // Beyond the bound: refused before any kernel writes outside its slot.
  std::vector<Any> args = {Random({33, 8}, 1), w};
  Result<Tensor> r = RunMain(ctx.get(), args);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "main: a float32[33, 8] tensor does not fit the 1024 bytes planned for it; a symbolic dimension is larger "
            "than the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
}

TEST(MemoryPlanRunTest, IfElseProgramMatchesOnBothBranches) {
  constexpr const char* kIf = R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((16,), dtype="float32")) -> R.Tensor((16,), dtype="float32"):
        a = R.add(x, x)
        if c:
            b = R.multiply(a, a)
            y: R.Tensor((16,), dtype="float32") = b
        else:
            d = R.add(a, x)
            e = R.nn.relu(d)
            y: R.Tensor((16,), dtype="float32") = e
        z = R.add(y, a)
        w = R.nn.relu(z)
        return w
)";
  auto planned = Build(kIf, Planned());
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kIf, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  for (bool branch : {true, false, true}) {
    Tensor c = Tensor::Empty(std::vector<int64_t>{}, DType::Bool()).value();
    *c.data<uint8_t>() = branch;
    std::vector<Any> args = {c, Random({16}, branch ? 5 : 6)};
    Result<Tensor> got = RunMain(ctx.get(), args);
    Result<Tensor> want = RunMain(ref_ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
  }
}

TEST(MemoryPlanRunTest, AShapeIfLaysOutOnlyTheBranchItRuns) {
  // An even n runs a branch holding three n x 4 tensors at once, an odd n
  // one: the call-time arena holds the tensors of the branch that runs only
  // (before: those of both, for every n). Results match the unplanned
  // program on both branches, in one context alternating between them.
  constexpr const char* kShapeIf = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        a = R.add(x, x)
        if R.prim_value(n % 2 == 0):
            b = R.multiply(a, a)
            c = R.add(b, a)
            d = R.multiply(c, b)
            y: R.Tensor(("n", 4), dtype="float32") = R.add(d, c)
        else:
            y: R.Tensor(("n", 4), dtype="float32") = R.nn.relu(a)
        w = R.add(y, x)
        return w
)";
  auto planned = Build(kShapeIf, Planned());
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  auto plain = Build(kShapeIf, Unplanned());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto ctx = (*planned)->CreateContext();
  auto ref_ctx = (*plain)->CreateContext();
  for (int64_t n : {64, 63, 8, 7, 64}) {
    std::vector<Any> args = {Random({n, 4}, n)};
    Result<Tensor> got = RunMain(ctx.get(), args);
    Result<Tensor> want = RunMain(ref_ctx.get(), args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectSame(*got, *want);
  }
  // Peaks on fresh contexts (the arena storage only grows within one):
  // n = 64 (then, 1 KiB per tensor) and n = 63 (else, 1008 bytes per tensor).
  std::map<int64_t, uint64_t> peak;
  for (int64_t n : {64, 63}) {
    auto fresh = (*planned)->CreateContext();
    ASSERT_TRUE(RunMain(fresh.get(), {Random({n, 4}, n)}).ok());
    peak[n] = fresh->LastCallPeakBytes();
  }
  // Then: a, b, c, d in 1 KiB slots, plus the result w.
  EXPECT_EQ(peak[64], 4u * 1024 + 1024);
  // Else: a and its result in 1024-byte (aligned) slots, plus w; before, the
  // then branch's tensors took their slots too (5104 bytes).
  EXPECT_EQ(peak[63], 2u * 1024 + 1008);
}

}  // namespace
}  // namespace kiln
