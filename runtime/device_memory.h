// DeviceMemory: memory of a device the host cannot address (a GPU's), as the
// runtime sees it without knowing the device: which device it is, and how
// bytes move between it and the host.
//
// An Allocator whose device_memory() is not null hands out such blocks
// (runtime/cuda's CUDA memory). The runtime then never reads or writes them
// on the host: wrappers keep a block's size beside its address instead of in
// a header (CountingAllocator), Tensor::Empty tags the tensor with the
// device, and the VM's few builtins that read or write tensor values on the
// host (a shape read from a tensor, a loop's condition, an If's condition
// ...) go through the copies below.
//
// Ordering: a device runs its work asynchronously, in the order it was
// queued. CopyToHost waits for everything queued before it, so a value read
// on the host is the one the earlier kernels wrote.
//
// Thread-safety: implementations are thread-safe.
#ifndef KILN_RUNTIME_DEVICE_MEMORY_H_
#define KILN_RUNTIME_DEVICE_MEMORY_H_

#include <dlpack/dlpack.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/any.h"
#include "runtime/span.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // {kDLCUDA, 0}, ...
  virtual DLDevice device() const = 0;
  // Waits for the work queued on the device so far, then copies: `dst`
  // holds the bytes when it returns.
  virtual Status CopyToHost(void* dst, const void* src, size_t nbytes) = 0;
  // Queued after the work so far; `src` may be reused when it returns.
  virtual Status CopyFromHost(void* dst, const void* src, size_t nbytes) = 0;
  // Device to device, queued after the work so far.
  virtual Status CopyWithin(void* dst, const void* src, size_t nbytes) = 0;
  // Waits for the work queued so far (and reports a kernel's failure).
  virtual Status Synchronize() = 0;
};

// True for memory the host reads directly: kDLCPU, CUDA pinned host memory
// (kDLCUDAHost) and managed memory (kDLCUDAManaged).
bool IsHostAddressable(DLDevice device);

// "cpu", "cuda:0", "device type 9 id 1".
std::string DeviceName(DLDevice device);

// `t` itself when its memory is host addressable; otherwise a new compact
// host tensor holding its values, copied through `memory` (which waits for
// the kernels before it). Errors: a device tensor without `memory`
// ("... is on cuda:0; this call has no access to that device's memory"), or
// with the memory of another device; a strided device tensor.
Result<Tensor> ReadableOnHost(const Tensor& t, DeviceMemory* memory, const std::string& what);

// Writes `nbytes` from the host into `t` (compact): a memcpy for host
// memory, a copy through `memory` for a device tensor (same errors).
Status WriteFromHost(const Tensor& t, const void* src, size_t nbytes, DeviceMemory* memory, const std::string& what);

// Copies `nbytes` from `src` to `dst`, both on the host or both on
// `memory`'s device.
Status CopyBytes(const Tensor& dst, size_t dst_offset, const Tensor& src, size_t src_offset, size_t nbytes,
                 DeviceMemory* memory, const std::string& what);

// The arguments of a call on `allocator`'s device. On a device
// (`allocator`->device_memory() non-null): `args` with each top-level host
// tensor replaced by a device copy from `allocator`, owned by `keep_alive`
// (may be null); device tensors pass as they are. On the CPU every tensor
// must be in host memory (kernels would read a device address). Returns
// false (and leaves `out` alone) when nothing needed a copy. Errors: a
// tensor on another device ("argument 0 is on cuda:1, but this call runs on
// cuda:0"; "... this call runs on the CPU"), a strided host tensor.
Result<bool> HostArgumentsToDevice(Span<const Any> args, Allocator* allocator, const std::shared_ptr<void>& keep_alive,
                                   std::vector<Any>* out);

}  // namespace kiln

#endif  // KILN_RUNTIME_DEVICE_MEMORY_H_
