#include "runtime/cuda/cuda_device.h"

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/driver_api.h"

namespace kiln {
namespace cuda {

// Device memory straight from the driver, for the caching allocator.
class CudaDevice::Backend final : public DeviceMemoryBackend {
 public:
  explicit Backend(CudaDevice* device) : device_(device) {}
  Result<uint64_t> Allocate(size_t nbytes) override {
    KILN_RETURN_IF_ERROR(device_->MakeCurrent());
    CUdeviceptr p = 0;
    KILN_CUDA_RETURN_IF_ERROR(device_->api(), device_->api().cuMemAlloc(&p, nbytes), "cuMemAlloc");
    return static_cast<uint64_t>(p);
  }
  void Free(uint64_t ptr) override {
    // A failure here means the context is already broken (a faulting
    // kernel); the memory is gone with it, so there is nothing to report.
    if (device_->MakeCurrent().ok()) (void)device_->api().cuMemFree(static_cast<CUdeviceptr>(ptr));
  }

 private:
  CudaDevice* device_;
};

Result<int> DeviceCount() {
  KILN_ASSIGN_OR_RETURN(const DriverApi* api, Driver());
  int n = 0;
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

Result<std::unique_ptr<CudaDevice>> CudaDevice::Open(int ordinal, size_t cap_bytes) {
  KILN_ASSIGN_OR_RETURN(const DriverApi* api, Driver());
  KILN_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (count == 0) return FailedPrecondition("no CUDA device: the driver sees no GPU");
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgument(StrFormat("CUDA device %d does not exist: the driver sees %d (0..%d)", ordinal, count,
                                     count - 1));
  }
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  d->api_ = api;
  d->cap_ = cap_bytes;
  d->info_.ordinal = ordinal;
  CUdevice dev = 0;
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  d->device_ = dev;
  char name[256] = {0};
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  d->info_.name = name;
  KILN_CUDA_RETURN_IF_ERROR(
      *api, api->cuDeviceGetAttribute(&d->info_.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
      "cuDeviceGetAttribute");
  KILN_CUDA_RETURN_IF_ERROR(
      *api, api->cuDeviceGetAttribute(&d->info_.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
      "cuDeviceGetAttribute");
  KILN_CUDA_RETURN_IF_ERROR(
      *api, api->cuDeviceGetAttribute(&d->info_.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
      "cuDeviceGetAttribute");
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuDeviceTotalMem(&d->info_.total_memory, dev), "cuDeviceTotalMem");
  // The primary context is the one the CUDA runtime and libraries (cuBLAS,
  // PyTorch) share, so memory and modules interoperate with them.
  CUcontext ctx = nullptr;
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  d->context_ = ctx;
  KILN_RETURN_IF_ERROR(d->MakeCurrent());
  CUstream stream = nullptr;
  // Non-blocking: the legacy default stream would serialize with every other
  // stream of the process.
  KILN_CUDA_RETURN_IF_ERROR(*api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  d->stream_ = stream;
  d->backend_.reset(new Backend(d.get()));
  return d;
}

CudaDevice::~CudaDevice() {
  if (context_ == nullptr) return;
  bool current = MakeCurrent().ok();
  if (current && stream_) (void)api_->cuStreamSynchronize(static_cast<CUstream>(stream_));
  allocators_.clear();  // returns cached blocks while the context lives
  if (current && stream_) (void)api_->cuStreamDestroy(static_cast<CUstream>(stream_));
  (void)api_->cuDevicePrimaryCtxRelease(static_cast<CUdevice>(device_));
}

Status CudaDevice::MakeCurrent() const {
  return Check(*api_, api_->cuCtxSetCurrent(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

CachingDeviceAllocator* CudaDevice::allocator(void* stream) {
  if (stream == nullptr) stream = stream_;
  std::lock_guard<std::mutex> lock(mu_);
  auto& a = allocators_[stream];
  if (!a) {
    a.reset(new CachingDeviceAllocator(backend_.get(), cap_,
                                       StrFormat("CUDA device %d stream %p", info_.ordinal, stream)));
  }
  return a.get();
}

Result<uint64_t> CudaDevice::Allocate(size_t nbytes, void* stream) { return allocator(stream)->Allocate(nbytes); }
void CudaDevice::Free(uint64_t ptr, void* stream) { allocator(stream)->Free(ptr); }
DeviceMemoryStats CudaDevice::memory_stats(void* stream) { return allocator(stream)->stats(); }

Status CudaDevice::CopyToDevice(uint64_t dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return Status::Ok();
  KILN_RETURN_IF_ERROR(MakeCurrent());
  return Check(*api_, api_->cuMemcpyHtoDAsync(dst, src, nbytes, static_cast<CUstream>(stream_)), "cuMemcpyHtoDAsync");
}

Status CudaDevice::CopyToHost(void* dst, uint64_t src, size_t nbytes) {
  if (nbytes == 0) return Status::Ok();
  KILN_RETURN_IF_ERROR(MakeCurrent());
  return Check(*api_, api_->cuMemcpyDtoHAsync(dst, src, nbytes, static_cast<CUstream>(stream_)), "cuMemcpyDtoHAsync");
}

Status CudaDevice::CopyOnDevice(uint64_t dst, uint64_t src, size_t nbytes) {
  if (nbytes == 0) return Status::Ok();
  KILN_RETURN_IF_ERROR(MakeCurrent());
  return Check(*api_, api_->cuMemcpyDtoDAsync(dst, src, nbytes, static_cast<CUstream>(stream_)), "cuMemcpyDtoDAsync");
}

Status CudaDevice::Memset(uint64_t dst, uint8_t value, size_t nbytes) {
  if (nbytes == 0) return Status::Ok();
  KILN_RETURN_IF_ERROR(MakeCurrent());
  return Check(*api_, api_->cuMemsetD8Async(dst, value, nbytes, static_cast<CUstream>(stream_)), "cuMemsetD8Async");
}

Status CudaDevice::Synchronize() {
  KILN_RETURN_IF_ERROR(MakeCurrent());
  return Check(*api_, api_->cuStreamSynchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize");
}

Result<std::unique_ptr<CudaTimer>> CudaTimer::Create(const CudaDevice& device) {
  KILN_RETURN_IF_ERROR(device.MakeCurrent());
  std::unique_ptr<CudaTimer> t(new CudaTimer());
  t->device_ = &device;
  const DriverApi& api = device.api();
  CUevent a = nullptr, b = nullptr;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  t->start_ = a;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  t->stop_ = b;
  return t;
}

CudaTimer::~CudaTimer() {
  if (device_ == nullptr || !device_->MakeCurrent().ok()) return;
  if (start_) (void)device_->api().cuEventDestroy(static_cast<CUevent>(start_));
  if (stop_) (void)device_->api().cuEventDestroy(static_cast<CUevent>(stop_));
}

Status CudaTimer::Start(void* stream) {
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  return Check(device_->api(), device_->api().cuEventRecord(static_cast<CUevent>(start_), static_cast<CUstream>(stream)),
               "cuEventRecord");
}

Status CudaTimer::Stop(void* stream) {
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  return Check(device_->api(), device_->api().cuEventRecord(static_cast<CUevent>(stop_), static_cast<CUstream>(stream)),
               "cuEventRecord");
}

Result<float> CudaTimer::ElapsedMs() {
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  const DriverApi& api = device_->api();
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize");
  float ms = 0;
  KILN_CUDA_RETURN_IF_ERROR(
      api, api.cuEventElapsedTime(&ms, static_cast<CUevent>(start_), static_cast<CUevent>(stop_)), "cuEventElapsedTime");
  return ms;
}

}  // namespace cuda
}  // namespace kiln
