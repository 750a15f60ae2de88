#include "runtime/tensor.h"

#include <cstdint>

#include "runtime/device_memory.h"

namespace kiln {
namespace {

std::shared_ptr<TensorObj> MakeObj(Span<const int64_t> shape, DType dtype) {
  auto obj = std::make_shared<TensorObj>();
  obj->shape.assign(shape.begin(), shape.end());
  obj->dl.device = DLDevice{kDLCPU, 0};
  obj->dl.ndim = static_cast<int>(obj->shape.size());
  obj->dl.dtype = dtype.dl();
  obj->dl.shape = obj->shape.data();
  obj->dl.strides = nullptr;
  obj->dl.byte_offset = 0;
  return obj;
}

}  // namespace

TensorObj::~TensorObj() {
  if (allocator != nullptr && dl.data != nullptr) allocator->Free(dl.data);
}

int64_t ShapeNumElements(Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(Span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<Tensor> Tensor::Empty(Span<const int64_t> shape, DType dtype, Allocator* allocator) {
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument("negative dimension in shape " + ShapeToString(shape));
  }
  // The byte count must not wrap: a corrupt file or a hostile caller can ask
  // for any shape.
  size_t nbytes = dtype.bytes();
  for (int64_t d : shape) {
    if (d != 0 && nbytes > SIZE_MAX / static_cast<uint64_t>(d)) {
      return ResourceExhausted("tensor of shape " + ShapeToString(shape) + " and dtype " + DTypeToString(dtype) +
                               " is larger than the address space");
    }
    nbytes *= static_cast<size_t>(d);
  }
  auto obj = MakeObj(shape, dtype);
  obj->dl.data = allocator->Allocate(nbytes, kTensorAlignment);
  if (obj->dl.data == nullptr) {
    return ResourceExhausted(StrFormat("cannot allocate %zu bytes for a %s%s tensor", nbytes,
                                       DTypeToString(dtype).c_str(), ShapeToString(shape).c_str()));
  }
  obj->allocator = allocator;
  if (DeviceMemory* memory = allocator->device_memory()) obj->dl.device = memory->device();
  return Tensor(std::move(obj));
}

Tensor Tensor::Borrow(void* data, Span<const int64_t> shape, DType dtype, std::shared_ptr<void> owner) {
  auto obj = MakeObj(shape, dtype);
  obj->dl.data = data;
  obj->owner = std::move(owner);
  return Tensor(std::move(obj));
}

int64_t Tensor::NumElements() const { return ShapeNumElements(obj_->shape); }

std::string Tensor::TypeString() const { return DTypeToString(dtype()) + ShapeToString(shape()); }

}  // namespace kiln
