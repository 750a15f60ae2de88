// vm.builtin.reshape_view with hand-assembled programs: the result shares the
// argument's data (no copy), keeps it alive, is handed out again while only
// its call site holds it, and refuses what is not a view of a compact tensor.
#include <gtest/gtest.h>

#include "runtime/allocator.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableInfo;
using compiler::CallableKind;
using compiler::VmfbProgram;
using testing::F32;
using testing::Values;
using vm::Assembler;
using vm::Const;
using vm::Imm;
using vm::Reg;

enum ExtraCallables { kShapeArith = testing::kNumAddCallables, kReshapeView };

// main(x: float32[n, 4], y: float32[n, 4]) -> x viewed as [1, n * `per_row`]
// (per_row 4: all of x; less: its leading elements; more: too many).
VmfbProgram ViewProgram(int64_t per_row = 4) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.reshape_view"});
  compiler::FunctionInfo& f = p.functions[0];
  f.register_count = 4;
  f.shape_heap_size = 2;
  f.results[0].dims = {"1", "m"};
  Assembler a;
  a.Call(-1, testing::kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(-1, kShapeArith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(per_row)});  // heap[1] = n * per_row
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(0), Imm(1), Imm(1), Imm(1)});          // (1, heap[1])
  a.Call(3, kReshapeView, {Reg(0), Reg(2)});
  a.Ret(3);
  f.code = a.Finish();
  return p;
}

std::shared_ptr<const vm::Module> MustLoad(const VmfbProgram& p) {
  auto m = testing::Load(testing::Serialize(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : nullptr;
}

TEST(VmReshapeViewTest, ViewsTheArgumentWithoutACopy) {
  auto m = MustLoad(ViewProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  std::vector<float> xs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Tensor x = F32({3, 4}, xs);
  std::vector<Any> args = {Any(x), Any(F32({3, 4}, std::vector<float>(12)))};
  Any out;
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  ASSERT_TRUE(out.is_tensor());
  Tensor v = out.tensor();
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{1, 12}));
  EXPECT_EQ(v.raw_data(), x.raw_data());
  EXPECT_EQ(Values(v), xs);
  // The view keeps its argument alive after everyone else let go of it.
  void* data = x.raw_data();
  args.clear();
  x = Tensor();
  EXPECT_EQ(v.raw_data(), data);
  EXPECT_EQ(Values(v), xs);
}

TEST(VmReshapeViewTest, ALeadingPartIsAView) {
  auto m = MustLoad(ViewProgram(/*per_row=*/2));
  ASSERT_TRUE(m);
  Tensor x = F32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<Any> args = {Any(x), Any(F32({2, 4}, std::vector<float>(8)))};
  Any out;
  ASSERT_TRUE(m->CreateContext()->Invoke("main", args, &out).ok());
  EXPECT_EQ(out.tensor().shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{0, 1, 2, 3}));
}

TEST(VmReshapeViewTest, AReleasedViewIsHandedOutAgain) {
  auto m = MustLoad(ViewProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  Tensor x = F32({2, 4}, std::vector<float>(8, 1.0f));
  std::vector<Any> args = {Any(x), Any(F32({2, 4}, std::vector<float>(8)))};
  Any out;
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  const void* first = out.object().get();
  out = Any();
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  EXPECT_EQ(out.object().get(), first);
  // Held by the caller: the next call makes a new one.
  Any held = out;
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  EXPECT_NE(out.object().get(), held.object().get());
  EXPECT_EQ(out.tensor().raw_data(), x.raw_data());
}

// main(x, y) -> (x + y) viewed as [1, n * 4]: the sum is a fresh tensor.
VmfbProgram SumViewProgram() {
  VmfbProgram p = ViewProgram();
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(3, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(3)});
  a.Call(-1, kShapeArith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(0), Imm(1), Imm(1), Imm(1)});
  a.Call(2, kReshapeView, {Reg(3), Reg(2)});
  a.Ret(2);
  p.functions[0].code = a.Finish();
  return p;
}

TEST(VmReshapeViewTest, AViewDoesNotKeepItsTensorFromBeingReused) {
  auto m = MustLoad(SumViewProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  std::vector<Any> args = {Any(F32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})), Any(F32({2, 4}, std::vector<float>(8, 1.0f)))};
  for (int call = 0; call < 3; ++call) {
    Any out;
    uint64_t before = DefaultCpuAllocationCount();
    ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
    // The first call allocates the sum; later ones reuse it (and the view).
    EXPECT_EQ(DefaultCpuAllocationCount() - before, call == 0 ? 1u : 0u) << "call " << call;
    EXPECT_EQ(out.tensor().shape(), (std::vector<int64_t>{1, 8}));
    EXPECT_EQ(Values(out.tensor()), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  }
  // A result the caller keeps is neither overwritten nor re-pointed.
  Any kept;
  ASSERT_TRUE(ctx->Invoke("main", args, &kept).ok());
  args[1] = Any(F32({2, 4}, std::vector<float>(8, 2.0f)));
  Any out;
  ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
  EXPECT_EQ(Values(kept.tensor()), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_NE(kept.tensor().raw_data(), out.tensor().raw_data());
}

TEST(VmReshapeViewTest, RunTimeErrors) {
  {
    auto m = MustLoad(ViewProgram(/*per_row=*/5));
    ASSERT_TRUE(m);
    std::vector<Any> args = {Any(F32({2, 4}, std::vector<float>(8))), Any()};
    Any out;
    Status s = m->CreateContext()->Invoke("main", args, &out);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "main: vm.builtin.reshape_view: a float32[2, 4] tensor cannot be viewed as float32[1, 10]");
  }
  for (bool bad_tensor : {true, false}) {
    VmfbProgram p = ViewProgram();
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(3, kReshapeView, bad_tensor ? std::vector<int64_t>{Reg(2), Reg(2)} : std::vector<int64_t>{Reg(0), Reg(0)});
    a.Ret(3);
    p.functions[0].code = a.Finish();
    auto m = MustLoad(p);
    ASSERT_TRUE(m);
    std::vector<Any> args = {Any(F32({1, 4}, std::vector<float>(4))), Any()};
    Any out;
    Status s = m->CreateContext()->Invoke("main", args, &out);
    EXPECT_EQ(s.message(), bad_tensor ? "main: vm.builtin.reshape_view: expected a compact tensor, got shape [4]"
                                      : "main: vm.builtin.reshape_view: expected a shape, got tensor float32[1, 4]");
  }
}

TEST(VmReshapeViewTest, VerifierChecksTheArgumentCount) {
  VmfbProgram p = ViewProgram();
  Assembler a;
  a.Call(3, kReshapeView, {Reg(0)});
  a.Ret(3);
  p.functions[0].code = a.Finish();
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(m.status().message(),
            "corrupt bytecode in function 'main' at word 0: vm.builtin.reshape_view takes 2 arguments, got 1");
}

}  // namespace
}  // namespace kiln
