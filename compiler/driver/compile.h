// The compiler driver: the pass pipeline from an IRModule to a .vmfb.
//
//   normalize -> legalize -> remove-unused -> lower-tir -> vm-codegen
//     -> graph-codegen -> native-codegen -> (write)
//
// Each IR stage (parse through lower-tir) can be printed with `dump_ir_after`
// (pass names, or "all"); the code generators' output is seen with kiln-dump
// (bytecode, graph) and --emit=llvm|asm (kernels). Options come from
// kiln-compile flags.
#ifndef KILN_COMPILER_DRIVER_COMPILE_H_
#define KILN_COMPILER_DRIVER_COMPILE_H_

#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace driver {

struct CompileOptions {
  // Send float32 R.matmul to the oneDNN packed function kiln.dnnl.matmul
  // instead of generating a kernel.
  bool matmul_to_dnnl = false;
  // Pass names after which to print the module, or "all".
  std::vector<std::string> dump_ir_after;
  std::ostream* dump_stream = nullptr;  // nullptr: std::cerr
  // Code generation target; empty: the host CPU.
  std::string target_triple;
  std::string target_cpu;
  std::string target_features;
  int opt_level = 3;
  // Threads the default schedule plans for; 0: the host's.
  int num_threads_hint = 0;
};

// Names of the IR passes, in pipeline order (what --dump-ir-after accepts).
const std::vector<std::string>& PassNames();

// Runs the IR passes only (through lower-tir): what --emit=relax|tir prints.
Result<ir::IRModule> LowerModule(const ir::IRModule& mod, const CompileOptions& options);

// The whole pipeline to a program ready to serialize.
Result<compiler::VmfbProgram> CompileModule(const ir::IRModule& mod, const CompileOptions& options);

// Parses `input` (.relax), compiles it and writes `output` (.vmfb).
Status CompileFile(const std::string& input, const std::string& output, const CompileOptions& options);

enum class EmitKind { kVmfb, kRelax, kTir, kLlvm, kAsm };
// Text of one stage for a parsed module: the lowered Relax + TIR, the TIR
// PrimFuncs only, LLVM IR or assembly of the kernels.
Result<std::string> EmitText(const ir::IRModule& mod, EmitKind kind, const CompileOptions& options);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_COMPILE_H_
