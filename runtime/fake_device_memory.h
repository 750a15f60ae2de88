// FakeDeviceMemory: a test double of device memory the host cannot address,
// for tests of the host side of GPU support on machines without a GPU.
//
// Its blocks lie in an address range reserved with PROT_NONE: any host read
// or write of them (a header written into a block, a builtin reading a value
// without copying) faults at once. The bytes live in a host shadow of that
// range, reached only through CopyToHost / CopyFromHost / CopyWithin, which
// count themselves, so tests see which builtins copied (and so waited for
// the device). Allocation is a bump pointer; freed blocks are not reused.
//
// Thread-safe (one mutex). Header-only: test code only.
#ifndef KILN_RUNTIME_FAKE_DEVICE_MEMORY_H_
#define KILN_RUNTIME_FAKE_DEVICE_MEMORY_H_

#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/device_memory.h"

namespace kiln {

class FakeDeviceMemory final : public Allocator, public DeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t capacity = size_t(1) << 24, DLDevice device = DLDevice{kDLCUDA, 0})
      : capacity_(capacity), device_(device), shadow_(capacity) {
    void* p = mmap(nullptr, capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~FakeDeviceMemory() override {
    if (base_ != nullptr) munmap(base_, capacity_);
  }

  void* Allocate(size_t nbytes, size_t alignment) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (alignment < 256) alignment = 256;
    size_t at = (next_ + alignment - 1) / alignment * alignment;
    size_t n = nbytes == 0 ? 1 : nbytes;
    if (base_ == nullptr || at + n > capacity_) return nullptr;
    next_ = at + n;
    ++allocations_;
    return base_ + at;
  }
  void Free(void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (ptr != nullptr) ++frees_;
  }
  std::string Describe() const override { return "fake device memory"; }
  DeviceMemory* device_memory() const override { return const_cast<FakeDeviceMemory*>(this); }

  DLDevice device() const override { return device_; }
  Status CopyToHost(void* dst, const void* src, size_t nbytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    KILN_ASSIGN_OR_RETURN(size_t at, Offset(src, nbytes));
    std::memcpy(dst, shadow_.data() + at, nbytes);
    ++to_host_;
    return Status::Ok();
  }
  Status CopyFromHost(void* dst, const void* src, size_t nbytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    KILN_ASSIGN_OR_RETURN(size_t at, Offset(dst, nbytes));
    std::memcpy(shadow_.data() + at, src, nbytes);
    ++from_host_;
    return Status::Ok();
  }
  Status CopyWithin(void* dst, const void* src, size_t nbytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    KILN_ASSIGN_OR_RETURN(size_t to, Offset(dst, nbytes));
    KILN_ASSIGN_OR_RETURN(size_t from, Offset(src, nbytes));
    std::memmove(shadow_.data() + to, shadow_.data() + from, nbytes);
    ++within_;
    return Status::Ok();
  }

  Status Synchronize() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++syncs_;
    return Status::Ok();
  }

  bool Contains(const void* p) const {
    return base_ != nullptr && p >= base_ && static_cast<const char*>(p) < base_ + capacity_;
  }
  // The shadow bytes at a device address (for checks).
  template <typename T>
  T Read(const void* device_ptr) {
    T v;
    Status s = CopyToHost(&v, device_ptr, sizeof(T));
    return s.ok() ? v : T();
  }

  int allocations() const { std::lock_guard<std::mutex> l(mu_); return allocations_; }
  int frees() const { std::lock_guard<std::mutex> l(mu_); return frees_; }
  int to_host() const { std::lock_guard<std::mutex> l(mu_); return to_host_; }
  int from_host() const { std::lock_guard<std::mutex> l(mu_); return from_host_; }
  int within() const { std::lock_guard<std::mutex> l(mu_); return within_; }
  int syncs() const { std::lock_guard<std::mutex> l(mu_); return syncs_; }

 private:
  Result<size_t> Offset(const void* p, size_t nbytes) const {
    if (!Contains(p) || static_cast<size_t>(static_cast<const char*>(p) - base_) + nbytes > capacity_) {
      return InvalidArgument("fake device memory: an address outside the device");
    }
    return static_cast<size_t>(static_cast<const char*>(p) - base_);
  }

  const size_t capacity_;
  const DLDevice device_;
  char* base_ = nullptr;
  std::vector<char> shadow_;
  mutable std::mutex mu_;
  size_t next_ = 0;
  int allocations_ = 0, frees_ = 0, to_host_ = 0, from_host_ = 0, within_ = 0, syncs_ = 0;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_FAKE_DEVICE_MEMORY_H_
