#include "vm/builtins_shape_value.h"

#include <cstring>
#include <vector>

#include "runtime/device_memory.h"
#include "runtime/tensor.h"
#include "vm/call_state.h"

namespace kiln {
namespace vm {

Status TensorToShape(const Any& value, const std::string& ctx, Any* out) {
  if (!value.is_tensor()) return InvalidArgument(ctx + ": expected a 1-d int64 tensor, got " + value.Describe());
  // A tensor in device memory (a GPU context) is copied to the host first;
  // the copy waits for the kernels that wrote it.
  Tensor host;
  if (!IsHostAddressable(value.tensor_obj()->dl.device)) {
    KILN_ASSIGN_OR_RETURN(host, ReadableOnHost(value.tensor(), CallDeviceMemory(), ctx));
  }
  const DLTensor& dl = host.defined() ? *host.dl() : value.tensor_obj()->dl;
  DType dtype = DType::FromDL(dl.dtype);
  if (dl.ndim != 1) {
    return InvalidArgument(StrFormat("%s: expected a 1-d int64 tensor, got %d dimensions (%s)", ctx.c_str(), dl.ndim,
                                     value.Describe().c_str()));
  }
  if (dtype != DType::Int64() && dtype != DType::Int32()) {
    return InvalidArgument(ctx + ": expected a 1-d int64 tensor, got dtype " + DTypeToString(dtype));
  }
  const int64_t n = dl.shape[0];
  const int64_t stride = dl.strides != nullptr ? dl.strides[0] : 1;
  const char* base = static_cast<const char*>(dl.data) + dl.byte_offset;
  std::vector<int64_t> dims(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const char* p = base + i * stride * static_cast<int64_t>(dtype.bytes());
    if (dtype == DType::Int64()) {
      std::memcpy(&dims[i], p, 8);
    } else {
      int32_t v;
      std::memcpy(&v, p, 4);
      dims[i] = v;
    }
  }
  *out = Any::Shape(std::move(dims));
  return Status::Ok();
}

Status ShapeToTensor(const Any& value, Allocator* allocator, std::shared_ptr<void> keep_alive,
                     const std::string& function, Any* out) {
  if (!value.is_shape()) {
    return InvalidArgument(function + ": vm.builtin.shape_to_tensor: expected a shape, got " + value.Describe());
  }
  const std::vector<int64_t>& dims = value.shape_dims();
  const int64_t n = static_cast<int64_t>(dims.size());
  Result<Tensor> t = Tensor::Empty(Span<const int64_t>(&n, 1), DType::Int64(), allocator);
  if (!t.ok()) return Status(t.status()).Annotate(function + ": vm.builtin.shape_to_tensor");
  // The tensor may outlive the call and its context: it keeps the context's
  // allocator alive until it frees its storage (as every builtin's output does).
  t.value().object()->owner = std::move(keep_alive);
  // Through the device's copy when the allocator hands out device memory.
  KILN_RETURN_IF_ERROR(WriteFromHost(t.value(), dims.data(), dims.size() * sizeof(int64_t), allocator->device_memory(),
                                     function + ": vm.builtin.shape_to_tensor"));
  *out = Any(t.value());
  return Status::Ok();
}

}  // namespace vm
}  // namespace kiln
