#include "tests/runtime/runtime_test_util.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace kiln {
namespace runtime_test {
namespace {

std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_news{0};

void* CountedMalloc(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n == 0 ? 1 : n);
  return p;
}

void* CountedAligned(size_t n, size_t alignment) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  size_t rounded = (n + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

}  // namespace

void StartCountingNew() {
  g_news.store(0);
  g_counting.store(true);
}

uint64_t StopCountingNew() {
  g_counting.store(false);
  return g_news.load();
}

Result<std::shared_ptr<const vm::Module>> LoadModel(const std::string& name, const vm::LoadOptions& options) {
  return vm::Module::LoadFile(std::string(KILN_RUNTIME_TEST_MODELS) + "/" + name + ".vmfb", options);
}

Tensor RandomTensor(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

Result<std::vector<Any>> RandomArgs(const vm::Module& module, const std::string& function,
                                    const std::map<std::string, int64_t>& dims, uint64_t seed) {
  KILN_ASSIGN_OR_RETURN(vm::FunctionSignature sig, module.GetSignature(function));
  std::vector<Any> args;
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const vm::ValueInfo& p = sig.params[i];
    if (p.kind != vm::ValueInfo::Kind::kTensor || p.dtype != DType::Float32()) {
      return InvalidArgument("parameter " + p.name + " is not a float32 tensor");
    }
    std::vector<int64_t> shape;
    for (const std::string& d : p.dims) {
      auto it = dims.find(d);
      if (it != dims.end()) {
        shape.push_back(it->second);
      } else if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) {
        shape.push_back(std::stoll(d));
      } else {
        return InvalidArgument("parameter " + p.name + ": no value for dimension " + d);
      }
    }
    args.emplace_back(RandomTensor(shape, seed * 131 + i));
  }
  return args;
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return false;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.NumBytes()) == 0;
}

Tensor Copy(const Tensor& t) {
  Tensor c = Tensor::Empty(t.shape(), t.dtype()).value();
  std::memcpy(c.raw_data(), t.raw_data(), t.NumBytes());
  return c;
}

}  // namespace runtime_test
}  // namespace kiln

// The test binary's global allocation functions: counted while enabled.
void* operator new(size_t n) {
  void* p = kiln::runtime_test::CountedMalloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return kiln::runtime_test::CountedMalloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return kiln::runtime_test::CountedMalloc(n); }
void* operator new(size_t n, std::align_val_t a) {
  void* p = kiln::runtime_test::CountedAligned(n, static_cast<size_t>(a));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
