#include "runtime/cuda/gpu_linker.h"

#include <cstring>
#include <map>
#include <vector>

#include <cuda.h>

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device_functions.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/gpu_launch.h"
#include "runtime/vmfb_gpu.h"

namespace kiln {
namespace cuda {
namespace {

// cuMemAllocManaged / cuMemFree on one device, as a kiln::Allocator.
class ManagedAllocator final : public Allocator {
 public:
  explicit ManagedAllocator(CudaDevice* device) : device_(device) {}
  void* Allocate(size_t nbytes, size_t alignment) override {
    // Managed allocations are aligned to at least 256 bytes.
    if (alignment > 256 || !device_->MakeCurrent().ok()) return nullptr;
    CUdeviceptr p = 0;
    if (device_->api().cuMemAllocManaged(&p, nbytes == 0 ? 1 : nbytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
      return nullptr;
    return reinterpret_cast<void*>(p);
  }
  void Free(void* ptr) override {
    if (ptr != nullptr && device_->MakeCurrent().ok())
      (void)device_->api().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
  }
  std::string Describe() const override { return "CUDA managed memory on " + device_->info().name; }

 private:
  CudaDevice* device_;
};

}  // namespace

// Declared in this order so that it is destroyed in the reverse: modules,
// the pool's cached blocks, then the device.
struct CudaGpuLinker::State {
  std::unique_ptr<CudaDevice> device;
  std::unique_ptr<ManagedAllocator> managed;
  std::unique_ptr<PoolAllocator> pool;
  std::map<const char*, std::unique_ptr<CudaModule>> modules;  // by the module's PTX pointer
};

CudaGpuLinker::~CudaGpuLinker() = default;

Result<std::shared_ptr<CudaGpuLinker>> CudaGpuLinker::Create(int ordinal) {
  auto state = std::make_shared<State>();
  KILN_ASSIGN_OR_RETURN(state->device, CudaDevice::Open(ordinal));
  state->managed = std::make_unique<ManagedAllocator>(state->device.get());
  state->pool = std::make_unique<PoolAllocator>(0, state->managed.get());
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
  if (!host.IsCompact()) return InvalidArgument("ToDevice: a tensor that is not compact row-major");
  size_t n = host.NumBytes();
  void* p = state_->pool->Allocate(n, kTensorAlignment);
  if (p == nullptr) return ResourceExhausted(StrFormat("cannot allocate %zu bytes of GPU memory for an input", n));
  if (n > 0) std::memcpy(p, host.raw_data(), n);
  // The owner keeps the pool (and the device) alive as long as the tensor.
  std::shared_ptr<State> state = state_;
  std::shared_ptr<void> owner(p, [state](void* q) { state->pool->Free(q); });
  return Tensor::Borrow(p, host.shape(), host.dtype(), owner);
}

Result<Any> CudaGpuLinker::UploadConstant(const Any& host) {
  KILN_ASSIGN_OR_RETURN(Tensor h, host.AsTensor());
  // Plain managed memory (not the pool): constants live as long as the module.
  size_t n = h.NumBytes();
  void* p = state_->managed->Allocate(n, kTensorAlignment);
  if (p == nullptr) return ResourceExhausted(StrFormat("cannot allocate %zu bytes of GPU memory for a constant", n));
  if (n > 0) std::memcpy(p, h.raw_data(), n);
  std::shared_ptr<State> state = state_;
  std::shared_ptr<void> owner(p, [state](void* q) { state->managed->Free(q); });
  return Any(Tensor::Borrow(p, h.shape(), h.dtype(), owner));
}

std::shared_ptr<Allocator> CudaGpuLinker::allocator() const {
  return std::shared_ptr<Allocator>(state_, state_->pool.get());
}

Status CudaGpuLinker::Synchronize() const { return state_->device->Synchronize(); }

CudaDevice* CudaGpuLinker::device() const { return state_->device.get(); }

std::string CudaGpuLinker::Describe() const {
  const DeviceInfo& info = state_->device->info();
  return StrFormat("%s (%s), device %d", info.name.c_str(), info.Arch().c_str(), info.ordinal);
}

}  // namespace cuda
}  // namespace kiln
