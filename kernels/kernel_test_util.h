// Helpers for the kernel tests: tensors from values, random tensors, calls.
#ifndef KILN_KERNELS_KERNEL_TEST_UTIL_H_
#define KILN_KERNELS_KERNEL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/any.h"
#include "runtime/tensor.h"

namespace kiln {
namespace kernels {
namespace testing {

template <typename T = float>
inline Tensor MakeTensor(std::vector<int64_t> shape, const std::vector<T>& values,
                         DType dtype = DType::Float32()) {
  Result<Tensor> t = Tensor::Empty(shape, dtype);
  KILN_CHECK(t.ok(), "%s", t.status().ToString().c_str());
  KILN_CHECK(static_cast<int64_t>(values.size()) == t->NumElements(), "wrong number of values");
  if (!values.empty()) std::memcpy(t->raw_data(), values.data(), values.size() * sizeof(T));
  return *t;
}

inline Tensor Zeros(std::vector<int64_t> shape, DType dtype = DType::Float32()) {
  Result<Tensor> t = Tensor::Empty(shape, dtype);
  KILN_CHECK(t.ok(), "%s", t.status().ToString().c_str());
  std::memset(t->raw_data(), 0, t->NumBytes());
  return *t;
}

// Uniform in [-1, 1), deterministic for a seed.
inline Tensor RandomTensor(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Zeros(shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(gen);
  return t;
}

template <typename T = float>
inline std::vector<T> Values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.NumElements());
}

inline float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.NumElements() == b.NumElements(), "size mismatch");
  float m = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

// Sets explicit strides on `t` (a view over the same data).
inline void SetStrides(const Tensor& t, std::vector<int64_t> strides) {
  TensorObj* obj = t.object().get();
  obj->strides = std::move(strides);
  obj->dl.strides = obj->strides.data();
}

template <typename Fn>
inline Status Call(Fn fn, std::vector<Any> args) {
  Any ret;
  Status s = fn(Span<const Any>(args.data(), args.size()), &ret);
  EXPECT_TRUE(ret.is_none()) << "destination-passing kernels return None";
  return s;
}

}  // namespace testing
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_KERNEL_TEST_UTIL_H_
