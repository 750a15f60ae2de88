// kiln-dump's logic: a .vmfb as readable text (version, producer, target,
// functions with signatures and disassembled bytecode, callables, constants,
// native libraries, graphs). It decodes and verifies the file's structure but
// does not link it, so files whose imports are missing here still dump.
#ifndef KILN_TOOLS_KILN_DUMP_DUMP_H_
#define KILN_TOOLS_KILN_DUMP_DUMP_H_

#include <string>

#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "runtime/status.h"

namespace kiln {
namespace tools {

std::string DumpProgram(const Program& program);
// Decodes `bytes` and dumps them.
Result<std::string> DumpVmfbBytes(const FileBytes& bytes);
Result<std::string> DumpVmfbFile(const std::string& path);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_DUMP_DUMP_H_
