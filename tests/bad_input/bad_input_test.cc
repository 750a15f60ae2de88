// Bad input through the C++ API (issue 5 §6): every mistake a caller can make
// gets a clear Status with context, and the same loaded module (and the same
// call context) then runs a correct call and gets the right answer.
//
// The module is tests/vm's AddProgram: main(x: float32[n, 4], y: float32[n, 4])
// with `n` bound from x and checked against y, written with the .vmfb writer,
// so this suite runs in the runtime-only build too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/registry.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"
#include "vm/module.h"

namespace kiln {
namespace {

using testing::F32;
using testing::Values;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = testing::Load(testing::Serialize(testing::AddProgram()));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(m).value();
    context_ = module_->CreateContext();
  }

  // A correct call on the same module and context: proves the failed call
  // left both usable.
  void ExpectStillWorks() {
    Any out;
    std::vector<Any> args = {F32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), F32({2, 4}, std::vector<float>(8, 10))};
    Status s = context_->Invoke("main", args, &out);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(Values(out.tensor()), (std::vector<float>{11, 12, 13, 14, 15, 16, 17, 18}));
    // A fresh context too.
    Any out2;
    ASSERT_TRUE(module_->CreateContext()->Invoke("main", args, &out2).ok());
    EXPECT_EQ(Values(out2.tensor()), Values(out.tensor()));
  }

  Status Call(std::vector<Any> args, const std::string& function = "main") {
    Any out;
    return context_->Invoke(function, args, &out);
  }

  std::shared_ptr<const vm::Module> module_;
  std::unique_ptr<vm::Context> context_;
};

// Substring match, with the whole message on failure.
#define EXPECT_STATUS(status, want_code, want_text)                                                    \
  do {                                                                                                \
    Status s_ = (status);                                                                             \
    EXPECT_EQ(s_.code(), (want_code)) << s_.ToString();                                               \
    EXPECT_NE(s_.message().find(want_text), std::string::npos) << "message: " << s_.message();        \
  } while (0)

Tensor Int32Tensor(std::vector<int64_t> shape) { return Tensor::Empty(shape, DType::Int32()).value(); }

TEST_F(BadInputTest, WrongDtype) {
  EXPECT_STATUS(Call({Int32Tensor({2, 4}), F32({2, 4}, std::vector<float>(8, 0))}), StatusCode::kInvalidArgument,
                "main: argument x");
  EXPECT_STATUS(Call({Int32Tensor({2, 4}), F32({2, 4}, std::vector<float>(8, 0))}), StatusCode::kInvalidArgument,
                "int32");
  ExpectStillWorks();
}

TEST_F(BadInputTest, WrongRank) {
  EXPECT_STATUS(Call({F32({8}, std::vector<float>(8, 0)), F32({2, 4}, std::vector<float>(8, 0))}),
                StatusCode::kInvalidArgument, "main: argument x");
  EXPECT_STATUS(Call({F32({2, 4}, std::vector<float>(8, 0)), F32({1, 2, 4}, std::vector<float>(8, 0))}),
                StatusCode::kInvalidArgument, "main: argument y");
  ExpectStillWorks();
}

TEST_F(BadInputTest, WrongDimension) {
  // The second dimension is the constant 4.
  Status s = Call({F32({2, 5}, std::vector<float>(10, 0)), F32({2, 4}, std::vector<float>(8, 0))});
  EXPECT_STATUS(s, StatusCode::kInvalidArgument, "main: argument x");
  EXPECT_NE(s.message().find("dimension 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("5"), std::string::npos) << s.message();
  ExpectStillWorks();
}

TEST_F(BadInputTest, SymbolicDimensionConflictBetweenArguments) {
  // n = 2 from x, 3 from y.
  Status s = Call({F32({2, 4}, std::vector<float>(8, 0)), F32({3, 4}, std::vector<float>(12, 0))});
  EXPECT_STATUS(s, StatusCode::kInvalidArgument, "main: argument y");
  EXPECT_NE(s.message().find("dimension 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("3"), std::string::npos) << s.message();
  ExpectStillWorks();
}

TEST_F(BadInputTest, WrongNumberOfArguments) {
  EXPECT_STATUS(Call({F32({2, 4}, std::vector<float>(8, 0))}), StatusCode::kInvalidArgument, "main");
  EXPECT_STATUS(Call({}), StatusCode::kInvalidArgument, "main");
  std::vector<Any> three = {F32({2, 4}, std::vector<float>(8, 0)), F32({2, 4}, std::vector<float>(8, 0)),
                            F32({2, 4}, std::vector<float>(8, 0))};
  EXPECT_STATUS(Call(three), StatusCode::kInvalidArgument, "main");
  ExpectStillWorks();
}

TEST_F(BadInputTest, NotATensor) {
  EXPECT_STATUS(Call({Any(int64_t{3}), F32({2, 4}, std::vector<float>(8, 0))}), StatusCode::kInvalidArgument,
                "main: argument x");
  EXPECT_FALSE(Call({Any(), Any()}).ok());
  ExpectStillWorks();
}

TEST_F(BadInputTest, UnknownFunctionName) {
  EXPECT_STATUS(Call({}, "mian"), StatusCode::kNotFound, "no function named 'mian'");
  EXPECT_STATUS(Call({}, ""), StatusCode::kNotFound, "no function named ''");
  EXPECT_EQ(module_->GetSignature("mian").status().code(), StatusCode::kNotFound);
  ExpectStillWorks();
}

TEST_F(BadInputTest, NullResultPointer) {
  // Either discards the result or refuses; never writes through nullptr.
  std::vector<Any> args = {F32({2, 4}, std::vector<float>(8, 0)), F32({2, 4}, std::vector<float>(8, 0))};
  Status s = context_->Invoke("main", args, nullptr);
  EXPECT_TRUE(s.ok() || s.code() == StatusCode::kInvalidArgument) << s.ToString();
  ExpectStillWorks();
}

TEST_F(BadInputTest, HugeSymbolicShapeIsRefusedBeforeAllocating) {
  // n = 2^50 makes the result 2^54 bytes: more than any address space. The
  // inputs only claim that shape (the call fails before reading them).
  std::vector<float> small(8, 0);
  int64_t n = int64_t{1} << 50;
  Tensor x = Tensor::Borrow(small.data(), {n, 4}, DType::Float32(), nullptr);
  Tensor y = Tensor::Borrow(small.data(), {n, 4}, DType::Float32(), nullptr);
  Status s = Call({x, y});
  EXPECT_TRUE(s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kResourceExhausted)
      << s.ToString();
  EXPECT_NE(s.message().find("main: vm.builtin.alloc_tensor: cannot allocate a float32[1125899906842624, 4]"),
            std::string::npos)
      << s.message();
  ExpectStillWorks();
}

// Refuses any allocation over `cap` bytes, as an exhausted server allocator would.
class CappedAllocator final : public Allocator {
 public:
  explicit CappedAllocator(size_t cap) : cap_(cap) {}
  void* Allocate(size_t nbytes, size_t alignment) override {
    if (nbytes > cap_) {
      ++refused_;
      return nullptr;
    }
    return DefaultCpuAllocator()->Allocate(nbytes, alignment);
  }
  void Free(void* ptr) override { DefaultCpuAllocator()->Free(ptr); }
  std::string Describe() const override { return "capped test allocator"; }
  int refused() const { return refused_; }

 private:
  size_t cap_;
  int refused_ = 0;
};

TEST(BadInputAllocatorTest, AnAllocatorThatRunsOutLeavesTheContextUsable) {
  auto m = testing::Load(testing::Serialize(testing::AddProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CappedAllocator allocator(1 << 20);
  vm::ContextOptions options;
  options.allocator = &allocator;
  auto ctx = (*m)->CreateContext(options);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  // n = 131072: the 2 MiB result does not fit under the 1 MiB cap.
  int64_t n = 131072;
  std::vector<Any> big = {F32({n, 4}, std::vector<float>(n * 4, 1)), F32({n, 4}, std::vector<float>(n * 4, 2))};
  Any out;
  Status s = (*ctx)->Invoke("main", big, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("capped test allocator"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("alloc_tensor"), std::string::npos) << s.message();
  EXPECT_GE(allocator.refused(), 1);
  // The same context, a call that fits.
  std::vector<Any> small = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
  ASSERT_TRUE((*ctx)->Invoke("main", small, &out).ok());
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5}));
  out = Any();  // freed through the allocator before it goes away
}

// A packed function that fails when the first input element is negative.
void RegisterFailingAdd() {
  static bool done = [] {
    Status s = RegisterGlobalFunction("bad_input.add_or_fail", [](Span<const Any> args, Any*) -> Status {
      if (args.size() != 3) return InvalidArgument("bad_input.add_or_fail takes 3 arguments");
      KILN_ASSIGN_OR_RETURN(Tensor a, args[0].AsTensor());
      KILN_ASSIGN_OR_RETURN(Tensor b, args[1].AsTensor());
      KILN_ASSIGN_OR_RETURN(Tensor c, args[2].AsTensor());
      if (a.data<float>()[0] < 0) return FailedPrecondition("bad_input.add_or_fail: negative input");
      for (int64_t i = 0; i < c.NumElements(); ++i) c.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
      return Status::Ok();
    });
    return s.ok();
  }();
  ASSERT_TRUE(done);
}

TEST(BadInputPackedTest, AFailingPackedFunctionLeavesTheModuleUsable) {
  RegisterFailingAdd();
  compiler::VmfbProgram p = testing::AddProgram();
  p.callables[testing::kTestAdd].name = "bad_input.add_or_fail";
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::unique_ptr<vm::Context> ctx = (*m)->CreateContext();
  Any out;
  std::vector<Any> bad = {F32({1, 4}, {-1, 0, 0, 0}), F32({1, 4}, {1, 1, 1, 1})};
  Status s = ctx->Invoke("main", bad, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("bad_input.add_or_fail: negative input"), std::string::npos) << s.message();
  std::vector<Any> good = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
  ASSERT_TRUE(ctx->Invoke("main", good, &out).ok());
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5}));
}

}  // namespace
}  // namespace kiln
