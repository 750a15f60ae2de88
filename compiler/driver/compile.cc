#include "compiler/driver/compile.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "compiler/codegen/native_codegen.h"
#include "compiler/relax/graph_codegen.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/relax/remove_unused.h"
#include "compiler/relax/vm_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace driver {
namespace {

Status CheckPassNames(const CompileOptions& options) {
  for (const auto& name : options.dump_ir_after) {
    const auto& names = PassNames();
    if (name == "all" || std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument("--dump-ir-after: unknown pass '" + name + "' (passes: " + list + ", all)");
  }
  return Status::Ok();
}

void MaybeDump(const CompileOptions& options, const std::string& pass, const ir::IRModule& mod) {
  bool wanted = false;
  for (const auto& n : options.dump_ir_after) wanted |= (n == pass || n == "all");
  if (!wanted) return;
  std::ostream& os = options.dump_stream ? *options.dump_stream : std::cerr;
  os << "# IR after " << pass << "\n" << text::PrintModule(mod) << "\n";
}

int ThreadsHint(const CompileOptions& options) {
  if (options.num_threads_hint > 0) return options.num_threads_hint;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

codegen::CodegenOptions ToCodegenOptions(const CompileOptions& options) {
  codegen::CodegenOptions c;
  c.triple = options.target_triple;
  c.cpu = options.target_cpu;
  c.features = options.target_features;
  c.opt_level = options.opt_level;
  return c;
}

std::vector<ir::PrimFunc> PrimFuncs(const ir::IRModule& mod) {
  std::vector<ir::PrimFunc> funcs;
  for (const auto& e : mod.entries)
    if (e.prim) funcs.push_back(e.prim);
  return funcs;
}

}  // namespace

const std::vector<std::string>& PassNames() {
  // Only the stages whose result is an IRModule: the code generators after
  // them produce bytecode and machine code (see kiln-dump, --emit=llvm|asm).
  static const std::vector<std::string> names = {"parse", "normalize", "legalize", "remove-unused", "lower-tir"};
  return names;
}

Result<ir::IRModule> LowerModule(const ir::IRModule& input, const CompileOptions& options) {
  KILN_RETURN_IF_ERROR(CheckPassNames(options));
  MaybeDump(options, "parse", input);
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, relax::InferStructInfo(input));
  MaybeDump(options, "normalize", mod);
  relax::LegalizeOptions legalize;
  legalize.dispatch_matmul_to_dnnl = options.matmul_to_dnnl;
  KILN_ASSIGN_OR_RETURN(mod, relax::LegalizeOps(mod, legalize));
  MaybeDump(options, "legalize", mod);
  mod = relax::RemoveUnusedFunctions(mod);
  MaybeDump(options, "remove-unused", mod);
  int threads = ThreadsHint(options);
  for (auto& e : mod.entries) {
    if (e.prim) e.prim = tir::ApplyDefaultSchedule(tir::LowerBlocks(e.prim), threads);
  }
  MaybeDump(options, "lower-tir", mod);
  return mod;
}

Result<compiler::VmfbProgram> CompileModule(const ir::IRModule& input, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, LowerModule(input, options));
  compiler::VmfbProgram program;
  KILN_RETURN_IF_ERROR(relax::GenerateVMCode(mod, &program));
  KILN_RETURN_IF_ERROR(relax::GenerateStaticGraphs(mod, &program).status());
  std::vector<ir::PrimFunc> funcs = PrimFuncs(mod);
  if (!funcs.empty()) {
    KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild lib, codegen::BuildNativeLibrary(funcs, ToCodegenOptions(options)));
    compiler::NativeLibraryInfo info;
    info.target.triple = lib.triple;
    info.target.cpu = lib.cpu;
    info.target.features = lib.features;
    info.kernel_names = lib.kernel_names;
    info.bytes = std::move(lib.shared_object);
    program.target = info.target;
    program.native_libraries.push_back(std::move(info));
  }
  return program;
}

Status CompileFile(const std::string& input, const std::string& output, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModuleFile(input));
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, CompileModule(mod, options));
  KILN_RETURN_IF_ERROR_CTX(compiler::WriteVmfbFile(program, output), "writing %s", output.c_str());
  return Status::Ok();
}

Result<std::string> EmitText(const ir::IRModule& input, EmitKind kind, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, LowerModule(input, options));
  switch (kind) {
    case EmitKind::kRelax:
      return text::PrintModule(mod);
    case EmitKind::kTir: {
      ir::IRModule prims;
      prims.name = mod.name;
      for (const auto& e : mod.entries)
        if (e.prim) prims.entries.push_back(e);
      return text::PrintModule(prims);
    }
    case EmitKind::kLlvm:
      return codegen::EmitLLVMIR(PrimFuncs(mod), ToCodegenOptions(options));
    case EmitKind::kAsm:
      return codegen::EmitAssembly(PrimFuncs(mod), ToCodegenOptions(options));
    case EmitKind::kVmfb:
      break;
  }
  return InvalidArgument("EmitText: binary output requested; use CompileFile");
}

}  // namespace driver
}  // namespace kiln
