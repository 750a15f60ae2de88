// The extension module kiln._compiler: Kiln's compiler driver (the pipeline
// kiln-compile runs) from Python; kiln/compiler.py wraps it as kiln.compile.
//
// A module of its own, linking the static compiler (LLVM included), so that
// kiln._kiln stays the runtime over libkiln.so alone and a package built
// without the compiler (pip install ./python) simply lacks this file. It
// returns the .vmfb as bytes; kiln.load takes them, through libkiln.so.
//
// Errors are raised as kiln.errors classes chosen by the Status code
// (compiler_errors.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/driver/compile_tool.h"
#include "compiler/text/source.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "compiler_errors.h"

namespace py = pybind11;
using kiln_python::raise_compiler_status;

namespace {

// Compiles `source` (a file path when `is_path`, else .relax text) to .vmfb bytes.
py::bytes Compile(const std::string& source, bool is_path, const std::map<std::string, int64_t>& dims,
                  const std::map<std::string, std::vector<std::string>>& options) {
  kiln::driver::CompileOptions compile_options;
  kiln::Status applied = kiln::driver::ApplyCompileOptions(options, &compile_options);
  if (!applied.ok()) raise_compiler_status(applied);
  for (const auto& kv : dims) {
    if (kv.second < 1) {
      raise_compiler_status(kiln::InvalidArgument("dims['" + kv.first + "']: expected a positive integer, got " +
                                                  std::to_string(kv.second)));
    }
    compile_options.fixed_dims[kv.first] = kv.second;
  }
  kiln::Result<std::vector<uint8_t>> bytes = [&]() -> kiln::Result<std::vector<uint8_t>> {
    // Compiling takes seconds; other Python threads run meanwhile.
    py::gil_scoped_release release;
    kiln::driver::CompileOptions effective = compile_options;
    const std::string label = is_path ? source : std::string("<string>");
    kiln::Result<kiln::ir::IRModule> mod = is_path
                                               ? kiln::driver::LoadModuleFile(source, compile_options, &effective)
                                               : kiln::text::ParseModule(source, label);
    if (!mod.ok()) return mod.status();
    kiln::Result<kiln::compiler::VmfbProgram> program = kiln::driver::CompileModule(*mod, effective);
    if (!program.ok()) {
      // Later passes' errors carry file:line:col; quote the line as kiln-compile does.
      std::string text = source;
      if (is_path) {
        std::ifstream f(source, std::ios::binary);
        text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      }
      return kiln::text::QuoteSourceLine(program.status(), kiln::text::SourceFile(text, label));
    }
    return kiln::compiler::SerializeVmfb(*program);
  }();
  if (!bytes.ok()) raise_compiler_status(bytes.status());
  return py::bytes(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

}  // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "Kiln's compiler driver (kiln-compile's pipeline); see kiln.compile.";
  m.def("compile", &Compile, py::arg("source"), py::arg("is_path"), py::arg("dims"), py::arg("options"),
        "Compiles a .onnx/.relax file (is_path) or .relax text to .vmfb bytes.");
}
