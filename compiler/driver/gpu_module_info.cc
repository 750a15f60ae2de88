#include "compiler/driver/gpu_module_info.h"

#include <map>
#include <string>

#include "compiler/tir/kernel_cost.h"

namespace kiln {
namespace driver {

Result<compiler::GpuModuleInfo> MakeGpuModuleInfo(const codegen::PtxBuild& build,
                                                  const std::vector<ir::PrimFunc>& funcs) {
  if (build.functions.size() != funcs.size()) {
    return Internal(StrFormat("PTX build has %zu functions for %zu PrimFuncs", build.functions.size(), funcs.size()));
  }
  compiler::GpuModuleInfo out;
  out.format = "ptx";
  out.arch = build.arch;
  out.ptx = build.ptx;
  for (size_t i = 0; i < funcs.size(); ++i) {
    const codegen::GpuFunction& g = build.functions[i];
    compiler::GpuFunctionInfo f;
    f.name = g.name;
    f.num_args = static_cast<int32_t>(funcs[i]->params.size());
    // The kernels' parameter order (nvptx_codegen.h): buffers, workspaces, dims.
    for (int32_t p : g.buffer_params) f.params.push_back({compiler::GpuParamKind::kBuffer, p, -1, 0});
    for (size_t w = 0; w < g.workspaces.size(); ++w)
      f.params.push_back({compiler::GpuParamKind::kWorkspace, 0, -1, static_cast<int32_t>(w)});
    std::map<const ir::VarNode*, std::string> refs;
    for (const codegen::GpuDim& d : g.dims) {
      f.params.push_back({compiler::GpuParamKind::kDim, d.param, d.dim, 0});
      refs.emplace(d.var.get(), d.dim < 0 ? StrFormat("$%d", d.param) : StrFormat("$%d.%d", d.param, d.dim));
    }
    auto print = [&](const ir::PrimExpr& e, const std::string& what) -> Result<std::string> {
      std::string text;
      if (!tir::PrintKernelCostExpr(e, refs, &text))
        return Internal(StrFormat("%s: %s is not an expression of the function's arguments", g.name.c_str(),
                                  what.c_str()));
      return text;
    };
    for (const codegen::GpuWorkspace& w : g.workspaces) {
      compiler::GpuWorkspaceInfo info;
      info.name = w.name;
      info.dtype = w.dtype;
      for (const ir::PrimExpr& d : w.shape) {
        KILN_ASSIGN_OR_RETURN(std::string text, print(d, "workspace '" + w.name + "'"));
        info.shape.push_back(std::move(text));
      }
      f.workspaces.push_back(std::move(info));
    }
    for (const codegen::GpuKernel& k : g.kernels) {
      KILN_ASSIGN_OR_RETURN(std::string grid, print(k.grid_x, "the grid of " + k.name));
      f.kernels.push_back({k.name, std::move(grid), static_cast<uint32_t>(k.block_x)});
    }
    out.functions.push_back(std::move(f));
  }
  return out;
}

}  // namespace driver
}  // namespace kiln
