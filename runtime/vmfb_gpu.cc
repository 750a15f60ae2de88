#include "runtime/vmfb_gpu.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>

#include "runtime/kernel_cost.h"

namespace kiln {
namespace {

constexpr uint32_t kMaxBlock = 1024;
constexpr int32_t kMaxArgs = 4096;  // bounds the probe arguments below (a damaged file)
constexpr int32_t kProbeRank = 64;  // the loader's rank cap

Status Damaged(const std::string& what) { return DataLoss("damaged .vmfb: " + what); }

bool IsArch(const std::string& arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
  for (size_t i = 3; i < arch.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(arch[i]))) return false;
  return true;
}

// The word after `directive` at the start of a PTX line ("" when absent).
std::string DirectiveValue(const std::string& ptx, const std::string& directive) {
  size_t pos = 0;
  while ((pos = ptx.find(directive, pos)) != std::string::npos) {
    bool line_start = pos == 0 || ptx[pos - 1] == '\n';
    pos += directive.size();
    if (!line_start || pos >= ptx.size() || (ptx[pos] != ' ' && ptx[pos] != '\t')) continue;
    while (pos < ptx.size() && (ptx[pos] == ' ' || ptx[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < ptx.size() && !std::isspace(static_cast<unsigned char>(ptx[end])) && ptx[end] != ',') ++end;
    return ptx.substr(pos, end - pos);
  }
  return std::string();
}

// The number of parameters of kernel `name` in the PTX, or -1 when there is
// no ".entry NAME(" (LLVM writes ".visible .entry NAME(").
int EntryParams(const std::string& ptx, const std::string& name) {
  std::string needle = ".entry " + name + "(";
  size_t pos = ptx.find(needle);
  if (pos == std::string::npos) return -1;
  size_t end = ptx.find(')', pos + needle.size());
  if (end == std::string::npos) return -1;
  int n = 0;
  for (size_t p = pos + needle.size(); (p = ptx.find(".param", p)) != std::string::npos && p < end; p += 6) ++n;
  return n;
}

// Arguments that let an expression of this function's parameters evaluate:
// each scalar argument 1, each tensor argument a rank-64 tensor of ones. An
// expression that fails on them is malformed or names what does not exist.
std::vector<KernelCostArg> ProbeArgs(const ProgramGpuFunction& f) {
  std::vector<KernelCostArg> args(static_cast<size_t>(f.num_args));
  for (KernelCostArg& a : args) {
    a.is_tensor = true;
    a.dims.assign(kProbeRank, 1);
  }
  for (const ProgramGpuParam& p : f.params) {
    if (p.kind == GpuParamKind::kDim && p.dim < 0) {
      args[static_cast<size_t>(p.arg)] = KernelCostArg{};
      args[static_cast<size_t>(p.arg)].value = 1;
    }
  }
  return args;
}

Status ValidateFunction(const ProgramGpuFunction& f, const std::string& ptx, const Program& program,
                        const std::string& module) {
  std::string what = module + ": kernel function '" + f.name + "'";
  if (f.name.empty()) return Damaged(module + ": a kernel function has no name");
  if (f.num_args < 0 || f.num_args > kMaxArgs) return Damaged(StrFormat("%s takes %d arguments", what.c_str(), f.num_args));
  const ProgramCallable* callable = nullptr;
  for (const ProgramCallable& c : program.callables)
    if (c.kind == CallableKind::kKernel && c.name == f.name) callable = &c;
  if (callable == nullptr) return Damaged(what + " implements no kernel callable of the program");
  if (callable->num_args >= 0 && callable->num_args != f.num_args) {
    return Damaged(StrFormat("%s takes %d arguments; the program calls it with %d", what.c_str(), f.num_args,
                             callable->num_args));
  }
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ProgramGpuParam& p = f.params[i];
    switch (p.kind) {
      case GpuParamKind::kBuffer:
      case GpuParamKind::kDim:
        if (p.arg < 0 || p.arg >= f.num_args) {
          return Damaged(StrFormat("%s: kernel parameter %zu comes from argument %d; the function has %d", what.c_str(),
                                   i, p.arg, f.num_args));
        }
        if (p.kind == GpuParamKind::kDim && (p.dim < -1 || p.dim >= kProbeRank)) {
          return Damaged(StrFormat("%s: kernel parameter %zu is dimension %d of argument %d", what.c_str(), i, p.dim,
                                   p.arg));
        }
        break;
      case GpuParamKind::kWorkspace:
        if (p.workspace < 0 || static_cast<size_t>(p.workspace) >= f.workspaces.size()) {
          return Damaged(StrFormat("%s: kernel parameter %zu is workspace %d; the function has %zu", what.c_str(), i,
                                   p.workspace, f.workspaces.size()));
        }
        break;
      default:
        return Damaged(StrFormat("%s: kernel parameter %zu has an unknown kind %d", what.c_str(), i,
                                 static_cast<int>(p.kind)));
    }
  }
  std::vector<KernelCostArg> probe = ProbeArgs(f);
  for (const ProgramGpuWorkspace& w : f.workspaces) {
    if (w.dtype.bits == 0 || w.dtype.bits % 8 != 0 || w.dtype.lanes != 1) {
      return Damaged(StrFormat("%s: workspace '%s' has an invalid dtype", what.c_str(), w.name.c_str()));
    }
    for (const std::string& d : w.shape) {
      if (!EvaluateKernelCost(d, probe)) {
        return Damaged(StrFormat("%s: workspace '%s' has a malformed dimension '%s'", what.c_str(), w.name.c_str(),
                                 d.c_str()));
      }
    }
  }
  if (f.kernels.empty()) return Damaged(what + " has no kernels");
  for (const ProgramGpuKernel& k : f.kernels) {
    int params = EntryParams(ptx, k.name);
    if (params < 0) return Damaged(StrFormat("%s: kernel '%s' is not in the PTX", what.c_str(), k.name.c_str()));
    if (static_cast<size_t>(params) != f.params.size()) {
      return Damaged(StrFormat("%s: kernel '%s' takes %d parameters in the PTX; the launch table gives %zu",
                               what.c_str(), k.name.c_str(), params, f.params.size()));
    }
    if (!EvaluateKernelCost(k.grid_x, probe)) {
      return Damaged(StrFormat("%s: kernel '%s' has a malformed grid size '%s'", what.c_str(), k.name.c_str(),
                               k.grid_x.c_str()));
    }
    if (k.block_x < 1 || k.block_x > kMaxBlock) {
      return Damaged(StrFormat("%s: kernel '%s' has block size %u (1..%u)", what.c_str(), k.name.c_str(), k.block_x,
                               kMaxBlock));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateGpuModules(const Program& program) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < program.gpu_modules.size(); ++i) {
    const ProgramGpuModule& m = program.gpu_modules[i];
    std::string module = StrFormat("GPU module %zu", i);
    if (m.format != "ptx") {
      return Unimplemented(StrFormat("%s has format '%s'; this runtime loads 'ptx'", module.c_str(), m.format.c_str()));
    }
    if (!IsArch(m.arch)) return Damaged(StrFormat("%s has arch '%s' (expected sm_XY)", module.c_str(), m.arch.c_str()));
    if (m.ptx == nullptr || m.ptx_size == 0) return Damaged(module + " has no PTX");
    if (m.cubin != nullptr && (m.cubin_size < 4 || std::memcmp(m.cubin, "\x7f" "ELF", 4) != 0)) {
      return Damaged(module + "'s cubin is not an ELF file");
    }
    std::string ptx(m.ptx, static_cast<size_t>(m.ptx_size));
    std::string target = DirectiveValue(ptx, ".target");
    if (target.empty()) return Damaged(module + "'s PTX has no .target directive (not PTX?)");
    if (target != m.arch) {
      return Damaged(StrFormat("%s's PTX is for %s; the module says %s", module.c_str(), target.c_str(),
                               m.arch.c_str()));
    }
    for (const ProgramGpuFunction& f : m.functions) {
      if (!seen.emplace(f.name, i).second) return Damaged(module + ": kernel function '" + f.name + "' appears twice");
      KILN_RETURN_IF_ERROR(ValidateFunction(f, ptx, program, module));
    }
  }
  return Status::Ok();
}

GpuImage ChooseGpuImage(const ProgramGpuModule& module, int cc_major, int cc_minor) {
  // sm_XY: X the major version, Y the minor (one digit; sm_100 is 10.0).
  int arch = IsArch(module.arch) ? std::atoi(module.arch.c_str() + 3) : -1;
  if (arch < 0) return GpuImage::kNone;
  int major = arch / 10, minor = arch % 10;
  if (module.cubin != nullptr && cc_major == major && cc_minor >= minor) return GpuImage::kCubin;
  if (cc_major * 10 + cc_minor >= arch) return GpuImage::kPtx;
  return GpuImage::kNone;
}

std::string DescribeGpuModule(const ProgramGpuModule& module, size_t index) {
  size_t kernels = 0;
  for (const ProgramGpuFunction& f : module.functions) kernels += f.kernels.size();
  std::string text = StrFormat("GPU module %zu (%s, %s): %zu kernel functions, %zu kernels, %llu bytes of PTX", index,
                               module.format.c_str(), module.arch.c_str(), module.functions.size(), kernels,
                               static_cast<unsigned long long>(module.ptx_size));
  if (module.cubin != nullptr) {
    text += StrFormat(", %llu bytes of cubin", static_cast<unsigned long long>(module.cubin_size));
  }
  return text;
}

}  // namespace kiln
