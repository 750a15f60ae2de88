// The CUDA device through the driver. Without a driver (this test's second
// ctest run names a library that does not exist through KILN_CUDA_DRIVER) the
// errors are checked; with a GPU, the device itself. Tests that need a GPU
// skip with the driver's reason where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/device_memory.h"

namespace kiln {
namespace cuda {
namespace {

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// Whether a missing GPU fails the test instead of skipping it
// (scripts/gpu_check.sh sets KILN_REQUIRE_GPU=1 on the GPU machine, so a
// broken driver setup cannot pass as "skipped").
bool RequireGpu() {
  const char* env = std::getenv("KILN_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

// Opens device 0, or skips the test (fails it under KILN_REQUIRE_GPU=1) with
// the reason there is none.
#define OPEN_DEVICE_OR_SKIP(var)                                                                 \
  auto var##_result = CudaDevice::Open(0);                                                       \
  if (!var##_result.ok()) {                                                                      \
    if (RequireGpu()) FAIL() << "KILN_REQUIRE_GPU=1 but " << var##_result.status().ToString();   \
    GTEST_SKIP() << "no GPU here: " << var##_result.status().ToString();                         \
  }                                                                                              \
  std::unique_ptr<CudaDevice> var = std::move(var##_result).value()

TEST(NoDriver, EveryEntryNamesTheLibraryAndWhyItDidNotLoad) {
  if (Driver().ok()) GTEST_SKIP() << "a CUDA driver is present; the no-driver run sets KILN_CUDA_DRIVER";
  std::string lib = DriverLibraryName();
  std::string prefix = "no CUDA driver: " + lib + ": ";
  Status s = Driver().status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(StartsWith(s.message(), prefix)) << s.message();
  EXPECT_GT(s.message().size(), prefix.size()) << "the reason is missing";
  if (lib == "libm.so.6") {
    EXPECT_EQ(s.message(), prefix + "no cuGetProcAddress in it (not a CUDA driver, or one older than CUDA 11.3)");
  }
  Result<std::unique_ptr<CudaDevice>> dev = CudaDevice::Open(0);
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(StartsWith(dev.status().message(), prefix)) << dev.status().message();
  EXPECT_FALSE(DeviceCount().ok());
  EXPECT_FALSE(DriverVersion().ok());
}

TEST(NoDriver, TheLibraryNameComesFromTheEnvironment) {
  const char* env = std::getenv("KILN_CUDA_DRIVER");
  EXPECT_EQ(DriverLibraryName(), env && *env ? std::string(env) : std::string("libcuda.so.1"));
}

TEST(CudaDevice, OpenReportsTheDevice) {
  OPEN_DEVICE_OR_SKIP(dev);
  EXPECT_FALSE(dev->info().name.empty());
  EXPECT_GE(dev->info().cc_major, 5);
  EXPECT_GT(dev->info().total_memory, 0u);
  EXPECT_GT(dev->info().multiprocessors, 0);
  std::printf("device 0: %s, %s, %zu MiB, %d SMs, driver %s\n", dev->info().name.c_str(), dev->info().Arch().c_str(),
              dev->info().total_memory >> 20, dev->info().multiprocessors, DriverVersion().value().c_str());
}

TEST(CudaDevice, AnOrdinalPastTheLastIsAnError) {
  OPEN_DEVICE_OR_SKIP(dev);
  int n = DeviceCount().value();
  auto bad = CudaDevice::Open(n);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            StrFormat("CUDA device %d does not exist: the driver sees %d (0..%d)", n, n, n - 1));
}

TEST(CudaDevice, CopiesRoundTripThroughTheCachingAllocator) {
  OPEN_DEVICE_OR_SKIP(dev);
  std::vector<float> host(1 << 20), back(1 << 20, 0.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  size_t bytes = host.size() * sizeof(float);
  Result<uint64_t> a = dev->Allocate(bytes);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<uint64_t> b = dev->Allocate(bytes);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(dev->CopyToDevice(a.value(), host.data(), bytes).ok());
  ASSERT_TRUE(dev->CopyOnDevice(b.value(), a.value(), bytes).ok());
  ASSERT_TRUE(dev->CopyToHost(back.data(), b.value(), bytes).ok());
  ASSERT_TRUE(dev->Synchronize().ok());
  EXPECT_EQ(host, back);
  dev->Free(a.value());
  dev->Free(b.value());
  Result<uint64_t> c = dev->Allocate(bytes);  // served from the cache
  ASSERT_TRUE(c.ok());
  DeviceMemoryStats s = dev->memory_stats();
  EXPECT_EQ(s.backend_allocs, 2u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.peak_in_use, 2 * bytes);
  dev->Free(c.value());
}

TEST(CudaDevice, ACappedAllocatorRefusesPastItsCap) {
  auto r = CudaDevice::Open(0, 1 << 20);
  if (!r.ok() && RequireGpu()) FAIL() << "KILN_REQUIRE_GPU=1 but " << r.status().ToString();
  if (!r.ok()) GTEST_SKIP() << "no GPU here: " << r.status().ToString();
  Result<uint64_t> big = r.value()->Allocate(2 << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("cap 1048576 bytes reached"), std::string::npos) << big.status().message();
}

// c[i] = a[i] + b[i] for i < n, written by hand so this test needs no compiler.
const char* kAddPtx = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry kiln_test_add(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<4>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.s32 %p, %r4, %r5;
  @%p bra DONE;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mul.wide.s32 %rd4, %r4, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}
)";

TEST(CudaModule, LaunchesAKernelAndTimesIt) {
  OPEN_DEVICE_OR_SKIP(dev);
  auto mod = CudaModule::LoadPtx(dev.get(), kAddPtx, "add");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto fn = mod.value()->Function("kiln_test_add");
  ASSERT_TRUE(fn.ok()) << fn.status().ToString();
  const uint32_t n = 1000003;
  std::vector<float> a(n), b(n), c(n, -1.f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.25f * static_cast<float>(i % 97);
  }
  uint64_t da = dev->Allocate(n * 4).value(), db = dev->Allocate(n * 4).value(), dc = dev->Allocate(n * 4).value();
  ASSERT_TRUE(dev->CopyToDevice(da, a.data(), n * 4).ok());
  ASSERT_TRUE(dev->CopyToDevice(db, b.data(), n * 4).ok());
  void* args[] = {&da, &db, &dc, const_cast<uint32_t*>(&n)};
  LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = (n + 255) / 256;
  auto timer = CudaTimer::Create(*dev);
  ASSERT_TRUE(timer.ok()) << timer.status().ToString();
  ASSERT_TRUE(timer.value()->Start(dev->stream()).ok());
  Status launched = mod.value()->Launch(fn.value(), dims, args);
  ASSERT_TRUE(launched.ok()) << launched.ToString();
  ASSERT_TRUE(timer.value()->Stop(dev->stream()).ok());
  ASSERT_TRUE(dev->CopyToHost(c.data(), dc, n * 4).ok());
  ASSERT_TRUE(dev->Synchronize().ok());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
  Result<float> ms = timer.value()->ElapsedMs();
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_GT(ms.value(), 0.f);
  std::printf("kiln_test_add over %u floats: %.3f ms\n", n, ms.value());
  dev->Free(da);
  dev->Free(db);
  dev->Free(dc);
}

TEST(CudaModule, BadPtxFailsWithTheJitLog) {
  OPEN_DEVICE_OR_SKIP(dev);
  std::string bad = std::string(kAddPtx);
  bad.replace(bad.find("add.f32"), 7, "add.q32");
  auto mod = CudaModule::LoadPtx(dev.get(), bad, "broken");
  ASSERT_FALSE(mod.ok());
  const std::string& m = mod.status().message();
  EXPECT_TRUE(StartsWith(m, "loading PTX module 'broken': cuModuleLoadDataEx: ")) << m;
  // ptxas says "line 29; error : Unknown modifier '.q32'".
  EXPECT_NE(m.find("q32"), std::string::npos) << "the JIT's log should name the bad modifier: " << m;
}

TEST(CudaModule, AMissingKernelIsNotFound) {
  OPEN_DEVICE_OR_SKIP(dev);
  auto mod = CudaModule::LoadPtx(dev.get(), kAddPtx, "add");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto fn = mod.value()->Function("nope");
  ASSERT_FALSE(fn.ok());
  EXPECT_EQ(fn.status().message(), "PTX module 'add' has no kernel 'nope'");
}

// Plain device memory as the VM gets it: tensors tagged kDLCUDA, values
// moved only by copies (which wait for the stream), sizes kept beside the
// blocks by the caching allocator (a CountingAllocator over it too).
TEST(CudaMemory, TensorsOnTheDeviceAndCopies) {
  OPEN_DEVICE_OR_SKIP(dev);
  CudaMemory memory(dev.get());
  CountingAllocator counting(&memory);
  std::vector<int64_t> shape = {1000};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32(), &counting);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dl()->device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl()->device.device_id, 0);
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i);
  ASSERT_TRUE(WriteFromHost(*t, host.data(), 4000, &memory, "test").ok());
  Result<Tensor> u = Tensor::Empty(shape, DType::Float32(), &counting);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(CopyBytes(*u, 0, *t, 0, 4000, &memory, "test").ok());
  Result<Tensor> back = ReadableOnHost(*u, &memory, "test");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(back->data<float>()[i], host[i]) << i;
  EXPECT_EQ(counting.bytes_held(), 8000);
  EXPECT_GE(dev->memory_stats().in_use, 8000u);
}

// One empty kernel, for the launch cost a CUDA graph call is compared with.
const char* kEmptyPtx = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry kiln_test_empty()
{
  ret;
}
)";

// Ten launches of the add kernel captured once and replayed: the result is
// the plain launches' result, and replay takes one cuGraphLaunch. Prints
// the wall time per call of: one empty kernel, the ten plain launches, and
// the replay (each waiting for the stream), medians of 200.
TEST(CudaGraph, CapturesLaunchesAndReplaysThem) {
  OPEN_DEVICE_OR_SKIP(dev);
  auto mod = CudaModule::LoadPtx(dev.get(), kAddPtx, "add");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto fn = mod.value()->Function("kiln_test_add");
  ASSERT_TRUE(fn.ok());
  auto empty_mod = CudaModule::LoadPtx(dev.get(), kEmptyPtx, "empty");
  ASSERT_TRUE(empty_mod.ok()) << empty_mod.status().ToString();
  auto empty = empty_mod.value()->Function("kiln_test_empty");
  ASSERT_TRUE(empty.ok());
  const uint32_t n = 4096;
  std::vector<float> a(n, 1.f), c(n, 0.f);
  uint64_t da = dev->Allocate(n * 4).value(), dc = dev->Allocate(n * 4).value();
  ASSERT_TRUE(dev->CopyToDevice(da, a.data(), n * 4).ok());
  ASSERT_TRUE(dev->Memset(dc, 0, n * 4).ok());
  // c += a, ten times.
  void* args[] = {&dc, &da, &dc, const_cast<uint32_t*>(&n)};
  LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = n / 256;
  auto ten = [&]() -> Status {
    for (int i = 0; i < 10; ++i) KILN_RETURN_IF_ERROR(mod.value()->Launch(fn.value(), dims, args));
    return Status::Ok();
  };
  ASSERT_TRUE(CudaGraph::BeginCapture(dev.get()).ok());
  EXPECT_TRUE(CudaGraph::IsCapturing(dev.get()).value());
  ASSERT_TRUE(ten().ok());
  Result<std::unique_ptr<CudaGraph>> graph = CudaGraph::EndCapture(dev.get());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_FALSE(CudaGraph::IsCapturing(dev.get()).value());
  EXPECT_EQ(graph.value()->num_nodes(), 10u);
  ASSERT_TRUE(dev->Synchronize().ok());  // recording ran nothing
  ASSERT_TRUE(dev->CopyToHost(c.data(), dc, n * 4).ok());
  ASSERT_TRUE(dev->Synchronize().ok());
  EXPECT_EQ(c[0], 0.f);
  ASSERT_TRUE(graph.value()->Launch().ok());
  ASSERT_TRUE(dev->CopyToHost(c.data(), dc, n * 4).ok());
  ASSERT_TRUE(dev->Synchronize().ok());
  EXPECT_EQ(c[0], 10.f);
  EXPECT_EQ(c[n - 1], 10.f);

  auto median_us = [&](const std::function<Status()>& call) {
    std::vector<double> us;
    for (int i = 0; i < 220; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      Status s = call();
      Status w = dev->Synchronize();
      auto t1 = std::chrono::steady_clock::now();
      EXPECT_TRUE(s.ok() && w.ok()) << s.ToString() << w.ToString();
      if (i >= 20) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  LaunchDims one;
  double empty_us = median_us([&]() { return empty_mod.value()->Launch(empty.value(), one, nullptr); });
  double plain_us = median_us(ten);
  double graph_us = median_us([&]() { return graph.value()->Launch(); });
  std::printf("launch+sync wall, median of 200: one empty kernel %.2f us; 10 plain launches %.2f us; "
              "their CUDA graph %.2f us (graph - empty kernel: %.2f us)\n",
              empty_us, plain_us, graph_us, graph_us - empty_us);
  dev->Free(da);
  dev->Free(dc);
}

// A synchronizing call while recording fails the capture with the driver's
// reason; the stream is plain again after EndCapture.
TEST(CudaGraph, ASyncWhileRecordingFailsTheCapture) {
  OPEN_DEVICE_OR_SKIP(dev);
  uint64_t d = dev->Allocate(256).value();
  float x = 0;
  ASSERT_TRUE(CudaGraph::BeginCapture(dev.get()).ok());
  ASSERT_TRUE(dev->Memset(d, 0, 256).ok());
  Status s = dev->CopyToHost(&x, d, 4);
  Status sync = dev->Synchronize();
  EXPECT_FALSE(s.ok() && sync.ok()) << "a copy to pageable host memory and a sync cannot be recorded";
  Result<std::unique_ptr<CudaGraph>> graph = CudaGraph::EndCapture(dev.get());
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("cuStreamEndCapture"), std::string::npos) << graph.status().message();
  EXPECT_FALSE(CudaGraph::IsCapturing(dev.get()).value());
  ASSERT_TRUE(dev->Memset(d, 0, 256).ok());
  EXPECT_TRUE(dev->Synchronize().ok());
  dev->Free(d);
}

}  // namespace
}  // namespace cuda
}  // namespace kiln
