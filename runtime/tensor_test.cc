#include "runtime/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace {

TEST(TensorTest, EmptyIsAlignedCompactAndSized) {
  for (int64_t n : {1, 3, 17, 1000}) {
    std::vector<int64_t> shape = {n, 3};
    Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment, 0u);
    EXPECT_EQ(t->NumElements(), n * 3);
    EXPECT_EQ(t->NumBytes(), static_cast<size_t>(n * 3 * 4));
    EXPECT_TRUE(t->IsCompact());
    EXPECT_EQ(t->ndim(), 2);
    EXPECT_EQ(t->shape(), shape);
    EXPECT_EQ(t->dtype(), DType::Float32());
    // The DLTensor view agrees with the tensor.
    DLTensor* dl = t->dl();
    EXPECT_EQ(dl->ndim, 2);
    EXPECT_EQ(dl->shape[0], n);
    EXPECT_EQ(dl->shape[1], 3);
    EXPECT_EQ(dl->strides, nullptr);
    EXPECT_EQ(dl->device.device_type, kDLCPU);
    // The storage is writable end to end.
    float* p = t->data<float>();
    for (int64_t i = 0; i < n * 3; ++i) p[i] = static_cast<float>(i);
    EXPECT_EQ(p[n * 3 - 1], static_cast<float>(n * 3 - 1));
  }
}

TEST(TensorTest, ScalarAndZeroSized) {
  Result<Tensor> scalar = Tensor::Empty(Span<const int64_t>(), DType::Int64());
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->ndim(), 0);
  EXPECT_EQ(scalar->NumElements(), 1);
  EXPECT_EQ(scalar->NumBytes(), 8u);

  std::vector<int64_t> shape = {4, 0};
  Result<Tensor> empty = Tensor::Empty(shape, DType::Float32());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->NumElements(), 0);
  EXPECT_EQ(empty->NumBytes(), 0u);
  EXPECT_NE(empty->raw_data(), nullptr);
}

TEST(TensorTest, EmptyRejectsNegativeDimension) {
  std::vector<int64_t> shape = {2, -1};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("negative dimension in shape [2, -1]"), std::string::npos);
}

// An allocator that fails, to make the out-of-memory message fire.
class FailingAllocator : public Allocator {
 public:
  void* Allocate(size_t, size_t) override { return nullptr; }
  void Free(void*) override {}
};

TEST(TensorTest, EmptyReportsAllocationFailure) {
  FailingAllocator failing;
  std::vector<int64_t> shape = {8, 8};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32(), &failing);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("cannot allocate 256 bytes for a float32[8, 8] tensor"),
            std::string::npos);
}

// Counts allocations and frees so ownership can be observed.
class CountingAllocator : public Allocator {
 public:
  void* Allocate(size_t n, size_t a) override {
    ++allocs;
    return DefaultCpuAllocator()->Allocate(n, a);
  }
  void Free(void* p) override {
    ++frees;
    DefaultCpuAllocator()->Free(p);
  }
  int allocs = 0;
  int frees = 0;
};

TEST(TensorTest, OwnedStorageFreedWithLastReference) {
  CountingAllocator counting;
  std::vector<int64_t> shape = {5};
  {
    Result<Tensor> t = Tensor::Empty(shape, DType::Int32(), &counting);
    ASSERT_TRUE(t.ok());
    Tensor copy = *t;
    EXPECT_EQ(copy.raw_data(), t->raw_data());
    EXPECT_EQ(counting.allocs, 1);
    EXPECT_EQ(counting.frees, 0);
  }
  EXPECT_EQ(counting.frees, 1);
}

TEST(TensorTest, BorrowDoesNotCopy) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> shape = {2, 3};
  Tensor t = Tensor::Borrow(data.data(), shape, DType::Float32());
  EXPECT_EQ(t.raw_data(), data.data());
  EXPECT_EQ(t.NumElements(), 6);
  EXPECT_EQ(t.NumBytes(), 24u);
  data[4] = 50;
  EXPECT_EQ(t.data<float>()[4], 50);
  t.data<float>()[0] = -1;
  EXPECT_EQ(data[0], -1);
  EXPECT_EQ(t.TypeString(), "float32[2, 3]");
}

TEST(TensorTest, BorrowKeepsOwnerAlive) {
  auto buffer = std::make_shared<std::vector<int64_t>>(4, 7);
  std::weak_ptr<std::vector<int64_t>> weak = buffer;
  std::vector<int64_t> shape = {4};
  Tensor t = Tensor::Borrow(buffer->data(), shape, DType::Int64(), buffer);
  buffer.reset();
  ASSERT_FALSE(weak.expired());
  EXPECT_EQ(t.data<int64_t>()[3], 7);
  t = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(TensorTest, ShapeHelpers) {
  std::vector<int64_t> s = {2, 3, 4};
  EXPECT_EQ(ShapeNumElements(s), 24);
  EXPECT_EQ(ShapeToString(s), "[2, 3, 4]");
  EXPECT_EQ(ShapeToString(Span<const int64_t>()), "[]");
  EXPECT_EQ(ShapeNumElements(Span<const int64_t>()), 1);
  EXPECT_FALSE(Tensor().defined());
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(TensorTest, EmptyRejectsShapesWhoseByteCountWraps) {
  // 2^62 elements of 4 bytes overflow a 64-bit byte count.
  Result<Tensor> t = Tensor::Empty({int64_t{1} << 31, int64_t{1} << 31}, DType::Float32());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("larger than the address space"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace kiln
