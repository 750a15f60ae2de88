#include "tools/kiln-dump/dump_tool.h"

#include <fstream>
#include <string>
#include <vector>

#include "tools/common/flags.h"
#include "tools/kiln-dump/dump.h"
#ifdef KILN_DUMP_WITH_DOT
#include "tools/kiln-dump/dot_graph.h"
#endif

namespace kiln {
namespace tools {

const char kDumpToolUsage[] =
    "usage: kiln-dump FILE.vmfb [--info | --verify]\n"
    "       kiln-dump FILE.relax --dot [--function=main] [--lower] [-o FILE.dot]   (or FILE.onnx)\n"
    "  (no flag)        header, functions with signatures and bytecode, imports, constants,\n"
    "                   native libraries and kernels, graphs, segments with offsets and sizes\n"
    "  --info           only the header (format, producer, target, size); reads any format version\n"
    "  --verify         also check the weights segment against its checksum (the kernels' is always\n"
    "                   checked); fails on a damaged file\n"
    "  --dot            Graphviz text of a Relax function's dataflow graph (bindings with op and shape,\n"
    "                   edges = uses); render with: dot -Tsvg FILE.dot -o FILE.svg\n"
    "  --function=NAME  the function to draw (default main)\n"
    "  --lower          draw it after the compiler's IR passes (fused kernels, call_tir)\n"
    "  -o, --output=F   write to F instead of stdout\n"
    "Flags take --flag=value or --flag value.\n";

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct DumpArgs {
  std::string file, function, output;
  bool info = false, dot = false, lower = false, verify = false;
};

// Usage errors (exit 2).
Result<DumpArgs> Parse(int argc, const char* const* argv, bool* help) {
  DumpArgs a;
  FlagParser flags;
  flags.AddSwitch("info", &a.info);
  flags.AddSwitch("dot", &a.dot);
  flags.AddSwitch("lower", &a.lower);
  flags.AddSwitch("verify", &a.verify);
  flags.AddValue("function", [&](const std::string& v) -> Status {
    if (v.empty()) return InvalidArgument("empty function name");
    a.function = v;
    return Status::Ok();
  });
  flags.AddValue("output", [&](const std::string& v) -> Status {
    if (v.empty()) return InvalidArgument("empty file name");
    a.output = v;
    return Status::Ok();
  });
  flags.AddAlias("-o", "output");
  std::vector<std::string> files;
  KILN_RETURN_IF_ERROR(flags.Parse(argc, argv, &files));
  *help = flags.help();
  if (*help) return a;
  if (files.empty()) return InvalidArgument("no input file (see --help)");
  if (files.size() > 1) return InvalidArgument("more than one input file: '" + files[0] + "' and '" + files[1] + "'");
  a.file = files[0];
  if (a.info && a.dot) return InvalidArgument("--info and --dot exclude each other");
  if (a.verify && (a.info || a.dot)) {
    return InvalidArgument(std::string("--verify checks a whole .vmfb; it does not apply to ") +
                           (a.info ? "--info" : "--dot"));
  }
  if (!a.dot && (!a.function.empty() || a.lower)) {
    return InvalidArgument(std::string(a.lower ? "--lower" : "--function") + " only applies to --dot");
  }
  if (a.dot && EndsWith(a.file, ".vmfb")) {
    return InvalidArgument("--dot draws a .relax file: a .vmfb keeps no dataflow graph; give the .relax '" +
                           a.file + "' was compiled from");
  }
  if (a.function.empty()) a.function = "main";
  return a;
}

}  // namespace

int DumpToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  bool help = false;
  Result<DumpArgs> args = Parse(argc, argv, &help);
  if (!args.ok()) {
    err << "kiln-dump: error: " << OneLine(args.status().message()) << "\n";
    return 2;
  }
  if (help) {
    out << kDumpToolUsage;
    return 0;
  }
  Result<std::string> text = InvalidArgument("");
  if (args->dot) {
#ifdef KILN_DUMP_WITH_DOT
    text = RelaxFileToDot(args->file, args->function, args->lower);
#else
    err << "kiln-dump: error: --dot needs the compiler; this kiln-dump was built without it (KILN_WITH_LLVM=OFF)\n";
    return 2;
#endif
  } else if (args->info) {
    text = DumpVmfbInfoFile(args->file);
  } else {
    DecodeOptions options;
    options.verify_weights = args->verify;
    text = DumpVmfbFile(args->file, options);
  }
  if (!text.ok()) {
    // Dump errors may carry the header on further lines; keep them readable.
    std::string message = args->dot ? OneLine(text.status().message()) : text.status().message();
    err << "kiln-dump: error: " << message << "\n";
    return 1;
  }
  if (args->output.empty()) {
    out << *text;
    return 0;
  }
  std::ofstream f(args->output, std::ios::binary);
  f << *text;
  f.close();
  if (!f) {
    err << "kiln-dump: error: cannot write '" << args->output << "'\n";
    return 1;
  }
  return 0;
}

}  // namespace tools
}  // namespace kiln
