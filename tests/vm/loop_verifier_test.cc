// The verifier's checks of vm.builtin.loop's operands (vm/builtins.def):
// each message fires. The loop's behaviour is tested end to end through the
// ONNX importer (tests/onnx/onnx_loop_e2e_test.cc).
#include <gtest/gtest.h>

#include "tests/vm/test_util.h"
#include "vm/assembler.h"
#include "vm/opcodes.h"

namespace kiln {
namespace {

using compiler::VmfbProgram;
using vm::Assembler;
using vm::CallableArg;
using vm::Imm;
using vm::Reg;

// Loads AddProgram with `args` passed to vm.builtin.loop (callable 5); callable
// 6 is main itself as a function value.
std::string LoadLoop(const std::vector<int64_t>& args) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back({compiler::CallableKind::kBuiltin, "vm.builtin.loop"});
  p.callables.push_back({compiler::CallableKind::kFunction, "main", 0, 2});
  Assembler a;
  a.Call(2, 5, args);
  a.Ret(2);
  p.functions[0].code = a.Finish();
  auto m = testing::Load(testing::Serialize(p));
  return m.ok() ? "ok" : m.status().message();
}

const char kAt[] = "corrupt bytecode in function 'main' at word 0: ";

TEST(LoopVerifierTest, OperandsAreChecked) {
  // main(x, y) as a Scan body over one state and one scan input: well formed.
  EXPECT_EQ(LoadLoop({CallableArg(6), Imm(1), Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Reg(0), Reg(1)}), "ok");
  EXPECT_EQ(LoadLoop({CallableArg(6), Imm(1), Imm(1)}), std::string(kAt) + "vm.builtin.loop takes at least 7 arguments");
  EXPECT_EQ(LoadLoop({CallableArg(4), Imm(1), Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Reg(0), Reg(1)}),
            std::string(kAt) + "the body of vm.builtin.loop must be a bytecode function");
  EXPECT_EQ(LoadLoop({Reg(0), Imm(1), Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Reg(0), Reg(1)}),
            std::string(kAt) + "the body of vm.builtin.loop must be a bytecode function");
  EXPECT_EQ(LoadLoop({CallableArg(6), Imm(8), Imm(1), Imm(1), Imm(0), Imm(0), Imm(0), Reg(0), Reg(1)}),
            std::string(kAt) + "flags is 8, outside [0, 7]");
  EXPECT_EQ(LoadLoop({CallableArg(6), Imm(1), Imm(3), Imm(1), Imm(0), Imm(0), Imm(0), Reg(0), Reg(1)}),
            std::string(kAt) + "vm.builtin.loop: its counts need 11 arguments, got 9");
  // One scan output: its zero shape and dtype words.
  EXPECT_EQ(LoadLoop({CallableArg(6), Imm(1), Imm(1), Imm(1), Imm(1), Imm(0), Imm(0), Reg(0), Imm(9), Imm(32), Imm(1),
                      Reg(0), Reg(1)}),
            std::string(kAt) + "dtype code is 9, outside [0, 4]");
}

}  // namespace
}  // namespace kiln
