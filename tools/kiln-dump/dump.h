// kiln-dump's logic: a .vmfb as readable text (version, producer, target,
// functions with signatures and disassembled bytecode, callables, imports,
// constants with shapes and bytes, native libraries with their kernels,
// graphs, and the file's segments with offsets and sizes). It decodes and
// verifies the file's structure but does not link it, so files whose
// imports are missing here still dump.
#ifndef KILN_TOOLS_KILN_DUMP_DUMP_H_
#define KILN_TOOLS_KILN_DUMP_DUMP_H_

#include <string>

#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "runtime/status.h"
#include "runtime/vmfb_loader.h"

namespace kiln {
namespace tools {

// With `bytes` (the file the program was decoded from) the text ends with
// the segments: where the FlatBuffer, the weights and each native library lie.
std::string DumpProgram(const Program& program, const FileBytes* bytes = nullptr);
// The header alone (format, producer, target, size), from PeekVmfbInfo: works
// for files this runtime cannot decode, e.g. a newer format major.
Result<std::string> DumpVmfbInfoFile(const std::string& path);
// Decodes `bytes` and dumps them. Native-library checksums are always
// verified; the weights' when `options.verify_weights` (the text says which).
Result<std::string> DumpVmfbBytes(const FileBytes& bytes, const DecodeOptions& options = {});
// Dumps the file; when it cannot be decoded but its header can be read, the
// error message carries the header text, so "newer format" files still say
// which producer and target they are for.
Result<std::string> DumpVmfbFile(const std::string& path, const DecodeOptions& options = {});

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_DUMP_DUMP_H_
