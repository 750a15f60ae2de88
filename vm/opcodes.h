// The VM instruction set in C++: the opcode enum and the argument-word
// encoding, both generated from / defined by vm/opcodes.def.
//
// Header-only so the compiler's bytecode emitter and the runtime share one
// definition of the encoding.
#ifndef KILN_VM_OPCODES_H_
#define KILN_VM_OPCODES_H_

#include <cstdint>

namespace kiln {
namespace vm {

enum class Opcode : int64_t {
#define KILN_VM_OPCODE(name, value, operands) k##name = value,
#include "vm/opcodes.def"
#undef KILN_VM_OPCODE
};

// "Call", or nullptr for a word that is no opcode.
inline const char* OpcodeName(int64_t word) {
  switch (word) {
#define KILN_VM_OPCODE(name, value, operands) \
  case value: return #name;
#include "vm/opcodes.def"
#undef KILN_VM_OPCODE
  }
  return nullptr;
}

// Fixed operand count of an opcode, -1 for variable (Call), -2 for no opcode.
inline int OpcodeOperandCount(int64_t word) {
  switch (word) {
#define KILN_VM_OPCODE(name, value, operands) \
  case value: return operands;
#include "vm/opcodes.def"
#undef KILN_VM_OPCODE
  }
  return -2;
}

// Kinds of an ArgWord (vm/opcodes.def): bits 56..63.
enum class ArgKind : uint8_t { kRegister = 0, kImmediate = 1, kConstant = 2, kCallable = 3 };
constexpr int kArgKindCount = 4;

constexpr int64_t kArgValueMin = -(int64_t(1) << 55);
constexpr int64_t kArgValueMax = (int64_t(1) << 55) - 1;

// Packs kind and a signed 56-bit value. Values outside the range are the
// emitter's bug (callers check with kArgValueMin/Max).
constexpr int64_t EncodeArg(ArgKind kind, int64_t value) {
  return static_cast<int64_t>((static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(value) & ((uint64_t(1) << 56) - 1)));
}
constexpr uint8_t ArgWordKind(int64_t word) { return static_cast<uint8_t>(static_cast<uint64_t>(word) >> 56); }
// Sign-extends bits 0..55.
constexpr int64_t ArgWordValue(int64_t word) {
  return static_cast<int64_t>(static_cast<uint64_t>(word) << 8) >> 8;
}

constexpr int64_t Reg(int64_t r) { return EncodeArg(ArgKind::kRegister, r); }
constexpr int64_t Imm(int64_t v) { return EncodeArg(ArgKind::kImmediate, v); }
constexpr int64_t Const(int64_t c) { return EncodeArg(ArgKind::kConstant, c); }
constexpr int64_t CallableArg(int64_t c) { return EncodeArg(ArgKind::kCallable, c); }

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_OPCODES_H_
