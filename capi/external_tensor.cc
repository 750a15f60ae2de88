// kiln.h's tensors over memory owned outside Kiln: caller memory handed over
// with a release callback, and DLPack import / export (DLManagedTensor).
//
// Both use Tensor::Borrow with an owner: a shared_ptr whose deleter gives the
// memory back, so the callback (or the DLPack deleter) runs exactly once, when
// the last tensor, value, output or call holding the storage lets go.
#include <dlpack/dlpack.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/c_api_internal.h"
#include "capi/kiln.h"
#include "runtime/tensor.h"

using kiln::Span;
using kiln::Tensor;
using kiln::capi::Invalid;
using kiln::capi::NoMemory;

namespace {

// Gives caller memory back through its callback; owned by a shared_ptr.
struct CallerStorage {
  void* data;
  kiln_tensor_release_fn_t release;
  void* user;
  ~CallerStorage() { release(user, data); }
};

// Gives an imported DLManagedTensor back to its producer.
struct ImportedStorage {
  DLManagedTensor* managed;
  ~ImportedStorage() {
    if (managed->deleter != nullptr) managed->deleter(managed);
  }
};

// An exported tensor: the DLManagedTensor the consumer holds, and the tensor
// that keeps the storage and the shape array alive until the deleter runs.
struct ExportedTensor {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape;  // the consumer may outlive no handle of ours: its own copy
};

void DeleteExported(DLManagedTensor* managed) {
  if (managed != nullptr) delete static_cast<ExportedTensor*>(managed->manager_ctx);
}

// Whether `strides` describe the compact row-major layout of `shape`.
bool CompactStrides(const int64_t* shape, const int64_t* strides, int32_t ndim) {
  int64_t expected = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    // A dimension of size 1 may carry any stride (PyTorch writes 1 there).
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace

extern "C" {

kiln_status_t* kiln_tensor_wrap_with_release(void* data, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                             kiln_tensor_release_fn_t release, void* user,
                                             kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  if (kiln_status_t* s = kiln::capi::CheckShape(__func__, shape, ndim, dtype)) return s;
  Span<const int64_t> dims(shape, static_cast<size_t>(ndim));
  if (data == nullptr && kiln::ShapeNumElements(dims) != 0) return Invalid(__func__, "data is NULL");
  std::unique_ptr<kiln_tensor_t> t(new (std::nothrow) kiln_tensor_t);
  if (t == nullptr) return NoMemory(__func__);
  std::shared_ptr<void> owner;
  if (release != nullptr) {
    // Built last, so that a failure above never runs the callback.
    CallerStorage* storage = new (std::nothrow) CallerStorage{data, release, user};
    if (storage == nullptr) return NoMemory(__func__);
    owner = std::shared_ptr<CallerStorage>(storage);
  }
  t->tensor = Tensor::Borrow(data, dims, kiln::capi::ToDType(dtype), std::move(owner));
  *out_tensor = t.release();
  return nullptr;
}

kiln_status_t* kiln_tensor_from_dlpack(struct DLManagedTensor* managed, kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(managed);
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost && dl.device.device_type != kDLCUDA) {
    return Invalid(__func__, kiln::StrFormat("the tensor is on device type %d; Kiln takes kDLCPU (%d), kDLCUDA (%d) "
                                             "and kDLCUDAHost (%d) tensors",
                                             static_cast<int>(dl.device.device_type), static_cast<int>(kDLCPU),
                                             static_cast<int>(kDLCUDA), static_cast<int>(kDLCUDAHost)));
  }
  kiln_dtype_t dtype = KILN_DTYPE(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  if (kiln_status_t* s = kiln::capi::CheckShape(__func__, dl.shape, dl.ndim, dtype)) return s;
  if (dl.strides != nullptr && !CompactStrides(dl.shape, dl.strides, dl.ndim)) {
    return Invalid(__func__, "the tensor is strided (not compact row-major); make it contiguous first");
  }
  Span<const int64_t> dims(dl.shape, static_cast<size_t>(dl.ndim));
  if (dl.data == nullptr && kiln::ShapeNumElements(dims) != 0) return Invalid(__func__, "dl_tensor.data is NULL");
  std::unique_ptr<kiln_tensor_t> t(new (std::nothrow) kiln_tensor_t);
  ImportedStorage* storage = new (std::nothrow) ImportedStorage{managed};
  if (t == nullptr || storage == nullptr) {
    delete storage;  // (its destructor would call the deleter: only once it owns `managed`)
    return NoMemory(__func__);
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  // Borrow copies the shape, so the producer's arrays are not read afterwards.
  t->tensor = Tensor::Borrow(data, dims, kiln::capi::ToDType(dtype), std::shared_ptr<ImportedStorage>(storage));
  // A GPU tensor stays one: a GPU instance's call takes it as it is, a CPU
  // call refuses it (vm: HostArgumentsToDevice).
  t->tensor.object()->dl.device = dl.device;
  *out_tensor = t.release();
  return nullptr;
}

kiln_status_t* kiln_tensor_to_dlpack(const kiln_tensor_t* tensor, struct DLManagedTensor** out_managed) {
  KILN_CAPI_REQUIRE(out_managed);
  *out_managed = nullptr;
  KILN_CAPI_REQUIRE(tensor);
  if (!tensor->tensor.IsCompact()) {
    return Invalid(__func__, "the tensor is strided; DLPack export takes compact tensors");
  }
  ExportedTensor* e = new (std::nothrow) ExportedTensor;
  if (e == nullptr) return NoMemory(__func__);
  e->tensor = tensor->tensor;
  e->shape = tensor->tensor.shape();
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = tensor->tensor.raw_data();
  dl.device = tensor->tensor.dl()->device;
  dl.ndim = tensor->tensor.ndim();
  dl.dtype = tensor->tensor.dl()->dtype;
  dl.shape = e->shape.empty() ? nullptr : e->shape.data();
  dl.strides = nullptr;
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExported;
  *out_managed = &e->managed;
  return nullptr;
}

}  // extern "C"
