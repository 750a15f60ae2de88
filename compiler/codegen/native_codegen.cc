#include "compiler/codegen/native_codegen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "compiler/codegen/kernel_emitter.h"
#include "compiler/codegen/kernel_partition.h"
#include "compiler/codegen/lld_link.h"
#include "compiler/codegen/merge_outlined.h"
#include "compiler/tir/prune_guarded_branches.h"
#include "compiler/codegen/llvm_headers.h"

namespace kiln {
namespace codegen {
namespace {

void InitializeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

// "+avx2,+fma,-avx512f,...", sorted so the string is stable.
std::string HostFeatures() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::set<std::string> sorted;
  for (const auto& kv : features) sorted.insert((kv.second ? "+" : "-") + kv.first().str());
  std::string out;
  for (const auto& f : sorted) {
    if (!out.empty()) out += ",";
    out += f;
  }
  return out;
}

// A module built and optimized for one target, ready to emit.
struct Compiled {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> mod;
  TargetDesc target;
};

Result<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const CodegenOptions& options, TargetDesc* out) {
  InitializeLLVM();
  std::string process = llvm::sys::getProcessTriple();
  std::string triple = options.triple.empty() ? process : llvm::Triple::normalize(options.triple);
  bool host = llvm::Triple(triple) == llvm::Triple(process);
  std::string cpu = options.cpu;
  std::string features = options.features;
  if (cpu.empty()) {
    if (host) {
      cpu = llvm::sys::getHostCPUName().str();
      if (features.empty()) features = HostFeatures();
    } else {
      cpu = "generic";
    }
  }
  // No hardware gathers or scatters on x86: LLVM 19's SLP vectorizer, when
  // AVX-512 makes masked gathers legal, builds gather trees for small
  // unrolled broadcasts whose shuffles leave lanes poison (a 4x1x3 + 1x5x1 add
  // wrote 4 wrong numbers of 60 on a Sapphire Rapids host; reproducible with
  // `opt -O3 -mcpu=skylake-avx512`). Gathers are also slow on current Intel
  // parts; Kiln's own vector loops use contiguous or masked loads, so this
  // costs the schedules nothing. "prefer-no-*" are tuning flags, not CPU
  // features: the loader's feature check ignores them.
  if (llvm::Triple(triple).isX86() && features.find("prefer-no-gather") == std::string::npos) {
    features += std::string(features.empty() ? "" : ",") + "+prefer-no-gather,+prefer-no-scatter";
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (target == nullptr) return InvalidArgument("unknown target triple '" + triple + "': " + err);
  llvm::TargetOptions topts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, topts, llvm::Reloc::PIC_, std::nullopt,
      options.opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.opt_level == 2 ? llvm::CodeGenOptLevel::Default
      : options.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                               : llvm::CodeGenOptLevel::None));
  if (tm == nullptr) return InvalidArgument("cannot create an LLVM target machine for '" + triple + "' cpu '" + cpu + "'");
  llvm::Triple tt(triple);
  bool native_rounding =
      tt.isAArch64() || (tt.isX86() && tm->getMCSubtargetInfo()->checkFeatures("+sse4.1"));
  bool masked_vectors = tt.isX86() && tm->getMCSubtargetInfo()->checkFeatures("+avx512f,+avx512vl");
  *out = TargetDesc{triple, cpu, features, native_rounding, masked_vectors};
  return tm;
}

llvm::TargetLibraryInfoImpl NoLibraryCalls(const llvm::Triple& triple) {
  // Generated code may call nothing outside itself: no memset/memcpy idioms,
  // no libm simplifications.
  llvm::TargetLibraryInfoImpl tlii(triple);
  tlii.disableAllFunctions();
  return tlii;
}

Status Optimize(llvm::Module* mod, llvm::TargetMachine* tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder pb(tm, pto);
  llvm::TargetLibraryInfoImpl tlii = NoLibraryCalls(tm->getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (opt_level <= 0) {
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                    : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                     : llvm::OptimizationLevel::O3;
    mpm = pb.buildPerModuleDefaultPipeline(level);
  }
  mpm.run(*mod, mam);
  return Status::Ok();
}

Result<Compiled> Compile(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options,
                         KernelModuleParts parts = KernelModuleParts::kKernelsAndQuery) {
  if (options.opt_level < 0 || options.opt_level > 3) {
    return InvalidArgument(StrFormat("codegen opt_level must be 0..3, got %d", options.opt_level));
  }
  Compiled c;
  KILN_ASSIGN_OR_RETURN(c.tm, MakeTargetMachine(options, &c.target));
  c.ctx = std::make_unique<llvm::LLVMContext>();
  c.mod = std::make_unique<llvm::Module>("kiln_kernels", *c.ctx);
  c.mod->setTargetTriple(c.target.triple);
  c.mod->setDataLayout(c.tm->createDataLayout());
  KILN_RETURN_IF_ERROR(EmitKernelModule(lowered, c.target, c.mod.get(), parts));
  std::string verify_err;
  llvm::raw_string_ostream vos(verify_err);
  if (llvm::verifyModule(*c.mod, &vos)) {
    vos.flush();
    return Internal("the LLVM IR generated for the kernels is invalid: " + verify_err);
  }
  // Before the optimizer, which would otherwise optimize and compile each
  // copy of a loop that several kernels share (merge_outlined.h).
  MergeIdenticalOutlinedFunctions(c.mod.get());
  KILN_RETURN_IF_ERROR(Optimize(c.mod.get(), c.tm.get(), options.opt_level));
  return c;
}

Result<std::vector<uint8_t>> EmitFile(Compiled& c, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  llvm::TargetLibraryInfoImpl tlii = NoLibraryCalls(c.tm->getTargetTriple());
  pm.add(new llvm::TargetLibraryInfoWrapperPass(tlii));
  if (c.tm->addPassesToEmitFile(pm, os, nullptr, type)) {
    return Internal("LLVM target " + c.target.triple + " cannot emit this file type");
  }
  pm.run(*c.mod);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}

}  // namespace

Result<std::string> ResolvedTargetName(const CodegenOptions& options) {
  TargetDesc desc;
  KILN_RETURN_IF_ERROR(MakeTargetMachine(options, &desc).status());
  return desc.triple + " -mcpu=" + desc.cpu;
}

namespace {

// One object of a library: `funcs` compiled and emitted as `parts` say.
Result<std::vector<uint8_t>> BuildObject(const std::vector<ir::PrimFunc>& funcs, const CodegenOptions& options,
                                         KernelModuleParts parts, TargetDesc* target) {
  KILN_ASSIGN_OR_RETURN(Compiled c, Compile(funcs, options, parts));
  if (!c.tm->getTargetTriple().isOSBinFormatELF()) {
    return Unimplemented("target " + c.target.triple + ": only ELF shared objects are produced");
  }
  *target = c.target;
  return EmitFile(c, llvm::CodeGenFileType::ObjectFile);
}

// The objects of a library in parts (kernel_partition.h): one per part, then
// the query table's. The parts are built by up to options.jobs threads, which
// take the next part as they finish one; the first failing part's error (in
// part order) is returned, whatever the threads' timing.
Result<std::vector<std::vector<uint8_t>>> BuildPartObjects(const std::vector<ir::PrimFunc>& lowered,
                                                          const std::vector<std::vector<size_t>>& parts,
                                                          const CodegenOptions& options, TargetDesc* target) {
  std::vector<std::optional<Result<std::vector<uint8_t>>>> built(parts.size());
  std::vector<TargetDesc> targets(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < parts.size(); i = next++) {
      std::vector<ir::PrimFunc> funcs;
      for (size_t k : parts[i]) funcs.push_back(lowered[k]);
      built[i] = BuildObject(funcs, options, KernelModuleParts::kKernels, &targets[i]);
    }
  };
  size_t jobs = options.jobs > 0 ? static_cast<size_t>(options.jobs) : std::thread::hardware_concurrency();
  jobs = std::max<size_t>(1, std::min(jobs, parts.size()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < jobs; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  std::vector<std::vector<uint8_t>> objects;
  for (auto& b : built) {
    if (!b->ok()) return b->status();
    objects.push_back(std::move(**b));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> query, BuildObject(lowered, options, KernelModuleParts::kQuery, target));
  objects.push_back(std::move(query));
  return objects;
}

// The kernels without the arms their own run-time tests rule out
// (prune_guarded_branches.h): LLVM cannot see those tests across the
// outlined parallel loops, and would optimize and compile the arms.
std::vector<ir::PrimFunc> Pruned(const std::vector<ir::PrimFunc>& lowered) {
  std::vector<ir::PrimFunc> out;
  out.reserve(lowered.size());
  for (const auto& f : lowered) out.push_back(tir::PruneGuardedBranches(f));
  return out;
}

// KILN_KERNEL_TIMES=1 (or a part of kernels' names): each kernel (that
// matches) compiled once more alone, its optimizer and instruction-selection
// milliseconds and object size printed to stderr; the library is unchanged.
void PrintKernelTimes(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options) {
  const char* env = std::getenv("KILN_KERNEL_TIMES");
  if (env == nullptr) return;
  const std::string only = env;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  for (const auto& f : lowered) {
    if (f == nullptr || (only != "1" && f->name.find(only) == std::string::npos)) continue;
    Clock::time_point t0 = Clock::now();
    Result<Compiled> c = Compile({f}, options, KernelModuleParts::kKernels);
    Clock::time_point t1 = Clock::now();
    if (!c.ok()) continue;
    Result<std::vector<uint8_t>> obj = EmitFile(*c, llvm::CodeGenFileType::ObjectFile);
    Clock::time_point t2 = Clock::now();
    std::fprintf(stderr, "kiln kernel time: %s nodes=%llu opt_ms=%.1f isel_ms=%.1f bytes=%zu\n", f->name.c_str(),
                 static_cast<unsigned long long>(KernelNodeCount(f)), ms(t1 - t0), ms(t2 - t1),
                 obj.ok() ? obj->size() : size_t{0});
  }
}

}  // namespace

Result<NativeLibraryBuild> BuildNativeLibrary(const std::vector<ir::PrimFunc>& unpruned, const CodegenOptions& options) {
  const std::vector<ir::PrimFunc> lowered = Pruned(unpruned);
  PrintKernelTimes(lowered, options);
  std::vector<std::vector<size_t>> parts = PartitionKernels(lowered);
  std::vector<std::vector<uint8_t>> objects;
  TargetDesc target;
  if (parts.size() <= 1) {
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> object,
                          BuildObject(lowered, options, KernelModuleParts::kKernelsAndQuery, &target));
    objects.push_back(std::move(object));
  } else {
    // Each module sees only its own kernels: a name used twice would reach
    // the linker as a duplicate symbol instead of the emitter's error.
    std::set<std::string> names;
    for (const auto& f : lowered) {
      if (f != nullptr && !names.insert(f->name).second) {
        return InvalidArgument("two PrimFuncs are named '" + f->name + "' (kernel names must be unique)");
      }
    }
    KILN_ASSIGN_OR_RETURN(objects, BuildPartObjects(lowered, parts, options, &target));
  }
  NativeLibraryBuild out;
  KILN_ASSIGN_OR_RETURN(out.shared_object, LinkSharedObject(objects));
  for (const auto& f : lowered) out.kernel_names.push_back(f->name);
  out.triple = target.triple;
  out.cpu = target.cpu;
  out.features = target.features;
  return out;
}

Result<std::string> EmitLLVMIR(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options) {
  KILN_ASSIGN_OR_RETURN(Compiled c, Compile(Pruned(lowered), options));
  std::string text;
  llvm::raw_string_ostream os(text);
  c.mod->print(os, nullptr);
  os.flush();
  return text;
}

Result<std::string> EmitAssembly(const std::vector<ir::PrimFunc>& lowered, const CodegenOptions& options) {
  KILN_ASSIGN_OR_RETURN(Compiled c, Compile(Pruned(lowered), options));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> text, EmitFile(c, llvm::CodeGenFileType::AssemblyFile));
  return std::string(text.begin(), text.end());
}

}  // namespace codegen
}  // namespace kiln
