// vm.builtin.storage_tensors: the views of a static memory plan made in one
// call, with hand-assembled programs: the views land at their offsets of one
// storage the Context allocates when it is created, a repeated call hands out
// the same view objects and allocates nothing, views never spill out of their
// slot, contexts on threads keep their own, and the operands are verified at
// load.
#include <gtest/gtest.h>

#include <thread>

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

enum ExtraCallables { kStorageTensors = testing::kNumAddCallables, kMakeTuple, kShapeArith };

// A view group of storage_tensors: [reg, offset, slot bytes, ndim, float32, pairs...].
std::vector<int64_t> Group(int64_t reg, int64_t offset, int64_t slot, const std::vector<int64_t>& pairs) {
  std::vector<int64_t> g = {Imm(reg), Imm(offset), Imm(slot), Imm(static_cast<int64_t>(pairs.size() / 2)),
                            Imm(kDLFloat), Imm(32), Imm(1)};
  g.insert(g.end(), pairs.begin(), pairs.end());
  return g;
}

// main(x: float32[n, 4], y: float32[n, 4]) -> (r, t, u), with t and u views
// of a 256-byte static storage 0 made by one storage_tensors call, 128 bytes
// each (n <= 8):
//   t = x + y    at 0
//   u = t + y    at 128
//   r = u + x    a fresh result: 2x + 2y
// `views` replaces the groups (a program the tests break on purpose).
VmfbProgram StaticProgram(const std::vector<int64_t>* views = nullptr) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.storage_tensors"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.make_tuple"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  compiler::FunctionInfo& f = p.functions[0];
  f.register_count = 8;
  f.shape_heap_size = 2;
  Assembler a;
  a.Call(-1, testing::kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, testing::kCheckTensor, {Reg(1), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(1)});
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(-1, testing::kMatchShape, {Reg(1), Const(1), Imm(2), Imm(2), Imm(0), Imm(0), Imm(4)});
  a.Call(-1, kShapeArith, {Imm(1), Imm(1), Imm(0), Imm(0), Imm(1), Imm(0)});  // heap[1] = 0 - n
  std::vector<int64_t> args = {Imm(0), Imm(256)};
  if (views != nullptr) {
    args.insert(args.end(), views->begin(), views->end());
  } else {
    for (const auto& g : {Group(3, 0, 128, {Imm(1), Imm(0), Imm(0), Imm(4)}),
                          Group(4, 128, 128, {Imm(1), Imm(0), Imm(0), Imm(4)})}) {
      args.insert(args.end(), g.begin(), g.end());
    }
  }
  a.Call(-1, kStorageTensors, args);
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(3)});
  a.Call(-1, testing::kTestAdd, {Reg(3), Reg(1), Reg(4)});
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});  // (n, 4)
  a.Call(5, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, testing::kTestAdd, {Reg(4), Reg(0), Reg(5)});
  a.Call(6, kMakeTuple, {Reg(5), Reg(3), Reg(4)});
  a.Ret(6);
  f.code = a.Finish();
  return p;
}

std::shared_ptr<const vm::Module> MustLoad(const VmfbProgram& p) {
  auto m = testing::Load(testing::Serialize(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : nullptr;
}

struct Call {
  Status status;
  Any out;
  uint64_t allocations = 0;
};

Call RunMain(vm::Context* ctx, int64_t n) {
  std::vector<float> x(n * 4), y(n * 4);
  for (int64_t i = 0; i < n * 4; ++i) x[i] = static_cast<float>(i), y[i] = 10.0f * i;
  std::vector<Any> args = {F32({n, 4}, x), F32({n, 4}, y)};
  Call c;
  uint64_t before = DefaultCpuAllocationCount();
  c.status = ctx->Invoke("main", args, &c.out);
  c.allocations = DefaultCpuAllocationCount() - before;
  return c;
}

const uint8_t* Data(const Any& tuple, size_t i) {
  return static_cast<const uint8_t*>(tuple.tuple_fields()[i].tensor().raw_data());
}

TEST(VmStorageTensorsTest, ViewsLandAtTheirOffsetsOfOneStorage) {
  auto m = MustLoad(StaticProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  for (int64_t n : {3, 8, 1, 3}) {
    Call c = RunMain(ctx.get(), n);
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    std::vector<float> r = Values(c.out.tuple_fields()[0].tensor());
    for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(r[i], 22.0f * i) << "n=" << n << " i=" << i;
    EXPECT_EQ(Data(c.out, 2) - Data(c.out, 1), 128) << "n=" << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(Data(c.out, 1)) % 64, 0u);
    EXPECT_EQ(c.out.tuple_fields()[1].tensor().shape(), (std::vector<int64_t>{n, 4}));
  }
}

TEST(VmStorageTensorsTest, TheStorageIsAllocatedWithTheContextAndACallAllocatesOnlyItsResult) {
  auto m = MustLoad(StaticProgram());
  ASSERT_TRUE(m);
  uint64_t before = DefaultCpuAllocationCount();
  auto ctx = m->CreateContext();
  EXPECT_GE(DefaultCpuAllocationCount() - before, 1u);  // the 256 bytes of storage 0, among others
  // The first call: the result only (before the Context knew storage_tensors'
  // storage, the call allocated it too); the next, whose caller let go of the
  // result, nothing.
  EXPECT_EQ(RunMain(ctx.get(), 3).allocations, 1u);
  EXPECT_EQ(RunMain(ctx.get(), 3).allocations, 0u);
}

TEST(VmStorageTensorsTest, ARepeatedCallHandsOutLastCallsViews) {
  auto m = MustLoad(StaticProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  const TensorObj* first = nullptr;
  {
    Call c = RunMain(ctx.get(), 3);
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    first = c.out.tuple_fields()[1].tensor_obj();
  }
  Call again = RunMain(ctx.get(), 3);
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_EQ(again.out.tuple_fields()[1].tensor_obj(), first);
  const Tensor held = again.out.tuple_fields()[1].tensor();  // still held: never handed out again
  again.out = Any();
  Call other = RunMain(ctx.get(), 3);
  ASSERT_TRUE(other.status.ok()) << other.status.ToString();
  EXPECT_NE(other.out.tuple_fields()[1].tensor_obj(), held.object().get());
  EXPECT_EQ(other.out.tuple_fields()[1].tensor().raw_data(), held.raw_data());
  // Another shape: a new view object of the same bytes.
  Call bigger = RunMain(ctx.get(), 5);
  ASSERT_TRUE(bigger.status.ok()) << bigger.status.ToString();
  EXPECT_EQ(bigger.out.tuple_fields()[1].tensor().shape(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(bigger.out.tuple_fields()[1].tensor().raw_data(), held.raw_data());
}

TEST(VmStorageTensorsTest, ContextsOnThreadsKeepViewsOfTheirOwn) {
  auto m = MustLoad(StaticProgram());
  ASSERT_TRUE(m);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      auto ctx = m->CreateContext();
      for (int i = 0; i < 50; ++i) {
        int64_t n = 1 + (k + i) % 8;
        Call c = RunMain(ctx.get(), n);
        if (!c.status.ok()) {
          ++failures[k];
          continue;
        }
        std::vector<float> r = Values(c.out.tuple_fields()[0].tensor());
        for (int64_t j = 0; j < n * 4; ++j) failures[k] += r[j] != 22.0f * j;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(failures[k], 0) << "thread " << k;
}

TEST(VmStorageTensorsTest, RunTimeErrors) {
  auto run = [](const std::vector<int64_t>& views, int64_t n) {
    auto m = MustLoad(StaticProgram(&views));
    return m ? RunMain(m->CreateContext().get(), n).status : Internal("not loaded");
  };
  // n beyond the bound the slots were planned for.
  std::vector<int64_t> views = Group(3, 0, 128, {Imm(1), Imm(0), Imm(0), Imm(4)});
  Status s = run(views, 9);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "main: a float32[9, 4] tensor does not fit the 128 bytes planned for it; a symbolic dimension is larger "
            "than the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
  // A constant shape larger than its slot, after a view that fits: the first
  // failed view fails the call.
  views = Group(3, 0, 128, {Imm(0), Imm(2), Imm(0), Imm(4)});
  std::vector<int64_t> second = Group(4, 128, 64, {Imm(0), Imm(5), Imm(0), Imm(4)});
  views.insert(views.end(), second.begin(), second.end());
  EXPECT_EQ(run(views, 2).message(),
            "main: a float32[5, 4] tensor does not fit the 64 bytes planned for it; a symbolic dimension is larger "
            "than the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
  // A slot past the storage's end holds nothing.
  EXPECT_EQ(run(Group(3, 320, -1, {Imm(0), Imm(1)}), 2).message(),
            "main: a float32[1] tensor does not fit the 0 bytes planned for it; a symbolic dimension is larger than "
            "the upper bound the memory plan assumed (tir_var_upper_bound or --bound)");
  // A negative dimension (heap[1] = -n).
  EXPECT_EQ(run(Group(3, 0, 128, {Imm(1), Imm(1), Imm(0), Imm(4)}), 2).message(),
            "main: vm.builtin.storage_tensors: cannot allocate a float32[-2, 4] tensor");
}

Status LoadWithCode(const std::vector<int64_t>& code) {
  VmfbProgram p = StaticProgram();
  p.functions[0].code = code;
  auto m = testing::Load(testing::Serialize(p));
  return m.ok() ? Status::Ok() : m.status();
}

TEST(VmStorageTensorsTest, VerifierChecksOperands) {
  struct Case {
    std::vector<int64_t> args;
    std::string message;
  };
  const std::vector<int64_t> dtype = {Imm(kDLFloat), Imm(32), Imm(1)};
  auto with = [&](std::vector<int64_t> head, const std::vector<int64_t>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::vector<Case> cases = {
      {{Imm(0)}, "vm.builtin.storage_tensors takes at least 2 arguments"},
      {{Imm(65536), Imm(256)}, "storage index is 65536, outside [0, 65535]"},
      {{Reg(0), Imm(256)}, "storage index must be an immediate"},
      {{Imm(0), Imm(-1)}, "size is -1, outside [0, 36028797018963967]"},
      {{Imm(0), Reg(0)}, "size must be an immediate"},
      {{Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(0), Imm(2), Imm(32)},
       "vm.builtin.storage_tensors: a view at argument 2 needs at least 7 arguments, got 6"},
      {with({Imm(0), Imm(256), Imm(8), Imm(0), Imm(128), Imm(0)}, dtype), "destination register is 8, outside [0, 7]"},
      {with({Imm(0), Imm(256), Reg(3), Imm(0), Imm(128), Imm(0)}, dtype), "destination register must be an immediate"},
      {with({Imm(0), Imm(256), Imm(3), Imm(-64), Imm(128), Imm(0)}, dtype),
       "offset is -64, outside [0, 36028797018963967]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(-2), Imm(0)}, dtype),
       "slot size is -2, outside [-1, 36028797018963967]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(65)}, dtype), "ndim is 65, outside [0, 64]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Reg(1)}, dtype), "ndim must be an immediate"},
      {{Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(0), Imm(5), Imm(32), Imm(1)},
       "dtype code is 5, outside [0, 4]"},
      {{Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(0), Imm(2), Imm(0), Imm(1)},
       "dtype bits is 0, outside [1, 64]"},
      {{Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(0), Imm(2), Imm(32), Imm(0)},
       "dtype lanes is 0, outside [1, 64]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(2)}, with(dtype, {Imm(0), Imm(4)})),
       "vm.builtin.storage_tensors: a view at argument 2 needs 11 arguments, got 9"},
      {with(with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(0)}, dtype), {Imm(4), Imm(0)}),
       "vm.builtin.storage_tensors: a view at argument 9 needs at least 7 arguments, got 2"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(1)}, with(dtype, {Imm(2), Imm(4)})),
       "mode is 2, outside [0, 1]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(1)}, with(dtype, {Imm(1), Imm(2)})),
       "shape-heap slot is 2, outside [0, 1]"},
      {with({Imm(0), Imm(256), Imm(3), Imm(0), Imm(128), Imm(1)}, with(dtype, {Imm(0), Reg(0)})),
       "value must be an immediate"},
  };
  for (const auto& c : cases) {
    Assembler a;
    a.Call(-1, kStorageTensors, c.args);
    a.Ret(0);
    Status s = LoadWithCode(a.Finish());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c.message;
    EXPECT_EQ(s.message(), "corrupt bytecode in function 'main' at word 0: " + c.message);
  }
  // A well-formed call with no views loads.
  Assembler a;
  a.Call(-1, kStorageTensors, {Imm(0), Imm(256)});
  a.Ret(0);
  EXPECT_TRUE(LoadWithCode(a.Finish()).ok());
}

}  // namespace
}  // namespace kiln
