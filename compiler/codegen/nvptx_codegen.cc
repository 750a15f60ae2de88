#include "compiler/codegen/nvptx_codegen.h"

#include <memory>
#include <mutex>

#include "compiler/codegen/llvm_headers.h"
#include "compiler/codegen/nvptx_kernel_emitter.h"

namespace kiln {
namespace codegen {
namespace {

constexpr const char* kNvptxTriple = "nvptx64-nvidia-cuda";

void InitializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

// The PTX ISA version to emit for an architecture: the oldest that knows it,
// so the widest range of drivers JIT the result (LLVM's own default, 6.0,
// predates sm_80 and sm_90).
Result<std::string> PtxFeature(const std::string& arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) {
    return InvalidArgument("GPU arch must be sm_XY (e.g. sm_80, sm_90), got '" + arch + "'");
  }
  int sm = 0;
  for (size_t i = 3; i < arch.size(); ++i) {
    if (arch[i] == 'a' && i + 1 == arch.size()) break;
    if (arch[i] < '0' || arch[i] > '9') return InvalidArgument("GPU arch must be sm_XY, got '" + arch + "'");
    sm = sm * 10 + (arch[i] - '0');
  }
  if (sm < 52) return InvalidArgument("GPU arch " + arch + " is older than sm_52, which CUDA 12 and later no longer build for");
  if (sm > 90) return InvalidArgument("GPU arch " + arch + " is newer than LLVM 19's NVPTX backend knows (up to sm_90a)");
  if (sm >= 90) return std::string("+ptx78");
  if (sm >= 89) return std::string("+ptx78");
  if (sm >= 86) return std::string("+ptx71");
  if (sm >= 80) return std::string("+ptx70");
  return std::string("+ptx64");
}

struct Compiled {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> mod;
  std::vector<GpuFunction> functions;
};

Status Optimize(llvm::Module* mod, llvm::TargetMachine* tm, int opt_level) {
  if (opt_level == 0) return Status::Ok();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  // Kernels call nothing: no library function may be introduced.
  llvm::TargetLibraryInfoImpl tlii(tm->getTargetTriple());
  tlii.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(*mod, mam);
  return Status::Ok();
}

Result<Compiled> Compile(const std::vector<ir::PrimFunc>& funcs, const PtxOptions& options) {
  if (options.opt_level < 0 || options.opt_level > 3) {
    return InvalidArgument(StrFormat("codegen opt_level must be 0..3, got %d", options.opt_level));
  }
  KILN_ASSIGN_OR_RETURN(std::string ptx_feature, PtxFeature(options.arch));
  InitializeNvptx();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kNvptxTriple, err);
  if (target == nullptr) return Internal("this LLVM has no NVPTX backend: " + err);
  Compiled c;
  llvm::TargetOptions topts;
  c.tm.reset(target->createTargetMachine(kNvptxTriple, options.arch, ptx_feature, topts, std::nullopt, std::nullopt,
                                         options.opt_level >= 2 ? llvm::CodeGenOptLevel::Aggressive
                                                                : llvm::CodeGenOptLevel::None));
  if (c.tm == nullptr) return Internal("cannot create the NVPTX target machine for " + options.arch);
  c.ctx = std::make_unique<llvm::LLVMContext>();
  c.mod = std::make_unique<llvm::Module>("kiln_gpu_kernels", *c.ctx);
  c.mod->setTargetTriple(kNvptxTriple);
  c.mod->setDataLayout(c.tm->createDataLayout());
  KILN_RETURN_IF_ERROR(EmitNvptxKernels(funcs, c.mod.get(), &c.functions));
  std::string verify_err;
  llvm::raw_string_ostream vos(verify_err);
  if (llvm::verifyModule(*c.mod, &vos)) {
    vos.flush();
    return Internal("the LLVM IR generated for the GPU kernels is invalid: " + verify_err);
  }
  KILN_RETURN_IF_ERROR(Optimize(c.mod.get(), c.tm.get(), options.opt_level));
  return c;
}

}  // namespace

Result<PtxBuild> BuildPtx(const std::vector<ir::PrimFunc>& scheduled, const PtxOptions& options) {
  KILN_ASSIGN_OR_RETURN(Compiled c, Compile(scheduled, options));
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (c.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    return Internal("the NVPTX target cannot emit PTX");
  }
  pm.run(*c.mod);
  PtxBuild out;
  out.ptx.assign(buf.begin(), buf.end());
  out.arch = options.arch;
  out.functions = std::move(c.functions);
  return out;
}

Result<std::string> EmitNvptxLLVMIR(const std::vector<ir::PrimFunc>& scheduled, const PtxOptions& options) {
  KILN_ASSIGN_OR_RETURN(Compiled c, Compile(scheduled, options));
  std::string text;
  llvm::raw_string_ostream os(text);
  c.mod->print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace codegen
}  // namespace kiln
