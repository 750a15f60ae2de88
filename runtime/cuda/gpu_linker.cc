#include "runtime/cuda/gpu_linker.h"

#include <cstring>
#include <map>
#include <vector>

#include <cuda.h>

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device_functions.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/gpu_launch.h"
#include "runtime/device_memory.h"
#include "runtime/vmfb_gpu.h"

namespace kiln {
namespace cuda {
namespace {

// A tensor borrowing device memory, tagged with the device.
Tensor DeviceTensor(void* data, const Tensor& like, DLDevice device, std::shared_ptr<void> owner) {
  Tensor t = Tensor::Borrow(data, like.shape(), like.dtype(), std::move(owner));
  t.object()->dl.device = device;
  return t;
}

}  // namespace

// Declared in this order so that it is destroyed in the reverse: modules,
// the device memory view, then the device (which frees its cached blocks).
struct CudaGpuLinker::State {
  std::unique_ptr<CudaDevice> device;
  std::unique_ptr<CudaMemory> memory;
  std::map<const char*, std::unique_ptr<CudaModule>> modules;  // by the module's PTX pointer
};

CudaGpuLinker::~CudaGpuLinker() = default;

Result<std::shared_ptr<CudaGpuLinker>> CudaGpuLinker::Create(int ordinal) {
  auto state = std::make_shared<State>();
  KILN_ASSIGN_OR_RETURN(state->device, CudaDevice::Open(ordinal));
  state->memory = std::make_unique<CudaMemory>(state->device.get());
  std::shared_ptr<CudaGpuLinker> linker(new CudaGpuLinker());
  linker->state_ = std::move(state);
  return linker;
}

Status CudaGpuLinker::LoadModule(const ProgramGpuModule& module) {
  const DeviceInfo& info = state_->device->info();
  GpuImage image = ChooseGpuImage(module, info.cc_major, info.cc_minor);
  if (image == GpuImage::kNone) {
    return Incompatible(StrFormat("the module's PTX is for %s; %s is %s", module.arch.c_str(), info.name.c_str(),
                                  info.Arch().c_str()));
  }
  std::string name = "GPU module (" + module.arch + ")";
  std::string cubin_error;
  if (image == GpuImage::kCubin) {
    Result<std::unique_ptr<CudaModule>> loaded =
        CudaModule::LoadCubin(state_->device.get(), module.cubin, module.cubin_size, name);
    if (loaded.ok()) {
      state_->modules[module.ptx] = std::move(loaded).value();
      return Status::Ok();
    }
    // A driver older than the toolkit that wrote the cubin refuses it; the
    // PTX may still JIT (or fail with both reasons below).
    cubin_error = loaded.status().message();
  }
  std::string ptx(module.ptx, static_cast<size_t>(module.ptx_size));
  Result<std::unique_ptr<CudaModule>> loaded = CudaModule::LoadPtx(state_->device.get(), ptx, name);
  if (!loaded.ok()) {
    if (cubin_error.empty()) return loaded.TakeStatus();
    return Status(loaded.status().code(), loaded.status().message() + "; the cubin failed first: " + cubin_error);
  }
  state_->modules[module.ptx] = std::move(loaded).value();
  return Status::Ok();
}

Result<PackedFunc> CudaGpuLinker::Resolve(const ProgramGpuModule& module, const ProgramGpuFunction& function) {
  auto it = state_->modules.find(module.ptx);
  if (it == state_->modules.end()) return Internal("GPU module for '" + function.name + "' was not loaded");
  const CudaModule* cm = it->second.get();
  std::vector<void*> handles;
  for (const ProgramGpuKernel& k : function.kernels) {
    Result<void*> h = cm->Function(k.name);
    if (!h.ok()) return h.TakeStatus().Annotate("GPU kernel function '" + function.name + "'");
    handles.push_back(*h);
  }
  std::shared_ptr<State> state = state_;
  ProgramGpuFunction f = function;  // the Program outlives the callable, but a copy is cheap and safe
  return PackedFunc([state, cm, f, handles](Span<const Any> args, Any* ret) -> Status {
    KILN_ASSIGN_OR_RETURN(GpuLaunchPlan plan, PlanGpuLaunch(f, args));
    KILN_RETURN_IF_ERROR(CheckGpuArgumentDevices(f, args, state->memory->device()));
    CudaDevice* dev = state->device.get();
    std::vector<uint64_t> workspaces;
    Status status;
    for (uint64_t bytes : plan.workspace_bytes) {
      Result<uint64_t> p = dev->Allocate(bytes == 0 ? 1 : bytes);
      if (!p.ok()) {
        status = p.TakeStatus().Annotate(StrFormat("GPU kernel function '%s': workspace of %llu bytes", f.name.c_str(),
                                                   static_cast<unsigned long long>(bytes)));
        break;
      }
      workspaces.push_back(*p);
    }
    if (status.ok()) {
      for (const auto& slot : plan.workspace_slots) plan.values[slot.first] = workspaces[static_cast<size_t>(slot.second)];
      std::vector<void*> params(plan.values.size());
      for (size_t i = 0; i < params.size(); ++i) params[i] = &plan.values[i];
      for (size_t k = 0; k < f.kernels.size() && status.ok(); ++k) {
        if (plan.grids[k] == 0) continue;  // an empty tensor: nothing to do
        LaunchDims dims;
        dims.grid[0] = plan.grids[k];
        dims.block[0] = f.kernels[k].block_x;
        status = cm->Launch(handles[k], dims, params.data());
        if (!status.ok()) status.Annotate("kernel '" + f.kernels[k].name + "'");
      }
    }
    // Stream-ordered: later launches on the stream may reuse these blocks.
    for (uint64_t p : workspaces) dev->Free(p);
    *ret = Any();
    return status;
  });
}

Result<PackedFunc> CudaGpuLinker::ResolvePacked(const std::string& name) {
  // The function uses the device: it holds the device (and its stream)
  // alive and goes first (members are destroyed in reverse order).
  struct Bound {
    std::shared_ptr<State> state;
    PackedFunc fn;
  };
  auto bound = std::make_shared<Bound>();
  bound->state = state_;
  KILN_ASSIGN_OR_RETURN(bound->fn, MakeDeviceFunction(name, state_->device.get()));
  return PackedFunc([bound](Span<const Any> args, Any* ret) -> Status { return bound->fn(args, ret); });
}

Result<Tensor> CudaGpuLinker::ToDevice(const Tensor& host) const {
  if (!IsHostAddressable(host.dl()->device)) {
    DLDevice mine = state_->memory->device();
    if (host.dl()->device.device_type == mine.device_type && host.dl()->device.device_id == mine.device_id) return host;
    return InvalidArgument("ToDevice: the tensor is on " + DeviceName(host.dl()->device) + ", not on " +
                           DeviceName(mine));
  }
  if (!host.IsCompact()) return InvalidArgument("ToDevice: a tensor that is not compact row-major");
  size_t n = host.NumBytes();
  void* p = state_->memory->Allocate(n, kTensorAlignment);
  if (p == nullptr) {
    return ResourceExhausted(StrFormat("cannot allocate %zu bytes of GPU memory for an input: %s", n,
                                       state_->memory->Describe().c_str()));
  }
  // The owner keeps the device alive as long as the tensor.
  std::shared_ptr<State> state = state_;
  std::shared_ptr<void> owner(p, [state](void* q) { state->memory->Free(q); });
  KILN_RETURN_IF_ERROR(state_->memory->CopyFromHost(p, host.raw_data(), n));
  return DeviceTensor(p, host, state_->memory->device(), std::move(owner));
}

Result<Tensor> CudaGpuLinker::ToHost(const Tensor& t) const {
  return ReadableOnHost(t, state_->memory.get(), "ToHost");
}

Result<Any> CudaGpuLinker::UploadConstant(const Any& host) {
  KILN_ASSIGN_OR_RETURN(Tensor h, host.AsTensor());
  // Straight from cuMemAlloc, not the cache: constants live as long as the
  // module, and a size class could waste a quarter of a large weight.
  size_t n = h.NumBytes();
  CudaDevice* dev = state_->device.get();
  KILN_RETURN_IF_ERROR(dev->MakeCurrent());
  CUdeviceptr p = 0;
  KILN_CUDA_RETURN_IF_ERROR(dev->api(), dev->api().cuMemAlloc(&p, n == 0 ? 1 : n), "cuMemAlloc (a constant)");
  void* data = reinterpret_cast<void*>(p);
  std::shared_ptr<State> state = state_;
  std::shared_ptr<void> owner(data, [state](void* q) {
    if (state->device->MakeCurrent().ok()) (void)state->device->api().cuMemFree(reinterpret_cast<CUdeviceptr>(q));
  });
  KILN_RETURN_IF_ERROR(state_->memory->CopyFromHost(data, h.raw_data(), n));
  return Any(DeviceTensor(data, h, state_->memory->device(), std::move(owner)));
}

std::shared_ptr<Allocator> CudaGpuLinker::allocator() const {
  return std::shared_ptr<Allocator>(state_, state_->memory.get());
}

DeviceMemory* CudaGpuLinker::memory() const { return state_->memory.get(); }

Status CudaGpuLinker::Synchronize() const { return state_->device->Synchronize(); }

CudaDevice* CudaGpuLinker::device() const { return state_->device.get(); }

std::string CudaGpuLinker::Describe() const {
  const DeviceInfo& info = state_->device->info();
  return StrFormat("%s (%s), device %d", info.name.c_str(), info.Arch().c_str(), info.ordinal);
}

}  // namespace cuda
}  // namespace kiln
