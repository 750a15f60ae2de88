// vm/disassembler.h on hand-written words: every opcode, every argument kind,
// string constants shown inline, and malformed code printed as such without
// reading past the function's words.
#include "vm/disassembler.h"

#include <gtest/gtest.h>

#include "vm/opcodes.h"

namespace kiln {
namespace vm {
namespace {

constexpr int64_t kCall = static_cast<int64_t>(Opcode::kCall);
constexpr int64_t kRet = static_cast<int64_t>(Opcode::kRet);
constexpr int64_t kGoto = static_cast<int64_t>(Opcode::kGoto);
constexpr int64_t kIf = static_cast<int64_t>(Opcode::kIf);

Program OneFunction(std::vector<int64_t> code) {
  Program p;
  ProgramFunction f;
  f.name = "main";
  f.code_begin = 0;
  f.code_end = static_cast<uint32_t>(code.size());
  p.functions.push_back(f);
  p.code = std::move(code);
  ProgramCallable c;
  c.name = "vm.builtin.check_tensor";
  p.callables.push_back(c);
  c.kind = CallableKind::kKernel;
  c.name = "fused_add";
  p.callables.push_back(c);
  ProgramConstant s;
  s.kind = ProgramConstantKind::kString;
  s.value = Any(std::string("main: argument x"));
  p.constants.push_back(s);
  return p;
}

TEST(DisassemblerTest, EveryOpcodeAndArgumentKind) {
  Program p = OneFunction({
      kCall, -1, 0, 2, Reg(0), Const(0),             // 0
      kCall, 2, 1, 3, Reg(0), Imm(-7), CallableArg(1),  // 6
      kIf, 2, 5,                                     // 13
      kGoto, -16,                                    // 16
      kRet, 2,                                       // 18
  });
  std::string text = DisassembleFunction(p, 0, "  ");
  EXPECT_EQ(text,
            "      0  call vm.builtin.check_tensor(r0, c0 \"main: argument x\")\n"
            "      6  call r2 = fused_add(r0, #-7, @1)\n"
            "     13  if r2 else goto 18\n"
            "     16  goto 0\n"
            "     18  ret r2\n");
}

TEST(DisassemblerTest, MalformedCodeIsShownNotReadPastItsEnd) {
  EXPECT_EQ(DisassembleFunction(OneFunction({99}), 0, ""), "    0  <bad opcode 99>\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kCall, -1, 0}), 0, ""), "    0  call <cut off>\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kCall, -1, 0, 5, Reg(0)}), 0, ""),
            "    0  call vm.builtin.check_tensor(<5 args, cut off>)\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kCall, -1, 7, 0}), 0, ""), "    0  call callable#7()\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kRet}), 0, ""), "    0  ret <cut off>\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kIf, 1}), 0, ""), "    0  if <cut off>\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kGoto}), 0, ""), "    0  goto <cut off>\n");
  EXPECT_EQ(DisassembleFunction(OneFunction({kRet, 0}), 3, ""), "<no such function>\n");
  Program bad_range = OneFunction({kRet, 0});
  bad_range.functions[0].code_end = 9;
  EXPECT_EQ(DisassembleFunction(bad_range, 0, ""), "<code out of range>\n");
  EXPECT_EQ(DisassembleArg(EncodeArg(static_cast<ArgKind>(9), 1)), "<bad arg 0x900000000000001>");
}

}  // namespace
}  // namespace vm
}  // namespace kiln
