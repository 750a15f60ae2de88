#include "runtime/cuda/gpu_launch.h"

#include <cmath>

#include "runtime/device_memory.h"
#include "runtime/kernel_cost.h"

namespace kiln {
namespace cuda {

Result<GpuLaunchPlan> PlanGpuLaunch(const ProgramGpuFunction& f, Span<const Any> args) {
  if (args.size() != static_cast<size_t>(f.num_args)) {
    return InvalidArgument(StrFormat("GPU kernel function '%s' takes %d arguments, got %zu", f.name.c_str(), f.num_args,
                                     args.size()));
  }
  // The arguments as the expression evaluator sees them.
  std::vector<KernelCostArg> cost_args(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Any& a = args[i];
    if (a.is_tensor()) {
      cost_args[i].is_tensor = true;
      const DLTensor& t = a.tensor_obj()->dl;
      cost_args[i].dims.assign(t.shape, t.shape + t.ndim);
    } else if (a.is_int()) {
      cost_args[i].value = a.int_value();
    } else {
      return InvalidArgument(StrFormat("GPU kernel function '%s': argument %zu is %s; GPU kernels take tensors and "
                                       "ints",
                                       f.name.c_str(), i, a.Describe().c_str()));
    }
  }
  GpuLaunchPlan plan;
  plan.values.resize(f.params.size(), 0);
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ProgramGpuParam& p = f.params[i];
    switch (p.kind) {
      case GpuParamKind::kBuffer: {
        const Any& a = args[static_cast<size_t>(p.arg)];
        if (!a.is_tensor()) {
          return InvalidArgument(StrFormat("GPU kernel function '%s': argument %d is %s; its kernels read it as a "
                                           "buffer",
                                           f.name.c_str(), p.arg, a.Describe().c_str()));
        }
        const DLTensor& t = a.tensor_obj()->dl;
        plan.values[i] = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
        break;
      }
      case GpuParamKind::kWorkspace:
        plan.workspace_slots.emplace_back(i, p.workspace);
        break;
      case GpuParamKind::kDim: {
        const KernelCostArg& a = cost_args[static_cast<size_t>(p.arg)];
        if (p.dim < 0) {
          if (a.is_tensor) {
            return InvalidArgument(StrFormat("GPU kernel function '%s': argument %d is a tensor; its kernels read it "
                                             "as an int",
                                             f.name.c_str(), p.arg));
          }
          plan.values[i] = static_cast<uint64_t>(a.value);
        } else {
          if (!a.is_tensor || static_cast<size_t>(p.dim) >= a.dims.size()) {
            return InvalidArgument(StrFormat("GPU kernel function '%s': its kernels read dimension %d of argument %d, "
                                             "which has %s",
                                             f.name.c_str(), p.dim, p.arg,
                                             a.is_tensor ? StrFormat("rank %zu", a.dims.size()).c_str() : "no shape"));
          }
          plan.values[i] = static_cast<uint64_t>(a.dims[static_cast<size_t>(p.dim)]);
        }
        break;
      }
    }
  }
  for (const ProgramGpuWorkspace& w : f.workspaces) {
    double bytes = static_cast<double>(w.dtype.bytes());
    for (const std::string& d : w.shape) {
      std::optional<double> v = EvaluateKernelCost(d, cost_args);
      if (!v || *v < 0) {
        return InvalidArgument(StrFormat("GPU kernel function '%s': workspace '%s' has dimension '%s', which these "
                                         "arguments do not give",
                                         f.name.c_str(), w.name.c_str(), d.c_str()));
      }
      bytes *= *v;
    }
    plan.workspace_bytes.push_back(static_cast<uint64_t>(bytes));
  }
  for (const ProgramGpuKernel& k : f.kernels) {
    std::optional<double> g = EvaluateKernelCost(k.grid_x, cost_args);
    if (!g || *g < 0 || *g > 2147483647.0) {
      return InvalidArgument(StrFormat("GPU kernel function '%s': kernel '%s' has grid '%s' = %s for these arguments",
                                       f.name.c_str(), k.name.c_str(), k.grid_x.c_str(),
                                       g ? StrFormat("%.0f", *g).c_str() : "(does not evaluate)"));
    }
    plan.grids.push_back(static_cast<uint32_t>(*g));
  }
  return plan;
}

Status CheckGpuArgumentDevices(const ProgramGpuFunction& f, Span<const Any> args, DLDevice device) {
  for (const ProgramGpuParam& p : f.params) {
    if (p.kind != GpuParamKind::kBuffer || p.arg < 0 || static_cast<size_t>(p.arg) >= args.size()) continue;
    const Any& a = args[static_cast<size_t>(p.arg)];
    if (!a.is_tensor()) continue;  // PlanGpuLaunch reports it
    DLDevice d = a.tensor_obj()->dl.device;
    bool same = d.device_type == device.device_type && d.device_id == device.device_id;
    if (!same && d.device_type != kDLCUDAManaged) {
      return InvalidArgument(StrFormat("GPU kernel function '%s': argument %d is on %s; its kernels read memory of %s",
                                       f.name.c_str(), p.arg, DeviceName(d).c_str(), DeviceName(device).c_str()));
    }
  }
  return Status::Ok();
}

}  // namespace cuda
}  // namespace kiln
