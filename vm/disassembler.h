// Disassembler: bytecode words as text, one instruction per line:
//
//      0  call r2 = vm.builtin.alloc_tensor(r1, #2, #32, #1)
//     10  if r3 else goto 16
//     13  ret r2
//
// Works on unverified words too (kiln-dump shows files the VM would reject):
// anything malformed is printed as such, never read out of bounds.
// Thread-safe (pure function).
#ifndef KILN_VM_DISASSEMBLER_H_
#define KILN_VM_DISASSEMBLER_H_

#include <cstdint>
#include <string>

#include "runtime/program.h"

namespace kiln {
namespace vm {

// The code of function `index` of `program`; each line starts with `indent`.
std::string DisassembleFunction(const Program& program, uint32_t index, const std::string& indent = "  ");

// One argument word: "r3", "#42", "c1", "@2".
std::string DisassembleArg(int64_t word);

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_DISASSEMBLER_H_
