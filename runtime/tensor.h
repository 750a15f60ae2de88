// Tensor: an n-dimensional array in DLPack layout (DLTensor), reference counted.
//
// The DLTensor inside points at storage that is either owned (allocated through an
// Allocator and freed with the last reference) or borrowed (caller memory or a
// memory-mapped .vmfb segment, kept alive by an optional owner handle).
//
// Thread-compatible: the handle may be copied across threads; writing the data
// while another thread reads it is the caller's race.
#ifndef KILN_RUNTIME_TENSOR_H_
#define KILN_RUNTIME_TENSOR_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/dtype.h"
#include "runtime/object.h"
#include "runtime/span.h"
#include "runtime/status.h"

namespace kiln {

class TensorObj final : public Object {
 public:
  TensorObj() : Object(ObjectKind::kTensor) {}
  ~TensorObj() override;
  TensorObj(const TensorObj&) = delete;
  TensorObj& operator=(const TensorObj&) = delete;

  DLTensor dl{};                  // shape/strides point into the vectors below
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;   // empty: compact row-major
  Allocator* allocator = nullptr; // non-null: dl.data is owned and freed through it
  std::shared_ptr<void> owner;    // keeps borrowed storage alive (may be null)
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorObj> obj) : obj_(std::move(obj)) {}

  // New uninitialized compact tensor on the CPU.
  static Result<Tensor> Empty(Span<const int64_t> shape, DType dtype,
                              Allocator* allocator = DefaultCpuAllocator());
  // Wraps caller memory without copying. `owner` (may be null) is kept alive as
  // long as the tensor; the caller keeps `data` valid otherwise.
  static Tensor Borrow(void* data, Span<const int64_t> shape, DType dtype,
                      std::shared_ptr<void> owner = nullptr);

  bool defined() const { return obj_ != nullptr; }
  DLTensor* dl() const { return &obj_->dl; }
  const std::vector<int64_t>& shape() const { return obj_->shape; }
  int ndim() const { return static_cast<int>(obj_->shape.size()); }
  DType dtype() const { return DType::FromDL(obj_->dl.dtype); }
  void* raw_data() const { return static_cast<char*>(obj_->dl.data) + obj_->dl.byte_offset; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }
  int64_t NumElements() const;
  size_t NumBytes() const { return static_cast<size_t>(NumElements()) * dtype().bytes(); }
  bool IsCompact() const { return obj_->strides.empty(); }
  // "float32[2, 3]"
  std::string TypeString() const;

  const std::shared_ptr<TensorObj>& object() const { return obj_; }

 private:
  std::shared_ptr<TensorObj> obj_;
};

int64_t ShapeNumElements(Span<const int64_t> shape);
std::string ShapeToString(Span<const int64_t> shape);

}  // namespace kiln

#endif  // KILN_RUNTIME_TENSOR_H_
