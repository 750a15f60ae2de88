// The bytecode verifier rejects malformed code at load, with a message that
// names the function and word.
#include <gtest/gtest.h>

#include "tests/vm/test_util.h"
#include "vm/assembler.h"
#include "vm/opcodes.h"

namespace kiln {
namespace {

using compiler::VmfbProgram;
using vm::Assembler;
using vm::Const;
using vm::Imm;
using vm::Reg;

Status LoadWithCode(const std::vector<int64_t>& code, uint32_t registers = 4) {
  VmfbProgram p = testing::AddProgram();
  p.functions[0].code = code;
  p.functions[0].register_count = registers;
  auto m = testing::Load(testing::Serialize(p));
  return m.ok() ? Status::Ok() : m.status();
}

void ExpectRejected(const std::vector<int64_t>& code, const std::string& message, uint32_t registers = 4) {
  Status s = LoadWithCode(code, registers);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

TEST(VerifierTest, AcceptsTheReferenceProgram) { EXPECT_TRUE(LoadWithCode(testing::AddProgram().functions[0].code).ok()); }

TEST(VerifierTest, RegisterOutOfRange) {
  Assembler a;
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(9)});
  a.Ret(0);
  ExpectRejected(a.Finish(), "corrupt bytecode in function 'main' at word 6: register 9 out of range (4 registers)");
  Assembler b;
  b.Ret(4);
  ExpectRejected(b.Finish(), "corrupt bytecode in function 'main' at word 0: register 4 out of range (4 registers)");
}

TEST(VerifierTest, JumpOutOfFunction) {
  ExpectRejected({static_cast<int64_t>(vm::Opcode::kGoto), 40},
                 "corrupt bytecode in function 'main' at word 0: jump to word 40, outside the function or not on an "
                 "instruction boundary");
  ExpectRejected({static_cast<int64_t>(vm::Opcode::kGoto), -1},
                 "corrupt bytecode in function 'main' at word 0: jump to word -1, outside the function or not on an "
                 "instruction boundary");
}

TEST(VerifierTest, JumpIntoTheMiddleOfAnInstruction) {
  // If r0 else goto word 4, which is the operand of the Ret at word 3.
  ExpectRejected({static_cast<int64_t>(vm::Opcode::kIf), 0, 4, static_cast<int64_t>(vm::Opcode::kRet), 0},
                 "corrupt bytecode in function 'main' at word 0: jump to word 4, outside the function or not on an "
                 "instruction boundary");
}

TEST(VerifierTest, BadCallableIndex) {
  Assembler a;
  a.Call(-1, 42, {});
  a.Ret(0);
  ExpectRejected(a.Finish(), "corrupt bytecode in function 'main' at word 0: callable 42 out of range (5 callables)");
}

TEST(VerifierTest, BadConstantIndexAndArgKind) {
  Assembler a;
  a.Call(-1, testing::kTestAdd, {Const(5)});
  a.Ret(0);
  ExpectRejected(a.Finish(), "corrupt bytecode in function 'main' at word 4: constant 5 out of range (2 constants)");
  Assembler b;
  b.Call(-1, testing::kTestAdd, {vm::EncodeArg(static_cast<vm::ArgKind>(9), 0)});
  b.Ret(0);
  ExpectRejected(b.Finish(), "corrupt bytecode in function 'main' at word 4: argument word of unknown kind 9");
}

TEST(VerifierTest, UnknownOpcodeCutOffCodeAndFallThrough) {
  ExpectRejected({99}, "corrupt bytecode in function 'main' at word 0: unknown opcode 99");
  ExpectRejected({static_cast<int64_t>(vm::Opcode::kCall), -1, 0, 3, Reg(0)},
                 "corrupt bytecode in function 'main' at word 0: Call has 3 arguments but 1 words remain");
  Assembler a;
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1), Reg(2)});
  ExpectRejected(a.Finish(),
                 "corrupt bytecode in function 'main' at word 6: the last instruction may fall off the end of the "
                 "function");
  ExpectRejected({}, "corrupt bytecode in function 'main' at word 0: the function has no code");
}

TEST(VerifierTest, BuiltinOperands) {
  Assembler a;
  a.Call(-1, testing::kCheckTensor, {Reg(0), Imm(2)});
  a.Ret(0);
  ExpectRejected(a.Finish(),
                 "corrupt bytecode in function 'main' at word 0: vm.builtin.check_tensor takes 6 arguments, got 2");
  Assembler b;  // heap slot 3 in a 1-slot heap
  b.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(3)});
  b.Ret(0);
  ExpectRejected(b.Finish(), "corrupt bytecode in function 'main' at word 0: shape-heap slot is 3, outside [0, 0]");
  Assembler c;  // the context must be a string constant
  c.Call(-1, testing::kMatchShape, {Reg(0), Imm(0), Imm(0)});
  c.Ret(0);
  ExpectRejected(c.Finish(), "corrupt bytecode in function 'main' at word 0: the context must be a string constant");
  Assembler d;  // ndim 2 needs 4 more words
  d.Call(2, testing::kMakeShape, {Imm(2), Imm(0), Imm(1)});
  d.Ret(2);
  ExpectRejected(d.Finish(),
                 "corrupt bytecode in function 'main' at word 0: vm.builtin.make_shape takes 5 arguments, got 3");
}

TEST(VerifierTest, RaiseTakesOneStringConstant) {
  auto load = [](const std::vector<int64_t>& args) {
    VmfbProgram p = testing::AddProgram();
    p.callables.push_back({compiler::CallableKind::kBuiltin, "vm.builtin.raise", 0});
    Assembler a;
    a.Call(-1, static_cast<int64_t>(p.callables.size() - 1), args);
    a.Ret(0);
    p.functions[0].code = a.Finish();
    auto m = testing::Load(testing::Serialize(p));
    return m.ok() ? Status::Ok() : m.status();
  };
  EXPECT_TRUE(load({Const(0)}).ok());
  EXPECT_EQ(load({Imm(0)}).message(), "corrupt bytecode in function 'main' at word 0: the message must be a string constant");
  EXPECT_EQ(load({Const(0), Const(1)}).message(),
            "corrupt bytecode in function 'main' at word 0: vm.builtin.raise takes 1 arguments, got 2");
}

// shape_arith: one or more groups of (dst, op, a_mode, a, b_mode, b).
TEST(VerifierTest, ShapeArithTakesGroupsOfSix) {
  auto load = [](const std::vector<int64_t>& args) {
    VmfbProgram p = testing::AddProgram();
    p.functions[0].shape_heap_size = 3;
    p.callables.push_back({compiler::CallableKind::kBuiltin, "vm.builtin.shape_arith", 0});
    Assembler a;
    a.Call(-1, static_cast<int64_t>(p.callables.size() - 1), args);
    a.Ret(0);
    p.functions[0].code = a.Finish();
    auto m = testing::Load(testing::Serialize(p));
    return m.ok() ? Status::Ok() : m.status();
  };
  EXPECT_TRUE(load({Imm(1), Imm(0), Imm(0), Imm(2), Imm(0), Imm(3), Imm(2), Imm(2), Imm(1), Imm(1), Imm(0), Imm(4)}).ok());
  EXPECT_EQ(load({Imm(1), Imm(0), Imm(0), Imm(2), Imm(0), Imm(3), Imm(2)}).message(),
            "corrupt bytecode in function 'main' at word 0: vm.builtin.shape_arith takes groups of 6 arguments, got 7");
  // The second group's destination is outside the heap.
  EXPECT_EQ(load({Imm(1), Imm(0), Imm(0), Imm(2), Imm(0), Imm(3), Imm(3), Imm(2), Imm(1), Imm(1), Imm(0), Imm(4)}).message(),
            "corrupt bytecode in function 'main' at word 0: destination slot is 3, outside [0, 2]");
}

// match_shape_explained: match_shape's operands, then one string constant
// per dimension.
TEST(VerifierTest, MatchShapeExplainedTakesOneMessagePerDimension) {
  auto load = [](const std::vector<int64_t>& args) {
    VmfbProgram p = testing::AddProgram();
    p.callables.push_back({compiler::CallableKind::kBuiltin, "vm.builtin.match_shape_explained", 0});
    Assembler a;
    a.Call(-1, static_cast<int64_t>(p.callables.size() - 1), args);
    a.Ret(0);
    p.functions[0].code = a.Finish();
    auto m = testing::Load(testing::Serialize(p));
    return m.ok() ? Status::Ok() : m.status();
  };
  EXPECT_TRUE(load({Reg(0), Const(0), Imm(1), Imm(1), Imm(0), Const(0)}).ok());
  EXPECT_EQ(load({Reg(0), Const(0), Imm(1), Imm(1), Imm(0), Imm(0)}).message(),
            "corrupt bytecode in function 'main' at word 0: a message must be a string constant");
  EXPECT_EQ(load({Reg(0), Const(0), Imm(1), Imm(1), Imm(0)}).message(),
            "corrupt bytecode in function 'main' at word 0: vm.builtin.match_shape_explained takes 6 arguments, got 5");
}

TEST(VerifierTest, ParametersNeedRegisters) {
  Assembler a;
  a.Ret(0);
  ExpectRejected(a.Finish(), "corrupt bytecode in function 'main' at word 0: 2 parameters but only 1 registers", 1);
}

TEST(VerifierTest, FunctionCallArgumentCount) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back({compiler::CallableKind::kFunction, "main", 0});
  Assembler a;
  a.Call(2, static_cast<int64_t>(p.callables.size() - 1), {Reg(0)});
  a.Ret(2);
  p.functions[0].code = a.Finish();
  auto m = testing::Load(testing::Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "corrupt bytecode in function 'main' at word 0: call to 'main' passes 1 arguments; it takes 2");
}

}  // namespace
}  // namespace kiln
