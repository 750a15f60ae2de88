// vm.builtin.shape_arith keeps, per call site and context, the results of the
// last few distinct inputs (the heap slots it reads before writing them) and
// writes them back instead of computing when the inputs repeat. These tests
// call one context with repeating, new and evicted inputs, with groups that
// overwrite their own input slot and one slot twice, with a failing division,
// and from several threads at once: every call must see what computing would
// give.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/program.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::FunctionInfo;
using compiler::VmfbProgram;
using testing::F32;
using vm::Assembler;
using vm::Const;
using vm::Imm;
using vm::Reg;

// f(x: [n]) -> shape (n + 100, 2n, (3n + 1) floordiv 2, 10 floordiv (n - 3)).
// Slot 0 holds n and is overwritten by the last group (an input that is also
// an output); slot 1 is written twice (the memo must keep the last value);
// slot 6 is written after slot 5 but sits before it in no particular order.
VmfbProgram ArithProgram() {
  VmfbProgram p = testing::AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 2;
  f.shape_heap_size = 8;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(2), Imm(2), Imm(1), Imm(0), Imm(0), Imm(2),     // h2 = n * 2
                     Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(3),     // h1 = n * 3
                     Imm(1), Imm(0), Imm(1), Imm(1), Imm(0), Imm(1),     // h1 = h1 + 1
                     Imm(3), Imm(3), Imm(1), Imm(1), Imm(0), Imm(2),     // h3 = h1 floordiv 2
                     Imm(6), Imm(1), Imm(1), Imm(0), Imm(0), Imm(3),     // h6 = n - 3
                     Imm(5), Imm(3), Imm(0), Imm(10), Imm(1), Imm(6),    // h5 = 10 floordiv h6
                     Imm(0), Imm(0), Imm(1), Imm(0), Imm(0), Imm(100)});  // h0 = n + 100
  a.Call(1, testing::kMakeShape, {Imm(4), Imm(1), Imm(0), Imm(1), Imm(2), Imm(1), Imm(3), Imm(1), Imm(5)});
  a.Ret(1);
  f.code = a.Finish();
  p.functions.push_back(f);
  return p;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

std::vector<int64_t> Expected(int64_t n) { return {n + 100, 2 * n, (3 * n + 1) / 2, FloorDiv(10, n - 3)}; }

Status CallF(vm::Context* ctx, int64_t n, Any* out) {
  std::vector<Any> args = {F32({n}, std::vector<float>(static_cast<size_t>(n)))};
  return ctx->Invoke("f", args, out);
}

std::shared_ptr<const vm::Module> MustLoad(const VmfbProgram& p) {
  auto m = testing::Load(testing::Serialize(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : nullptr;
}

TEST(ShapeArithMemoTest, RepeatedNewAndEvictedInputsGiveTheComputedResults) {
  auto m = MustLoad(ArithProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  // 5 and 7 repeat (hits, also after the other was more recent); 4, 8, 9, 11
  // and 12 push 5 out of the four kept entries, so its last call computes
  // again.
  for (int64_t n : {5, 5, 7, 5, 7, 7, 4, 8, 9, 11, 12, 5, 12, 1}) {
    Any out;
    ASSERT_TRUE(CallF(ctx.get(), n, &out).ok()) << "n = " << n;
    EXPECT_EQ(out.shape_dims(), Expected(n)) << "n = " << n;
  }
}

TEST(ShapeArithMemoTest, AFailedCallKeepsNoResult) {
  auto m = MustLoad(ArithProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  for (int64_t n : {3, 5, 3, 5}) {
    Any out;
    Status s = CallF(ctx.get(), n, &out);
    if (n == 3) {
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.message(), "f: vm.builtin.shape_arith: division by zero in a shape expression");
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(out.shape_dims(), Expected(n));
    }
  }
}

TEST(ShapeArithMemoTest, ContextsCalledFromThreadsAtOnceKeepTheirOwnResults) {
  auto m = MustLoad(ArithProgram());
  ASSERT_TRUE(m);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = m->CreateContext();
      for (int i = 0; i < 300; ++i) {
        // Each thread cycles through its own six inputs (more than a site keeps).
        int64_t n = 4 + t * 10 + i % 6;
        Any out;
        if (!CallF(ctx.get(), n, &out).ok() || out.shape_dims() != Expected(n)) ++wrong[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln
