#include "compiler/driver/compile_tool.h"

#include <fstream>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"

namespace kiln {
namespace driver {
namespace {

const char kUsage[] =
    "usage: kiln-compile IN.relax -o OUT.vmfb [options]\n"
    "  --emit=vmfb|relax|tir|llvm|asm  what to produce (default vmfb; text goes to -o or stdout)\n"
    "  --dump-ir-after=PASS            print the module after PASS (repeatable; 'all' for every pass)\n"
    "  --matmul=tir|dnnl               generate matmul kernels (tir, default) or call oneDNN (dnnl)\n"
    "  --target=TRIPLE --cpu=NAME --features=+f1,-f2   code generation target (default: this machine)\n"
    "  -O0 .. -O3                      LLVM optimization level (default -O3)\n";

bool TakeValue(const std::string& arg, const char* flag, std::string* value) {
  std::string prefix = std::string(flag) + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

}  // namespace

int CompileToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CompileOptions options;
  options.dump_stream = &err;
  std::string input, output, value;
  EmitKind emit = EmitKind::kVmfb;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out << kUsage;
      return 0;
    } else if (arg == "-o") {
      if (i + 1 >= argc) {
        err << "kiln-compile: -o needs a file name\n";
        return 2;
      }
      output = argv[++i];
    } else if (TakeValue(arg, "--dump-ir-after", &value)) {
      options.dump_ir_after.push_back(value);
    } else if (TakeValue(arg, "--matmul", &value)) {
      if (value != "tir" && value != "dnnl") {
        err << "kiln-compile: --matmul must be tir or dnnl, got '" << value << "'\n";
        return 2;
      }
      options.matmul_to_dnnl = value == "dnnl";
    } else if (TakeValue(arg, "--emit", &value)) {
      if (value == "vmfb") emit = EmitKind::kVmfb;
      else if (value == "relax") emit = EmitKind::kRelax;
      else if (value == "tir") emit = EmitKind::kTir;
      else if (value == "llvm") emit = EmitKind::kLlvm;
      else if (value == "asm") emit = EmitKind::kAsm;
      else {
        err << "kiln-compile: --emit must be vmfb, relax, tir, llvm or asm, got '" << value << "'\n";
        return 2;
      }
    } else if (TakeValue(arg, "--target", &value)) {
      options.target_triple = value;
    } else if (TakeValue(arg, "--cpu", &value)) {
      options.target_cpu = value;
    } else if (TakeValue(arg, "--features", &value)) {
      options.target_features = value;
    } else if (arg.size() == 3 && arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' && arg[2] <= '3') {
      options.opt_level = arg[2] - '0';
    } else if (!arg.empty() && arg[0] == '-') {
      err << "kiln-compile: unknown option '" << arg << "'\n" << kUsage;
      return 2;
    } else if (input.empty()) {
      input = arg;
    } else {
      err << "kiln-compile: more than one input file ('" << input << "' and '" << arg << "')\n";
      return 2;
    }
  }
  if (input.empty()) {
    err << "kiln-compile: no input file\n" << kUsage;
    return 2;
  }
  if (emit == EmitKind::kVmfb) {
    if (output.empty()) {
      err << "kiln-compile: no output file (-o OUT.vmfb)\n";
      return 2;
    }
    Status s = CompileFile(input, output, options);
    if (!s.ok()) {
      err << "kiln-compile: " << s.message() << "\n";
      return 1;
    }
    return 0;
  }
  Result<ir::IRModule> mod = text::ParseModuleFile(input);
  if (!mod.ok()) {
    err << "kiln-compile: " << mod.status().message() << "\n";
    return 1;
  }
  Result<std::string> text = EmitText(*mod, emit, options);
  if (!text.ok()) {
    err << "kiln-compile: " << text.status().message() << "\n";
    return 1;
  }
  if (output.empty()) {
    out << *text;
  } else {
    std::ofstream f(output, std::ios::binary);
    f << *text;
    if (!f) {
      err << "kiln-compile: cannot write '" << output << "'\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace driver
}  // namespace kiln
