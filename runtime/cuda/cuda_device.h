// CudaDevice: one GPU as the runtime uses it: its primary context, one
// stream, device memory through a caching allocator per stream, copies
// between host and device, and events for timing.
//
// No CUDA type appears here: streams, events and device addresses are opaque
// (void* / uint64_t), so code above the runtime builds without the toolkit.
//
// Failures are Statuses: "no CUDA driver: libcuda.so.1: <dlerror>", "no CUDA
// device: ...", "CUDA device 3 does not exist: the driver sees 1", driver
// errors with the call and the driver's name for the code.
//
// Thread-safety: a CudaDevice is thread-safe (the allocator locks; every
// call makes the device's context current on the calling thread first).
// Copies are asynchronous on the device's stream; Synchronize waits.
#ifndef KILN_RUNTIME_CUDA_CUDA_DEVICE_H_
#define KILN_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/status.h"

namespace kiln {
namespace cuda {

struct DriverApi;

// How many GPUs the driver sees, or why there is no driver.
Result<int> DeviceCount();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;          // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  size_t total_memory = 0;
  int multiprocessors = 0;
  std::string Arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

class CudaDevice {
 public:
  // Retains device `ordinal`'s primary context and creates a stream.
  // `cap_bytes` caps each stream's allocator (0: none).
  static Result<std::unique_ptr<CudaDevice>> Open(int ordinal, size_t cap_bytes = 0);
  ~CudaDevice();  // waits for the stream, frees cached memory, releases the context
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  void* stream() const { return stream_; }  // a CUstream

  // Makes the context current on this thread (every method does it itself;
  // callers of raw driver code need it).
  Status MakeCurrent() const;

  // Device memory on `stream` (nullptr: the device's stream).
  Result<uint64_t> Allocate(size_t nbytes, void* stream = nullptr);
  void Free(uint64_t ptr, void* stream = nullptr);
  CachingDeviceAllocator* allocator(void* stream = nullptr);
  DeviceMemoryStats memory_stats(void* stream = nullptr);

  // Asynchronous on the device's stream; the host buffer must stay valid
  // until Synchronize (pageable memory makes the driver stage it anyway).
  Status CopyToDevice(uint64_t dst, const void* src, size_t nbytes);
  Status CopyToHost(void* dst, uint64_t src, size_t nbytes);
  Status CopyOnDevice(uint64_t dst, uint64_t src, size_t nbytes);
  Status Memset(uint64_t dst, uint8_t value, size_t nbytes);
  Status Synchronize();

  const DriverApi& api() const { return *api_; }

 private:
  CudaDevice() = default;
  class Backend;

  const DriverApi* api_ = nullptr;
  DeviceInfo info_;
  int device_ = 0;         // CUdevice
  void* context_ = nullptr;  // CUcontext (primary)
  void* stream_ = nullptr;   // CUstream
  size_t cap_ = 0;
  std::unique_ptr<Backend> backend_;
  std::mutex mu_;
  std::map<void*, std::unique_ptr<CachingDeviceAllocator>> allocators_;  // guarded by mu_: by stream
};

// A CUDA event pair for timing work on a stream.
class CudaTimer {
 public:
  static Result<std::unique_ptr<CudaTimer>> Create(const CudaDevice& device);
  ~CudaTimer();
  Status Start(void* stream);
  Status Stop(void* stream);
  // Waits for the stop event; milliseconds between the two.
  Result<float> ElapsedMs();

 private:
  CudaTimer() = default;
  const CudaDevice* device_ = nullptr;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CUDA_DEVICE_H_
