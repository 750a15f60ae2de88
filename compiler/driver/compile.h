// The compiler driver: the pass pipeline from an IRModule to a .vmfb.
//
//   parse -> wrap-tir-module -> normalize -> bind-params (with params) -> fold-constant
//     -> canonicalize-bindings -> cse -> dce -> legalize -> [fusion passes]
//     -> [memory planning] -> remove-unused -> lower-tir
//     -> vm-codegen -> graph-codegen -> native-codegen -> (write)
//
// LowerModule in compile.cc lists the IR passes in order; PassNames() is the
// one table of their names. Each IR pass can be printed before
// (`dump_ir_before`) or after (`dump_ir_after`) it runs ("all" for every
// one); the code generators' output is seen with kiln-dump (bytecode, graph)
// and --emit=llvm|asm (kernels). Options come from kiln-compile flags or a
// YAML file (compile_tool.h).
#ifndef KILN_COMPILER_DRIVER_COMPILE_H_
#define KILN_COMPILER_DRIVER_COMPILE_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/params/param_file.h"
#include "compiler/transform/dispatch_library.h"
#include "compiler/transform/mixed_precision.h"
#include "compiler/writer/vmfb_program.h"
#include "runtime/status.h"

namespace kiln {
namespace driver {

struct CompileOptions {
  // Send float32 R.matmul to the oneDNN packed function kiln.dnnl.matmul
  // instead of generating a kernel (a first dispatch rule {matmul: dnnl}).
  bool matmul_to_dnnl = false;
  // Library dispatch (the dispatch-library pass): rules tried in order, then
  // those of `dispatch_rules_file` (YAML, transform/dispatch_library.h). With
  // `default_dispatch`, Kiln's default rules (DefaultDispatchRules) follow.
  std::vector<transform::DispatchRule> dispatch_rules;
  std::string dispatch_rules_file;
  bool default_dispatch = true;
  // Fuse operator kernels (annotate-op-pattern, fuse-ops, fuse-tir).
  bool fuse = true;
  // 3x3 stride-1 convolutions with constant weights as Winograd F(2x2, 3x3)
  // (transform/winograd_conv2d.h).
  bool winograd = true;
  // Weights and activations in half precision around float32 accumulation
  // (--precision=fp16|bf16, the mixed-precision pass); kFloat32: unchanged.
  transform::Precision precision = transform::Precision::kFloat32;
  // Upper bounds of symbolic variables for memory planning (--bound n=128);
  // they override a function's "tir_var_upper_bound" attribute.
  std::map<std::string, int64_t> upper_bounds;
  // Values that replace symbolic dimensions of an imported model's inputs,
  // by name (ONNX dim_param or the importer's "x_dim2") or by input and
  // position ("x:2"), e.g. {"batch": 1} from `--dim batch=1`.
  std::map<std::string, int64_t> fixed_dims;
  // Print the planned memory of each function (to dump_stream).
  bool report_memory = false;
  // Pass names before / after which to print the module, or "all".
  std::vector<std::string> dump_ir_before;
  std::vector<std::string> dump_ir_after;
  std::ostream* dump_stream = nullptr;  // nullptr: std::cerr
  // Code generation target; empty: the host CPU; "cuda": NVIDIA GPUs (the
  // kernels through tir::ScheduleForGpu and the NVPTX backend to PTX for
  // `gpu_arch`, nvptx_codegen.h).
  std::string target_triple;
  std::string gpu_arch = "sm_80";
  // --target=cuda: the ptxas that assembles a cubin for `gpu_arch` into the
  // module beside the PTX (driver/ptxas.h): "" finds one (no cubin when
  // there is none), "none" builds PTX only, else the program's path.
  std::string ptxas;
  std::string target_cpu;
  std::string target_features;
  int opt_level = 3;
  // Threads the default schedule plans for; 0: the host's.
  int num_threads_hint = 0;
  // Threads that compile the kernels' machine code (codegen::CodegenOptions::
  // jobs); 0: the host's cores. Does not change the output.
  int codegen_jobs = 0;
  // A tuning database directory (compiler/tune/database.h): PrimFuncs with a
  // record for this target that beat the default schedule are scheduled by
  // their best record's trace; the others get the default schedule. A
  // damaged database line is reported to dump_stream and skipped.
  std::string tuning_db;
  // Which of its records apply: those measured warm (kiln-tune's default) or
  // cold (kiln-tune --cold-cache); the two regimes' times are not compared.
  bool tuning_cold_cache = false;
  // Whether a record the model check of kiln-tune dropped (a "drop"
  // verdict, database.h) is left out; false applies it anyway (the check's
  // own build of the tuned model, to judge every record again).
  bool tuning_verdicts = true;
  // Weights bound to `params_function`'s parameters by name (bind-params):
  // the tensors of `params`, then those of `params_file` (.npz or
  // .safetensors) when it is set.
  params::ParamList params;
  std::string params_file;
  std::string params_function = "main";
};

// Names of the IR passes, in pipeline order (what --dump-ir-before/after
// accept). Passes that do not apply (bind-params without params) are listed
// but do not run or dump.
const std::vector<std::string>& PassNames();

// Kiln's default library choices for the host, decided from the measured
// benchmarks (docs/performance.md, "Library dispatch").
const std::vector<transform::DispatchRule>& DefaultDispatchRules();

// Runs the IR passes only (through lower-tir): what --emit=relax|tir prints.
Result<ir::IRModule> LowerModule(const ir::IRModule& mod, const CompileOptions& options);

// The IR passes up to lower-tir, which does not run: the kernels as
// lower-tir would schedule them (fused PrimFuncs in block form, with the
// Relax functions that call them). What kiln-tune extracts its tasks from.
Result<ir::IRModule> LowerModuleToKernels(const ir::IRModule& mod, const CompileOptions& options);

// Whether `options` target a GPU (target "cuda").
bool IsCudaTarget(const CompileOptions& options);

// The whole pipeline to a program ready to serialize.
Result<compiler::VmfbProgram> CompileModule(const ir::IRModule& mod, const CompileOptions& options);

// Reads a module: `path` ending in .onnx is imported (options.fixed_dims give
// values to its dim_params), anything else is parsed as .relax text.
Result<ir::IRModule> LoadModuleFile(const std::string& path, const CompileOptions& options);
// LoadModuleFile, and the options to compile what it returns. A .relax text
// that refers to constants as metadata["relax.expr.Constant"][i] (as TVM
// prints a module after BindParams, "Metadata omitted") takes them from the
// weights: entry i is the i-th tensor of `options.params` followed by those
// of `options.params_file` in file order. The weights are then part of the
// module, so *compile_options (otherwise a copy of `options`) binds none of
// them again.
Result<ir::IRModule> LoadModuleFile(const std::string& path, const CompileOptions& options,
                                    CompileOptions* compile_options);

// Reads `input` (.relax or .onnx, LoadModuleFile), compiles it and writes `output` (.vmfb).
Status CompileFile(const std::string& input, const std::string& output, const CompileOptions& options);

enum class EmitKind { kVmfb, kRelax, kTir, kLlvm, kAsm };
// Text of one stage for a parsed module: the lowered Relax + TIR, the TIR
// PrimFuncs only, LLVM IR or assembly of the kernels.
Result<std::string> EmitText(const ir::IRModule& mod, EmitKind kind, const CompileOptions& options);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_COMPILER_DRIVER_COMPILE_H_
