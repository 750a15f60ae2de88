// Planned storage in the VM (vm.builtin.alloc_storage / tensor_view), with
// hand-assembled programs: storage is allocated once per Context and kept
// across calls, grows only when a symbolic size does, never spills out of its
// slot, and its operands are verified at load.
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

enum ExtraCallables { kShapeArith = testing::kNumAddCallables, kAllocStorage, kTensorView };

// main(x: float32[n, 4], y: float32[n, 4]): t = x + y in planned storage 0,
// result = t + y in a fresh tensor. `static_size` >= 0: storage 0 has that
// constant size and t a slot of `slot` bytes; otherwise its size is n * 16.
VmfbProgram StorageProgram(int64_t static_size = -1, int64_t slot = -1) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.alloc_storage"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.tensor_view"});
  compiler::FunctionInfo& f = p.functions[0];
  f.register_count = 7;
  f.shape_heap_size = 2;
  Assembler a;
  a.Call(-1, testing::kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, testing::kCheckTensor, {Reg(1), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(1)});
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(-1, testing::kMatchShape, {Reg(1), Const(1), Imm(2), Imm(2), Imm(0), Imm(0), Imm(4)});
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});  // (n, 4)
  if (static_size >= 0) {
    a.Call(3, kAllocStorage, {Imm(0), Imm(0), Imm(static_size)});
  } else {
    a.Call(-1, kShapeArith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(16)});  // heap[1] = n * 16
    a.Call(3, kAllocStorage, {Imm(0), Imm(1), Imm(1)});
  }
  a.Call(4, kTensorView, {Reg(3), Imm(0), Imm(slot), Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(4)});
  a.Call(5, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, testing::kTestAdd, {Reg(4), Reg(1), Reg(5)});
  a.Ret(5);
  f.code = a.Finish();
  return p;
}

std::shared_ptr<const vm::Module> MustLoad(const VmfbProgram& p) {
  auto m = testing::Load(testing::Serialize(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : nullptr;
}

// Runs main on (n, 4) inputs, checks x + 2y, returns the allocations it made.
uint64_t RunAndCountAllocations(vm::Context* ctx, int64_t n) {
  std::vector<float> x(n * 4), y(n * 4);
  for (int64_t i = 0; i < n * 4; ++i) x[i] = static_cast<float>(i), y[i] = 10.0f * i;
  std::vector<Any> args = {F32({n, 4}, x), F32({n, 4}, y)};
  Any out;
  uint64_t before = DefaultCpuAllocationCount();
  Status s = ctx->Invoke("main", args, &out);
  uint64_t made = DefaultCpuAllocationCount() - before;
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return made;
  std::vector<float> got = Values(out.tensor());
  for (int64_t i = 0; i < n * 4; ++i) EXPECT_EQ(got[i], 21.0f * i) << "n=" << n << " i=" << i;
  return made;
}

TEST(VmStorageTest, StorageIsKeptAcrossCallsAndGrowsOnlyWithTheSize) {
  auto m = MustLoad(StorageProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  // A released result of the same shape is reused (vm/module.h, "Memory");
  // a new shape needs a new result.
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 3), 2u);  // the storage and the result
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 3), 0u);  // both reused
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 2), 1u);  // smaller: the storage fits; a new result
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 5), 2u);  // larger: the storage grows
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 4), 1u);
  // Another context has storage of its own.
  auto other = m->CreateContext();
  EXPECT_EQ(RunAndCountAllocations(other.get(), 4), 2u);
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 5), 1u);
}

TEST(VmStorageTest, StaticStorageIsAllocatedOnce) {
  auto m = MustLoad(StorageProgram(/*static_size=*/256, /*slot=*/128));
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  // The storage is allocated with the context: calls allocate their results.
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 8), 1u);
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 1), 1u);
  EXPECT_EQ(RunAndCountAllocations(ctx.get(), 8), 1u);
}

TEST(VmStorageTest, ATensorLargerThanItsSlotIsRefused) {
  auto m = MustLoad(StorageProgram(/*static_size=*/256, /*slot=*/128));
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  std::vector<Any> args = {F32({9, 4}, std::vector<float>(36)), F32({9, 4}, std::vector<float>(36))};
  Any out;
  Status s = ctx->Invoke("main", args, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "main: a float32[9, 4] tensor does not fit the 128 bytes planned for it; a symbolic dimension is larger "
            "than the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
  // Without a slot limit the storage itself bounds it.
  m = MustLoad(StorageProgram(/*static_size=*/64, /*slot=*/-1));
  ASSERT_TRUE(m);
  s = m->CreateContext()->Invoke("main", args, &out);
  EXPECT_EQ(s.message(),
            "main: a float32[9, 4] tensor does not fit the 64 bytes planned for it; a symbolic dimension is larger "
            "than the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
}

Status LoadWithCode(const std::vector<int64_t>& code) {
  VmfbProgram p = StorageProgram();
  p.functions[0].code = code;
  auto m = testing::Load(testing::Serialize(p));
  return m.ok() ? Status::Ok() : m.status();
}

TEST(VmStorageTest, VerifierChecksStorageOperands) {
  struct Case {
    int64_t callable;
    std::vector<int64_t> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {kAllocStorage, {Imm(65536), Imm(0), Imm(64)}, "storage index is 65536, outside [0, 65535]"},
      {kAllocStorage, {Imm(0), Imm(2), Imm(64)}, "mode is 2, outside [0, 1]"},
      {kAllocStorage, {Imm(0), Imm(1), Imm(2)}, "shape-heap slot is 2, outside [0, 1]"},
      {kAllocStorage, {Imm(0), Imm(0), Imm(-1)}, "size is -1, outside [0, 36028797018963967]"},
      {kAllocStorage, {Reg(0), Imm(0), Imm(64)}, "storage index must be an immediate"},
      {kAllocStorage, {Imm(0), Imm(0)}, "vm.builtin.alloc_storage takes 3 arguments, got 2"},
      {kTensorView, {Reg(3), Imm(0), Imm(-1), Reg(2), Imm(2), Imm(32)},
       "vm.builtin.tensor_view takes 7 arguments, got 6"},
      {kTensorView, {Reg(3), Imm(-64), Imm(-1), Reg(2), Imm(2), Imm(32), Imm(1)}, "offset is -64, outside [0, 36028797018963967]"},
      {kTensorView, {Reg(3), Imm(0), Imm(-2), Reg(2), Imm(2), Imm(32), Imm(1)},
       "slot size is -2, outside [-1, 36028797018963967]"},
      {kTensorView, {Reg(3), Imm(0), Imm(-1), Reg(2), Imm(9), Imm(32), Imm(1)}, "dtype code is 9, outside [0, 4]"},
  };
  for (const auto& c : cases) {
    Assembler a;
    a.Call(4, c.callable, c.args);
    a.Ret(0);
    Status s = LoadWithCode(a.Finish());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c.message;
    EXPECT_EQ(s.message(), "corrupt bytecode in function 'main' at word 0: " + c.message);
  }
}

TEST(VmStorageTest, RunTimeErrors) {
  // A storage operand that is not a storage, and a shape that is not one.
  for (bool bad_storage : {true, false}) {
    VmfbProgram p = StorageProgram();
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(3, kAllocStorage, {Imm(0), Imm(0), Imm(64)});
    if (bad_storage) {
      a.Call(4, kTensorView, {Reg(2), Imm(0), Imm(-1), Reg(2), Imm(2), Imm(32), Imm(1)});
    } else {
      a.Call(4, kTensorView, {Reg(3), Imm(0), Imm(-1), Reg(3), Imm(2), Imm(32), Imm(1)});
    }
    a.Ret(4);
    p.functions[0].code = a.Finish();
    auto m = MustLoad(p);
    ASSERT_TRUE(m);
    Any out;
    std::vector<Any> args = {Any(), Any()};
    Status s = m->CreateContext()->Invoke("main", args, &out);
    EXPECT_EQ(s.message(), bad_storage ? "main: vm.builtin.tensor_view: expected a storage, got shape [4]"
                                       : "main: vm.builtin.tensor_view: expected a shape, got tensor uint8[64]");
  }
  // A negative size computed from shapes.
  VmfbProgram p = StorageProgram();
  Assembler a;
  a.Call(-1, kShapeArith, {Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Imm(8)});  // heap[1] = 0 - 8
  a.Call(3, kAllocStorage, {Imm(0), Imm(1), Imm(1)});
  a.Ret(3);
  p.functions[0].code = a.Finish();
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  std::vector<Any> args = {Any(), Any()};
  Status s = m->CreateContext()->Invoke("main", args, &out);
  EXPECT_EQ(s.message(), "main: vm.builtin.alloc_storage: cannot allocate -8 bytes");
}

}  // namespace
}  // namespace kiln
