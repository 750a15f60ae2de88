// kiln-dump's command line, callable from tests.
//
//   kiln-dump FILE.vmfb [--info]
//       everything the file holds (dump.h), or with --info only its header
//       (format, producer, target, size), which works for any format version
//   kiln-dump FILE.relax --dot [--function=main] [--lower] [-o|--output FILE.dot]
//       Graphviz text of the function's dataflow graph (dot_graph.h; an .onnx
//       model is imported first), to
//       stdout or FILE; needs a kiln-dump built with the compiler
//       (KILN_WITH_LLVM). A .vmfb keeps no dataflow graph (no debug section),
//       so --dot takes the .relax it was compiled from.
//
// Flags take --flag=value or --flag value. Exit status: 0 success, 1 the file
// could not be read or drawn, 2 a usage error; errors are one line
// "kiln-dump: error: ..." on `err`.
#ifndef KILN_TOOLS_KILN_DUMP_DUMP_TOOL_H_
#define KILN_TOOLS_KILN_DUMP_DUMP_TOOL_H_

#include <ostream>

namespace kiln {
namespace tools {

int DumpToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

extern const char kDumpToolUsage[];

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_DUMP_DUMP_TOOL_H_
