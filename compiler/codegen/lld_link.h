// Links relocatable ELF objects into an ELF shared object with lld, in
// process (no external linker binary), through files in a private temporary
// directory that is removed afterwards.
//
// The link uses `-shared -z defs`: an undefined symbol (a libm or libc call the
// code generator let through) fails the link instead of failing at dlopen.
//
// Thread-safe: lld keeps global state, so links are serialized by a mutex.
#ifndef KILN_COMPILER_CODEGEN_LLD_LINK_H_
#define KILN_COMPILER_CODEGEN_LLD_LINK_H_

#include <cstdint>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace codegen {

// kInternal with lld's diagnostics when the link fails.
Result<std::vector<uint8_t>> LinkSharedObject(const std::vector<uint8_t>& object);
// Several objects, linked in this order.
Result<std::vector<uint8_t>> LinkSharedObject(const std::vector<std::vector<uint8_t>>& objects);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_LLD_LINK_H_
