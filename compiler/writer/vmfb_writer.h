// The .vmfb writer: serializes a VmfbProgram (vmfb_program.h) into the file
// layout of schemas/vmfb.fbs: a size-prefixed FlatBuffer (identifier "KILN")
// followed by 64-byte aligned segments: one weights segment holding every
// tensor constant (each 64-byte aligned inside it), then one segment per
// native library. Each segment's checksum (runtime/checksum.h) goes into the
// FlatBuffer (format 1.1 and later).
//
// Fails (kInvalidArgument) on programs it cannot represent: an undefined or
// non-compact tensor constant. It does not verify bytecode; the loader does.
// Thread-safe (no shared state).
#ifndef KILN_COMPILER_WRITER_VMFB_WRITER_H_
#define KILN_COMPILER_WRITER_VMFB_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace compiler {

Result<std::vector<uint8_t>> SerializeVmfb(const VmfbProgram& program);

// SerializeVmfb, then writes the bytes to `path` (replacing it).
Status WriteVmfbFile(const VmfbProgram& program, const std::string& path);

}  // namespace compiler
}  // namespace kiln

#endif  // KILN_COMPILER_WRITER_VMFB_WRITER_H_
