#include "compiler/driver/compile.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <iostream>
#include <sstream>
#include <thread>

#include "compiler/codegen/native_codegen.h"
#include "compiler/codegen/nvptx_codegen.h"
#include "compiler/driver/gpu_module_info.h"
#include "compiler/driver/ptxas.h"
#include "runtime/vmfb_gpu.h"
#include "compiler/fusion/annotate_op_pattern.h"
#include "compiler/fusion/fuse_ops.h"
#include "compiler/fusion/fuse_tir.h"
#include "compiler/memory/plan_memory.h"
#include "compiler/relax/graph_codegen.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/relax/remove_unused.h"
#include "compiler/relax/vm_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/gpu_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/kernel_cost.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/database.h"
#include "compiler/tune/lower.h"
#include "compiler/transform/bind_params.h"
#include "compiler/transform/canonicalize_bindings.h"
#include "compiler/transform/common_subexpr_elimination.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/decompose_ops.h"
#include "compiler/transform/dispatch_int8_matmul.h"
#include "compiler/transform/dispatch_library.h"
#include "compiler/transform/fold_constant.h"
#include "compiler/transform/pack_constant_weights.h"
#include "compiler/transform/pack_matmul_weights.h"
#include "compiler/transform/winograd_conv2d.h"
#include "compiler/transform/combine_shared_matmuls.h"
#include "compiler/transform/fold_softmax_nan_guard.h"
#include "compiler/transform/view_reshapes.h"
#include "compiler/transform/shape_condition.h"
#include "compiler/transform/guard_raise_arms.h"
#include "compiler/transform/inline_functions.h"
#include "compiler/transform/conv_transpose_phases.h"
#include "compiler/transform/wrap_tir_module.h"
#include "compiler/transform/flatten_nested_calls.h"
#include "compiler/writer/vmfb_writer.h"
#ifdef KILN_HAVE_ONNX
#include "compiler/onnx/onnx_importer.h"
#endif

namespace kiln {
namespace driver {
namespace {

Status CheckPassNames(const std::vector<std::string>& wanted, const char* flag) {
  const auto& names = PassNames();
  for (const auto& name : wanted) {
    if (name == "all" || std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument(std::string(flag) + ": unknown pass '" + name + "' (passes: " + list + ", all)");
  }
  return Status::Ok();
}

// Runs the passes of LowerModule one at a time, printing the module before
// and after each as asked.
class PassRunner {
 public:
  explicit PassRunner(const CompileOptions& options) : options_(options) {}

  template <typename Pass>
  Status Run(const char* name, ir::IRModule* mod, Pass&& pass) {
    const auto& names = PassNames();
    KILN_CHECK(std::find(names.begin(), names.end(), name) != names.end(), "pass %s missing from PassNames()", name);
    Dump(options_.dump_ir_before, "before", name, *mod);
    KILN_ASSIGN_OR_RETURN(*mod, pass(*mod));
    Dump(options_.dump_ir_after, "after", name, *mod);
    return Status::Ok();
  }

 private:
  void Dump(const std::vector<std::string>& wanted, const char* when, const char* pass, const ir::IRModule& mod) {
    bool match = false;
    for (const auto& n : wanted) match |= (n == pass || n == "all");
    if (!match) return;
    std::ostream& os = options_.dump_stream ? *options_.dump_stream : std::cerr;
    os << "# IR " << when << " " << pass << "\n" << text::PrintModule(mod) << "\n";
  }

  const CompileOptions& options_;
};

Result<ir::IRModule> Identity(const ir::IRModule& mod) { return mod; }

int ThreadsHint(const CompileOptions& options) {
  if (options.num_threads_hint > 0) return options.num_threads_hint;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

codegen::PtxOptions ToPtxOptions(const CompileOptions& options) {
  codegen::PtxOptions p;
  p.arch = options.gpu_arch;
  p.opt_level = options.opt_level;
  return p;
}

codegen::CodegenOptions ToCodegenOptions(const CompileOptions& options) {
  codegen::CodegenOptions c;
  c.triple = options.target_triple;
  c.cpu = options.target_cpu;
  c.features = options.target_features;
  c.opt_level = options.opt_level;
  c.jobs = options.codegen_jobs;
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
  static const std::vector<std::string> names = {
      "parse",
      "wrap-tir-module",
      "normalize",
      "flatten-calls",
      "bind-params",
      "decompose-ops",
      "conv-transpose-phases",
      "dispatch-library",
      "dispatch-int8-matmul",
      "winograd-conv2d",
      "pack-constant-weights",
      "fold-constant",
      "canonicalize-bindings",
      "fold-softmax-nan-guard",
      "shape-condition",
      "guard-raise-arms",
      "inline-functions",
      "cse",
      "dce",
      "combine-shared-matmuls",
      "pack-matmul-weights",
      "mixed-precision",
      "legalize",
      "annotate-op-pattern",
      "fuse-ops",
      "fuse-tir",
      "view-reshapes",
      "remove-unused",
      "lower-tir",
  };
  return names;
}

const std::vector<transform::DispatchRule>& DefaultDispatchRules() {
  // Generated kernels for everything: see docs/performance.md, "Library
  // dispatch", for the measurements behind this choice.
  static const std::vector<transform::DispatchRule> rules;
  return rules;
}

// The lowered function scheduled by the best record of `db` for `func`, or
// nullopt when there is none (or none that beat the default schedule).
// Only records measured with `threads` kernel threads (the build's hint), in
// the cache regime `cold` names, apply.
// A record kiln-tune's model check dropped does not apply (*dropped set).
static Result<std::optional<ir::PrimFunc>> ApplyTuningRecord(const tune::Database& db, const std::string& target,
                                                             int threads, bool cold, bool verdicts,
                                                             const ir::PrimFunc& func, bool* dropped) {
  std::string workload = db.FindWorkload(func);
  if (workload.empty()) return std::optional<ir::PrimFunc>();
  std::optional<tune::TuningRecord> best = db.Selected(
      workload, target, threads, cold ? tune::CacheRegime::kCold : tune::CacheRegime::kWarm, verdicts, dropped);
  if (!best) return std::optional<ir::PrimFunc>();
  Result<tir::Schedule> sch = tir::Schedule::Replay(func, best->trace);
  if (!sch.ok())
    return FailedPrecondition("--tuning-db: the best record of " + func->name + " (workload " + workload +
                              ") does not apply: " + sch.status().message());
  return std::optional<ir::PrimFunc>(tune::LowerScheduled(sch->func()));
}

// The thread counts other than `threads` at which `db` has a winning record
// for `func` (what a build for another count would apply), and whether it
// has one at `threads` measured in the other cache regime than `cold`.
static std::set<int> OtherThreadCounts(const tune::Database& db, const std::string& target, int threads, bool cold,
                                       const ir::PrimFunc& func, bool* other_regime) {
  std::set<int> counts;
  std::string workload = db.FindWorkload(func);
  if (workload.empty()) return counts;
  for (const tune::TuningRecord& r : db.TopK(workload, target, 1000)) {
    if (!(r.median_us < r.default_us)) continue;
    if (r.threads != threads) counts.insert(r.threads);
    else if (r.cold_cache != cold) *other_regime = true;
  }
  return counts;
}

namespace {
// LowerModule; with `costs`, also each kernel's cost, counted before it is
// scheduled (compiler/tir/kernel_cost.h), by kernel name.
Result<ir::IRModule> LowerModuleWithCosts(const ir::IRModule& input, const CompileOptions& options,
                                          std::map<std::string, tir::KernelCost>* costs,
                                          bool stop_before_lower_tir = false);
}  // namespace

Result<ir::IRModule> LowerModule(const ir::IRModule& input, const CompileOptions& options) {
  return LowerModuleWithCosts(input, options, nullptr);
}

Result<ir::IRModule> LowerModuleToKernels(const ir::IRModule& input, const CompileOptions& options) {
  return LowerModuleWithCosts(input, options, nullptr, /*stop_before_lower_tir=*/true);
}

namespace {
Result<ir::IRModule> LowerModuleWithCosts(const ir::IRModule& input, const CompileOptions& options,
                                          std::map<std::string, tir::KernelCost>* costs, bool stop_before_lower_tir) {
  KILN_RETURN_IF_ERROR(CheckPassNames(options.dump_ir_before, "--dump-ir-before"));
  KILN_RETURN_IF_ERROR(CheckPassNames(options.dump_ir_after, "--dump-ir-after"));
  params::ParamList weights = options.params;
  if (!options.params_file.empty()) {
    KILN_ASSIGN_OR_RETURN(params::ParamList from_file, params::ReadParamFile(options.params_file));
    for (auto& w : from_file) weights.push_back(std::move(w));
  }
  std::vector<transform::DispatchRule> rules;
  if (options.matmul_to_dnnl) {
    transform::DispatchRule r;
    r.op = "matmul";
    r.library = "dnnl";
    r.where = "--matmul=dnnl";
    rules.push_back(r);
  }
  rules.insert(rules.end(), options.dispatch_rules.begin(), options.dispatch_rules.end());
  if (!options.dispatch_rules_file.empty()) {
    KILN_ASSIGN_OR_RETURN(std::vector<transform::DispatchRule> from_file,
                          transform::ReadDispatchRules(options.dispatch_rules_file));
    rules.insert(rules.end(), from_file.begin(), from_file.end());
  }
  if (options.default_dispatch) {
    const auto& d = DefaultDispatchRules();
    rules.insert(rules.end(), d.begin(), d.end());
  }
  for (const transform::DispatchRule& r : rules) {
    // cuBLAS and cuDNN run on the device's stream, on device memory: GPU
    // modules only.
    if ((r.library == "cublas" || r.library == "cudnn") && !IsCudaTarget(options)) {
      return InvalidArgument(r.where + ": library " + r.library + " runs on the GPU; compile with --target=cuda");
    }
  }
  relax::LegalizeOptions legalize;
  int threads = ThreadsHint(options);

  PassRunner run(options);
  ir::IRModule mod = input;
  KILN_RETURN_IF_ERROR(run.Run("parse", &mod, Identity));
  KILN_RETURN_IF_ERROR(run.Run("wrap-tir-module", &mod, transform::WrapTirModule));
  KILN_RETURN_IF_ERROR(run.Run("normalize", &mod, relax::InferStructInfo));
  KILN_RETURN_IF_ERROR(run.Run("flatten-calls", &mod, transform::FlattenNestedCalls));
  if (!weights.empty()) {
    KILN_RETURN_IF_ERROR(run.Run("bind-params", &mod, [&](const ir::IRModule& m) {
      return transform::BindParams(m, weights, options.params_function);
    }));
  }
  KILN_RETURN_IF_ERROR(run.Run("decompose-ops", &mod, transform::DecomposeOpsForInference));
  KILN_RETURN_IF_ERROR(run.Run("conv-transpose-phases", &mod, transform::ConvTransposeToPhases));
  KILN_RETURN_IF_ERROR(run.Run("dispatch-library", &mod, [&](const ir::IRModule& m) {
    return transform::DispatchToLibraries(m, rules);
  }));
  if (!IsCudaTarget(options)) KILN_RETURN_IF_ERROR(run.Run("dispatch-int8-matmul", &mod, transform::DispatchInt8Matmul));
  if (options.winograd) {
    KILN_RETURN_IF_ERROR(run.Run("winograd-conv2d", &mod, [&](const ir::IRModule& m) {
      return transform::WinogradConv2d(m, options.upper_bounds);
    }));
  }
  KILN_RETURN_IF_ERROR(run.Run("pack-constant-weights", &mod, transform::PackConstantWeights));
  KILN_RETURN_IF_ERROR(run.Run("fold-constant", &mod, transform::FoldConstant));
  KILN_RETURN_IF_ERROR(run.Run("canonicalize-bindings", &mod, transform::CanonicalizeBindings));
  KILN_RETURN_IF_ERROR(run.Run("fold-softmax-nan-guard", &mod, transform::FoldSoftmaxNanGuard));
  KILN_RETURN_IF_ERROR(run.Run("shape-condition", &mod, transform::FoldShapeConditions));
  KILN_RETURN_IF_ERROR(run.Run("guard-raise-arms", &mod, transform::GuardRaiseArms));
  KILN_RETURN_IF_ERROR(run.Run("inline-functions", &mod, [](const ir::IRModule& m) -> Result<ir::IRModule> {
    // Then canonicalize again: the match_casts after an If that
    // guard-raise-arms flattened are provable once the calls are inlined.
    KILN_ASSIGN_OR_RETURN(ir::IRModule inlined, transform::InlineFunctions(m));
    return transform::CanonicalizeBindings(inlined);
  }));
  KILN_RETURN_IF_ERROR(run.Run("cse", &mod, transform::EliminateCommonSubexpressions));
  KILN_RETURN_IF_ERROR(run.Run("dce", &mod, transform::EliminateDeadCode));
  KILN_RETURN_IF_ERROR(run.Run("combine-shared-matmuls", &mod, transform::CombineSharedMatmuls));
  if (!IsCudaTarget(options)) KILN_RETURN_IF_ERROR(run.Run("pack-matmul-weights", &mod, transform::PackMatmulWeights));
  if (options.precision != transform::Precision::kFloat32) {
    KILN_RETURN_IF_ERROR(run.Run("mixed-precision", &mod, [&](const ir::IRModule& m) {
      return transform::ToMixedPrecision(m, options.precision);
    }));
  }
  KILN_RETURN_IF_ERROR(run.Run("legalize", &mod, [&](const ir::IRModule& m) { return relax::LegalizeOps(m, legalize); }));
  if (options.fuse) {
    KILN_RETURN_IF_ERROR(run.Run("annotate-op-pattern", &mod, [](const ir::IRModule& m) -> Result<ir::IRModule> {
      return fusion::AnnotateOpPattern(m);
    }));
    KILN_RETURN_IF_ERROR(run.Run("fuse-ops", &mod, fusion::FuseOps));
    KILN_RETURN_IF_ERROR(run.Run("fuse-tir", &mod, fusion::FuseTIR));
  }
  // Memory planning is an analysis that VM codegen applies (CompileModule).
  if (!IsCudaTarget(options)) KILN_RETURN_IF_ERROR(run.Run("view-reshapes", &mod, transform::ViewReshapes));
  KILN_RETURN_IF_ERROR(run.Run("remove-unused", &mod, [](const ir::IRModule& m) -> Result<ir::IRModule> {
    return relax::RemoveUnusedFunctions(m);
  }));
  if (stop_before_lower_tir) return mod;
  std::optional<tune::Database> tuning_db;
  std::string tuning_target;
  if (!options.tuning_db.empty()) {
    if (IsCudaTarget(options))
      return Unimplemented("--tuning-db: tuning records apply to CPU targets only (kiln-tune measures on this CPU)");
    std::vector<Status> damage;
    KILN_ASSIGN_OR_RETURN(tune::Database db, tune::Database::Open(options.tuning_db, &damage));
    for (const Status& d : damage)
      (options.dump_stream ? *options.dump_stream : std::cerr) << "error: " << d.message() << " (line skipped)\n";
    tuning_db = std::move(db);
    KILN_ASSIGN_OR_RETURN(tuning_target, codegen::ResolvedTargetName(ToCodegenOptions(options)));
  }
  KILN_RETURN_IF_ERROR(run.Run("lower-tir", &mod, [&](const ir::IRModule& m) -> Result<ir::IRModule> {
    ir::IRModule out = m;
    if (IsCudaTarget(options)) {
      // The GPU default schedule works on the plain lowered nests; the CPU
      // schedules (vector tiles, parallel chunks) do not apply.
      for (auto& e : out.entries) {
        if (!e.prim) continue;
        KILN_ASSIGN_OR_RETURN(e.prim, tir::ScheduleForGpu(tir::InlineElementwise(tir::LowerBlocks(e.prim))));
      }
      return out;
    }
    size_t unapplied = 0, other_regime = 0, num_dropped = 0;
    std::set<int> other_counts;
    const bool cold = options.tuning_cold_cache;
    for (auto& e : out.entries) {
      if (e.prim && costs) (*costs)[e.prim->name] = tir::ComputeKernelCost(e.prim);
      if (e.prim && tuning_db) {
        bool dropped = false;
        KILN_ASSIGN_OR_RETURN(std::optional<ir::PrimFunc> tuned,
                              ApplyTuningRecord(*tuning_db, tuning_target, threads, cold, options.tuning_verdicts,
                                                e.prim, &dropped));
        if (tuned) {
          e.prim = *tuned;
          continue;
        }
        num_dropped += dropped;
        bool regime = false;
        std::set<int> c = OtherThreadCounts(*tuning_db, tuning_target, threads, cold, e.prim, &regime);
        unapplied += !c.empty();
        other_regime += regime;
        other_counts.insert(c.begin(), c.end());
      }
      if (e.prim) {
        // The steps and why they come in this order: compiler/tune/lower.cc.
        e.prim = tune::LowerWithDefaultSchedule(e.prim, threads);
      }
    }
    if (unapplied > 0) {
      // Records apply only to a build for the thread count they were
      // measured with; say so rather than leave the user wondering.
      std::string counts;
      for (int c : other_counts) counts += (counts.empty() ? "" : ", ") + std::to_string(c);
      (options.dump_stream ? *options.dump_stream : std::cerr)
          << "note: --tuning-db: " << unapplied << " kernel(s) have records measured with " << counts
          << " thread(s) but this build plans for " << threads << " (--threads " << threads
          << "); build with --threads " << *other_counts.begin() << " to use them\n";
    }
    if (num_dropped > 0) {
      (options.dump_stream ? *options.dump_stream : std::cerr)
          << "note: --tuning-db: " << num_dropped << " kernel(s) keep the default schedule: kiln-tune's model check "
          << "found their records slower in the model (verdicts.jsonl)\n";
    }
    if (other_regime > 0) {
      (options.dump_stream ? *options.dump_stream : std::cerr)
          << "note: --tuning-db: " << other_regime << " kernel(s) have records measured "
          << (cold ? "warm" : "with a cold cache (kiln-tune --cold-cache)") << " only; build with --tuning-cache="
          << (cold ? "warm" : "cold") << " to use them\n";
    }
    return out;
  }));
  return mod;
}
}  // namespace

bool IsCudaTarget(const CompileOptions& options) { return options.target_triple == "cuda"; }

namespace {
// --target=cuda: the same bytecode as for the CPU (its Kernel callables name
// the PrimFuncs), with the kernels as PTX and their launch table in a GPU
// module instead of a native library. No static graph: the graph executor
// calls CPU kernels only.
Result<compiler::VmfbProgram> CompileCudaModule(const ir::IRModule& input, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, LowerModule(input, options));
  compiler::VmfbProgram program;
  relax::VMCodegenOptions vm_options;
  vm_options.memory.upper_bounds = options.upper_bounds;
  KILN_RETURN_IF_ERROR(relax::GenerateVMCode(mod, &program, vm_options));
  // A CPU library kernel would run on the host between GPU launches that it
  // does not wait for; GPU library kernels (kiln.cublas.*, kiln.cudnn.*)
  // are device functions that the runtime binds to the device's stream.
  for (const compiler::CallableInfo& c : program.callables) {
    if (c.kind == compiler::CallableKind::kPacked && c.name.rfind("kiln.cublas.", 0) != 0 &&
        c.name.rfind("kiln.cudnn.", 0) != 0) {
      return Unimplemented("--target=cuda: the module calls '" + c.name +
                           "', a CPU library kernel (a dispatch rule or --matmul=dnnl chose it); GPU modules call "
                           "generated kernels and GPU libraries (library: cublas, cudnn) only");
    }
  }
  std::vector<ir::PrimFunc> funcs = PrimFuncs(mod);
  program.target.triple = kGpuTargetTriple;
  program.target.cpu = ToPtxOptions(options).arch;
  if (!funcs.empty()) {
    KILN_ASSIGN_OR_RETURN(codegen::PtxBuild ptx, codegen::BuildPtx(funcs, ToPtxOptions(options)));
    KILN_ASSIGN_OR_RETURN(compiler::GpuModuleInfo gpu, MakeGpuModuleInfo(ptx, funcs));
    KILN_ASSIGN_OR_RETURN(std::string ptxas, FindPtxas(options.ptxas));
    if (!ptxas.empty()) {
      KILN_ASSIGN_OR_RETURN(gpu.cubin, AssembleCubin(ptxas, gpu.ptx, gpu.arch));
    }
    program.gpu_modules.push_back(std::move(gpu));
  }
  return program;
}
}  // namespace

Result<compiler::VmfbProgram> CompileModule(const ir::IRModule& input, const CompileOptions& options) {
  if (IsCudaTarget(options)) return CompileCudaModule(input, options);
  std::map<std::string, tir::KernelCost> costs;
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, LowerModuleWithCosts(input, options, &costs));
  compiler::VmfbProgram program;
  relax::VMCodegenOptions vm_options;
  vm_options.memory.upper_bounds = options.upper_bounds;
  if (options.report_memory) {
    KILN_ASSIGN_OR_RETURN(memory::ModulePlan plan, memory::PlanMemory(mod, vm_options.memory));
    (options.dump_stream ? *options.dump_stream : std::cerr) << memory::FormatMemoryReport(plan);
  }
  KILN_RETURN_IF_ERROR(relax::GenerateVMCode(mod, &program, vm_options));
  KILN_RETURN_IF_ERROR(relax::GenerateStaticGraphs(mod, &program).status());
  std::vector<ir::PrimFunc> funcs = PrimFuncs(mod);
  if (!funcs.empty()) {
    KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild lib, codegen::BuildNativeLibrary(funcs, ToCodegenOptions(options)));
    compiler::NativeLibraryInfo info;
    info.target.triple = lib.triple;
    info.target.cpu = lib.cpu;
    info.target.features = lib.features;
    info.kernel_names = lib.kernel_names;
    for (const std::string& name : lib.kernel_names) {
      auto it = costs.find(name);
      info.kernel_costs.push_back(it == costs.end() ? compiler::KernelCostInfo{}
                                                    : compiler::KernelCostInfo{it->second.flops, it->second.bytes});
    }
    info.bytes = std::move(lib.shared_object);
    program.target = info.target;
    program.native_libraries.push_back(std::move(info));
  }
  return program;
}

Result<ir::IRModule> LoadModuleFile(const std::string& path, const CompileOptions& options) {
  bool is_onnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  if (!is_onnx) return text::ParseModuleFile(path);
#ifdef KILN_HAVE_ONNX
  onnx::ImportOptions import_options;
  import_options.fixed_dims = options.fixed_dims;
  import_options.function_name = options.params_function.empty() ? "main" : options.params_function;
  return onnx::ImportFile(path, import_options);
#else
  (void)options;
  return Unimplemented(path + ": this Kiln was built without the ONNX importer (libonnx-dev was not found)");
#endif
}

Result<ir::IRModule> LoadModuleFile(const std::string& path, const CompileOptions& options,
                                    CompileOptions* compile_options) {
  *compile_options = options;
  bool is_onnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  if (is_onnx || (options.params.empty() && options.params_file.empty())) return LoadModuleFile(path, options);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string source = ss.str();
  // Reading the weights twice (here and in bind-params) is only worth it for
  // a text that may refer to them by index.
  if (source.find("metadata") == std::string::npos) return text::ParseModule(source, path);
  params::ParamList weights = options.params;
  if (!options.params_file.empty()) {
    KILN_ASSIGN_OR_RETURN(params::ParamList from_file, params::ReadParamFile(options.params_file));
    for (auto& w : from_file) weights.push_back(std::move(w));
  }
  std::vector<ir::Expr> table;
  for (const auto& w : weights) table.push_back(std::make_shared<ir::ConstantExpr>(w.tensor, w.name));
  bool uses_constants = false;
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, path, table, &uses_constants));
  if (uses_constants) {
    compile_options->params.clear();
    compile_options->params_file.clear();
  }
  return mod;
}

Status CompileFile(const std::string& input, const std::string& output, const CompileOptions& options) {
  CompileOptions effective;
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, LoadModuleFile(input, options, &effective));
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, CompileModule(mod, effective));
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
      if (IsCudaTarget(options)) return codegen::EmitNvptxLLVMIR(PrimFuncs(mod), ToPtxOptions(options));
      return codegen::EmitLLVMIR(PrimFuncs(mod), ToCodegenOptions(options));
    case EmitKind::kAsm:
      if (IsCudaTarget(options)) {
        KILN_ASSIGN_OR_RETURN(codegen::PtxBuild ptx, codegen::BuildPtx(PrimFuncs(mod), ToPtxOptions(options)));
        return ptx.ptx;
      }
      return codegen::EmitAssembly(PrimFuncs(mod), ToCodegenOptions(options));
    case EmitKind::kVmfb:
      break;
  }
  return InvalidArgument("EmitText: binary output requested; use CompileFile");
}

}  // namespace driver
}  // namespace kiln
