#include "runtime/device_memory.h"

#include <cstring>

namespace kiln {
namespace {

bool SameDevice(DLDevice a, DLDevice b) { return a.device_type == b.device_type && a.device_id == b.device_id; }

// The device memory that reaches `t`, or why there is none.
Status CheckReach(const Tensor& t, DeviceMemory* memory, const std::string& what) {
  DLDevice d = t.dl()->device;
  if (memory == nullptr) {
    return FailedPrecondition(StrFormat("%s: the tensor is on %s; this call has no access to that device's memory",
                                        what.c_str(), DeviceName(d).c_str()));
  }
  if (!SameDevice(memory->device(), d)) {
    return InvalidArgument(StrFormat("%s: the tensor is on %s, but this call runs on %s", what.c_str(),
                                     DeviceName(d).c_str(), DeviceName(memory->device()).c_str()));
  }
  if (!t.IsCompact()) return InvalidArgument(what + ": a strided tensor on " + DeviceName(d) + " is not supported");
  return Status::Ok();
}

}  // namespace

bool IsHostAddressable(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost ||
         device.device_type == kDLCUDAManaged;
}

std::string DeviceName(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(device.device_id);
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDAManaged: return "cuda_managed:" + std::to_string(device.device_id);
    default:
      return StrFormat("device type %d id %d", static_cast<int>(device.device_type), device.device_id);
  }
}

Result<Tensor> ReadableOnHost(const Tensor& t, DeviceMemory* memory, const std::string& what) {
  if (IsHostAddressable(t.dl()->device)) return t;
  KILN_RETURN_IF_ERROR(CheckReach(t, memory, what));
  KILN_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(t.shape(), t.dtype()));
  Status s = memory->CopyToHost(host.raw_data(), t.raw_data(), t.NumBytes());
  if (!s.ok()) return s.Annotate(what + ": reading a tensor on " + DeviceName(t.dl()->device));
  return host;
}

Status WriteFromHost(const Tensor& t, const void* src, size_t nbytes, DeviceMemory* memory, const std::string& what) {
  if (nbytes == 0) return Status::Ok();
  if (IsHostAddressable(t.dl()->device)) {
    std::memcpy(t.raw_data(), src, nbytes);
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(CheckReach(t, memory, what));
  Status s = memory->CopyFromHost(t.raw_data(), src, nbytes);
  if (!s.ok()) s.Annotate(what + ": writing a tensor on " + DeviceName(t.dl()->device));
  return s;
}

Status CopyBytes(const Tensor& dst, size_t dst_offset, const Tensor& src, size_t src_offset, size_t nbytes,
                 DeviceMemory* memory, const std::string& what) {
  if (nbytes == 0) return Status::Ok();
  char* to = static_cast<char*>(dst.raw_data()) + dst_offset;
  const char* from = static_cast<const char*>(src.raw_data()) + src_offset;
  bool dst_host = IsHostAddressable(dst.dl()->device), src_host = IsHostAddressable(src.dl()->device);
  if (dst_host && src_host) {
    std::memmove(to, from, nbytes);
    return Status::Ok();
  }
  if (dst_host) {
    KILN_RETURN_IF_ERROR(CheckReach(src, memory, what));
    return memory->CopyToHost(to, from, nbytes);
  }
  KILN_RETURN_IF_ERROR(CheckReach(dst, memory, what));
  if (src_host) return memory->CopyFromHost(to, from, nbytes);
  KILN_RETURN_IF_ERROR(CheckReach(src, memory, what));
  return memory->CopyWithin(to, from, nbytes);
}

Result<bool> HostArgumentsToDevice(Span<const Any> args, Allocator* allocator, const std::shared_ptr<void>& keep_alive,
                                   std::vector<Any>* out) {
  DeviceMemory* memory = allocator->device_memory();
  if (memory == nullptr) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].is_tensor() && !IsHostAddressable(args[i].tensor_obj()->dl.device)) {
        return InvalidArgument(StrFormat("argument %zu is on %s, but this call runs on the CPU", i,
                                         DeviceName(args[i].tensor_obj()->dl.device).c_str()));
      }
    }
    return false;
  }
  bool any = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_tensor()) continue;
    DLDevice d = args[i].tensor_obj()->dl.device;
    if (!IsHostAddressable(d)) {
      if (!SameDevice(d, memory->device())) {
        return InvalidArgument(StrFormat("argument %zu is on %s, but this call runs on %s", i, DeviceName(d).c_str(),
                                         DeviceName(memory->device()).c_str()));
      }
      continue;
    }
    any = true;
  }
  if (!any) return false;
  out->assign(args.begin(), args.end());
  for (size_t i = 0; i < out->size(); ++i) {
    Any& a = (*out)[i];
    if (!a.is_tensor() || !IsHostAddressable(a.tensor_obj()->dl.device)) continue;
    Tensor host = a.tensor();
    if (!host.IsCompact()) return InvalidArgument(StrFormat("argument %zu: a strided host tensor cannot be copied to %s", i, DeviceName(memory->device()).c_str()));
    Result<Tensor> t = Tensor::Empty(host.shape(), host.dtype(), allocator);
    if (!t.ok()) return t.TakeStatus().Annotate(StrFormat("argument %zu: copying it to %s", i, DeviceName(memory->device()).c_str()));
    t.value().object()->owner = keep_alive;
    Status s = memory->CopyFromHost(t.value().raw_data(), host.raw_data(), host.NumBytes());
    if (!s.ok()) return s.Annotate(StrFormat("argument %zu: copying it to %s", i, DeviceName(memory->device()).c_str()));
    a = Any(std::move(t).value());
  }
  return true;
}

}  // namespace kiln
