// vm.builtin.tensor_to_shape and vm.builtin.shape_to_tensor in hand-assembled
// programs: a shape read from a tensor, its entries bound by match_shape,
// and a shape written back as a tensor; the errors that name the value.
#include <gtest/gtest.h>

#include "runtime/program.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::FunctionInfo;
using compiler::VmfbProgram;
using vm::Assembler;
using vm::Const;
using vm::Imm;
using vm::Reg;

// f(t) = shape_to_tensor(make_shape([a + 1, b])) where [a, b] = tensor_to_shape(t).
VmfbProgram RoundTripProgram() {
  VmfbProgram p;
  p.constants = {testing::StringConstant("f: the shape operand t")};
  p.callables = {{CallableKind::kBuiltin, "vm.builtin.tensor_to_shape"},
                 {CallableKind::kBuiltin, "vm.builtin.match_shape"},
                 {CallableKind::kBuiltin, "vm.builtin.shape_arith"},
                 {CallableKind::kBuiltin, "vm.builtin.make_shape"},
                 {CallableKind::kBuiltin, "vm.builtin.shape_to_tensor"}};
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 4;
  f.shape_heap_size = 3;
  Assembler a;
  a.Call(1, 0, {Reg(0), Const(0)});
  a.Call(-1, 1, {Reg(1), Const(0), Imm(2), Imm(1), Imm(0), Imm(1), Imm(1)});  // heap[0] = a, heap[1] = b
  a.Call(-1, 2, {Imm(2), Imm(0), Imm(1), Imm(0), Imm(0), Imm(1)});            // heap[2] = a + 1
  a.Call(2, 3, {Imm(2), Imm(1), Imm(2), Imm(1), Imm(1)});                    // shape [heap[2], heap[1]]
  a.Call(3, 4, {Reg(2)});
  a.Ret(3);
  f.code = a.Finish();
  p.functions.push_back(f);
  return p;
}

Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  Tensor t = Tensor::Empty(shape, DType::Int64()).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

TEST(ShapeValueBuiltins, TensorToShapeAndBack) {
  auto m = testing::Load(testing::Serialize(RoundTripProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ctx = m.value()->CreateContext();
  for (int64_t a : {-3, 0, 41}) {
    Any out;
    std::vector<Any> args = {I64({2}, {a, 7})};
    ASSERT_TRUE(ctx->Invoke("f", args, &out).ok());
    ASSERT_TRUE(out.is_tensor());
    EXPECT_EQ(out.tensor().shape(), (std::vector<int64_t>{2}));
    EXPECT_EQ(out.tensor().dtype(), DType::Int64());
    EXPECT_EQ(out.tensor().data<int64_t>()[0], a + 1);
    EXPECT_EQ(out.tensor().data<int64_t>()[1], 7);
  }
  // int32 tensors are read too.
  Tensor i32 = Tensor::Empty(std::vector<int64_t>{2}, DType::Int32()).value();
  i32.data<int32_t>()[0] = 5;
  i32.data<int32_t>()[1] = 6;
  Any out;
  std::vector<Any> args = {i32};
  ASSERT_TRUE(ctx->Invoke("f", args, &out).ok());
  EXPECT_EQ(out.tensor().data<int64_t>()[0], 6);
}

TEST(ShapeValueBuiltins, ErrorsNameTheValue) {
  auto m = testing::Load(testing::Serialize(RoundTripProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ctx = m.value()->CreateContext();
  Any out;
  std::vector<Any> args = {testing::F32({2}, {1, 2})};
  Status s = ctx->Invoke("f", args, &out);
  EXPECT_EQ(s.message(), "f: the shape operand t: expected a 1-d int64 tensor, got dtype float32");
  args = {I64({1, 2}, {1, 2})};
  s = ctx->Invoke("f", args, &out);
  EXPECT_NE(s.message().find("f: the shape operand t: expected a 1-d int64 tensor, got 2 dimensions"), std::string::npos)
      << s.message();
  args = {Any(int64_t{3})};
  s = ctx->Invoke("f", args, &out);
  EXPECT_NE(s.message().find("f: the shape operand t: expected a 1-d int64 tensor, got "), std::string::npos)
      << s.message();
  // Three values for a shape of two: match_shape reports the rank.
  args = {I64({3}, {1, 2, 3})};
  s = ctx->Invoke("f", args, &out);
  EXPECT_EQ(s.message(), "f: the shape operand t: expected 2 dimensions, got 3");
}

TEST(ShapeValueBuiltins, VerifierChecksTheContextArgument) {
  VmfbProgram p = RoundTripProgram();
  Assembler a;
  a.Call(1, 0, {Reg(0)});  // no context string
  a.Ret(1);
  p.functions[0].code = a.Finish();
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("vm.builtin.tensor_to_shape takes 2 arguments, got 1"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace kiln
