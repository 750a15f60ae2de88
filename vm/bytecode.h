// Decoded bytecode: the verified, ready-to-run form of each function's words.
//
// VerifyAndDecode checks everything the interpreter will then trust: opcodes,
// operand counts, registers < register_count, callable and constant indices,
// every Goto/If target inside its function and on an instruction boundary,
// no fall-through past the last instruction, argument counts of calls to
// bytecode functions and kernels, and the static operands of builtins
// (immediates, heap slots, context strings). What depends on run-time values
// (a register's kind, a tensor's shape) is checked when it runs.
//
// Conventions: parameter i arrives in register i; Ret returns one register.
//
// Thread-safety: immutable after decoding.
#ifndef KILN_VM_BYTECODE_H_
#define KILN_VM_BYTECODE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "runtime/status.h"
#include "vm/opcodes.h"

namespace kiln {
namespace vm {

struct Arg {
  ArgKind kind;
  int64_t value;  // register, immediate, constant index or callable index
};

struct Instruction {
  Opcode op;
  int32_t reg = -1;          // Call: dst (-1: none); Ret: the result; If: the condition
  uint32_t callable = 0;     // Call
  uint32_t arg_begin = 0;    // Call: first argument in DecodedFunction::args
  uint32_t num_args = 0;     // Call
  uint32_t target = 0;       // Goto/If: instruction index to jump to
  uint32_t word = 0;         // offset of the opcode word in the function's code (as kiln-dump shows it)
};

struct DecodedFunction {
  std::vector<Instruction> code;
  std::vector<Arg> args;
  uint32_t register_count = 0;
  uint32_t shape_heap_size = 0;
  uint32_t num_params = 0;
  uint32_t max_call_args = 0;  // the largest num_args of any Call (sizes scratch)
  uint32_t function_index = 0;  // in Program::functions
  uint32_t num_storages = 0;    // 1 + the largest alloc_storage index (0: none)
  // Debug names of shape-heap slots ("n"), from the parameters' dimension
  // texts where match_shape stores a parameter's dimension; "" if unknown.
  std::vector<std::string> slot_names;
};

// Verifies and decodes every function of `linked` (whose builtins must be
// resolved). Errors are kDataLoss naming the function and word offset:
// "corrupt bytecode in function 'main' at word 7: register 9 out of range (4 registers)".
Result<std::vector<DecodedFunction>> VerifyAndDecode(const LinkedProgram& linked);

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_BYTECODE_H_
