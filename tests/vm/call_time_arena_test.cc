// The call-time arena in the VM (vm.builtin.alloc_arena / arena_view /
// arena_tensor / arena_tensors), with
// hand-assembled programs: buffers get first-fit offsets from the sizes of
// the call, a repeated shape lays out and allocates nothing, the storage
// grows only with the sizes, views never spill out of their place, and the
// operands are verified at load.
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

enum ExtraCallables {
  kShapeArith = testing::kNumAddCallables,
  kAllocArena,
  kArenaView,
  kMakeTuple,
  kArenaTensor,
  kArenaTensors
};

// How ArenaProgram makes its views.
enum class Views { kArenaView, kArenaTensor, kArenaTensors };
const Views kAllViews[] = {Views::kArenaView, Views::kArenaTensor, Views::kArenaTensors};
const char* ViewsName(Views v) {
  return v == Views::kArenaView ? "arena_view" : v == Views::kArenaTensor ? "arena_tensor" : "arena_tensors";
}

// main(x: float32[n, 4], y: float32[n, 4]) -> (r, t, u, v), with t, u, v of
// n * 16 bytes each in a call-time arena:
//   t = x + y    lives [1, 2]
//   u = t + y    lives [2, 4]
//   v = u + x    lives [3, 4]  (t is dead: v may take its bytes)
//   r = v + u    a fresh result: 3x + 4y
// `view_size` >= 0: t's view is told it has that many bytes. `views`: each
// view an arena_view call of the shape register before its kernel, an
// arena_tensor call with the shape (n, 4) as (mode, value) pairs, or all
// three made by one arena_tensors call after alloc_arena.
VmfbProgram ArenaProgram(int64_t view_size = -1, Views views = Views::kArenaView) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.alloc_arena"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.arena_view"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.make_tuple"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.arena_tensor"});
  p.callables.push_back(CallableInfo{CallableKind::kBuiltin, "vm.builtin.arena_tensors"});
  compiler::FunctionInfo& f = p.functions[0];
  f.register_count = 9;
  f.shape_heap_size = 5;  // n, n * 16, three offsets
  Assembler a;
  a.Call(-1, testing::kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, testing::kCheckTensor, {Reg(1), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(1)});
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});
  a.Call(-1, testing::kMatchShape, {Reg(1), Const(1), Imm(2), Imm(2), Imm(0), Imm(0), Imm(4)});
  a.Call(2, testing::kMakeShape, {Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});  // (n, 4)
  a.Call(-1, kShapeArith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(16)});  // heap[1] = n * 16
  a.Call(3, kAllocArena,
         {Imm(0), Imm(2), Imm(3), Imm(1), Imm(1), Imm(1), Imm(2), Imm(1), Imm(1), Imm(2), Imm(4), Imm(1), Imm(1),
          Imm(3), Imm(4)});
  std::vector<int64_t> t_size = view_size >= 0 ? std::vector<int64_t>{Imm(0), Imm(view_size)}
                                               : std::vector<int64_t>{Imm(1), Imm(1)};
  std::vector<int64_t> batch = {Reg(3)};
  auto view = [&](int64_t reg, int64_t offset_slot, int64_t size_mode, int64_t size) {
    if (views == Views::kArenaTensors) {
      batch.insert(batch.end(), {Imm(reg), Imm(offset_slot), size_mode, size, Imm(2), Imm(kDLFloat), Imm(32), Imm(1),
                                 Imm(1), Imm(0), Imm(0), Imm(4)});
    } else if (views == Views::kArenaTensor) {
      a.Call(reg, kArenaTensor, {Reg(3), Imm(offset_slot), size_mode, size, Imm(2), Imm(kDLFloat), Imm(32), Imm(1),
                                 Imm(1), Imm(0), Imm(0), Imm(4)});
    } else {
      a.Call(reg, kArenaView, {Reg(3), Imm(offset_slot), size_mode, size, Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
    }
  };
  view(4, 2, t_size[0], t_size[1]);
  if (views == Views::kArenaTensors) {
    view(5, 3, Imm(1), Imm(1));
    view(6, 4, Imm(1), Imm(1));
    a.Call(-1, kArenaTensors, batch);
  }
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(4)});
  if (views != Views::kArenaTensors) view(5, 3, Imm(1), Imm(1));
  a.Call(-1, testing::kTestAdd, {Reg(4), Reg(1), Reg(5)});
  if (views != Views::kArenaTensors) view(6, 4, Imm(1), Imm(1));
  a.Call(-1, testing::kTestAdd, {Reg(5), Reg(0), Reg(6)});
  a.Call(7, testing::kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, testing::kTestAdd, {Reg(6), Reg(5), Reg(7)});
  a.Call(8, kMakeTuple, {Reg(7), Reg(4), Reg(5), Reg(6)});
  a.Ret(8);
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

TEST(VmCallTimeArenaTest, BuffersGetFirstFitOffsetsForTheCallsSizes) {
  for (Views views : kAllViews) {
    SCOPED_TRACE(ViewsName(views));
    auto m = MustLoad(ArenaProgram(-1, views));
    ASSERT_TRUE(m);
    auto ctx = m->CreateContext();
    for (int64_t n : {3, 5, 3}) {
      Call c = RunMain(ctx.get(), n);
      ASSERT_TRUE(c.status.ok()) << c.status.ToString();
      std::vector<float> r = Values(c.out.tuple_fields()[0].tensor());
      for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(r[i], 43.0f * i) << "n=" << n << " i=" << i;
      // t at 0; u after it, 64-byte aligned; v in t's bytes (t died before v).
      const int64_t aligned = (n * 16 + 63) / 64 * 64;
      EXPECT_EQ(Data(c.out, 2) - Data(c.out, 1), aligned) << "n=" << n;
      EXPECT_EQ(Data(c.out, 3), Data(c.out, 1)) << "n=" << n;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(Data(c.out, 1)) % 64, 0u);
    }
  }
}

TEST(VmCallTimeArenaTest, ShapesAlternatingAmongMoreThanTheKeptLayoutsGetTheirOwn) {
  // Four layouts are kept per site, most recent first: cycling among six
  // sizes evicts and lays out again, interleaving 3 and 5 finds them kept.
  // Every call must see the offsets of its own sizes.
  auto m = MustLoad(ArenaProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  for (int64_t n : {1, 2, 3, 4, 5, 6, 1, 2, 3, 5, 3, 5, 6, 3, 4, 1}) {
    Call c = RunMain(ctx.get(), n);
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    std::vector<float> r = Values(c.out.tuple_fields()[0].tensor());
    for (int64_t i = 0; i < n * 4; ++i) ASSERT_EQ(r[i], 43.0f * i) << "n=" << n << " i=" << i;
    EXPECT_EQ(Data(c.out, 2) - Data(c.out, 1), (n * 16 + 63) / 64 * 64) << "n=" << n;
    EXPECT_EQ(Data(c.out, 3), Data(c.out, 1)) << "n=" << n;
  }
}

TEST(VmCallTimeArenaTest, ARepeatedShapeAllocatesNothingAndTheStorageGrowsOnlyWithTheSizes) {
  for (Views views : kAllViews) {
    SCOPED_TRACE(ViewsName(views));
    auto m = MustLoad(ArenaProgram(-1, views));
    ASSERT_TRUE(m);
    auto ctx = m->CreateContext();
    struct Step {
      int64_t n;
      uint64_t allocations;  // the storage when it grows, the result when its shape is new
    };
    for (Step s : {Step{3, 2}, Step{3, 0}, Step{2, 1}, Step{5, 2}, Step{4, 1}, Step{4, 0}}) {
      Call c = RunMain(ctx.get(), s.n);
      ASSERT_TRUE(c.status.ok()) << c.status.ToString();
      EXPECT_EQ(c.allocations, s.allocations) << "n=" << s.n;
    }
    // Another context lays out and keeps its own.
    auto other = m->CreateContext();
    EXPECT_EQ(RunMain(other.get(), 4).allocations, 2u);
    EXPECT_EQ(RunMain(ctx.get(), 4).allocations, 0u);
  }
}

TEST(VmCallTimeArenaTest, ArenaTensorsHandOutLastCallsViewWhenNothingChanged) {
  // A repeated shape gets the very view objects of the last call (once the
  // caller let go of them); a new shape gets new ones at the new offsets.
  for (Views views : {Views::kArenaTensor, Views::kArenaTensors}) {
  SCOPED_TRACE(ViewsName(views));
  auto m = MustLoad(ArenaProgram(-1, views));
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
  Call bigger = RunMain(ctx.get(), 5);
  ASSERT_TRUE(bigger.status.ok()) << bigger.status.ToString();
  EXPECT_EQ(bigger.out.tuple_fields()[1].tensor().shape(), (std::vector<int64_t>{5, 4}));
  std::vector<float> r = Values(bigger.out.tuple_fields()[0].tensor());
  for (int64_t i = 0; i < 20; ++i) ASSERT_EQ(r[i], 43.0f * i) << i;
  }
}

TEST(VmCallTimeArenaTest, ContextsOnThreadsKeepLayoutsOfTheirOwn) {
  // One module, one context per thread, each alternating between shapes of
  // its own: a layout, storage or view shared between contexts would mix
  // results. The views made in one call (arena_tensors) are the most shared.
  auto m = MustLoad(ArenaProgram(-1, Views::kArenaTensors));
  ASSERT_TRUE(m);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      auto ctx = m->CreateContext();
      for (int i = 0; i < 50; ++i) {
        int64_t n = 1 + k + (i % 3) * 4;
        Call c = RunMain(ctx.get(), n);
        if (!c.status.ok()) {
          ++failures[k];
          continue;
        }
        std::vector<float> r = Values(c.out.tuple_fields()[0].tensor());
        for (int64_t j = 0; j < n * 4; ++j) failures[k] += r[j] != 43.0f * j;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(failures[k], 0) << "thread " << k;
}

TEST(VmCallTimeArenaTest, AViewLargerThanItsPlaceIsRefused) {
  for (Views views : kAllViews) {
    auto m = MustLoad(ArenaProgram(/*view_size=*/16, views));
    ASSERT_TRUE(m);
    Call c = RunMain(m->CreateContext().get(), 3);
    EXPECT_EQ(c.status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status.message(),
              "main: a float32[3, 4] tensor does not fit the 16 bytes the call-time arena laid out for it")
        << ViewsName(views);
  }
}

Status LoadWithCode(const std::vector<int64_t>& code) {
  VmfbProgram p = ArenaProgram();
  p.functions[0].code = code;
  auto m = testing::Load(testing::Serialize(p));
  return m.ok() ? Status::Ok() : m.status();
}

TEST(VmCallTimeArenaTest, VerifierChecksArenaOperands) {
  struct Case {
    int64_t callable;
    std::vector<int64_t> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {kAllocArena, {Imm(0), Imm(2)}, "vm.builtin.alloc_arena takes at least 3 arguments"},
      {kAllocArena, {Imm(65536), Imm(2), Imm(0)}, "storage index is 65536, outside [0, 65535]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(2), Imm(0), Imm(64), Imm(1), Imm(1)}, "buffer count is 2, outside [0, 1]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(64), Imm(1), Imm(1), Imm(0)},
       "vm.builtin.alloc_arena takes 7 arguments, got 8"},
      {kAllocArena, {Imm(0), Imm(5), Imm(1), Imm(0), Imm(64), Imm(1), Imm(1)}, "destination slot is 5, outside [0, 4]"},
      {kAllocArena, {Imm(0), Imm(4), Imm(2), Imm(0), Imm(64), Imm(1), Imm(1), Imm(0), Imm(64), Imm(1), Imm(1)},
       "destination slot is 4, outside [0, 3]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(2), Imm(64), Imm(1), Imm(1)}, "mode is 2, outside [0, 1]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(1), Imm(5), Imm(1), Imm(1)}, "shape-heap slot is 5, outside [0, 4]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(-1), Imm(1), Imm(1)},
       "size is -1, outside [0, 36028797018963967]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(64), Imm(3), Imm(2)},
       "last position is 2, outside [3, 36028797018963967]"},
      {kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(64), Reg(0), Imm(2)}, "first position must be an immediate"},
      {kArenaView, {Reg(3), Imm(2), Imm(1), Imm(1), Reg(2), Imm(2), Imm(32)},
       "vm.builtin.arena_view takes 8 arguments, got 7"},
      {kArenaView, {Reg(3), Imm(5), Imm(1), Imm(1), Reg(2), Imm(2), Imm(32), Imm(1)}, "offset slot is 5, outside [0, 4]"},
      {kArenaView, {Reg(3), Imm(2), Imm(0), Imm(-64), Reg(2), Imm(2), Imm(32), Imm(1)},
       "size is -64, outside [0, 36028797018963967]"},
      {kArenaView, {Reg(3), Imm(2), Imm(1), Imm(1), Reg(2), Imm(2), Imm(32), Imm(0)},
       "dtype lanes is 0, outside [1, 64]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32)},
       "vm.builtin.arena_tensor takes at least 8 arguments"},
      {kArenaTensor, {Reg(3), Imm(5), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32), Imm(1)},
       "offset slot is 5, outside [0, 4]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(0), Imm(-64), Imm(0), Imm(2), Imm(32), Imm(1)},
       "size is -64, outside [0, 36028797018963967]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(65), Imm(2), Imm(32), Imm(1)},
       "ndim is 65, outside [0, 64]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Reg(2), Imm(2), Imm(32), Imm(1)}, "ndim must be an immediate"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1)},
       "vm.builtin.arena_tensor takes 10 arguments, got 8"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4), Imm(0)},
       "vm.builtin.arena_tensor takes 10 arguments, got 11"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(5), Imm(32), Imm(1), Imm(0), Imm(4)},
       "dtype code is 5, outside [0, 4]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(2), Imm(4)},
       "mode is 2, outside [0, 1]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(1), Imm(5)},
       "shape-heap slot is 5, outside [0, 4]"},
      {kArenaTensor, {Reg(3), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Reg(0), Imm(4)},
       "mode must be an immediate"},
      {kArenaTensors, {}, "vm.builtin.arena_tensors takes at least 1 argument"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32)},
       "vm.builtin.arena_tensors: a view at argument 1 needs at least 8 arguments, got 7"},
      {kArenaTensors, {Reg(3), Imm(9), Imm(2), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32), Imm(1)},
       "destination register is 9, outside [0, 8]"},
      {kArenaTensors, {Reg(3), Reg(4), Imm(2), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32), Imm(1)},
       "destination register must be an immediate"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(5), Imm(1), Imm(1), Imm(0), Imm(2), Imm(32), Imm(1)},
       "offset slot is 5, outside [0, 4]"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(65), Imm(2), Imm(32), Imm(1)},
       "ndim is 65, outside [0, 64]"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(2), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)},
       "vm.builtin.arena_tensors: a view at argument 1 needs 12 arguments, got 10"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4),
                       Imm(5), Imm(3), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32)},
       "vm.builtin.arena_tensors: a view at argument 11 needs at least 8 arguments, got 7"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4),
                       Imm(5), Imm(3), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(0), Imm(0), Imm(4)},
       "dtype lanes is 0, outside [1, 64]"},
      {kArenaTensors, {Reg(3), Imm(4), Imm(2), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(1), Imm(7)},
       "shape-heap slot is 7, outside [0, 4]"},
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

TEST(VmCallTimeArenaTest, RunTimeErrors) {
  auto run = [](const std::vector<int64_t>& code) {
    VmfbProgram p = ArenaProgram();
    p.functions[0].code = code;
    auto m = MustLoad(p);
    if (!m) return Internal("not loaded");
    Any out;
    std::vector<Any> args = {Any(), Any()};
    return m->CreateContext()->Invoke("main", args, &out);
  };
  for (bool negative_shape : {false, true}) {
    // A size computed for an if/else branch that does not run may be
    // negative: that buffer gets no bytes, the call goes on, and a tensor
    // placed there is refused.
    Assembler a;
    a.Call(-1, kShapeArith, {Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Imm(8)});  // heap[1] = 0 - 8
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(2), Imm(0), Imm(64), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1)});
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(4, kArenaView, {Reg(3), Imm(2), Imm(0), Imm(64), Reg(2), Imm(2), Imm(32), Imm(1)});  // buffer 0: fine
    if (negative_shape) a.Call(2, testing::kMakeShape, {Imm(1), Imm(1), Imm(1)});  // (-8)
    a.Call(5, kArenaView, {Reg(3), Imm(3), Imm(1), Imm(1), Reg(2), Imm(2), Imm(32), Imm(1)});
    a.Ret(5);
    EXPECT_EQ(run(a.Finish()).message(),
              negative_shape ? "main: vm.builtin.arena_view: cannot allocate a float32[-8] tensor"
                             : "main: a float32[4] tensor does not fit the 0 bytes the call-time arena laid out for it");
  }
  for (bool bad_storage : {true, false}) {
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(64), Imm(1), Imm(1)});
    if (bad_storage) {
      a.Call(4, kArenaView, {Reg(2), Imm(2), Imm(0), Imm(64), Reg(2), Imm(2), Imm(32), Imm(1)});
    } else {
      a.Call(4, kArenaView, {Reg(3), Imm(2), Imm(0), Imm(64), Reg(3), Imm(2), Imm(32), Imm(1)});
    }
    a.Ret(4);
    EXPECT_EQ(run(a.Finish()).message(), bad_storage
                                             ? "main: vm.builtin.arena_view: expected a storage, got shape [4]"
                                             : "main: vm.builtin.arena_view: expected a shape, got tensor uint8[64]");
  }
  for (bool negative_shape : {false, true}) {
    // arena_tensor: the same refusals as arena_view, its shape read from the heap.
    Assembler a;
    a.Call(-1, kShapeArith, {Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Imm(8)});  // heap[1] = 0 - 8
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(2), Imm(0), Imm(64), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1)});
    a.Call(4, kArenaTensor, {Reg(3), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)});
    if (negative_shape) {
      a.Call(5, kArenaTensor, {Reg(3), Imm(2), Imm(0), Imm(64), Imm(2), Imm(2), Imm(32), Imm(1), Imm(0), Imm(2),
                               Imm(1), Imm(1)});  // (2, -8)
    } else {
      a.Call(5, kArenaTensor, {Reg(3), Imm(3), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)});
    }
    a.Ret(5);
    EXPECT_EQ(run(a.Finish()).message(),
              negative_shape ? "main: vm.builtin.arena_tensor: cannot allocate a float32[2, -8] tensor"
                             : "main: a float32[4] tensor does not fit the 0 bytes the call-time arena laid out for it");
  }
  {
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(4, kArenaTensor, {Reg(2), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)});
    a.Ret(4);
    EXPECT_EQ(run(a.Finish()).message(), "main: vm.builtin.arena_tensor: expected a storage, got shape [4]");
  }
  {
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(-1, kArenaTensors,
           {Reg(2), Imm(4), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)});
    a.Ret(4);
    EXPECT_EQ(run(a.Finish()).message(), "main: vm.builtin.arena_tensors: expected a storage, got shape [4]");
  }
  for (bool negative_shape : {false, true}) {
    // arena_tensors: the first view that does not fit fails the call.
    Assembler a;
    a.Call(-1, kShapeArith, {Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Imm(8)});  // heap[1] = 0 - 8
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(2), Imm(0), Imm(64), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1), Imm(1)});
    std::vector<int64_t> batch = {Reg(3), Imm(4), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0),
                                  Imm(4)};
    if (negative_shape) {
      batch.insert(batch.end(), {Imm(5), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(1), Imm(1)});
    } else {
      batch.insert(batch.end(), {Imm(5), Imm(3), Imm(1), Imm(1), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(4)});
    }
    a.Call(-1, kArenaTensors, batch);
    a.Ret(5);
    EXPECT_EQ(run(a.Finish()).message(),
              negative_shape ? "main: vm.builtin.arena_tensors: cannot allocate a float32[-8] tensor"
                             : "main: a float32[4] tensor does not fit the 0 bytes the call-time arena laid out for it");
  }
  {
    // A view written over the storage's own register: the views after it
    // are still of the storage (the builtin holds it), never of that view.
    Assembler a;
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(2), Imm(0), Imm(64), Imm(0), Imm(0), Imm(0), Imm(128), Imm(0), Imm(0)});
    a.Call(-1, kArenaTensors,
           {Reg(3), Imm(3), Imm(2), Imm(0), Imm(64), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(16),  //
            Imm(4), Imm(3), Imm(0), Imm(128), Imm(1), Imm(2), Imm(32), Imm(1), Imm(0), Imm(32)});
    a.Ret(4);
    EXPECT_TRUE(run(a.Finish()).ok());
  }
  {
    // An offset slot alloc_arena never wrote (a corrupt program): refused,
    // never a view outside the storage.
    Assembler a;
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(0), Imm(4)});
    a.Call(-1, kShapeArith, {Imm(4), Imm(1), Imm(0), Imm(0), Imm(0), Imm(64)});  // heap[4] = -64
    a.Call(3, kAllocArena, {Imm(0), Imm(2), Imm(1), Imm(0), Imm(64), Imm(1), Imm(1)});
    a.Call(5, kArenaView, {Reg(3), Imm(4), Imm(0), Imm(64), Reg(2), Imm(2), Imm(32), Imm(1)});
    a.Ret(5);
    EXPECT_EQ(run(a.Finish()).message(),
              "main: a float32[4] tensor does not fit the 0 bytes the call-time arena laid out for it");
  }
}

}  // namespace
}  // namespace kiln
