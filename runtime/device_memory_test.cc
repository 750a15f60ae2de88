#include "runtime/device_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/fake_device_memory.h"

namespace kiln {
namespace {

TEST(DeviceMemoryTest, NamesAndHostAddressable) {
  EXPECT_EQ(DeviceName(DLDevice{kDLCPU, 0}), "cpu");
  EXPECT_EQ(DeviceName(DLDevice{kDLCUDA, 3}), "cuda:3");
  EXPECT_EQ(DeviceName(DLDevice{kDLROCM, 1}), "device type 10 id 1");
  EXPECT_TRUE(IsHostAddressable(DLDevice{kDLCPU, 0}));
  EXPECT_TRUE(IsHostAddressable(DLDevice{kDLCUDAHost, 0}));
  EXPECT_TRUE(IsHostAddressable(DLDevice{kDLCUDAManaged, 0}));
  EXPECT_FALSE(IsHostAddressable(DLDevice{kDLCUDA, 0}));
}

TEST(DeviceMemoryTest, EmptyFromDeviceMemoryIsTaggedWithTheDevice) {
  FakeDeviceMemory dev(1 << 20, DLDevice{kDLCUDA, 2});
  std::vector<int64_t> shape = {4, 5};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32(), &dev);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dl()->device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl()->device.device_id, 2);
  EXPECT_TRUE(dev.Contains(t->raw_data()));
  Result<Tensor> host = Tensor::Empty(shape, DType::Float32());
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->dl()->device.device_type, kDLCPU);
}

// The VM wraps every context allocator in a CountingAllocator: over device
// memory it must not write its size header into the block (the fake's
// blocks fault on any host access) and still count and free exactly.
TEST(DeviceMemoryTest, CountingAllocatorKeepsDeviceSizesBesideTheBlock) {
  FakeDeviceMemory dev;
  CountingAllocator counting(&dev);
  EXPECT_EQ(counting.device_memory(), &dev);
  void* a = counting.Allocate(1000, 64);
  void* b = counting.Allocate(24, 64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(dev.Contains(a));
  EXPECT_EQ(counting.bytes_held(), 1024);
  EXPECT_EQ(counting.peak_bytes(), 1024);
  EXPECT_EQ(dev.allocations(), 2);  // no larger block with a header: exactly the requests
  counting.Free(a);
  EXPECT_EQ(counting.bytes_held(), 24);
  counting.Free(b);
  EXPECT_EQ(counting.bytes_held(), 0);
  EXPECT_EQ(counting.frees(), 2u);
  EXPECT_EQ(dev.frees(), 2);
  // A tensor through the counting wrapper is on the device too.
  Result<Tensor> t = Tensor::Empty(std::vector<int64_t>{3}, DType::Int64(), &counting);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dl()->device.device_type, kDLCUDA);
}

TEST(DeviceMemoryTest, PoolAllocatorRefusesDeviceMemory) {
  FakeDeviceMemory dev;
  PoolAllocator pool(0, &dev);
  EXPECT_EQ(pool.Allocate(100, 64), nullptr);
  EXPECT_EQ(dev.allocations(), 0);
  EXPECT_NE(pool.Describe().find("cannot keep headers in"), std::string::npos) << pool.Describe();
}

TEST(DeviceMemoryTest, ReadWriteAndCopyThroughTheDevice) {
  FakeDeviceMemory dev;
  Result<Tensor> t = Tensor::Empty(std::vector<int64_t>{3}, DType::Int64(), &dev);
  ASSERT_TRUE(t.ok());
  const int64_t values[3] = {7, -1, 42};
  ASSERT_TRUE(WriteFromHost(*t, values, sizeof(values), &dev, "test").ok());
  EXPECT_EQ(dev.from_host(), 1);
  Result<Tensor> host = ReadableOnHost(*t, &dev, "test");
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(dev.to_host(), 1);
  EXPECT_EQ(host->dl()->device.device_type, kDLCPU);
  EXPECT_EQ(host->data<int64_t>()[2], 42);
  // A host tensor is read in place: no copy.
  Result<Tensor> again = ReadableOnHost(*host, &dev, "test");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->raw_data(), host->raw_data());
  EXPECT_EQ(dev.to_host(), 1);
  // Device to device, host to device, device to host.
  Result<Tensor> u = Tensor::Empty(std::vector<int64_t>{3}, DType::Int64(), &dev);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(CopyBytes(*u, 0, *t, 8, 16, &dev, "test").ok());
  EXPECT_EQ(dev.within(), 1);
  ASSERT_TRUE(CopyBytes(*u, 16, *host, 0, 8, &dev, "test").ok());
  Result<Tensor> back = Tensor::Empty(std::vector<int64_t>{3}, DType::Int64());
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(CopyBytes(*back, 0, *u, 0, 24, &dev, "test").ok());
  EXPECT_EQ(back->data<int64_t>()[0], -1);
  EXPECT_EQ(back->data<int64_t>()[1], 42);
  EXPECT_EQ(back->data<int64_t>()[2], 7);
}

TEST(DeviceMemoryTest, ErrorsNameTheDevice) {
  FakeDeviceMemory dev0(1 << 20, DLDevice{kDLCUDA, 0});
  FakeDeviceMemory dev1(1 << 20, DLDevice{kDLCUDA, 1});
  Result<Tensor> t = Tensor::Empty(std::vector<int64_t>{2}, DType::Int64(), &dev1);
  ASSERT_TRUE(t.ok());
  Result<Tensor> none = ReadableOnHost(*t, nullptr, "main: vm.builtin.tensor_to_shape");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "main: vm.builtin.tensor_to_shape: the tensor is on cuda:1; this call has no access to that device's "
            "memory");
  Result<Tensor> other = ReadableOnHost(*t, &dev0, "loop");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "loop: the tensor is on cuda:1, but this call runs on cuda:0");
  const int64_t v[2] = {1, 2};
  Status w = WriteFromHost(*t, v, sizeof(v), nullptr, "shape_to_tensor");
  EXPECT_EQ(w.code(), StatusCode::kFailedPrecondition);
  // A strided device tensor.
  Tensor strided = Tensor::Borrow(t->raw_data(), std::vector<int64_t>{2}, DType::Int64());
  strided.object()->dl.device = DLDevice{kDLCUDA, 1};
  strided.object()->strides = {2};
  strided.object()->dl.strides = strided.object()->strides.data();
  Result<Tensor> s = ReadableOnHost(strided, &dev1, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "x: a strided tensor on cuda:1 is not supported");
}

}  // namespace
}  // namespace kiln
